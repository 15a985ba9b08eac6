package io.kvledger.sim;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Keeps the simulator reproducible: no wall clock, no unseeded randomness, no threads and no
 * hash-ordered collections in its main sources (comment lines are not checked).
 */
class SimTidyTest {

    private static final List<String> FORBIDDEN = List.of(
            "System.nanoTime", "System.currentTimeMillis", "Instant.now", "Clock.system", "LocalDateTime.now",
            "new Random", "ThreadLocalRandom", "SecureRandom", "Math.random", "UUID.randomUUID",
            "new Thread", "Thread.sleep", "Executors.", "synchronized",
            "java.util.HashMap", "new HashMap", "java.util.HashSet", "new HashSet", "ConcurrentHashMap");

    @Test
    void sim_main_sources_use_no_clock_randomness_threads_or_hashing() throws IOException {
        Path main = Path.of("src/main/java");
        assertThat(Files.isDirectory(main)).as("run from modules/sim").isTrue();
        List<String> violations = new ArrayList<>();
        try (Stream<Path> walk = Files.walk(main)) {
            for (Path p : walk.filter(f -> f.toString().endsWith(".java")).sorted().toList()) {
                List<String> lines = Files.readAllLines(p);
                for (int i = 0; i < lines.size(); i++) {
                    String t = lines.get(i).trim();
                    if (t.startsWith("//") || t.startsWith("*") || t.startsWith("/*")) {
                        continue;
                    }
                    for (String token : FORBIDDEN) {
                        if (t.contains(token)) {
                            violations.add(p + ":" + (i + 1) + ": " + token);
                        }
                    }
                }
            }
        }
        assertThat(violations).isEmpty();
    }
}
