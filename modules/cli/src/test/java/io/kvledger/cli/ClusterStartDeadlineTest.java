package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The start deadline of {@code cluster}'s and {@code demo --live}'s node processes is an option
 * whose default suits a loaded machine, and a node that misses it is said to have missed it (with
 * how long it had been starting), not to have failed to start.
 */
class ClusterStartDeadlineTest {

    @TempDir
    Path dir;

    @Test
    void aNodeSlowerThanTheDeadlineIsSaidToHaveMissedIt() {
        // no JVM answers HTTP within a millisecond of its start: the deadline passes while the node still starts
        CliRun.Outcome r = CliRun.run("cluster", "--prefill", "1", "--decode", "1", "--requests", "1",
                "--start-timeout-s", "0.001", "--out", dir.resolve("run").toString());
        assertThat(r.code()).as(r.out() + r.err()).isEqualTo(2);
        assertThat(r.err()).containsPattern("kvledger cluster: node P0 did not answer /healthz within the start deadline "
                + "\\(--start-timeout-s 0.001\\): the deadline passed \\d+\\.\\d s after it was started, its process still "
                + "running \\(a loaded machine starts slowly: give a longer --start-timeout-s\\); its log \\(")
                .doesNotContain("did not start;");
    }

    @Test
    void theDeadlineIsAnOptionWithALoadedMachinesDefault() {
        assertThat(CliRun.run("help", "cluster").out()).containsPattern("--start-timeout-s=S\\s+Give up on a node process")
                .contains("(default: 300;");
        assertThat(CliRun.run("help", "demo").out()).contains("--start-timeout-s=S");
        CliRun.Outcome zero = CliRun.run("cluster", "--start-timeout-s", "0", "--out", dir.resolve("z").toString());
        assertThat(zero.code()).isEqualTo(2);
        assertThat(zero.err()).contains("--start-timeout-s must be a positive number of seconds, got 0");
        assertThat(dir.resolve("z")).doesNotExist();
        CliRun.Outcome demo = CliRun.run("demo", "--live", "--start-timeout-s", "-1", "--out", dir.resolve("d").toString());
        assertThat(demo.code()).isEqualTo(2);
        assertThat(demo.err()).contains("'-1' is not a duration");
    }
}
