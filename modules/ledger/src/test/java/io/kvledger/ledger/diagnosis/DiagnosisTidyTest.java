package io.kvledger.ledger.diagnosis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.TidyTest;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Keeps the hang detectors as pure as the reducer they left the core beside: the core's
 * {@link TidyTest} rules (no clocks, randomness, threads, locks, hash-ordered collections, I/O)
 * over this package's main sources.
 */
class DiagnosisTidyTest {

    /** Surefire runs with the module directory as working directory. */
    private static final Path SOURCES = Path.of("src/main/java/io/kvledger/ledger/diagnosis");

    @Test
    void diagnosis_sources_use_no_clocks_randomness_threads_hashing_or_io() throws IOException {
        assertThat(Files.isDirectory(SOURCES))
                .as("sources not found at %s; run from the modules/ledger directory", SOURCES.toAbsolutePath())
                .isTrue();
        List<Path> files;
        try (Stream<Path> walk = Files.walk(SOURCES)) {
            files = walk.filter(p -> p.toString().endsWith(".java")).sorted().toList();
        }
        assertThat(files).as("no .java files under %s", SOURCES.toAbsolutePath()).hasSizeGreaterThan(1);
        List<String> violations = new ArrayList<>();
        for (Path file : files) {
            violations.addAll(TidyTest.scan(file.toString(), Files.readAllLines(file, StandardCharsets.UTF_8)));
        }
        assertThat(violations).as("forbidden constructs in io.kvledger.ledger.diagnosis").isEmpty();
    }
}
