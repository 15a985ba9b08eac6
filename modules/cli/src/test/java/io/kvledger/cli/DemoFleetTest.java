package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvledger demo --fleet} end to end: the broker from the build's classpath file
 * (modules/kafka-broker) in a child JVM, two prefill and two decode node processes with faults,
 * each shipping its journal with {@code node --ship}, the top-up {@code ship --no-follow}, then
 * {@code hangs} on the topic equal to {@code hangs} on disk; the broker's process and data are gone
 * at the end. Minutes on a loaded 2-core machine (five JVMs besides the test's): run with
 * {@code -Dkvledger.slow=true}, as the other slow live-cluster tests.
 */
class DemoFleetTest {

    @TempDir
    Path dir;

    @Test
    @EnabledIfSystemProperty(named = "kvledger.slow", matches = "true|1")
    void aFleetShipsToARealBrokerAndHangsOnTheTopicIsTheReportFromDisk() {
        Path out = dir.resolve("fleet");
        long t0 = System.nanoTime();
        CliRun.Outcome r = CliRun.run("demo", "--fleet", "--requests", "30", "--faults", "dup=0.05,delay=0.05,fail=0.05",
                "--out", out.toString());
        System.out.println("DemoFleetTest: demo --fleet took " + (System.nanoTime() - t0) / 1_000_000 + " ms\n" + r.out()
                + "\n--- stderr ---\n" + r.err());
        String all = r.out() + "\n--- stderr ---\n" + r.err();
        assertThat(r.code()).as(all).isZero();
        assertThat(r.out()).as(all).containsPattern("broker: Apache Kafka 4\\.\\d+\\.\\d+ \\(KRaft, one node\\) on 127\\.0\\.0\\.1:\\d+")
                .contains("== 2 prefill + 2 decode live nodes, faults dup=0.05,delay=0.05,fail=0.05, each shipping its journal to "
                        + "kafka://127.0.0.1:")
                .containsPattern("entries acknowledged, [1-9]\\d* already in the topic")
                .contains(" hangs --stuck-after 2.0 kafka://127.0.0.1:")
                .contains("the topic's report is the one from the 4 journals on disk, byte for byte");
        // the topic held all four nodes' journals (the reading note of hangs on the topic)
        assertThat(r.err()).as(all).containsPattern("note: read [1-9]\\d* record\\(s\\) of 4 node\\(s\\)");
        assertThat(r.out()).as(all).containsPattern("summary: \\d+ finding");
        // torn down: no broker data left, no child process of this JVM running the broker
        assertThat(out.resolve("broker")).doesNotExist();
        assertThat(out.resolve("journals/P0")).isDirectory();
        assertThat(ProcessHandle.current().descendants()
                .filter(p -> p.info().commandLine().orElse("").contains("BrokerMain")).toList()).isEmpty();
    }
}
