package io.kvledger.cli.tidy;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The project's text as the visibility tidy tests read it, by path from the project root: every
 * module's and the benchmarks' Java sources (main and test) in {@code java}; their resources, the
 * poms and the launcher script in {@code other} (a ServiceLoader file or a script can name a type);
 * and {@code checked}, the main sources the tests judge.
 */
record ProjectSources(Map<String, String> java, Map<String, String> other, List<String> checked) {

    static ProjectSources read() throws IOException {
        Path root = ProjectRoot.find();
        Map<String, String> java = new LinkedHashMap<>();
        Map<String, String> other = new LinkedHashMap<>();
        List<Path> trees = new ArrayList<>();
        try (Stream<Path> modules = Files.list(root.resolve("modules"))) {
            trees.addAll(modules.filter(Files::isDirectory).sorted().toList());
        }
        trees.add(root.resolve("benchmarks"));
        for (Path m : trees) {
            for (String tree : List.of("main", "test")) {
                read(root, m.resolve("src").resolve(tree).resolve("java"), java, true);
                read(root, m.resolve("src").resolve(tree).resolve("resources"), other, false);
            }
            Path pom = m.resolve("pom.xml");
            if (Files.isRegularFile(pom)) {
                other.put(root.relativize(pom).toString(), Files.readString(pom, StandardCharsets.UTF_8));
            }
        }
        for (String f : List.of("pom.xml", "kvledger")) {
            other.put(f, Files.readString(root.resolve(f), StandardCharsets.UTF_8));
        }
        List<String> checked = java.keySet().stream().filter(f -> f.startsWith("modules/") && f.contains("/src/main/java/")).toList();
        assertThat(checked).as("main sources found under %s", root).hasSizeGreaterThan(100);
        return new ProjectSources(java, other, checked);
    }

    private static void read(Path root, Path dir, Map<String, String> into, boolean javaOnly) throws IOException {
        if (!Files.isDirectory(dir)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path f : walk.filter(Files::isRegularFile).sorted().toList()) {
                if (javaOnly != f.toString().endsWith(".java")) {
                    continue;
                }
                into.put(root.relativize(f).toString(), Files.readString(f, StandardCharsets.ISO_8859_1));
            }
        }
    }
}
