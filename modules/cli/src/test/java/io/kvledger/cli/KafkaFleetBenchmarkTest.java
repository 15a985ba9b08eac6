package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvledger.core.config.TransferMode;
import io.kvledger.ledger.kafka.KafkaSource;
import io.kvledger.ledger.kafka.KafkaUri;
import io.kvledger.ledger.kafka.TestBroker;
import io.kvledger.node.sim.SimJournalRecorder;
import io.kvledger.sim.SimOptions;
import io.kvledger.sim.Simulation;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Figures, not a test (benchmarks/kafka-fleet.sh runs it; skipped otherwise): a simulated cluster
 * of {@code kvledger.kafka.nodes} nodes (half prefill, half decode) shipped with one
 * {@code ship --no-follow} to a real single-node broker (entries per second, acknowledged), then
 * {@code hangs} over the topic and over the same journals on disk, alternated for
 * {@code kvledger.kafka.rounds} rounds (the ratio of the medians, in one run). The outputs must be
 * identical, or the figure is void.
 */
class KafkaFleetBenchmarkTest {

    @TempDir
    Path tmp;

    @Test
    void shipRateAndHangsOverATopicAgainstDisk() {
        assumeTrue(Boolean.getBoolean("kvledger.kafka.bench"), "benchmarks/kafka-fleet.sh runs this");
        int nodes = Integer.getInteger("kvledger.kafka.nodes", 10);
        int requests = Integer.getInteger("kvledger.kafka.requests", 200);
        int rounds = Integer.getInteger("kvledger.kafka.rounds", 3);
        Path dir = tmp.resolve("fleet");
        SimOptions o = SimOptions.builder(11, TransferMode.WRITE).requests(requests).nodes(nodes / 2, nodes - nodes / 2)
                .faults(SimJournals.FAULTS).keepLog(false).build();
        try (SimJournalRecorder rec = new SimJournalRecorder(dir, "kafka fleet benchmark")) {
            Simulation.run(o, rec);
        }
        try (TestBroker broker = TestBroker.start(tmp.resolve("broker"))) {
            String uri = broker.uri("fleet");
            long t0 = System.nanoTime();
            CliRun.Outcome ship = CliRun.run("ship", "--no-follow", "--partitions", "16", "--to", uri, dir.toString());
            double shipS = (System.nanoTime() - t0) / 1e9;
            assertThat(ship.code()).as(ship.err()).isZero();
            Matcher m = Pattern.compile("(\\d+) entries acknowledged").matcher(ship.err());
            assertThat(m.find()).isTrue();
            long entries = Long.parseLong(m.group(1));
            System.out.printf(Locale.ROOT, "kafka fleet: %d nodes, %d entries (%d per node); ship --no-follow %.2f s, %.0f entries/s "
                    + "(acknowledged, process start and topic creation included)%n", nodes, entries, entries / nodes, shipS,
                    entries / shipS);
            // a restart: everything is in the topic; it resumes from the partitions' tails, not a scan of the topic
            long t1 = System.nanoTime();
            CliRun.Outcome again = CliRun.run("ship", "--no-follow", "--partitions", "16", "--to", uri, dir.toString());
            double againS = (System.nanoTime() - t1) / 1e9;
            assertThat(again.code()).as(again.err()).isZero();
            assertThat(again.err()).contains("0 entries acknowledged, " + entries + " already in the topic");
            Matcher read = Pattern.compile("found in the tails of their partitions \\((\\d+) records read\\)").matcher(again.err());
            assertThat(read.find()).as(again.err()).isTrue();
            long t2 = System.nanoTime();
            Map<String, Long> scanned = KafkaSource.lastSeqs(KafkaUri.parse(uri), KafkaSource.DEFAULT_TIMEOUT);
            double scanS = (System.nanoTime() - t2) / 1e9;
            assertThat(scanned).hasSize(nodes);
            System.out.printf(Locale.ROOT, "kafka fleet: restart with everything in the topic: ship --no-follow %.2f s, %s of %d "
                    + "records read to resume; a scan of the whole topic (the former start) %.2f s%n", againS, read.group(1),
                    entries, scanS);
            List<Double> disk = new ArrayList<>();
            List<Double> topic = new ArrayList<>();
            for (int r = 0; r < rounds; r++) {
                long a = System.nanoTime();
                CliRun.Outcome fromDisk = CliRun.run("hangs", dir.toString());
                long b = System.nanoTime();
                CliRun.Outcome fromTopic = CliRun.run("hangs", uri);
                long c = System.nanoTime();
                assertThat(fromTopic.out()).isEqualTo(fromDisk.out());
                disk.add((b - a) / 1e9);
                topic.add((c - b) / 1e9);
                System.out.printf(Locale.ROOT, "kafka fleet: round %d: hangs disk %.2f s, topic %.2f s%n", r + 1,
                        disk.getLast(), topic.getLast());
            }
            double md = median(disk);
            double mt = median(topic);
            System.out.printf(Locale.ROOT, "kafka fleet: hangs median disk %.2f s, topic %.2f s, ratio %.2fx%n", md, mt, mt / md);
        }
    }

    private static double median(List<Double> v) {
        List<Double> s = v.stream().sorted().toList();
        return s.get(s.size() / 2);
    }
}
