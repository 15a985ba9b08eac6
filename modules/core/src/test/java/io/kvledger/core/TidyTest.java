package io.kvledger.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Keeps {@code modules/core} pure: no clocks, randomness, threads, locks, hash-ordered
 * collections, file I/O or console/environment access in its main sources (the ledger's
 * {@code DiagnosisTidyTest} holds the hang detectors to the same rules with {@link #scan}). Comment lines
 * (trimmed text starting with {@code //}, {@code *} or {@code /*}) are not checked.
 */
public class TidyTest {

    /** Forbidden substrings of non-comment source lines. */
    public static final List<String> FORBIDDEN = List.of(
            "System.nanoTime",
            "System.currentTimeMillis",
            "Instant.now",
            "Clock.system",
            "LocalDateTime.now",
            "new Random",
            "ThreadLocalRandom",
            "SecureRandom",
            "Math.random",
            "new Thread",
            "Thread.sleep",
            "Executors.",
            "synchronized",
            "java.util.HashMap",
            "new HashMap",
            "java.util.HashSet",
            "new HashSet",
            "ConcurrentHashMap",
            "java.io.File",
            "java.nio.file",
            "System.out",
            "System.err",
            "System.getenv");

    /** Surefire runs with the module directory as working directory. */
    private static final Path MAIN_SOURCES = Path.of("src/main/java");

    /**
     * The violations in one file's lines, each as {@code "file:line: token: text"}.
     *
     * @param file the name to report
     * @param lines the file's lines in order
     */
    public static List<String> scan(String file, List<String> lines) {
        List<String> violations = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            String trimmed = lines.get(i).trim();
            if (trimmed.startsWith("//") || trimmed.startsWith("*") || trimmed.startsWith("/*")) {
                continue;
            }
            for (String token : FORBIDDEN) {
                if (trimmed.contains(token)) {
                    violations.add(file + ":" + (i + 1) + ": " + token + ": " + trimmed);
                }
            }
        }
        return violations;
    }

    @Test
    void core_main_sources_use_no_clocks_randomness_threads_hashing_or_io() throws IOException {
        Path root = MAIN_SOURCES.toAbsolutePath();
        assertThat(Files.isDirectory(MAIN_SOURCES))
                .as("main sources not found at %s; run from the modules/core directory", root)
                .isTrue();
        List<Path> files;
        try (Stream<Path> walk = Files.walk(MAIN_SOURCES)) {
            files = walk.filter(p -> p.toString().endsWith(".java")).sorted().toList();
        }
        assertThat(files).as("no .java files under %s", root).isNotEmpty();
        List<String> violations = new ArrayList<>();
        for (Path file : files) {
            violations.addAll(scan(file.toString(), Files.readAllLines(file, StandardCharsets.UTF_8)));
        }
        assertThat(violations).as("forbidden constructs in modules/core main sources").isEmpty();
    }

    @Test
    void scanner_flags_forbidden_code_and_ignores_comments() {
        List<String> sample = List.of(
                "package x;",
                "// new HashMap<>() in a line comment is fine",
                " * new HashMap<>() in a Javadoc line is fine",
                "/* new HashMap<>() in a block comment is fine */",
                "class A {",
                "    Map<String, Integer> m = new HashMap<>();",
                "    long t = System.nanoTime();",
                "}");
        List<String> violations = scan("A.java", sample);
        assertThat(violations).containsExactly(
                "A.java:6: new HashMap: Map<String, Integer> m = new HashMap<>();",
                "A.java:7: System.nanoTime: long t = System.nanoTime();");
    }

    @Test
    void scanner_passes_clean_code() {
        assertThat(scan("B.java", List.of("class B {", "    Map<String, Integer> m = new LinkedHashMap<>();", "}")))
                .isEmpty();
    }
}
