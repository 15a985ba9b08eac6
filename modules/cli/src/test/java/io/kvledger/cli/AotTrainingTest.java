package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The AOT cache's training run: every command it runs gives its expected status, and it leaves nothing behind. */
class AotTrainingTest {

    @Test
    void the_training_run_succeeds_and_cleans_up(@TempDir Path tmp) throws Exception {
        assertThat(AotTraining.train(tmp, 20)).as("commands that did not give their expected exit status").isZero();
        try (Stream<Path> left = Files.list(tmp)) {
            assertThat(left).as("the training directory is deleted").isEmpty();
        }
    }
}
