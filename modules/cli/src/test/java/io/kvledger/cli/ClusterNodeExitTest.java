package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvledger cluster} with a node process that exits by itself mid-run (its journal refuses
 * inputs: the named fault {@code --fail-journal}): the summary names the node, its exit status and
 * why its loop stopped, the other nodes stop cleanly, and the run's exit status says it was not clean.
 */
class ClusterNodeExitTest {

    @TempDir
    Path dir;

    @Test
    void aNodeThatExitsByItselfIsNamedWithItsStatusAndTheRunIsNotClean() {
        CliRun.Outcome r = CliRun.run("cluster", "--prefill", "1", "--decode", "1", "--mode", "write", "--requests", "8",
                "--fail-journal", "D0@12", "--out", dir.resolve("run").toString(), "--timeout-s", "30",
                "--defer-timeout-s", "2", "--transfer-timeout-s", "2", "--stuck-after-s", "1");
        assertThat(r.code()).as(r.out() + r.err()).isEqualTo(1);
        assertThat(r.out()).as(r.err()).containsPattern(
                "  exited: D0 exited by itself during the run with status 3: the journal refused an applied input \\(\\w+, "
                        + "injected fault \\(--fail-journal-after 12\\)");
        assertThat(r.out()).as("the prefill stopped cleanly on SIGTERM").doesNotContain("exited: P0")
                .containsPattern("P0: [1-9]\\d* events");
        assertThat(r.out()).containsPattern("D0: 12 events");
    }
}
