package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.TransferMode;
import io.kvledger.journal.RawEntryTailer;
import io.kvledger.journal.RawJournalWriter;
import io.kvledger.ledger.kafka.KafkaSource;
import io.kvledger.ledger.kafka.KafkaUri;
import io.kvledger.ledger.kafka.TestBroker;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import io.kvledger.node.ship.Shipper;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.MatchResult;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvledger ship} and the reading commands on a topic, against a real Apache Kafka broker
 * (KRaft, one node, in a child JVM): shipped journals read back byte for byte and every reading
 * command answers from the topic exactly as from the directories; a shipper killed with -9 mid-stream
 * and restarted loses and doubles nothing once duplicates are dropped; a broker stopped and
 * restarted while a journal grows and a shipper follows it costs nothing either; a shipper started
 * before the recorder and the nodes follows the recordings and journals that appear; a node and a proxy
 * with {@code --ship} ship their own journals (their /metrics have the shipper's counters). No fixed
 * deadline: waits poll with generous bounds.
 */
class KafkaShipTest {

    @TempDir
    static Path shared;

    @TempDir
    Path tmp;

    static TestBroker broker;

    @BeforeAll
    static void startBroker() {
        broker = TestBroker.start(shared.resolve("broker"));
    }

    @AfterAll
    static void stopBroker() {
        if (broker != null) {
            broker.close();
        }
    }

    @Test
    void shippedJournalsReadBackByteForByteAndTheReadingCommandsAnswerAsFromDisk() throws Exception {
        Path dir = tmp.resolve("faulty");
        SimJournals.write(dir, 7, TransferMode.WRITE, 12, SimJournals.FAULTS);
        String uri = broker.uri("fleet-commands");

        CliRun.Outcome ship = CliRun.run("ship", "--no-follow", "--to", uri, dir.toString());
        assertThat(ship.code()).as(ship.err()).isZero();
        Map<String, List<byte[]>> disk = rawEntries(dir);
        long total = disk.values().stream().mapToLong(List::size).sum();
        System.out.println("KafkaShipTest: " + total + " entries of " + disk.size() + " nodes");
        assertThat(ship.err()).contains(total + " entries acknowledged, 0 already in the topic");
        assertSameEntries(readBack(uri, 0), disk);

        String rid = stuckRequest(dir);
        List<String[]> commands = List.of(
                new String[] {"hangs", "@"},
                new String[] {"hangs", "--json", "@"},
                new String[] {"stats", "@"},
                new String[] {"stats", "--json", "@"},
                new String[] {"inspect", "@", "--request", rid},
                new String[] {"replay", "--verify", "@"},
                new String[] {"verify", "@"});
        for (String[] args : commands) {
            CliRun.Outcome fromDisk = CliRun.run(with(args, dir.toString()));
            CliRun.Outcome fromTopic = CliRun.run(with(args, uri));
            String what = String.join(" ", args) + "\n" + fromTopic.err();
            assertThat(fromDisk.out()).as(what).isNotBlank();
            assertThat(fromTopic.code()).as(what).isEqualTo(fromDisk.code());
            assertThat(fromTopic.out()).as(what).isEqualTo(fromDisk.out());
            assertThat(fromTopic.err()).as(what).contains("note: read " + total + " record(s) of " + disk.size() + " node(s)");
        }

        // journal export from the topic writes the same files as from the directories, byte for byte
        Path exportDisk = tmp.resolve("export-disk");
        Path exportTopic = tmp.resolve("export-topic");
        CliRun.Outcome exDisk = CliRun.run("journal", "export", dir.toString(), "--out", exportDisk.toString());
        CliRun.Outcome exTopic = CliRun.run("journal", "export", uri, "--out", exportTopic.toString());
        assertThat(exDisk.code()).as(exDisk.err()).isZero();
        assertThat(exTopic.code()).as(exTopic.err()).isZero();
        assertThat(exTopic.err()).contains("note: read " + total + " record(s) of " + disk.size() + " node(s)");
        Map<String, byte[]> filesDisk = filesUnder(exportDisk);
        Map<String, byte[]> filesTopic = filesUnder(exportTopic);
        assertThat(filesDisk).hasSize(disk.size());
        assertThat(filesTopic.keySet()).containsExactlyElementsOf(filesDisk.keySet());
        long lines = 0;
        for (var e : filesDisk.entrySet()) {
            assertThat(filesTopic.get(e.getKey())).as(e.getKey()).isEqualTo(e.getValue());
            lines += new String(e.getValue(), java.nio.charset.StandardCharsets.UTF_8).lines().count();
        }
        assertThat(lines).as("one line per entry").isEqualTo(total);
        CliRun.Outcome noOut = CliRun.run("journal", "export", uri);
        assertThat(noOut.code()).as(noOut.err()).isEqualTo(2);
        assertThat(noOut.err()).contains("is a Kafka topic: give --out DIR");

        // a second ship finds everything in the topic and sends nothing
        CliRun.Outcome again = CliRun.run("ship", "--no-follow", "--to", uri, dir.toString());
        assertThat(again.code()).as(again.err()).isZero();
        assertThat(again.err()).contains("0 entries acknowledged, " + total + " already in the topic");
        assertThat(recordsIn("fleet-commands")).isEqualTo(total);

        // a window that ends before anything was shipped leaves every node out: said, exit 2
        Thread.sleep(1100); // the window is about record times: at least a second since the one ship that sent
        CliRun.Outcome none = CliRun.run("hangs", uri + "?since=1s");
        assertThat(none.code()).as(none.err()).isEqualTo(2);
        assertThat(none.err()).contains("no node with entries shipped in the last 1 s");
    }

    @Test
    void aShipperKilledMidStreamAndRestartedLosesAndDoublesNothing() throws Exception {
        Map<String, List<byte[]>> source = rawEntries(simulated(tmp.resolve("sim"), 12));
        long total = source.values().stream().mapToLong(List::size).sum();
        System.out.println("KafkaShipTest: " + total + " entries of " + source.size() + " nodes");
        Path live = tmp.resolve("live");
        String topic = "fleet-kill";
        String uri = broker.uri(topic);
        try (Feeder feeder = new Feeder(live, source)) {
            Thread feeding = feeder.start(0.25);
            Path log = tmp.resolve("ship.log");
            Process child = new ProcessBuilder(javaCommand("ship", "--to", uri, live.toString()))
                    .redirectErrorStream(true).redirectOutput(log.toFile()).start();
            // kill -9 once the child has shipped some; the journals grow on after it
            long shippedAtKill = awaitRecords(topic, 1, child, log);
            child.destroyForcibly();
            assertThat(child.waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(feeding.isAlive()).as("the journals still grow when the shipper is killed").isTrue();
            assertThat(shippedAtKill).isLessThan(total);
            feeder.gate.countDown();
            feeding.join();

            CliRun.Outcome restart = CliRun.run("ship", "--no-follow", "--to", uri, live.toString());
            assertThat(restart.code()).as(restart.err()).isZero();
            Matcher m = Pattern.compile("(\\d+) entries acknowledged, (\\d+) already in the topic").matcher(restart.err());
            assertThat(m.find()).as(restart.err()).isTrue();
            assertThat(Long.parseLong(m.group(2))).as("resumed from what the topic held").isPositive();
            assertThat(Long.parseLong(m.group(1)) + Long.parseLong(m.group(2))).isEqualTo(total);
        }
        assertSameEntries(readBack(uri, -1), source);
    }

    @Test
    void aRecordersGrowingJsonLinesShipAsJournalImportMakesThemThroughAKillAndRestart() throws Exception {
        Map<String, List<String>> lines = recorderLines(tmp.resolve("sim"), 12);
        Path rec = tmp.resolve("var-log-kvledger");
        String topic = "fleet-recorder";
        String uri = broker.uri(topic);
        try (LineWriter writer = new LineWriter(rec, lines)) {
            Thread writing = writer.start();
            Path log = tmp.resolve("ship.log");
            Process child = new ProcessBuilder(javaCommand("ship", "--to", uri, rec.toString()))
                    .redirectErrorStream(true).redirectOutput(log.toFile()).start();
            long shippedAtKill = awaitRecords(topic, 1 + lines.size(), child, log);
            child.destroyForcibly();
            assertThat(child.waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(writing.isAlive()).as("the recordings still grow when the shipper is killed").isTrue();
            writer.gate.countDown();
            writing.join();
            assertThat(writer.halfLines).as("lines were seen half written").isPositive();
            System.out.println("KafkaShipTest: " + shippedAtKill + " records shipped from the recordings before kill -9");
        }
        Path imported = tmp.resolve("imported");
        CliRun.Outcome imp = CliRun.run("journal", "import", rec.toString(), imported.toString());
        assertThat(imp.code()).as(imp.err()).isZero();
        Map<String, List<byte[]>> want = rawEntries(imported);
        long total = want.values().stream().mapToLong(List::size).sum();

        CliRun.Outcome restart = CliRun.run("ship", "--no-follow", "--to", uri, rec.toString());
        assertThat(restart.code()).as(restart.err()).isZero();
        Matcher m = Pattern.compile("(\\d+) entries acknowledged, (\\d+) already in the topic").matcher(restart.err());
        assertThat(m.find()).as(restart.err()).isTrue();
        assertThat(Long.parseLong(m.group(2))).as("resumed from what the topic held").isPositive();
        assertThat(Long.parseLong(m.group(1)) + Long.parseLong(m.group(2))).isEqualTo(total);
        Matcher tails = Pattern.compile("(\\d+) of " + want.size() + " node\\(s\\) already in the topic, found in the tails of "
                + "their partitions \\((\\d+) records read\\)").matcher(restart.err());
        assertThat(tails.find()).as(restart.err()).isTrue();
        assertThat(Long.parseLong(tails.group(1))).isPositive();
        assertThat(Long.parseLong(tails.group(2))).isPositive().isLessThanOrEqualTo(Long.parseLong(m.group(2)));
        System.out.println("KafkaShipTest: recordings of " + want.size() + " nodes, " + total + " entries; the restart sent "
                + m.group(1) + ", found " + m.group(2) + " in the topic");

        assertSameEntries(readBack(uri, -1), want);
        for (String[] args : List.of(new String[] {"hangs", "@"}, new String[] {"hangs", "--json", "@"})) {
            CliRun.Outcome fromDisk = CliRun.run(with(args, imported.toString()));
            CliRun.Outcome fromTopic = CliRun.run(with(args, uri));
            assertThat(fromDisk.out()).isNotBlank();
            assertThat(fromTopic.code()).as(fromTopic.err()).isEqualTo(fromDisk.code());
            assertThat(fromTopic.out()).isEqualTo(fromDisk.out());
        }
        Path exportDisk = tmp.resolve("export-disk");
        Path exportTopic = tmp.resolve("export-topic");
        assertThat(CliRun.run("journal", "export", imported.toString(), "--out", exportDisk.toString()).code()).isZero();
        assertThat(CliRun.run("journal", "export", uri, "--out", exportTopic.toString()).code()).isZero();
        Map<String, byte[]> a = filesUnder(exportDisk);
        Map<String, byte[]> b = filesUnder(exportTopic);
        assertThat(b.keySet()).containsExactlyElementsOf(a.keySet()).hasSize(want.size());
        a.forEach((k, v) -> assertThat(b.get(k)).as(k).isEqualTo(v));
    }

    @Test
    void recordingsAndJournalsThatAppearAfterTheStartAreFollowedAndShipAsJournalImportMakesThem() throws Exception {
        Map<String, List<String>> simLines = recorderLines(tmp.resolve("sim"), 4);
        List<String> simNodes = new ArrayList<>(simLines.keySet()); // D0, P0: their journals appear later too
        // the recordings are of the same run under other node ids (P1, D1): each node is shipped from one journal
        Map<String, List<String>> lines = new TreeMap<>();
        for (var e : simLines.entrySet()) {
            String id = e.getKey().replace('0', '1');
            List<String> l = new ArrayList<>(e.getValue());
            String header = l.getFirst().replace("\"node_id\":\"" + e.getKey() + "\"", "\"node_id\":\"" + id + "\"");
            assertThat(header).isNotEqualTo(l.getFirst());
            l.set(0, header);
            lines.put(id, l);
        }
        List<String> names = new ArrayList<>(lines.keySet());
        names.addAll(simNodes);
        assertThat(names).hasSize(4).doesNotHaveDuplicates();
        Path rec = tmp.resolve("recorder"); // the recorder makes it when the engine starts
        Path nodes = Files.createDirectories(tmp.resolve("nodes")); // empty: the nodes start later
        String topic = "fleet-late";
        String uri = broker.uri(topic);
        Path log = tmp.resolve("ship.log");
        Process child = new ProcessBuilder(javaCommand("ship", "--to", uri, rec.toString(), nodes.toString()))
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            awaitLine(log, "shipping nothing yet to ", child);
            assertThat(Files.readString(log)).contains(rec + " does not exist yet; waiting for it")
                    .contains(nodes + " holds no journal or recording yet; watching it");

            // two worker ranks' recordings: the header and half the lines, then the rest
            Files.createDirectories(rec);
            for (String n : names.subList(0, 2)) {
                List<String> l = lines.get(n);
                Files.write(rec.resolve(n + ".jsonl"), l.subList(0, l.size() / 2));
            }
            for (String n : names.subList(0, 2)) {
                awaitLine(log, "following " + rec.resolve(n + ".jsonl") + " (node ", child);
            }
            for (String n : names.subList(0, 2)) {
                List<String> l = lines.get(n);
                Files.write(rec.resolve(n + ".jsonl"), l.subList(l.size() / 2, l.size()),
                        java.nio.file.StandardOpenOption.APPEND);
            }
            // two nodes' journals, each moved in whole under the watched directory
            for (String n : names.subList(2, 4)) {
                Path staging = tmp.resolve("staging-" + n);
                copyTree(tmp.resolve("sim").resolve(n), staging);
                Files.move(staging, nodes.resolve(n), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            }
            for (String n : names.subList(2, 4)) {
                awaitLine(log, "following " + nodes.resolve(n) + " (node ", child);
            }
            // a second journal of a node shipped already is refused, not merged into its stream
            Path again = tmp.resolve("staging-again");
            copyTree(tmp.resolve("sim").resolve(names.get(2)), again);
            Files.move(again, nodes.resolve("again"), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            awaitLine(log, "error: " + nodes.resolve("again") + " is of node " + names.get(2)
                    + ", shipped from another journal already", child);

            Path imported = tmp.resolve("imported");
            CliRun.Outcome imp = CliRun.run("journal", "import", rec.toString(), imported.toString());
            assertThat(imp.code()).as(imp.err()).isZero();
            for (String n : names.subList(2, 4)) {
                copyTree(nodes.resolve(n), imported.resolve(n));
            }
            Map<String, List<byte[]>> want = rawEntries(imported);
            assertThat(want).hasSize(4);
            long total = want.values().stream().mapToLong(List::size).sum();
            awaitRecords(topic, total, child, log);
            child.destroy(); // SIGTERM
            assertThat(child.waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(child.exitValue()).as("3: a journal was refused; " + Files.readString(log)).isEqualTo(3);
            assertThat(Files.readString(log)).contains(total + " entries acknowledged");
            System.out.println("KafkaShipTest: 2 recordings and 2 journals that appeared after the start, " + total
                    + " entries shipped");

            assertSameEntries(readBack(uri, 0), want);
            for (String[] args : List.of(new String[] {"hangs", "@"}, new String[] {"hangs", "--json", "@"})) {
                CliRun.Outcome fromDisk = CliRun.run(with(args, imported.toString()));
                CliRun.Outcome fromTopic = CliRun.run(with(args, uri));
                assertThat(fromDisk.out()).isNotBlank();
                assertThat(fromTopic.code()).as(fromTopic.err()).isEqualTo(fromDisk.code());
                assertThat(fromTopic.out()).isEqualTo(fromDisk.out());
            }
        } finally {
            child.destroyForcibly();
        }
    }

    private static void copyTree(Path from, Path to) throws IOException {
        try (var walk = Files.walk(from)) {
            for (Path p : walk.toList()) {
                Path dest = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(dest);
                } else {
                    Files.copy(p, dest);
                }
            }
        }
    }

    @Test
    void aBadLineInARecordingIsNamedAndStopsOnlyThatFilesShipping() throws Exception {
        Map<String, List<String>> lines = recorderLines(tmp.resolve("sim"), 4);
        Path rec = Files.createDirectories(tmp.resolve("rec"));
        String bad = lines.keySet().iterator().next();
        int badLine = 7;
        for (var e : lines.entrySet()) {
            List<String> l = new ArrayList<>(e.getValue());
            if (e.getKey().equals(bad)) {
                l.add(badLine - 1, "{\"kind\":\"input\",\"type\":\"request_admitted\",\"at_ns\":\"soon\"}");
            }
            Files.write(rec.resolve(e.getKey() + ".jsonl"), l);
        }
        Path before = Files.createDirectories(tmp.resolve("before"));
        for (var e : lines.entrySet()) {
            List<String> l = e.getKey().equals(bad) ? e.getValue().subList(0, badLine - 1) : e.getValue();
            Files.write(before.resolve(e.getKey() + ".jsonl"), l);
        }
        Path imported = tmp.resolve("imported");
        assertThat(CliRun.run("journal", "import", before.toString(), imported.toString()).code()).isZero();
        Map<String, List<byte[]>> want = rawEntries(imported);

        String uri = broker.uri("fleet-bad-line");
        CliRun.Outcome ship = CliRun.run("ship", "--no-follow", "--to", uri, rec.toString());
        assertThat(ship.code()).as(ship.err()).isEqualTo(3);
        assertThat(ship.err()).contains("kvledger ship: error: " + rec.resolve(bad + ".jsonl") + ": line " + badLine + ": ")
                .contains(bad + " is shipped up to seq " + (want.get(bad).size() - 1));
        assertSameEntries(readBack(uri, 0), want);

        CliRun.Outcome importRefuses = CliRun.run("journal", "import", rec.toString(), tmp.resolve("refused").toString());
        assertThat(importRefuses.code()).isEqualTo(2);
        assertThat(importRefuses.err()).contains("line " + badLine);
    }

    @Test
    void anotherRunOfANodeUnderItsIdIsRefusedNotMergedIntoTheTopic() throws Exception {
        Map<String, List<String>> lines = recorderLines(tmp.resolve("sim"), 4);
        Path rec = Files.createDirectories(tmp.resolve("rec"));
        for (var e : lines.entrySet()) {
            Files.write(rec.resolve(e.getKey() + ".jsonl"), e.getValue());
        }
        String uri = broker.uri("fleet-rerun");
        CliRun.Outcome first = CliRun.run("ship", "--no-follow", "--to", uri, rec.toString());
        assertThat(first.code()).as(first.err()).isZero();
        Path imported = tmp.resolve("imported");
        assertThat(CliRun.run("journal", "import", rec.toString(), imported.toString()).code()).isZero();
        Map<String, List<byte[]>> want = rawEntries(imported);
        String node = lines.keySet().iterator().next();
        List<String> all = lines.get(node);
        Path file = rec.resolve(node + ".jsonl");

        // a new recording of the node, shorter than what the topic holds
        Files.write(file, all.subList(0, 10));
        CliRun.Outcome shorter = CliRun.run("ship", "--no-follow", "--to", uri, rec.toString());
        assertThat(shorter.code()).as(shorter.err()).isEqualTo(3);
        assertThat(shorter.err()).contains("kvledger ship: error: " + file + " is not the journal the topic holds for node "
                + node + ": it ends at seq 9, before seq " + (want.get(node).size() - 1) + ", the last the topic holds");

        // one as long, whose last entry differs (its time)
        List<String> changed = new ArrayList<>(all);
        Matcher at = Pattern.compile("\"at_ns\":(\\d+)").matcher(changed.getLast());
        assertThat(at.find()).as(changed.getLast()).isTrue();
        changed.set(changed.size() - 1, at.replaceFirst("\"at_ns\":" + (Long.parseLong(at.group(1)) + 1)));
        changed.add(all.getLast());
        Files.write(file, changed);
        CliRun.Outcome differs = CliRun.run("ship", "--no-follow", "--to", uri, rec.toString());
        assertThat(differs.code()).as(differs.err()).isEqualTo(3);
        assertThat(differs.err()).contains(file + " is not the journal the topic holds for node " + node + ": its entry seq "
                + (want.get(node).size() - 1) + " differs from the topic's");
        // nothing of the other run reached the topic
        assertSameEntries(readBack(uri, 0), want);
    }

    @Test
    void aBrokerStoppedAndRestartedUnderLoadCostsNoEntry() throws Exception {
        Map<String, List<byte[]>> source = rawEntries(simulated(tmp.resolve("sim"), 12));
        long total = source.values().stream().mapToLong(List::size).sum();
        System.out.println("KafkaShipTest: " + total + " entries of " + source.size() + " nodes");
        Path live = tmp.resolve("live");
        String topic = "fleet-restart";
        broker.createTopic(topic, 4);
        String uri = broker.uri(topic);
        StringWriter err = new StringWriter();
        AtomicBoolean stop = new AtomicBoolean();
        try (Feeder feeder = new Feeder(live, source)) {
            Thread feeding = feeder.start(0.2);
            List<Path> dirs = new ArrayList<>(feeder.dirs());
            try (Shipper shipper = new Shipper(new Shipper.Options(KafkaUri.parse(uri), dirs, true, 8 << 20, 4), new PrintWriter(err, true))) {
                int[] rc = {-1};
                Thread running = Thread.ofPlatform().name("shipper").start(() -> {
                    try {
                        rc[0] = shipper.run(stop::get);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
                awaitCount(shipper::acknowledged, 1, err);
                broker.stop();
                long ackedWhileDown = shipper.acknowledged();
                // the journals grow to their end while the broker is away
                feeder.gate.countDown();
                feeding.join();
                assertThat(shipper.acknowledged()).as("nothing is acknowledged while the broker is down").isEqualTo(ackedWhileDown);
                broker.restart();
                awaitCount(shipper::acknowledged, total, err);
                stop.set(true);
                running.join(TimeUnit.MINUTES.toMillis(2));
                assertThat(rc[0]).as(err.toString()).isZero();
                assertThat(shipper.acknowledged()).isEqualTo(total);
                assertThat(ackedWhileDown).isLessThan(total);
            } finally {
                stop.set(true);
            }
        }
        assertSameEntries(readBack(uri, 0), source);
    }

    @Test
    void sigtermWithTheBrokerDownAndTheBufferFullSaysWhatWasNotAcknowledgedAndExits4() throws Exception {
        // Each node's first entries, about 3 MiB in all: three times the buffer, a third of the time to feed.
        Map<String, List<byte[]>> source = prefixes(rawEntries(simulated(tmp.resolve("sim"), 24)), 3L << 20);
        long total = source.values().stream().mapToLong(List::size).sum();
        long bytes = source.values().stream().flatMap(List::stream).mapToLong(b -> b.length).sum();
        System.out.println("KafkaShipTest: " + total + " entries, " + bytes + " bytes, of " + source.size() + " nodes");
        assertThat(bytes).as("the journals hold more than the 1 MiB buffer").isGreaterThan(2L << 20);
        String topic = "fleet-sigterm";
        String uri = broker.uri(topic);
        Path live = tmp.resolve("live");
        Path log = tmp.resolve("ship.log");
        String said;
        try (Feeder feeder = new Feeder(live, source)) {
            Thread feeding = feeder.start(0.02);
            Process child = new ProcessBuilder(javaCommand("ship", "--buffer-mb", "1", "--metrics", "127.0.0.1:0", "--to", uri,
                    live.toString())).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            boolean stopped = false;
            try {
                awaitRecords(topic, 1, child, log);
                broker.stop();
                stopped = true;
                feeder.gate.countDown();
                feeding.join();
                awaitLine(log, "takes no entries: the buffer (1 MiB", child);
                // /metrics says the buffer is full, with the backlog it holds
                Matcher at = Pattern.compile("metrics on (http://127\\.0\\.0\\.1:\\d+/metrics)").matcher(Files.readString(log));
                assertThat(at.find()).as(Files.readString(log)).isTrue();
                Map<String, Double> full = series(scrapeText(java.net.http.HttpClient.newHttpClient(), at.group(1)));
                assertThat(full).as(Files.readString(log)).containsEntry("kvledger_ship_buffer_full", 1.0);
                assertThat(full.get("kvledger_ship_backlog_entries")).isPositive();
                assertThat(full.get("kvledger_ship_backlog_bytes")).isPositive();
                System.out.println("KafkaShipTest: /metrics with the 1 MiB buffer full: " + full.get("kvledger_ship_backlog_entries")
                        .longValue() + " entries, " + full.get("kvledger_ship_backlog_bytes").longValue() + " bytes");
                child.destroy(); // SIGTERM
                assertThat(child.waitFor(2, TimeUnit.MINUTES)).as("ship ended after SIGTERM").isTrue();
                said = Files.readString(log);
                assertThat(child.exitValue()).as(said).isEqualTo(4);
            } finally {
                child.destroyForcibly();
                if (stopped) {
                    broker.restart();
                }
            }
        }
        Matcher m = Pattern.compile("kvledger ship: stopped: (\\d+) entries acknowledged, 0 already in the topic, (\\d+) not "
                + "acknowledged \\(they stay in the journals; a restart ships them from what the topic holds\\); exit status 4")
                .matcher(said);
        assertThat(m.find()).as(said).isTrue();
        long acked = Long.parseLong(m.group(1));
        long unacked = Long.parseLong(m.group(2));
        assertThat(acked).isPositive();
        assertThat(unacked).isPositive();
        assertThat(acked + unacked).isLessThan(total);
        System.out.println("KafkaShipTest: SIGTERM with the buffer full: " + acked + " acknowledged, " + unacked
                + " not acknowledged, of " + total);

        CliRun.Outcome restart = CliRun.run("ship", "--no-follow", "--to", uri, live.toString());
        assertThat(restart.code()).as(restart.err()).isZero();
        assertSameEntries(readBack(uri, -1), source);
    }

    @Test
    void shipsMetricsShowTheBacklogGrowWhileTheBrokerIsAwayAndEmptyOnceItIsBack() throws Exception {
        Map<String, List<byte[]>> source = prefixes(rawEntries(simulated(tmp.resolve("sim"), 4)), 256L << 10);
        long total = source.values().stream().mapToLong(List::size).sum();
        String topic = "fleet-metrics";
        broker.createTopic(topic, 4);
        String uri = broker.uri(topic);
        Path live = tmp.resolve("live"); // not there yet: ship waits for it
        Path log = tmp.resolve("ship.log");
        Path promtool = io.kvledger.node.Promtool.require();
        Process child = new ProcessBuilder(javaCommand("ship", "--metrics", "127.0.0.1:0", "--to", uri, live.toString()))
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
        boolean stopped = false;
        Map<String, RawJournalWriter> writers = new LinkedHashMap<>();
        try {
            awaitLine(log, "/metrics", child);
            Matcher at = Pattern.compile("metrics on (http://127\\.0\\.0\\.1:\\d+/metrics)").matcher(Files.readString(log));
            assertThat(at.find()).as(Files.readString(log)).isTrue();
            String url = at.group(1);

            // every series from the first scrape, at 0, and promtool's lint passes
            String first = scrapeText(http, url);
            Map<String, Double> s0 = series(first);
            for (String name : List.of("kvledger_ship_backlog_entries", "kvledger_ship_acknowledged_total",
                    "kvledger_ship_backlog_bytes", "kvledger_ship_sent_total", "kvledger_ship_skipped_total",
                    "kvledger_ship_buffer_full", "kvledger_ship_journals", "kvledger_ship_journals_stopped_total")) {
                assertThat(s0).as(first).containsEntry(name, 0.0);
            }
            assertPromtoolPasses(promtool, first);

            // journals appear and half of each is shipped
            Map<String, Integer> fed = new LinkedHashMap<>();
            for (var e : source.entrySet()) {
                writers.put(e.getKey(), RawJournalWriter.create(live.resolve(e.getKey())));
                fed.put(e.getKey(), 0);
            }
            long half = feed(writers, source, fed, 0.5);
            // one scrape reads its series one after another, not at one instant: a scrape taken as the last
            // acknowledgements land may show them in acknowledged_total and not yet in the backlog read
            // before it, so the backlog's 0 is awaited with them (it must get there), not read beside them
            Map<String, Double> up = awaitSeries(http, url, log, child, m -> m.get("kvledger_ship_acknowledged_total") == half
                    && m.get("kvledger_ship_journals") == source.size() && m.get("kvledger_ship_backlog_entries") == 0
                    && m.get("kvledger_ship_backlog_bytes") == 0);
            assertThat(up.get("kvledger_ship_sent_total")).isEqualTo((double) half);

            // the broker away: what the journals gain stays in the backlog, which grows with them
            broker.stop();
            stopped = true;
            long quarter = feed(writers, source, fed, 0.75) - half;
            long bytes1 = unshippedBytes(source, fed, 0.5);
            Map<String, Double> down1 = awaitSeries(http, url, log, child, m -> m.get("kvledger_ship_backlog_entries") == quarter
                    && m.get("kvledger_ship_backlog_bytes") == bytes1);
            assertThat(down1.get("kvledger_ship_acknowledged_total")).isEqualTo((double) half);
            assertThat(down1.get("kvledger_ship_backlog_bytes")).isEqualTo((double) bytes1);
            long rest = feed(writers, source, fed, 1.0) - half;
            Map<String, Double> down2 = awaitSeries(http, url, log, child, m -> m.get("kvledger_ship_backlog_entries") == rest);
            assertThat(rest).isGreaterThan(quarter);
            assertThat(down2.get("kvledger_ship_acknowledged_total")).isEqualTo((double) half);
            assertThat(down2.get("kvledger_ship_backlog_bytes")).isGreaterThan(down1.get("kvledger_ship_backlog_bytes"));
            double perNode = down2.entrySet().stream().filter(e -> e.getKey().startsWith("kvledger_ship_node_backlog_entries{"))
                    .mapToDouble(Map.Entry::getValue).sum();
            assertThat(perNode).as("the nodes' backlogs add up to the backlog").isEqualTo((double) rest);
            String whileDown = scrapeText(http, url);
            assertPromtoolPasses(promtool, whileDown);

            // back: the backlog drains to 0, every entry acknowledged, each node up to its last seq
            broker.restart();
            stopped = false;
            Map<String, Double> back = awaitSeries(http, url, log, child, m -> m.get("kvledger_ship_backlog_entries") == 0
                    && m.get("kvledger_ship_acknowledged_total") == total && m.get("kvledger_ship_backlog_bytes") == 0);
            assertThat(back.get("kvledger_ship_backlog_bytes")).isZero();
            assertThat(back.get("kvledger_ship_sent_total")).isEqualTo((double) total);
            for (var e : source.entrySet()) {
                String label = "{node=\"" + e.getKey() + "\"}";
                assertThat(back).containsEntry("kvledger_ship_node_acknowledged_total" + label, (double) e.getValue().size());
                assertThat(back).containsEntry("kvledger_ship_node_acknowledged_seq" + label,
                        (double) RawEntryTailer.seq(e.getValue().getLast()));
                assertThat(back).containsEntry("kvledger_ship_node_backlog_entries" + label, 0.0);
            }
            System.out.println("KafkaShipTest: /metrics of ship: " + half + " entries acknowledged, then with the broker away "
                    + "a backlog of " + quarter + " then " + rest + " entries (" + down2.get("kvledger_ship_backlog_bytes").longValue()
                    + " bytes), 0 once it was back; " + total + " acknowledged");
            child.destroy(); // SIGTERM
            assertThat(child.waitFor(2, TimeUnit.MINUTES)).as("ship ended after SIGTERM").isTrue();
            assertThat(child.exitValue()).as(Files.readString(log)).isZero();
        } finally {
            child.destroyForcibly();
            writers.values().forEach(RawJournalWriter::close);
            if (stopped) {
                broker.restart();
            }
        }
        assertSameEntries(readBack(uri, 0), source);
    }

    /** Appends each node's entries up to {@code share} of its journal (from this thread); returns the entries fed in all. */
    private static long feed(Map<String, RawJournalWriter> writers, Map<String, List<byte[]>> source, Map<String, Integer> fed,
                             double share) {
        long n = 0;
        for (var e : source.entrySet()) {
            List<byte[]> all = e.getValue();
            int upTo = share >= 1.0 ? all.size() : (int) (all.size() * share);
            for (int i = fed.get(e.getKey()); i < upTo; i++) {
                writers.get(e.getKey()).append(all.get(i));
            }
            fed.put(e.getKey(), Math.max(fed.get(e.getKey()), upTo));
            n += fed.get(e.getKey());
        }
        return n;
    }

    /** The bytes of each node's entries from {@code from} of its journal up to what is fed. */
    private static long unshippedBytes(Map<String, List<byte[]>> source, Map<String, Integer> fed, double from) {
        long b = 0;
        for (var e : source.entrySet()) {
            List<byte[]> all = e.getValue();
            for (int i = (int) (all.size() * from); i < fed.get(e.getKey()); i++) {
                b += all.get(i).length;
            }
        }
        return b;
    }

    private static String scrapeText(java.net.http.HttpClient client, String url) throws Exception {
        java.net.http.HttpResponse<String> r = client.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(url)).GET().build(),
                java.net.http.HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return r.body();
    }

    /** The {@code kvledger_ship*} series of a scrape, by name with its labels as printed. */
    private static Map<String, Double> series(String text) {
        Map<String, Double> out = new TreeMap<>();
        Matcher m = Pattern.compile("(?m)^(kvledger_ship\\w*(?:\\{[^}]*})?) ([0-9.E+-]+)$").matcher(text);
        while (m.find()) {
            assertThat(out.put(m.group(1), Double.parseDouble(m.group(2)))).as(text).isNull();
        }
        return out;
    }

    /** Scrapes (polling, generous bound) until {@code done} holds; returns that scrape's series. */
    private static Map<String, Double> awaitSeries(java.net.http.HttpClient client, String url, Path log, Process child,
                                                   java.util.function.Predicate<Map<String, Double>> done) throws Exception {
        long end = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
        Map<String, Double> last = Map.of();
        while (System.nanoTime() < end) {
            assertThat(child.isAlive()).as("ship exited early: %s", Files.readString(log)).isTrue();
            last = series(scrapeText(client, url));
            if (done.test(last)) {
                return last;
            }
            Thread.sleep(100);
        }
        throw new AssertionError("the metrics did not get there in 3 min; last scrape: " + last + "\nship said: "
                + Files.readString(log));
    }

    private static void assertPromtoolPasses(Path promtool, String scrape) throws Exception {
        io.kvledger.node.Promtool.Verdict v = io.kvledger.node.Promtool.check(promtool, scrape);
        assertThat(v.output()).as("promtool check metrics on ship's /metrics").isBlank();
        assertThat(v.exit()).as("promtool's exit status: " + v.output()).isZero();
    }

    @Test
    void aRestartAfterCleanStopsReadsOneRecordPerNodeNotThePartitionsTail() throws Exception {
        Path sim = simulated(tmp.resolve("sim"), 12);
        Map<String, List<byte[]>> source = rawEntries(sim);
        assertThat(source).hasSize(2);
        long total = source.values().stream().mapToLong(List::size).sum();
        String topic = "fleet-marks";
        broker.createTopic(topic, 1); // one partition: the second node's records all come after the first's
        String uri = broker.uri(topic);
        List<String> nodes = new ArrayList<>(source.keySet());
        nodes.sort(java.util.Comparator.comparingInt(n -> source.get(n).size())); // the bigger journal second
        for (String node : nodes) {
            CliRun.Outcome one = CliRun.run("ship", "--no-follow", "--to", uri, sim.resolve(node).toString());
            assertThat(one.code()).as(one.err()).isZero();
            assertThat(one.err()).contains(source.get(node).size() + " entries acknowledged, 0 already in the topic");
        }
        // the first node's last record lies under all of the second's: its tail would be read back to it
        long second = source.get(nodes.get(1)).size();
        assertThat(second).isGreaterThan(KafkaSource.TAIL_WINDOW);

        CliRun.Outcome again = CliRun.run("ship", "--no-follow", "--to", uri, sim.toString());
        assertThat(again.code()).as(again.err()).isZero();
        assertThat(again.err()).contains("2 of 2 node(s) already in the topic, found in the tails of their partitions "
                + "(2 records read), 2 of them at the record their last clean stop marked");
        assertThat(again.err()).contains("0 entries acknowledged, " + total + " already in the topic");
        System.out.println("KafkaShipTest: a restart after clean stops read 2 records to resume " + nodes + " (" + total
                + " entries; the second node's " + second + " records lie after the first's last)");

        // a journal that grew since its clean stop resumes from the mark and ships only what is new
        Path p0 = sim.resolve(nodes.get(0));
        io.kvledger.journal.JournalHeader header;
        long last = 0;
        try (io.kvledger.journal.JournalReader reader = io.kvledger.journal.JournalReader.open(p0)) {
            header = reader.header();
            for (io.kvledger.journal.JournalEntry e : reader) {
                last = Math.max(last, e.atNs());
            }
        }
        try (io.kvledger.journal.JournalWriter w = io.kvledger.journal.JournalWriter.open(p0, header)) {
            w.appendInput(new io.kvledger.core.event.NodeEvent.Tick(last + 1_000_000));
        }
        CliRun.Outcome grown = CliRun.run("ship", "--no-follow", "--to", uri, sim.toString());
        assertThat(grown.code()).as(grown.err()).isZero();
        assertThat(grown.err()).contains("(2 records read), 2 of them at the record their last clean stop marked")
                .contains("1 entries acknowledged, " + total + " already in the topic");
        assertSameEntries(readBack(uri, 0), rawEntries(sim));
    }

    /** The first entries of each node's journal, the same share of each, about {@code bytes} in all. */
    private static Map<String, List<byte[]>> prefixes(Map<String, List<byte[]>> all, long bytes) {
        long have = all.values().stream().flatMap(List::stream).mapToLong(b -> b.length).sum();
        double share = Math.min(1.0, (double) bytes / have);
        Map<String, List<byte[]>> out = new LinkedHashMap<>();
        all.forEach((node, entries) -> out.put(node,
                List.copyOf(entries.subList(0, (int) Math.ceil(entries.size() * share)))));
        return out;
    }

    /** Waits (polling, generous bound) until the child's log holds {@code text}. */
    private static void awaitLine(Path log, String text, Process child) throws Exception {
        long end = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
        while (!Files.readString(log).contains(text)) {
            assertThat(child.isAlive()).as("ship exited early: %s", Files.readString(log)).isTrue();
            if (System.nanoTime() > end) {
                throw new AssertionError("no \"" + text + "\" after 3 min: " + Files.readString(log));
            }
            Thread.sleep(200);
        }
    }

    @Test
    void aNodeShipsItsOwnJournal() throws Exception {
        String uri = broker.uri("fleet-node");
        NodeProcess p0 = new NodeProcess("P0", true, "write", tmp, "--ship", uri);
        p0.start();
        long[] idle;
        try {
            java.net.http.HttpClient client = java.net.http.HttpClient.newHttpClient();
            assertThat(p0.awaitHealthy(client, Duration.ofMinutes(3))).as(p0.logText()).isTrue();
            // the shipper's meters are there from the start, each one series of the node
            shipMetrics(client, p0);
            long have = awaitRecords("fleet-node", 1, null, p0.errLog);
            // an idle node: its backlog drains to 0 and the acknowledged count reaches what the topic held
            long end = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
            do {
                idle = shipMetrics(client, p0);
                if (idle[0] == 0 && idle[1] >= have) {
                    break;
                }
                Thread.sleep(50);
            } while (System.nanoTime() < end);
            assertThat(idle[0]).as("backlog at idle").isZero();
            assertThat(idle[1]).as("acknowledged vs the %d records the topic held before", have)
                    .isGreaterThanOrEqualTo(have).isLessThanOrEqualTo(recordsIn("fleet-node"));
        } finally {
            assertThat(p0.stop()).as(p0.logText()).isZero();
        }
        // at stop, every entry is acknowledged once: the status's count is the topic's, no fewer than /metrics said
        Object acked = ((Map<?, ?>) io.kvledger.journal.json.Json.parse(Files.readString(p0.statusFile()))).get("ship_acknowledged");
        assertThat(((Number) acked).longValue()).isEqualTo(recordsIn("fleet-node")).isGreaterThanOrEqualTo(idle[1]);
        Map<String, List<byte[]>> journal = new TreeMap<>();
        try (RawEntryTailer t = RawEntryTailer.open(p0.journal)) {
            List<byte[]> entries = new ArrayList<>();
            for (byte[] e; (e = t.poll(Duration.ZERO)) != null; ) {
                entries.add(e);
            }
            journal.put(t.header().nodeId(), entries);
        }
        assertThat(journal.get("P0")).hasSizeGreaterThan(1);
        // the node shipped what its journal held when it stopped, its last entries included
        assertSameEntries(readBack(uri, 0), journal);
    }

    @Test
    void aProxyShipsItsOwnJournal() throws Exception {
        String uri = broker.uri("fleet-proxy");
        Path dir = tmp.resolve("proxy");
        int[] ports = io.kvledger.node.cluster.LoopbackPorts.distinct(2);
        Path out = tmp.resolve("proxy.out");
        Path errLog = tmp.resolve("proxy.err");
        Process proxy = new ProcessBuilder(javaCommand("proxy", "--port", String.valueOf(ports[0]), "--ping-port",
                String.valueOf(ports[1]), "--mode", "write", "--journal", dir.toString(), "--proxy-id", "proxy0",
                "--ship", uri)).redirectOutput(out.toFile()).redirectError(errLog.toFile()).start();
        long[] idle;
        try {
            java.net.http.HttpClient client = java.net.http.HttpClient.newHttpClient();
            String metrics = "http://127.0.0.1:" + ports[0] + "/metrics";
            // the shipper's meters, once the proxy answers; then the backlog drains and every entry is acknowledged
            long end = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
            idle = null;
            while (System.nanoTime() < end) {
                assertThat(proxy.isAlive()).as("the proxy exited: %s", Files.readString(errLog)).isTrue();
                try {
                    idle = shipMetrics(client, metrics, "proxy=\"proxy0\"");
                } catch (IOException notUpYet) {
                    Thread.sleep(50);
                    continue;
                }
                if (idle[0] == 0 && idle[1] >= 2 && idle[1] == recordsIn("fleet-proxy")) {
                    break; // the header and ProxyStarted at least
                }
                Thread.sleep(50);
            }
            assertThat(idle).as(Files.readString(errLog)).isNotNull();
            assertThat(idle[0]).as("backlog at idle").isZero();
            assertThat(idle[1]).as("acknowledged").isGreaterThanOrEqualTo(2).isEqualTo(recordsIn("fleet-proxy"));
        } finally {
            proxy.destroy(); // SIGTERM
            assertThat(proxy.waitFor(60, TimeUnit.SECONDS)).isTrue();
        }
        assertThat(proxy.exitValue()).as(Files.readString(errLog)).isZero();
        assertThat(Files.readString(errLog)).contains("; journal " + dir + ", shipped to " + uri);
        Map<String, List<byte[]>> journal = rawEntries(tmp); // the proxy journal is the one directory tmp holds
        assertThat(journal).containsOnlyKeys("proxy0");
        int n = journal.get("proxy0").size();
        assertThat(n).isGreaterThanOrEqualTo((int) idle[1]);
        // at stop, the proxy shipped what its journal held, its last entries included, each acknowledged once
        assertThat(Files.readString(out)).contains("; " + n + " entries shipped to " + uri);
        assertSameEntries(readBack(uri, 0), journal);
        assertThat(recordsIn("fleet-proxy")).isEqualTo(n);

        CliRun.Outcome noJournal = CliRun.run("proxy", "--port", "0", "--ping-port", "0", "--ship", uri);
        assertThat(noJournal.code()).isEqualTo(2);
        assertThat(noJournal.err()).contains("--ship ships the proxy's journal: give --journal DIR too");
        CliRun.Outcome badUri = CliRun.run("proxy", "--journal", tmp.resolve("p2").toString(), "--ship", "http://x/y");
        assertThat(badUri.code()).isEqualTo(2);
        assertThat(badUri.err()).contains("--ship: ");
    }

    // ------------------------------------------------------------------ helpers

    /**
     * A simulated run's journals as JSON lines, one list per node id, as {@code journal export}
     * writes them: what a recorder's files hold.
     */
    private static Map<String, List<String>> recorderLines(Path dir, int requests) throws IOException {
        simulated(dir, requests);
        Path tree = dir.resolveSibling(dir.getFileName() + "-jsonl");
        CliRun.Outcome ex = CliRun.run("journal", "export", dir.toString(), "--out", tree.toString());
        assertThat(ex.code()).as(ex.err()).isZero();
        Map<String, List<String>> out = new TreeMap<>();
        try (var s = Files.list(tree)) {
            for (Path node : s.filter(Files::isDirectory).sorted().toList()) {
                out.put(node.getFileName().toString(), Files.readAllLines(node.resolve("journal.jsonl")));
            }
        }
        assertThat(out).isNotEmpty();
        return out;
    }

    /**
     * Writes recordings as the recorder does, one NODE.jsonl per node: the header lines at once,
     * then the other lines a few at a time, each written in two halves (flushed between, so a
     * reader sees half lines), up to half of each file; the rest once the test opens {@link #gate}.
     */
    private static final class LineWriter implements AutoCloseable {
        final java.util.concurrent.CountDownLatch gate = new java.util.concurrent.CountDownLatch(1);
        final Map<String, List<String>> lines;
        final Map<String, java.io.OutputStream> files = new LinkedHashMap<>();
        volatile long halfLines;

        LineWriter(Path dir, Map<String, List<String>> lines) throws IOException {
            this.lines = lines;
            Files.createDirectories(dir);
            for (var e : lines.entrySet()) {
                java.io.OutputStream o = Files.newOutputStream(dir.resolve(e.getKey() + ".jsonl"));
                o.write((e.getValue().getFirst() + "\n").getBytes(java.nio.charset.StandardCharsets.UTF_8));
                o.flush();
                files.put(e.getKey(), o);
            }
        }

        Thread start() {
            return Thread.ofPlatform().name("recorder").start(() -> {
                Map<String, Integer> at = new LinkedHashMap<>();
                lines.keySet().forEach(k -> at.put(k, 1));
                try {
                    boolean more = true;
                    while (more) {
                        more = false;
                        boolean open = gate.getCount() == 0;
                        for (var e : lines.entrySet()) {
                            List<String> all = e.getValue();
                            int i = at.get(e.getKey());
                            int limit = open ? all.size() : all.size() / 2;
                            java.io.OutputStream o = files.get(e.getKey());
                            for (int n = 0; n < 10 && i < limit; n++, i++) {
                                byte[] b = (all.get(i) + "\n").getBytes(java.nio.charset.StandardCharsets.UTF_8);
                                o.write(b, 0, b.length / 2);
                                o.flush();
                                halfLines++;
                                o.write(b, b.length / 2, b.length - b.length / 2);
                                o.flush();
                            }
                            at.put(e.getKey(), i);
                            more |= i < all.size();
                        }
                        Thread.sleep(5);
                    }
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
        }

        @Override
        public void close() throws IOException {
            for (java.io.OutputStream o : files.values()) {
                o.close();
            }
        }
    }

    /** Appends a simulated run's entries to live journals, node by node, as their writers would. */
    private static final class Feeder implements AutoCloseable {
        /** Entries per node per 20 ms step. */
        static final int STEP = 20;
        /** Opened by the test: the feeder stops at half of each journal until then. */
        final java.util.concurrent.CountDownLatch gate = new java.util.concurrent.CountDownLatch(1);
        final Map<String, List<byte[]>> source;
        final Map<String, RawJournalWriter> writers = new LinkedHashMap<>();
        final Map<String, Integer> fed = new LinkedHashMap<>();

        Feeder(Path root, Map<String, List<byte[]>> source) {
            this.source = source;
            for (String node : source.keySet()) {
                writers.put(node, RawJournalWriter.create(root.resolve(node)));
                fed.put(node, 0);
            }
        }

        List<Path> dirs() {
            return writers.values().stream().map(RawJournalWriter::dir).toList();
        }

        private void feedShare(double share) {
            for (var e : source.entrySet()) {
                feedTo(e.getKey(), (int) Math.max(1, e.getValue().size() * share));
            }
        }

        private void feedTo(String node, int upTo) {
            List<byte[]> all = source.get(node);
            for (int i = fed.get(node); i < Math.min(upTo, all.size()); i++) {
                writers.get(node).append(all.get(i));
            }
            fed.put(node, Math.max(fed.get(node), Math.min(upTo, all.size())));
        }

        /**
         * On a thread of its own (Chronicle's appender belongs to one thread): feeds the first
         * {@code share} of each node's entries at once, then more in small steps up to half of each
         * journal, and the rest once the test opens {@link #gate}. Returns once the first share is in.
         */
        Thread start(double share) throws InterruptedException {
            java.util.concurrent.CountDownLatch first = new java.util.concurrent.CountDownLatch(1);
            Thread t = Thread.ofPlatform().name("feeder").start(() -> {
                synchronized (this) {
                    feedShare(share);
                }
                first.countDown();
                boolean more = true;
                while (more) {
                    more = false;
                    boolean open = gate.getCount() == 0;
                    synchronized (this) {
                        for (var e : source.entrySet()) {
                            int at = fed.get(e.getKey());
                            int limit = open ? e.getValue().size() : e.getValue().size() / 2;
                            if (at < limit) {
                                feedTo(e.getKey(), Math.min(limit, at + STEP));
                            }
                            more |= at < e.getValue().size();
                        }
                    }
                    try {
                        Thread.sleep(20);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });
            first.await();
            return t;
        }

        @Override
        public synchronized void close() {
            writers.values().forEach(RawJournalWriter::close);
        }
    }

    @Test
    void aTopicHoldingAHundredNodesJournalsGivesHangsAsFromDisk() throws Exception {
        Path dir = tmp.resolve("hundred");
        io.kvledger.sim.SimOptions o = io.kvledger.sim.SimOptions.builder(5, TransferMode.WRITE).requests(200).nodes(50, 50)
                .faults(SimJournals.FAULTS).keepLog(false)
                // small journals: a few seconds of simulated time, idle steps and ticks seconds apart
                .timeLimitNs(5_000_000_000L).idleStepNs(5_000_000_000L).backgroundTickNs(5_000_000_000L).build();
        try (io.kvledger.node.sim.SimJournalRecorder rec = new io.kvledger.node.sim.SimJournalRecorder(dir, "100 nodes")) {
            io.kvledger.sim.Simulation.run(o, rec);
        }
        Map<String, List<byte[]>> disk = rawEntries(dir);
        assertThat(disk).hasSize(100);
        long total = disk.values().stream().mapToLong(List::size).sum();
        String uri = broker.uri("fleet-hundred");

        CliRun.Outcome ship = CliRun.run("ship", "--no-follow", "--partitions", "8", "--to", uri, dir.toString());
        assertThat(ship.code()).as(ship.err()).isZero();
        assertThat(ship.err()).contains(total + " entries acknowledged, 0 already in the topic");
        System.out.println("KafkaShipTest: " + total + " entries of " + disk.size() + " nodes in 8 partitions");

        for (String[] args : List.of(new String[] {"hangs", "@"}, new String[] {"hangs", "--json", "@"})) {
            CliRun.Outcome fromDisk = CliRun.run(with(args, dir.toString()));
            CliRun.Outcome fromTopic = CliRun.run(with(args, uri));
            String what = String.join(" ", args) + "\n" + fromTopic.err();
            assertThat(fromDisk.out()).as(what).isNotBlank();
            assertThat(fromTopic.code()).as(what).isEqualTo(fromDisk.code());
            assertThat(fromTopic.out()).as(what).isEqualTo(fromDisk.out());
            assertThat(fromTopic.err()).as(what).contains("note: read " + total + " record(s) of 100 node(s)");
        }
        // the faults left findings for the report to name, across nodes of the whole fleet
        assertThat(CliRun.run("hangs", uri).out()).containsPattern("summary: [1-9]\\d* finding");
        assertSameEntries(readBack(uri, 0), disk);
    }

    @Test
    void serveFollowingATopicStreamsWhatIsShippedAfterItStarted() throws Exception {
        Path sim = tmp.resolve("follow");
        assertThat(CliRun.simulate(sim, "read", 2, 1, "drop=0").code()).isIn(0, 1);
        String uri = broker.uri("fleet-follow");
        CliRun.Outcome first = CliRun.run("ship", "--no-follow", "--to", uri, sim.toString());
        assertThat(first.code()).as(first.err()).isZero();

        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        picocli.CommandLine cl = Main.commandLine(new PrintWriter(out, true), new PrintWriter(err, true));
        ServeCommand serve = (ServeCommand) cl.getSubcommands().get("serve").getCommand();
        Thread t = new Thread(() -> cl.execute("serve", uri, "--http", "127.0.0.1:0", "--follow"), "serve");
        t.start();
        java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
        try {
            assertThat(serve.started.await(180, TimeUnit.SECONDS)).as("%s %s", out, err).isTrue();
            assertThat(out.toString()).contains("over 2 journal(s) (D0, P0), following them");
            assertThat(err.toString()).contains("serve: note: read ");
            java.net.http.HttpResponse<java.util.stream.Stream<String>> r = http.send(java.net.http.HttpRequest.newBuilder(
                    java.net.URI.create("http://127.0.0.1:" + serve.server.port() + "/v1/events")).GET().build(),
                    java.net.http.HttpResponse.BodyHandlers.ofLines());
            assertThat(r.statusCode()).isEqualTo(200);
            java.util.Iterator<String> lines = ServeCommandTest.afterReadyEvents(r, 2);

            // an entry appended to P0's own journal and shipped after serve started reaches the page's stream
            Path p0 = sim.resolve("P0");
            io.kvledger.journal.JournalHeader header;
            long last = 0;
            try (io.kvledger.journal.JournalReader reader = io.kvledger.journal.JournalReader.open(p0)) {
                header = reader.header();
                for (io.kvledger.journal.JournalEntry e : reader) {
                    last = Math.max(last, e.atNs());
                }
            }
            long seq;
            try (io.kvledger.journal.JournalWriter w = io.kvledger.journal.JournalWriter.open(p0, header)) {
                seq = w.appendInput(new io.kvledger.core.event.NodeEvent.Tick(last + 1_000_000));
            }
            CliRun.Outcome again = CliRun.run("ship", "--no-follow", "--to", uri, sim.toString());
            assertThat(again.code()).as(again.err()).isZero();
            assertThat(again.err()).contains("1 entries acknowledged");
            String id = null;
            boolean seen = false;
            while (lines.hasNext()) {
                String line = lines.next();
                if (line.startsWith("id: ")) {
                    id = line.substring(4);
                }
                if (line.startsWith("data: ") && line.contains("\"type\":\"tick\"") && line.contains("\"at_ns\":" + (last + 1_000_000))) {
                    seen = true;
                    break;
                }
            }
            assertThat(seen).as("the shipped tick on the stream").isTrue();
            assertThat(id).isEqualTo(Long.toString(seq));
            r.body().close();
        } finally {
            t.interrupt();
            t.join(30_000);
        }
        assertThat(t.isAlive()).as("serve stopped").isFalse();
    }

    @Test
    void serveFollowingATopicShowsANodeThatFirstShipsAfterItStarted() throws Exception {
        Path sim = tmp.resolve("late");
        assertThat(CliRun.simulate(sim, "read", 2, 1, "drop=0").code()).isIn(0, 1);
        String uri = broker.uri("fleet-late-serve");
        CliRun.Outcome first = CliRun.run("ship", "--no-follow", "--to", uri, sim.resolve("P0").toString());
        assertThat(first.code()).as(first.err()).isZero();

        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        picocli.CommandLine cl = Main.commandLine(new PrintWriter(out, true), new PrintWriter(err, true));
        ServeCommand serve = (ServeCommand) cl.getSubcommands().get("serve").getCommand();
        Thread t = new Thread(() -> cl.execute("serve", uri, "--http", "127.0.0.1:0", "--follow"), "serve");
        t.start();
        java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
        try {
            assertThat(serve.started.await(180, TimeUnit.SECONDS)).as("%s %s", out, err).isTrue();
            assertThat(out.toString()).contains("over 1 journal(s) (P0), following them");
            String base = "http://127.0.0.1:" + serve.server.port();
            String before = get(http, base + "/v1/requests");
            assertThat(before).contains("\"node\":\"P0\"").doesNotContain("\"node\":\"D0\"");
            // a page open before D0 ships: its event stream follows P0, and D0 joins it later
            java.net.http.HttpResponse<java.util.stream.Stream<String>> open = http.send(java.net.http.HttpRequest.newBuilder(
                    java.net.URI.create(base + "/v1/events")).GET().build(), java.net.http.HttpResponse.BodyHandlers.ofLines());
            assertThat(open.statusCode()).isEqualTo(200);
            java.util.concurrent.BlockingQueue<String> openLines = linesOf(ServeCommandTest.afterReadyEvents(open, 1));

            // D0 ships its whole journal, header first, after serve started: it appears in the API
            CliRun.Outcome second = CliRun.run("ship", "--no-follow", "--to", uri, sim.resolve("D0").toString());
            assertThat(second.code()).as(second.err()).isZero();
            long end = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
            String after = before;
            while (!after.contains("\"node\":\"D0\"")) {
                if (System.nanoTime() > end) {
                    throw new AssertionError("D0 not in /v1/requests after 3 min: " + after + "\nserve said: " + err);
                }
                Thread.sleep(200);
                after = get(http, base + "/v1/requests");
            }
            assertThat(err.toString()).contains(uri + ": node D0 shipped its first entries after the start: following it");
            // its copy holds all it shipped: D0's rows are those of a page over the journals on disk
            try (io.kvledger.ledger.web.WebServer disk = io.kvledger.ledger.web.WebServer.start(
                    io.kvledger.ledger.replay.JournalInputs.resolve(List.of(sim)), "127.0.0.1", 0)) {
                Pattern d0 = Pattern.compile("\\{\"node\":\"D0\",\"request_id\":\"[^\"]+\",\"phase\":\"[A-Z_]+\"");
                List<String> want = d0.matcher(get(http, "http://127.0.0.1:" + disk.port() + "/v1/requests")).results()
                        .map(MatchResult::group).sorted().toList();
                long settle = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
                List<String> got = d0.matcher(after).results().map(MatchResult::group).sorted().toList();
                while (!got.equals(want) && System.nanoTime() < settle) {
                    Thread.sleep(200); // the copy may still be catching up with what D0 shipped
                    got = d0.matcher(get(http, base + "/v1/requests")).results().map(MatchResult::group).sorted().toList();
                }
                assertThat(want).isNotEmpty();
                assertThat(got).isEqualTo(want);
            }
            // the stream opened before D0 shipped gets D0's ready event (the page then fetches the
            // requests again, D0's included), then what D0 ships from then on
            boolean d0Ready = false;
            long readyBy = System.nanoTime() + TimeUnit.MINUTES.toNanos(3); // keepalive lines come meanwhile
            for (String prev = "", line; !d0Ready && (line = openLines.poll(readyBy - System.nanoTime(), TimeUnit.NANOSECONDS)) != null; ) {
                d0Ready = prev.equals("event: ready") && line.startsWith("data: ") && line.contains("\"node\":\"D0\"");
                prev = line;
            }
            assertThat(d0Ready).as("D0's ready event on the stream opened before it shipped").isTrue();
            Path d0Dir = sim.resolve("D0");
            io.kvledger.journal.JournalHeader header;
            long last = 0;
            try (io.kvledger.journal.JournalReader reader = io.kvledger.journal.JournalReader.open(d0Dir)) {
                header = reader.header();
                for (io.kvledger.journal.JournalEntry e : reader) {
                    last = Math.max(last, e.atNs());
                }
            }
            long seq;
            try (io.kvledger.journal.JournalWriter w = io.kvledger.journal.JournalWriter.open(d0Dir, header)) {
                seq = w.appendInput(new io.kvledger.core.event.NodeEvent.Tick(last + 1_000_000));
            }
            CliRun.Outcome third = CliRun.run("ship", "--no-follow", "--to", uri, d0Dir.toString());
            assertThat(third.code()).as(third.err()).isZero();
            String id = null;
            boolean tick = false;
            long tickBy = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
            for (String line; !tick && (line = openLines.poll(tickBy - System.nanoTime(), TimeUnit.NANOSECONDS)) != null; ) {
                if (line.startsWith("id: ")) {
                    id = line.substring(4);
                }
                tick = line.startsWith("data: ") && line.contains("\"type\":\"tick\"")
                        && line.contains("\"at_ns\":" + (last + 1_000_000));
            }
            assertThat(tick).as("D0's tick shipped later, on the stream opened before D0 shipped").isTrue();
            assertThat(id).isEqualTo(Long.toString(seq));
            open.body().close();
            // a new event stream has a ready event from each journal, D0's included
            java.net.http.HttpResponse<java.util.stream.Stream<String>> r = http.send(java.net.http.HttpRequest.newBuilder(
                    java.net.URI.create(base + "/v1/events")).GET().build(), java.net.http.HttpResponse.BodyHandlers.ofLines());
            assertThat(r.statusCode()).isEqualTo(200);
            ServeCommandTest.afterReadyEvents(r, 2);
            r.body().close();
            System.out.println("KafkaShipTest: serve --follow picked up D0, shipped after it started, within "
                    + (TimeUnit.MINUTES.toMillis(3) - TimeUnit.NANOSECONDS.toMillis(end - System.nanoTime())) + " ms");
        } finally {
            t.interrupt();
            t.join(30_000);
        }
        assertThat(t.isAlive()).as("serve stopped").isFalse();
    }

    /** The lines still to come from {@code lines}, read on a thread of their own, so that a test waits on them with a bound. */
    private static java.util.concurrent.BlockingQueue<String> linesOf(java.util.Iterator<String> lines) {
        java.util.concurrent.BlockingQueue<String> q = new java.util.concurrent.LinkedBlockingQueue<>();
        Thread reader = new Thread(() -> {
            try {
                lines.forEachRemaining(q::add);
            } catch (RuntimeException e) {
                // the stream was closed
            }
        }, "event-lines");
        reader.setDaemon(true);
        reader.start();
        return q;
    }

    private static String get(java.net.http.HttpClient http, String url) throws Exception {
        java.net.http.HttpResponse<String> r = http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(url)).GET().build(),
                java.net.http.HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return r.body();
    }

    private static Path simulated(Path dir, int requests) {
        SimJournals.write(dir, 7, TransferMode.WRITE, requests, SimJournals.FAULTS);
        return dir;
    }

    /** Each node's entries as bytes, by node id, read from the journals under {@code dir}. */
    private static Map<String, List<byte[]>> rawEntries(Path dir) throws IOException {
        Map<String, List<byte[]>> out = new TreeMap<>();
        try (var s = Files.list(dir)) {
            for (Path j : s.filter(Files::isDirectory).sorted().toList()) {
                try (RawEntryTailer t = RawEntryTailer.open(j)) {
                    List<byte[]> entries = new ArrayList<>();
                    for (byte[] e; (e = t.poll(Duration.ZERO)) != null; ) {
                        entries.add(e);
                    }
                    assertThat(t.warnings()).isEmpty();
                    out.put(t.header().nodeId(), entries);
                }
            }
        }
        return out;
    }

    /** The topic read back through the ledger's source; {@code duplicates} checked unless negative. */
    private Map<String, List<byte[]>> readBack(String uri, long duplicates) throws IOException {
        Path root = Files.createTempDirectory(tmp, "back");
        KafkaSource.Result res = KafkaSource.read(KafkaUri.parse(uri), uri, root, System.currentTimeMillis(),
                KafkaSource.DEFAULT_TIMEOUT);
        if (duplicates >= 0) {
            assertThat(res.duplicates()).isEqualTo(duplicates);
        }
        Map<String, List<byte[]>> out = new TreeMap<>();
        for (NodeJournal j : res.journals()) {
            try (RawEntryTailer t = RawEntryTailer.open(j.dir())) {
                List<byte[]> entries = new ArrayList<>();
                for (byte[] e; (e = t.poll(Duration.ZERO)) != null; ) {
                    entries.add(e);
                }
                assertThat(t.warnings()).as(j.name()).isEmpty();
                out.put(j.name(), entries);
            }
        }
        return out;
    }

    private static void assertSameEntries(Map<String, List<byte[]>> got, Map<String, List<byte[]>> want) {
        assertThat(got.keySet()).containsExactlyElementsOf(want.keySet());
        for (String node : want.keySet()) {
            List<byte[]> g = got.get(node);
            List<byte[]> w = want.get(node);
            assertThat(g).as(node).hasSameSizeAs(w);
            for (int i = 0; i < w.size(); i++) {
                assertThat(g.get(i)).as("%s entry %d", node, i).isEqualTo(w.get(i));
            }
        }
    }

    /** A request id: of a hang finding when there is one, else the first D0's journal names. */
    private static String stuckRequest(Path dir) {
        Pattern id = Pattern.compile("\"request_id\"\\s*:\\s*\"([^\"]+)\"");
        Matcher m = id.matcher(CliRun.run("hangs", "--json", dir.toString()).out());
        if (m.find()) {
            return m.group(1);
        }
        CliRun.Outcome dump = CliRun.run("dump", "--json", dir.resolve("D0").toString());
        m = id.matcher(dump.out());
        assertThat(m.find()).as(dump.out()).isTrue();
        return m.group(1);
    }

    /** Every regular file under {@code root}, by its relative path (sorted), with its bytes. */
    private static Map<String, byte[]> filesUnder(Path root) throws IOException {
        Map<String, byte[]> out = new TreeMap<>();
        try (var walk = Files.walk(root)) {
            for (Path f : walk.filter(Files::isRegularFile).toList()) {
                out.put(root.relativize(f).toString(), Files.readAllBytes(f));
            }
        }
        return out;
    }

    private static String[] with(String[] args, String source) {
        String[] out = args.clone();
        for (int i = 0; i < out.length; i++) {
            if (out[i].equals("@")) {
                out[i] = source;
            }
        }
        return out;
    }

    /**
     * The {@code /metrics} at {@code url}: {backlog, acknowledged} of the series tagged {@code tag};
     * each of ship --metrics's series that applies to one journal is present once.
     */
    private static long[] shipMetrics(java.net.http.HttpClient client, String url, String tag) throws Exception {
        String text = client.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(url)).GET().build(),
                java.net.http.HttpResponse.BodyHandlers.ofString()).body();
        Pattern series = Pattern.compile("(?m)^kvledger_ship_(backlog_entries|acknowledged_total|backlog_bytes|sent_total"
                + "|skipped_total|buffer_full|journals_stopped_total)\\{[^}]*" + Pattern.quote(tag) + "[^}]*} ([0-9.E+-]+)$");
        Map<String, Long> seen = new TreeMap<>();
        Matcher m = series.matcher(text);
        while (m.find()) {
            assertThat(seen.put(m.group(1), (long) Double.parseDouble(m.group(2)))).as(text).isNull();
        }
        assertThat(seen).as(text).containsOnlyKeys("backlog_entries", "acknowledged_total", "backlog_bytes", "sent_total",
                "skipped_total", "buffer_full", "journals_stopped_total");
        // a topic of its own, a broker that stays up, a journal the topic holds nothing of
        assertThat(seen.get("journals_stopped_total")).as(text).isZero();
        assertThat(seen.get("buffer_full")).as(text).isZero();
        assertThat(seen.get("skipped_total")).as(text).isZero();
        assertThat(seen.get("sent_total")).as(text).isGreaterThanOrEqualTo(seen.get("acknowledged_total"));
        assertThat(seen.get("backlog_bytes")).as(text).isNotNegative();
        return new long[] {seen.get("backlog_entries"), seen.get("acknowledged_total")};
    }

    private static long[] shipMetrics(java.net.http.HttpClient client, NodeProcess node) throws Exception {
        return shipMetrics(client, "http://127.0.0.1:" + node.http + "/metrics", "node=\"P0\"");
    }

    private static long recordsIn(String topic) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> tps = c.partitionsFor(topic, Duration.ofSeconds(30)).stream()
                    .map(pi -> new TopicPartition(topic, pi.partition())).toList();
            Map<TopicPartition, Long> end = c.endOffsets(tps, Duration.ofSeconds(30));
            Map<TopicPartition, Long> begin = c.beginningOffsets(tps, Duration.ofSeconds(30));
            return tps.stream().mapToLong(tp -> end.get(tp) - begin.get(tp)).sum();
        } catch (org.apache.kafka.common.KafkaException e) {
            return 0; // the topic is not there yet
        }
    }

    /** Waits (polling, generous bound) until the topic holds at least {@code n} records; returns how many. */
    private static long awaitRecords(String topic, long n, Process child, Path log) throws Exception {
        long end = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
        while (System.nanoTime() < end) {
            if (child != null) {
                assertThat(child.isAlive()).as("ship exited early: %s", Files.readString(log)).isTrue();
            }
            long have = recordsIn(topic);
            if (have >= n) {
                return have;
            }
            Thread.sleep(50);
        }
        throw new AssertionError("the topic " + topic + " holds fewer than " + n + " records after 3 min: " + Files.readString(log));
    }

    private static void awaitCount(java.util.function.LongSupplier count, long n, StringWriter err) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
        while (count.getAsLong() < n) {
            if (System.nanoTime() > end) {
                throw new AssertionError("only " + count.getAsLong() + " of " + n + " after 3 min; the shipper said: " + err);
            }
            Thread.sleep(20);
        }
    }

    private static List<String> javaCommand(String... args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (a.startsWith("--") || a.startsWith("-Dchronicle")) {
                cmd.add(a);
            }
        }
        cmd.addAll(List.of("-XX:+UseSerialGC", "-cp", System.getProperty("java.class.path"), Main.class.getName()));
        cmd.addAll(List.of(args));
        return cmd;
    }
}
