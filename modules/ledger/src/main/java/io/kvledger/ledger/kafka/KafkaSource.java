package io.kvledger.ledger.kafka;

import io.kvledger.journal.JournalException;
import io.kvledger.journal.RawJournalWriter;
import io.kvledger.ledger.replay.JournalInputs.InputException;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.function.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Reads the node journals a Kafka topic holds ({@code kvledger ship} writes them,
 * {@link ShippedEntry}) into journals on disk, one per node, each entry's bytes as the topic holds
 * them ({@link RawJournalWriter}), so that every reading command reads a topic exactly as it reads
 * the same journals from their directories. Shipping is at-least-once: an entry the topic holds
 * twice (a shipper that restarted, a producer retry) is dropped by (node, seq), keeping the first.
 * A gap is not filled or hidden: the journal on disk has it, and its reader says so as for any
 * journal.
 *
 * <p>The topic is read from its beginning up to the end offsets it had when the read started.
 * With a window ({@code ?since=10m}) the nodes that shipped nothing within it are left out; the
 * others are read whole, from their headers, since a replay from the middle of a node's journal
 * would show requests without their start.
 *
 * <p>Why a copy rather than a reader of the topic itself: every reading command reads journals
 * through {@code JournalReader} (a final class over Chronicle's queue files, which also answers
 * for damage and metadata, and which {@code serve --follow} tails), and several read a node's
 * journal more than once ({@code hangs} replays, then builds its timeline). A topic source would
 * be a second reader in each of them, and every further pass would read the topic again or hold it
 * in memory; the copy costs one pass over the topic and local disk, and the output stays byte for
 * byte that of the same journals on disk.
 *
 * <p>Refused (an {@link InputException}, a usage error for the commands): a topic that does not
 * exist or a broker that does not answer within the timeout; a record that is no shipped entry (no
 * key, fewer bytes than an entry, a seq header that disagrees with the entry); a node whose
 * entries do not start with its header (retention removed the start); a node whose entries are
 * in two partitions (the topic's partition count changed).
 */
public final class KafkaSource {

    private KafkaSource() {}

    /** How long a read may go without progress (no answer from the broker) before it is refused. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(60);

    /**
     * What a read found.
     *
     * @param journals   one per node, named by node id, in node id order
     * @param records    records read
     * @param duplicates records dropped as duplicates by (node, seq)
     * @param leftOut    nodes left out by the window (they shipped nothing within it)
     */
    public record Result(List<NodeJournal> journals, long records, long duplicates, List<String> leftOut) {

        /** One line saying what was read, for standard error. */
        public String describe(String source) {
            return "read " + records + " record(s) of " + journals.size() + " node(s) from " + source
                    + (duplicates == 0 ? "" : "; dropped " + duplicates + " duplicate(s) by (node, seq)")
                    + (leftOut.isEmpty() ? "" : "; left out " + leftOut.size() + " node(s) with nothing in the window: "
                            + String.join(", ", leftOut));
        }
    }

    private static final class NodeCopy {
        final String node;
        final int partition;
        final RawJournalWriter writer;
        long lastSeq = -1;
        long lastTimestamp;

        NodeCopy(String node, int partition, RawJournalWriter writer) {
            this.node = node;
            this.partition = partition;
            this.writer = writer;
        }
    }

    /**
     * Reads the topic into journals under {@code root} (one directory per node, which must not
     * exist yet).
     *
     * @param nowMs the time the window ends at, epoch milliseconds (record timestamps are when
     *              the entries were shipped)
     * @throws InputException see the class comment
     */
    public static Result read(KafkaUri uri, String argument, Path root, long nowMs, Duration timeout) {
        Map<String, NodeCopy> nodes = new TreeMap<>();
        try {
            return copy(uri, argument, root, nowMs, timeout, nodes, new HashMap<>());
        } finally {
            for (NodeCopy c : nodes.values()) {
                c.writer.close();
            }
        }
    }

    /**
     * Reads the topic into journals under {@code root} as {@link #read} does, then keeps following
     * it: the records appended to the topic after the read are appended to the nodes' journals
     * (duplicates dropped by (node, seq), as in the read) until {@link Live#close}, so a reader that
     * follows those journals (the web timeline's event stream) sees the topic grow. The journals
     * are written by one thread of the follower's own. A node whose header (seq 0) reaches the
     * topic after the read gets a journal of its own from then on, as does a node the window left
     * out once it ships again ({@link Live#journals} lists them, {@code notes} says so); a node
     * that appears from a later seq (retention removed its start) or in another partition is not
     * followed, said once per node.
     *
     * @throws InputException as {@link #read}
     */
    public static Live follow(KafkaUri uri, String argument, Path root, long nowMs, Duration timeout,
                              java.util.function.Consumer<String> notes) {
        Live live = new Live(uri, argument, root, nowMs, timeout, notes);
        live.thread.start();
        try {
            return live.started.get();
        } catch (InterruptedException e) {
            live.close();
            Thread.currentThread().interrupt();
            throw new InputException("interrupted while reading " + argument, e);
        } catch (java.util.concurrent.ExecutionException e) {
            live.close();
            if (e.getCause() instanceof RuntimeException re) {
                throw re;
            }
            throw new InputException("cannot read " + argument + ": " + e.getCause(), e.getCause());
        }
    }

    /** A topic read and followed ({@link #follow}). */
    public static final class Live implements AutoCloseable {
        private final KafkaUri uri;
        private final String argument;
        private final Path root;
        private final long nowMs;
        private final Duration timeout;
        private final java.util.function.Consumer<String> notes;
        private final Thread thread;
        private final java.util.concurrent.CompletableFuture<Live> started = new java.util.concurrent.CompletableFuture<>();
        private final java.util.concurrent.atomic.AtomicLong appended = new java.util.concurrent.atomic.AtomicLong();
        private final java.util.concurrent.CopyOnWriteArrayList<NodeJournal> journals = new java.util.concurrent.CopyOnWriteArrayList<>();
        private volatile boolean stop;
        private volatile KafkaConsumer<byte[], byte[]> consumer;
        private Result result;

        private Live(KafkaUri uri, String argument, Path root, long nowMs, Duration timeout,
                     java.util.function.Consumer<String> notes) {
            this.uri = uri;
            this.argument = argument;
            this.root = root;
            this.nowMs = nowMs;
            this.timeout = timeout;
            this.notes = notes;
            this.thread = new Thread(this::run, "kvledger-kafka-follow");
            this.thread.setDaemon(true);
        }

        /** What the read at the start found (the journals then grow). */
        public Result result() {
            return result;
        }

        /**
         * The journals followed now: those of the read at the start, then, in the order they
         * appeared, those of the nodes that shipped their header after it (or shipped again after
         * the window left them out). Safe to read from any thread; it only grows.
         */
        public List<NodeJournal> journals() {
            return java.util.Collections.unmodifiableList(journals);
        }

        /** Entries appended to the journals since the read at the start. */
        public long appended() {
            return appended.get();
        }

        private void run() {
            Map<String, NodeCopy> nodes = new TreeMap<>();
            Map<TopicPartition, Long> ends = new HashMap<>();
            try {
                result = copy(uri, argument, root, nowMs, timeout, nodes, ends);
                java.util.Set<String> followed = new java.util.HashSet<>();
                result.journals().forEach(j -> followed.add(j.name()));
                journals.addAll(result.journals());
                started.complete(this);
                java.util.Set<String> told = new java.util.HashSet<>();
                try (KafkaConsumer<byte[], byte[]> c = consumer(uri, timeout)) {
                    consumer = c;
                    if (stop) {
                        return;
                    }
                    c.assign(ends.keySet());
                    ends.forEach(c::seek);
                    while (!stop) {
                        ConsumerRecords<byte[], byte[]> records;
                        try {
                            records = c.poll(Duration.ofMillis(500));
                        } catch (org.apache.kafka.common.errors.WakeupException e) {
                            break;
                        }
                        for (ConsumerRecord<byte[], byte[]> r : records) {
                            String node = ShippedEntry.nodeId(r.key());
                            long seq = ShippedEntry.seq(r.value());
                            try {
                                check(uri, r, node, seq);
                            } catch (InputException e) {
                                notes.accept(e.getMessage() + "; not followed");
                                continue;
                            }
                            NodeCopy n = nodes.get(node);
                            if (n == null && seq == 0 && !told.contains(node)) {
                                // a node that ships its header now: a journal of its own, as the read would have made
                                n = new NodeCopy(node, r.partition(), RawJournalWriter.create(root.resolve(newDirName(node, nodes))));
                                nodes.put(node, n);
                                join(n, followed, "shipped its first entries after the start");
                            } else if (n != null && !followed.contains(node) && n.partition == r.partition()) {
                                // left out by the window, whole in its copy up to the read's end: it ships again
                                join(n, followed, "left out by the window, ships again");
                            }
                            if (n == null || n.partition != r.partition()) {
                                if (told.add(node)) {
                                    notes.accept(argument + ": node " + node + (n == null ? " first appears after the start at seq "
                                            + seq + ", not at its header (seq 0)" : " has entries in another partition now")
                                            + ": not followed (start again to read it)");
                                }
                                continue;
                            }
                            if (seq <= n.lastSeq) {
                                continue;
                            }
                            n.writer.append(r.value());
                            n.lastSeq = seq;
                            appended.incrementAndGet();
                        }
                    }
                }
            } catch (RuntimeException e) {
                if (!started.completeExceptionally(e)) {
                    notes.accept("stopped following " + argument + ": " + e.getMessage());
                }
            } finally {
                for (NodeCopy c : nodes.values()) {
                    c.writer.close();
                }
            }
        }

        private void join(NodeCopy n, java.util.Set<String> followed, String why) {
            followed.add(n.node);
            journals.add(new NodeJournal(n.writer.dir(), n.node, argument));
            notes.accept(argument + ": node " + n.node + " " + why + ": following it");
        }

        /** Stops following and closes the journals. */
        @Override
        public void close() {
            stop = true;
            KafkaConsumer<byte[], byte[]> c = consumer;
            if (c != null) {
                c.wakeup();
            }
            try {
                thread.join(30_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** The read of {@link #read}, leaving the writers in {@code nodes} open; the end offsets read up to go to {@code ends}. */
    private static Result copy(KafkaUri uri, String argument, Path root, long nowMs, Duration timeout, Map<String, NodeCopy> nodes,
                               Map<TopicPartition, Long> ends) {
        long[] counts = new long[2];
        ends.putAll(scan(uri, timeout, r -> {
            String node = ShippedEntry.nodeId(r.key());
            long seq = ShippedEntry.seq(r.value());
            check(uri, r, node, seq);
            NodeCopy c = nodes.get(node);
            if (c == null) {
                if (seq != 0) {
                    throw new InputException(argument + ": node " + node + ": the topic holds its entries from seq "
                            + seq + " on, not from its header (seq 0): retention or compaction removed the start; "
                            + "read that node from its own journal");
                }
                c = new NodeCopy(node, r.partition(), RawJournalWriter.create(root.resolve(dirName(node, nodes.size()))));
                nodes.put(node, c);
            } else if (c.partition != r.partition()) {
                throw new InputException(argument + ": node " + node + " has entries in partitions " + c.partition
                        + " and " + r.partition() + " (the topic's partition count changed?): their order is unknown");
            }
            counts[0]++;
            c.lastTimestamp = Math.max(c.lastTimestamp, r.timestamp());
            if (seq <= c.lastSeq) {
                counts[1]++;
                return;
            }
            c.writer.append(r.value());
            c.lastSeq = seq;
        }));
        List<NodeJournal> out = new ArrayList<>();
        List<String> leftOut = new ArrayList<>();
        long from = uri.since() == null ? Long.MIN_VALUE : nowMs - uri.since().toMillis();
        for (NodeCopy c : nodes.values()) {
            if (c.lastTimestamp < from) {
                leftOut.add(c.node);
            } else {
                out.add(new NodeJournal(c.writer.dir(), c.node, argument));
            }
        }
        if (out.isEmpty()) {
            throw new InputException(argument + ": no journal there: the topic holds " + (nodes.isEmpty() ? "no entries"
                    : "no node with entries shipped in the last " + uri.since().toSeconds() + " s"));
        }
        return new Result(out, counts[0], counts[1], leftOut);
    }

    /**
     * The last seq the topic holds for each node (a shipper resumes after it).
     *
     * @throws InputException when the topic does not exist or the broker does not answer
     */
    public static Map<String, Long> lastSeqs(KafkaUri uri, Duration timeout) {
        Map<String, Long> out = new HashMap<>();
        scan(uri, timeout, r -> {
            String node = ShippedEntry.nodeId(r.key());
            long seq = ShippedEntry.seq(r.value());
            check(uri, r, node, seq);
            out.merge(node, seq, Math::max);
        });
        return out;
    }

    /**
     * Where a shipper resumes ({@link #resumePoints}).
     *
     * @param lastSeqs    the last seq the topic holds for each node found (absent: none)
     * @param lastEntries the entry (a record's value) with that seq, by node: a shipper checks that
     *                    its journal holds the same bytes there before it ships what follows
     * @param lastOffsets the offset of that entry's record, by node
     * @param recordsRead records read to find them
     * @param marked      nodes found at the offset given for them ({@code marks}) rather than in a tail
     */
    public record Resume(Map<String, Long> lastSeqs, Map<String, byte[]> lastEntries, Map<String, Long> lastOffsets,
                         long recordsRead, java.util.Set<String> marked) {}

    /** Records read first at the end of a partition by {@link #resumePoints}; each widening reads four times more. */
    public static final long TAIL_WINDOW = 1024;

    /**
     * The last seq the topic holds for each of {@code nodes}, read from the tails of the partitions
     * rather than the whole topic: a node's records all go to the partition its key hashes to (the
     * producer's partitioner for keyed records, over the topic's partition count), so only that
     * partition is read, from its end minus {@code window} records; a node not seen there makes
     * the window four times wider, down to the partition's start. A restart on a big topic so
     * reads about a window per partition of its nodes; only a node that never shipped costs its
     * partition whole. The last seq is the largest seq of the node's records read, which
     * include its last record.
     *
     * @throws InputException when the topic does not exist, the broker does not answer, or a
     *                        record read is no shipped entry
     */
    public static Resume resumePoints(KafkaUri uri, java.util.Collection<String> nodes, long window, Duration timeout) {
        return resumePoints(uri, nodes, Map.of(), window, timeout);
    }

    /**
     * {@link #resumePoints(KafkaUri, java.util.Collection, long, Duration)}, but a node of
     * {@code marks} is looked for first at the offset given for it, in its partition: when the
     * record there is the node's with the seq given ({@code {offset, seq}}), that is taken as the
     * node's last, one record read; else its partition's tail is read as for the others. The
     * caller vouches that the node has no later record (a shipper's mark of a clean stop).
     */
    public static Resume resumePoints(KafkaUri uri, java.util.Collection<String> nodes, Map<String, long[]> marks, long window,
                                      Duration timeout) {
        Map<String, Long> out = new HashMap<>();
        Map<String, byte[]> entries = new HashMap<>();
        Map<String, Long> offsets = new HashMap<>();
        java.util.Set<String> marked = new java.util.HashSet<>();
        long read = 0;
        try (KafkaConsumer<byte[], byte[]> c = consumer(uri, timeout)) {
            List<PartitionInfo> parts = c.partitionsFor(uri.topic(), timeout);
            if (parts == null || parts.isEmpty()) {
                throw new InputException(uri + ": no such topic at " + uri.bootstrap());
            }
            Map<Integer, java.util.Set<String>> wanted = new TreeMap<>();
            for (String node : nodes) {
                long[] mark = marks.get(node);
                if (mark != null) {
                    TopicPartition tp = new TopicPartition(uri.topic(), partitionOf(node, parts.size()));
                    long begin = c.beginningOffsets(List.of(tp), timeout).get(tp);
                    long end = c.endOffsets(List.of(tp), timeout).get(tp);
                    if (mark[0] >= begin && mark[0] < end) {
                        List<ConsumerRecord<byte[], byte[]>> at = new ArrayList<>(1);
                        read += readRange(c, uri, tp, mark[0], mark[0] + 1, timeout, at::add);
                        ConsumerRecord<byte[], byte[]> r = at.isEmpty() ? null : at.getFirst();
                        if (r != null && node.equals(ShippedEntry.nodeId(r.key())) && ShippedEntry.seq(r.value()) == mark[1]) {
                            check(uri, r, node, mark[1]);
                            out.put(node, mark[1]);
                            entries.put(node, r.value());
                            offsets.put(node, r.offset());
                            marked.add(node);
                            continue;
                        }
                    }
                }
                wanted.computeIfAbsent(partitionOf(node, parts.size()), k -> new java.util.HashSet<>()).add(node);
            }
            for (var w : wanted.entrySet()) {
                TopicPartition tp = new TopicPartition(uri.topic(), w.getKey());
                long begin = c.beginningOffsets(List.of(tp), timeout).get(tp);
                long to = c.endOffsets(List.of(tp), timeout).get(tp);
                java.util.Set<String> missing = new java.util.HashSet<>(w.getValue());
                long span = Math.max(1, window);
                while (!missing.isEmpty() && to > begin) {
                    long from = Math.max(begin, to - span);
                    read += readRange(c, uri, tp, from, to, timeout, r -> {
                        String node = ShippedEntry.nodeId(r.key());
                        long seq = ShippedEntry.seq(r.value());
                        check(uri, r, node, seq);
                        if (w.getValue().contains(node) && seq > out.getOrDefault(node, -1L)) {
                            out.put(node, seq);
                            entries.put(node, r.value());
                            offsets.put(node, r.offset());
                        }
                    });
                    missing.removeAll(out.keySet());
                    to = from;
                    span = Math.multiplyExact(span, 4);
                }
            }
        } catch (KafkaException e) {
            throw new InputException("cannot read " + uri + ": " + e.getMessage(), e);
        }
        return new Resume(out, entries, offsets, read, marked);
    }

    /** The partition the producer sends a node's records to (its partitioner for keyed records). */
    public static int partitionOf(String node, int partitions) {
        return org.apache.kafka.common.utils.Utils.toPositive(org.apache.kafka.common.utils.Utils.murmur2(ShippedEntry.key(node)))
                % partitions;
    }

    /** Hands the records of {@code tp} at offsets {@code [from, to)} to {@code each}; returns how many. */
    private static long readRange(KafkaConsumer<byte[], byte[]> c, KafkaUri uri, TopicPartition tp, long from, long to,
                                  Duration timeout, Consumer<ConsumerRecord<byte[], byte[]>> each) {
        c.assign(List.of(tp));
        c.seek(tp, from);
        long n = 0;
        long idleSince = System.nanoTime();
        while (c.position(tp, timeout) < to) {
            var records = c.poll(Duration.ofMillis(200));
            if (records.isEmpty()) {
                if (System.nanoTime() - idleSince > timeout.toNanos()) {
                    throw new InputException(uri + ": partition " + tp.partition() + " gave nothing for "
                            + timeout.toSeconds() + " s at offset " + c.position(tp, timeout) + " of " + to);
                }
                continue;
            }
            idleSince = System.nanoTime();
            for (ConsumerRecord<byte[], byte[]> r : records) {
                if (r.offset() >= to) {
                    break;
                }
                each.accept(r);
                n++;
            }
        }
        return n;
    }

    /** Whether the topic exists (false also when it has no partitions). */
    static boolean exists(KafkaUri uri, Duration timeout) {
        try (KafkaConsumer<byte[], byte[]> c = consumer(uri, timeout)) {
            List<PartitionInfo> parts = c.partitionsFor(uri.topic(), timeout);
            return parts != null && !parts.isEmpty();
        } catch (KafkaException e) {
            throw new InputException("cannot reach Kafka at " + uri.bootstrap() + ": " + e.getMessage(), e);
        }
    }

    private static void check(KafkaUri uri, ConsumerRecord<byte[], byte[]> r, String node, long seq) {
        long stated = ShippedEntry.headerSeq(r.headers());
        if (node == null || seq < 0 || (stated >= 0 && stated != seq)) {
            throw new InputException(uri + ": the record at partition " + r.partition() + " offset " + r.offset()
                    + " is no shipped journal entry (" + (node == null ? "no key" : seq < 0 ? "its value is too short"
                    : "its seq header says " + stated + ", the entry " + seq) + ")");
        }
    }

    /** {@link #dirName}, or another name when a node read earlier has that directory already. */
    private static String newDirName(String node, Map<String, NodeCopy> nodes) {
        String name = dirName(node, nodes.size());
        for (int i = nodes.size(); taken(name, nodes); i++) {
            name = "node-" + i;
        }
        return name;
    }

    private static boolean taken(String name, Map<String, NodeCopy> nodes) {
        return nodes.values().stream().anyMatch(c -> c.writer.dir().getFileName().toString().equals(name));
    }

    /** A node id as a directory name: kept when it is a plain name, else made one. */
    private static String dirName(String node, int index) {
        return node.matches("[A-Za-z0-9._-]{1,100}") && !node.startsWith(".") ? node : "node-" + index;
    }

    private static KafkaConsumer<byte[], byte[]> consumer(KafkaUri uri, Duration timeout) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, uri.bootstrap());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "10000");
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, String.valueOf(timeout.toMillis()));
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "kvledger-reader");
        return new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    /**
     * Hands every record of the topic, partition by partition in offset order, up to the end
     * offsets it had at the start, to {@code each}.
     */
    private static Map<TopicPartition, Long> scan(KafkaUri uri, Duration timeout, Consumer<ConsumerRecord<byte[], byte[]>> each) {
        Map<TopicPartition, Long> ends = new HashMap<>();
        try (KafkaConsumer<byte[], byte[]> c = consumer(uri, timeout)) {
            List<PartitionInfo> parts = c.partitionsFor(uri.topic(), timeout);
            if (parts == null || parts.isEmpty()) {
                throw new InputException(uri + ": no such topic at " + uri.bootstrap());
            }
            List<TopicPartition> tps = parts.stream().map(pi -> new TopicPartition(pi.topic(), pi.partition()))
                    .sorted(java.util.Comparator.comparingInt(TopicPartition::partition)).toList();
            // one partition at a time: a node's entries are in one partition, in order
            for (TopicPartition tp : tps) {
                c.assign(List.of(tp));
                c.seekToBeginning(List.of(tp));
                long end = c.endOffsets(List.of(tp), timeout).get(tp);
                ends.put(tp, end);
                long idleSince = System.nanoTime();
                while (c.position(tp, timeout) < end) {
                    var records = c.poll(Duration.ofMillis(200));
                    if (records.isEmpty()) {
                        if (System.nanoTime() - idleSince > timeout.toNanos()) {
                            throw new InputException(uri + ": partition " + tp.partition() + " gave nothing for "
                                    + timeout.toSeconds() + " s at offset " + c.position(tp, timeout) + " of " + end);
                        }
                        continue;
                    }
                    idleSince = System.nanoTime();
                    for (ConsumerRecord<byte[], byte[]> r : records) {
                        if (r.offset() >= end) {
                            break;
                        }
                        each.accept(r);
                    }
                }
            }
        } catch (KafkaException e) {
            throw new InputException("cannot read " + uri + ": " + e.getMessage(), e);
        } catch (JournalException e) {
            throw new InputException("cannot write the journals read from " + uri + ": " + e.getMessage(), e);
        }
        return ends;
    }
}
