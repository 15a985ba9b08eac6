package io.kvledger.ledger.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.JournalWriter;
import io.kvledger.journal.RawEntryTailer;
import io.kvledger.journal.Samples;
import io.kvledger.ledger.replay.JournalInputs.InputException;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link KafkaSource} against a real broker, with records written straight to the topic: duplicates
 * are dropped by (node, seq) and counted; a gap is kept for the reader to say; what is no shipped
 * entry, a node whose header is gone, and a missing topic are refused, never skipped quietly; the
 * window leaves out nodes that shipped nothing in it.
 */
class KafkaSourceTest {

    @TempDir
    static Path shared;

    @TempDir
    Path tmp;

    static TestBroker broker;
    static List<byte[]> entries;

    @BeforeAll
    static void start() {
        broker = TestBroker.start(shared.resolve("broker"));
        Path j = shared.resolve("j");
        try (JournalWriter w = JournalWriter.open(j, Samples.header())) {
            for (int i = 1; i <= 20; i++) {
                w.appendInput(new NodeEvent.Tick(i * 1_000_000L));
            }
        }
        entries = new ArrayList<>();
        try (RawEntryTailer t = RawEntryTailer.open(j)) {
            for (byte[] e; (e = t.poll(Duration.ZERO)) != null; ) {
                entries.add(e);
            }
        }
    }

    @AfterAll
    static void stop() {
        if (broker != null) {
            broker.close();
        }
    }

    @Test
    void duplicatesAreDroppedAndCountedAndAGapIsLeftForTheReaderToSay() throws Exception {
        broker.createTopic("dups", 2);
        List<byte[]> sent = new ArrayList<>(entries.subList(0, 10));
        sent.addAll(entries.subList(5, 10)); // a restarted shipper's overlap
        sent.addAll(entries.subList(12, 21)); // seqs 10 and 11 never shipped
        send("dups", "N1", sent);
        KafkaSource.Result r = KafkaSource.read(KafkaUri.parse(broker.uri("dups")), "arg", tmp, System.currentTimeMillis(),
                Duration.ofSeconds(60));
        assertThat(r.records()).isEqualTo(sent.size());
        assertThat(r.duplicates()).isEqualTo(5);
        assertThat(r.describe("arg")).contains("dropped 5 duplicate(s)");
        assertThat(r.journals()).extracting(NodeJournal::name).containsExactly("N1");
        try (JournalReader jr = r.journals().getFirst().open()) {
            assertThat(jr.stream().count()).isEqualTo(10 + 9);
            assertThat(String.join("\n", jr.warnings())).contains("seq jump");
        }
    }

    @Test
    void aNodeWithoutItsHeaderAndARecordThatIsNoEntryAreRefused() throws Exception {
        broker.createTopic("headless", 1);
        send("headless", "N2", entries.subList(3, 8));
        assertThatThrownBy(() -> KafkaSource.read(KafkaUri.parse(broker.uri("headless")), "arg", tmp.resolve("a"),
                System.currentTimeMillis(), Duration.ofSeconds(60)))
                .isInstanceOf(InputException.class).hasMessageContaining("node N2").hasMessageContaining("from seq 3 on");

        broker.createTopic("foreign", 1);
        try (KafkaProducer<byte[], byte[]> p = producer()) {
            p.send(new ProducerRecord<>("foreign", null, "hello".getBytes())).get();
        }
        assertThatThrownBy(() -> KafkaSource.read(KafkaUri.parse(broker.uri("foreign")), "arg", tmp.resolve("b"),
                System.currentTimeMillis(), Duration.ofSeconds(60)))
                .isInstanceOf(InputException.class).hasMessageContaining("no shipped journal entry (no key)");

        assertThatThrownBy(() -> KafkaSource.read(KafkaUri.parse(broker.uri("missing")), "arg", tmp.resolve("c"),
                System.currentTimeMillis(), Duration.ofSeconds(20)))
                .isInstanceOf(InputException.class).hasMessageContaining("no such topic");
    }

    @Test
    void theWindowLeavesOutNodesThatShippedNothingInIt() throws Exception {
        broker.createTopic("window", 3);
        long now = System.currentTimeMillis();
        send("window", "old", entries, now - Duration.ofHours(1).toMillis());
        send("window", "new", entries, now);
        KafkaSource.Result all = KafkaSource.read(KafkaUri.parse(broker.uri("window")), "arg", tmp.resolve("a"), now,
                Duration.ofSeconds(60));
        assertThat(all.journals()).extracting(NodeJournal::name).containsExactly("new", "old");
        KafkaSource.Result recent = KafkaSource.read(KafkaUri.parse(broker.uri("window") + "?since=30m"), "arg",
                tmp.resolve("b"), now, Duration.ofSeconds(60));
        assertThat(recent.journals()).extracting(NodeJournal::name).containsExactly("new");
        assertThat(recent.leftOut()).containsExactly("old");
        assertThat(recent.describe("arg")).contains("left out 1 node(s) with nothing in the window: old");
        assertThatThrownBy(() -> KafkaSource.read(KafkaUri.parse(broker.uri("window") + "?since=10m"), "arg",
                tmp.resolve("c"), now + Duration.ofMinutes(20).toMillis(), Duration.ofSeconds(60)))
                .isInstanceOf(InputException.class).hasMessageContaining("no node with entries shipped in the last 600 s");
    }

