package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvledger cluster} end to end: node processes on loopback, real ZMQ between them, real
 * UCX transfers between the processes, every transferred byte checked by the decode, then
 * {@code hangs} over the journals.
 */
class LiveClusterTest {

    @TempDir
    Path dir;

    @Test
    void aCleanWriteRunServesEveryRequestAndLeavesNoFinding() {
        CliRun.Outcome r = CliRun.run("cluster", "--prefill", "1", "--decode", "1", "--mode", "write", "--requests", "30",
                "--out", dir.resolve("run").toString(), "--timeout-s", "120");
        assertThat(r.out()).as(r.err()).contains("30 requests, 30 ok, 0 failed");
        assertThat(r.out()).as("the run's wall time as every report writes times")
                .containsPattern("KV bytes transferred and verified; \\d+\\.\\d{6} s\n");
        assertThat(r.out()).contains("no findings");
        assertThat(r.out()).containsPattern("P0: \\d+ events, 30 notifies sent");
        assertThat(r.code()).as(r.out() + r.err()).isZero();
    }

    @Test
    void aCleanTwoByTwoReadRunServesEveryRequest() {
        CliRun.Outcome r = CliRun.run("cluster", "--prefill", "2", "--decode", "2", "--mode", "read", "--requests", "40",
                "--out", dir.resolve("run").toString(), "--timeout-s", "120", "--seed", "3");
        assertThat(r.out()).as(r.err()).contains("40 requests, 40 ok, 0 failed");
        assertThat(r.out()).contains("no findings");
        for (String node : new String[] {"P0", "P1", "D0", "D1"}) {
            assertThat(r.out()).as(node).containsPattern(node + ": [1-9]\\d* events");
        }
        assertThat(r.code()).as(r.out() + r.err()).isZero();
    }

    @Test
    void droppedNotifiesAndAKilledDecodeAreReportedNotHidden() {
        CliRun.Outcome r = CliRun.run("cluster", "--prefill", "1", "--decode", "2", "--mode", "write", "--requests", "24",
                "--faults", "drop=0.2", "--kill", "D1@12", "--out", dir.resolve("run").toString(), "--timeout-s", "40",
                "--defer-timeout-s", "4", "--stuck-after-s", "2");
        assertThat(r.code()).as(r.out() + r.err()).isEqualTo(1);
        // Requests whose notify was dropped hang until --timeout-s, so not all 24 may be sent.
        assertThat(r.out()).containsPattern("[1-9]\\d* requests, \\d+ ok, [1-9]\\d* failed");
        assertThat(r.out()).contains("D1: no status");
        assertThat(r.out()).doesNotContain("no findings");
        assertThat(r.err()).contains("kill -9 D1");
    }
}
