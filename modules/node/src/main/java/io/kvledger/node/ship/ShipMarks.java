package io.kvledger.node.ship;

import io.kvledger.ledger.kafka.KafkaSource;
import io.kvledger.ledger.kafka.KafkaUri;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;

/**
 * Where each node's shipping stopped cleanly, kept in the broker rather than in a local file: the
 * committed offset of a consumer group of its own per node ({@code kvledger-ship/TOPIC/NODE}, never
 * joined by a consumer), in the node's partition. Its metadata says which of two states the node is in:
 * <ul>
 *   <li>{@value #CLEAN}{@code SEQ} with offset {@code O + 1}: the shipper stopped with every entry
 *       it sent acknowledged, the last at offset {@code O} with seq {@code SEQ}; the topic holds
 *       nothing of the node after it, so a restart reads that one record instead of the
 *       partition's tail ({@link KafkaSource#resumePoints(KafkaUri, Collection, Map, long, Duration)});</li>
 *   <li>{@value #RUNNING}: a shipper follows the node (or died doing so): its last record is
 *       anywhere, and a restart reads the partition's tail as before.</li>
 * </ul>
 * A shipper marks its nodes running before it sends anything and clean when it stops with its
 * backlog empty, so a clean mark is never older than the node's last record. A mark that is wrong
 * anyway (the topic recreated under the name, retention past it) is caught: the record at the
 * offset must be the node's, with that seq, or the tail is read. A mark too low could only make a
 * restart send entries again (duplicates, which readers drop), never skip one.
 */
final class ShipMarks {

    static final String CLEAN = "kvledger-ship clean seq=";
    static final String RUNNING = "kvledger-ship running";

    private ShipMarks() {}

    static String group(KafkaUri target, String node) {
        return "kvledger-ship/" + target.topic() + "/" + node;
    }

    private static TopicPartition partition(KafkaUri target, String node, int partitions) {
        return new TopicPartition(target.topic(), KafkaSource.partitionOf(node, partitions));
    }

    /** The clean marks of {@code nodes}: node to {offset of its last record, its seq}; absent: none or running. */
    static Map<String, long[]> read(Admin admin, KafkaUri target, int partitions, Collection<String> nodes, Duration timeout) {
        Map<String, long[]> out = new HashMap<>();
        if (nodes.isEmpty()) {
            return out;
        }
        Map<String, ListConsumerGroupOffsetsSpec> specs = new HashMap<>();
        for (String node : nodes) {
            specs.put(group(target, node), new ListConsumerGroupOffsetsSpec()
                    .topicPartitions(List.of(partition(target, node, partitions))));
        }
        var result = admin.listConsumerGroupOffsets(specs);
        for (String node : nodes) {
            Map<TopicPartition, OffsetAndMetadata> got = get(result.partitionsToOffsetAndMetadata(group(target, node)), timeout);
            OffsetAndMetadata om = got == null ? null : got.get(partition(target, node, partitions));
            if (om != null && om.metadata() != null && om.metadata().startsWith(CLEAN) && om.offset() > 0) {
                try {
                    out.put(node, new long[] {om.offset() - 1, Long.parseLong(om.metadata().substring(CLEAN.length()))});
                } catch (NumberFormatException e) {
                    // not a mark of ours: the tail is read
                }
            }
        }
        return out;
    }

    /** Marks {@code nodes} running (before anything of them is sent); throws when the broker did not take it. */
    static void running(Admin admin, KafkaUri target, int partitions, Collection<String> nodes, Duration timeout) {
        Map<String, long[]> none = new HashMap<>();
        nodes.forEach(n -> none.put(n, null));
        write(admin, target, partitions, none, timeout);
    }

    /** Marks each node clean at its last record, {offset, seq}; throws when the broker did not take it. */
    static void clean(Admin admin, KafkaUri target, int partitions, Map<String, long[]> at, Duration timeout) {
        write(admin, target, partitions, at, timeout);
    }

    private static void write(Admin admin, KafkaUri target, int partitions, Map<String, long[]> marks, Duration timeout) {
        Map<String, org.apache.kafka.common.KafkaFuture<Void>> pending = new HashMap<>();
        for (var e : marks.entrySet()) {
            long[] m = e.getValue();
            OffsetAndMetadata om = m == null ? new OffsetAndMetadata(0, RUNNING) : new OffsetAndMetadata(m[0] + 1, CLEAN + m[1]);
            pending.put(e.getKey(), admin.alterConsumerGroupOffsets(group(target, e.getKey()),
                    Map.of(partition(target, e.getKey(), partitions), om)).all());
        }
        for (var f : pending.values()) {
            get(f, timeout);
        }
    }

    private static <T> T get(org.apache.kafka.common.KafkaFuture<T> f, Duration timeout) {
        try {
            return f.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw e.getCause() instanceof KafkaException ke ? ke : new KafkaException(e.getCause().getMessage(), e.getCause());
        } catch (TimeoutException e) {
            throw new KafkaException("no answer within " + timeout.toSeconds() + " s", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new KafkaException("interrupted", e);
        }
    }
}