    @Test
    void urisAreParsedOrRefusedWithTheExpectedForm() {
        KafkaUri u = KafkaUri.parse("kafka://a:9092,b:9093/t.x-1?since=2h");
        assertThat(u.bootstrap()).isEqualTo("a:9092,b:9093");
        assertThat(u.topic()).isEqualTo("t.x-1");
        assertThat(u.since()).isEqualTo(Duration.ofHours(2));
        assertThat(KafkaUri.parse("kafka://h:1/t").since()).isNull();
        for (String bad : List.of("kafka://h/t", "kafka://h:1/", "kafka://h:1/t?since=5", "http://h:1/t")) {
            assertThatThrownBy(() -> KafkaUri.parse(bad)).as(bad).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("expected kafka://HOST:PORT");
        }
    }

    @Test
    void resumePointsReadTheTailsOfThePartitionsAndWidenOnlyForANodeNotThere() throws Exception {
        String topic = "tails";
        broker.createTopic(topic, 2);
        // four nodes whose keys hash to partition 0, and one of partition 1
        List<String> p0 = new ArrayList<>();
        String other = null;
        for (int i = 0; p0.size() < 4 || other == null; i++) {
            String n = "node-" + i;
            if (KafkaSource.partitionOf(n, 2) == 0) {
                p0.add(n);
            } else if (other == null) {
                other = n;
            }
        }
        String old = p0.get(0);
        String big = p0.get(1);
        String late = p0.get(2);
        String absent = p0.get(3);
        try (KafkaProducer<byte[], byte[]> p = producer()) {
            sendSeqs(p, topic, old, 0, 10);
            sendSeqs(p, topic, other, 0, 50);
            sendSeqs(p, topic, big, 0, 5000);
            sendSeqs(p, topic, big, 4990, 5000); // a restarted shipper's overlap
            sendSeqs(p, topic, late, 0, 30);
            p.flush();
        }
        KafkaUri uri = KafkaUri.parse(broker.uri(topic));
        Map<String, Long> scanned = KafkaSource.lastSeqs(uri, Duration.ofSeconds(60));
        assertThat(scanned).containsEntry(old, 9L).containsEntry(big, 4999L).containsEntry(late, 29L).containsEntry(other, 49L)
                .doesNotContainKey(absent);

        // the last 64 records of partition 0 hold both nodes: nothing more is read
        KafkaSource.Resume tail = KafkaSource.resumePoints(uri, List.of(big, late), 64, Duration.ofSeconds(60));
        assertThat(tail.lastSeqs()).containsExactlyInAnyOrderEntriesOf(Map.of(big, 4999L, late, 29L));
        assertThat(tail.recordsRead()).isEqualTo(64);

        // a node at the partition's start widens the window (64, 256, 1024, 4096, then the rest) to it
        KafkaSource.Resume widened = KafkaSource.resumePoints(uri, List.of(old, late, other), 64, Duration.ofSeconds(60));
        assertThat(widened.lastSeqs()).containsExactlyInAnyOrderEntriesOf(Map.of(old, 9L, late, 29L, other, 49L));
        assertThat(widened.recordsRead()).as("partition 0 whole, partition 1 whole (50 records)").isEqualTo(5050 + 50);

        // a node that never shipped costs its partition whole, and is absent
        KafkaSource.Resume none = KafkaSource.resumePoints(uri, List.of(absent), 1024, Duration.ofSeconds(60));
        assertThat(none.lastSeqs()).isEmpty();
        assertThat(none.recordsRead()).isEqualTo(5050);
    }

    /** Records of {@code node} with seqs {@code [from, to)} (values: an entry's fixed prefix, enough for a seq). */
    private static void sendSeqs(KafkaProducer<byte[], byte[]> p, String topic, String node, long from, long to) {
        for (long seq = from; seq < to; seq++) {
            byte[] v = new byte[16];
            java.nio.ByteBuffer.wrap(v).order(java.nio.ByteOrder.LITTLE_ENDIAN).putLong(4, seq);
            RecordHeaders h = new RecordHeaders();
            h.add(ShippedEntry.SEQ_HEADER, ShippedEntry.seqHeader(seq));
            p.send(new ProducerRecord<>(topic, null, ShippedEntry.key(node), v, h));
        }
    }

    private static void send(String topic, String node, List<byte[]> values) throws Exception {
        send(topic, node, values, System.currentTimeMillis());
    }

    private static void send(String topic, String node, List<byte[]> values, long timestampMs) throws Exception {
        try (KafkaProducer<byte[], byte[]> p = producer()) {
            for (byte[] v : values) {
                RecordHeaders h = new RecordHeaders();
                h.add(ShippedEntry.SEQ_HEADER, ShippedEntry.seqHeader(ShippedEntry.seq(v)));
                p.send(new ProducerRecord<>(topic, null, timestampMs, ShippedEntry.key(node), v, h)).get();
            }
        }
    }

    private static KafkaProducer<byte[], byte[]> producer() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }
}
