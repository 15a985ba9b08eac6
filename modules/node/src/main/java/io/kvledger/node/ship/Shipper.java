package io.kvledger.node.ship;

import io.kvledger.journal.JournalException;
import io.kvledger.journal.JsonLinesTail;
import io.kvledger.journal.RawEntryTailer;
import io.kvledger.ledger.kafka.KafkaSource;
import io.kvledger.ledger.kafka.KafkaUri;
import io.kvledger.ledger.kafka.ShippedEntry;
import io.kvledger.ledger.metrics.ShipSeries;
import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.ledger.replay.JournalInputs.InputException;
import io.kvledger.ledger.replay.JsonLinesInputs;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Ships journals to a Kafka topic: follows each journal from its header ({@link RawEntryTailer}, a
 * reader apart from the journal's writer, which it never slows or blocks) and appends every entry
 * to the topic as a {@link ShippedEntry} (key: the node id; value: the entry's bytes). A
 * JSON-lines recording (the vLLM bridge's recorder writes one per engine process) is followed as
 * it grows ({@link JsonLinesTail}): each line goes as the entries {@code journal import} makes of
 * it, with the seqs the import assigns, so a restart finds the same seqs; a bad line stops that
 * recording's shipping, said with its file and line, and the exit status says so. While it
 * follows, the directories of {@link Options#watch} are listed every {@value #SCAN_EVERY_MS} ms and
 * what appears there is followed too.
 *
 * <p>At-least-once, resumable without local state: at start it reads back the last seq the topic
 * holds for each node from the tail of its partition ({@link KafkaSource#resumePoints}), or from
 * the one record a clean stop marked ({@link ShipMarks}), and ships what follows; readers drop the
 * duplicates a crash between a send and its acknowledgement leaves. The producer is idempotent with
 * {@code acks=all} and retries without a deadline, so a node's entries stay in order in its
 * partition across broker restarts.
 *
 * <p>Memory is bounded by the producer's buffer ({@code bufferBytes}): when the broker is away, the
 * producer keeps what it was handed and retries; once its buffer is full, the next send waits for
 * room (the shipper's own thread only: the journals it reads go on growing on disk). A watcher
 * thread says so on standard error, at most every {@value #COMPLAINT_EVERY_S} s, with the backlog
 * (entries handed over and not acknowledged). No send gives up: a record the producer dropped
 * while later ones went through would be a gap in the topic.
 *
 * <p>Threading: {@link #run} on one thread, plus the watcher; the counters are read from any.
 */
public final class Shipper implements AutoCloseable, ShipSeries.Counters {

    /** Seconds between two lines about an unreachable broker. */
    static final int COMPLAINT_EVERY_S = 10;

    /** How long a stop waits for the acknowledgement of what was sent before it leaves the rest to the journals. */
    static final Duration STOP_GRACE = Duration.ofSeconds(2);

    /** Exit status of a run stopped with entries sent and not acknowledged (they are in the journals). */
    static final int STOPPED_UNACKNOWLEDGED = 4;

    /**
     * How to ship.
     *
     * @param target      the topic
     * @param journals    the journal directories to follow
     * @param follow      keep following the journals (false: ship what they hold now, then stop)
     * @param bufferBytes the producer's memory for entries not yet acknowledged
     * @param partitions  partitions of the topic when the shipper creates it
     * @param watch       directories to watch while following (their listing polled every
     *                    {@value #SCAN_EVERY_MS} ms): each journal directory or recording that
     *                    appears in one (recordings, a journal directory, or
     *                    journal directories under it) is followed too, from what the topic holds
     *                    of its node; one that does not exist yet is waited for
     */
    public record Options(KafkaUri target, List<Path> journals, boolean follow, long bufferBytes, int partitions,
            List<Path> watch) {
        public Options {
            journals = List.copyOf(journals);
            watch = List.copyOf(watch);
        }

        /** Without directories to watch: the journals given, and only those. */
        public Options(KafkaUri target, List<Path> journals, boolean follow, long bufferBytes, int partitions) {
            this(target, journals, follow, bufferBytes, partitions, List.of());
        }
    }

    /** Milliseconds between two listings of the watched directories. */
    public static final int SCAN_EVERY_MS = 1000;

    /** How long a listing waits for the broker to say where the new journals resume. */
    private static final Duration SCAN_RESUME_TIMEOUT = Duration.ofSeconds(5);

    /** One node's counters, read by {@link ShipMetrics} from any thread. */
    static final class NodeCounters {
        final String node;
        final AtomicLong sent = new AtomicLong();
        final AtomicLong acked = new AtomicLong();
        /** The largest seq acknowledged (-1: none since the start). */
        final AtomicLong ackedSeq = new AtomicLong(-1);
        /** The offset of that entry's record (-1: none since the start). */
        final AtomicLong ackedOffset = new AtomicLong(-1);

        NodeCounters(String node) {
            this.node = node;
        }
    }

    /** One journal followed: a journal directory, or a JSON-lines recording ({@link JsonLinesTail}). */
    private static final class Source {
        final RawEntryTailer tailer;
        final JsonLinesTail lines;
        final Path where;
        final String node;
        final byte[] key;
        final NodeCounters counters;
        long resumeAfter = -1;
        /** The offset of the topic's last record of the node when its shipping started (-1: none). */
        long topicOffset = -1;
        /** That record's seq. */
        long topicSeq = -1;
        /** The topic's entry at {@link #resumeAfter}, which the journal must hold too (null: checked, or none). */
        byte[] expect;
        /** Why this journal is not shipped on (it is not what the topic holds for its node), or null. */
        String mismatch;
        long lastSeqRead = -1;
        byte[] pending;
        boolean told;

        Source(Path where) {
            this.where = where;
            if (Files.isRegularFile(where)) {
                this.lines = JsonLinesTail.open(where);
                this.tailer = null;
                this.node = lines.header().nodeId();
            } else {
                this.tailer = RawEntryTailer.open(where);
                this.lines = null;
                this.node = tailer.header().nodeId();
            }
            this.key = ShippedEntry.key(node);
            this.counters = new NodeCounters(node);
        }

        /** The next entry's bytes, or null; {@code atEnd}: what the journal holds is all there is. */
        byte[] poll(boolean atEnd) {
            return tailer != null ? tailer.poll(Duration.ZERO) : lines.poll(atEnd);
        }

        void close() {
            if (tailer != null) {
                tailer.close();
            } else {
                lines.close();
            }
        }
    }

    private final Options options;
    private final PrintWriter err;
    private final List<Source> sources = new java.util.concurrent.CopyOnWriteArrayList<>();
    /** The journals followed and those refused, by absolute path: a watched directory's listing skips them. */
    private final java.util.Set<Path> known = new java.util.HashSet<>();
    /** Journals that appeared and could not be opened yet (said once each), by absolute path. */
    private final java.util.Set<Path> waiting = new java.util.HashSet<>();
    private long nextScanNs;
    private final AtomicLong sent = new AtomicLong();
    private final AtomicLong acked = new AtomicLong();
    private final AtomicLong sentBytes = new AtomicLong();
    private final AtomicLong ackedBytes = new AtomicLong();
    private final AtomicLong skipped = new AtomicLong();
    private final AtomicLong stoppedAtBadLine = new AtomicLong();
    private final AtomicReference<Exception> failure = new AtomicReference<>();
    /** When the send under way started (0: none): a send that waits long means the buffer is full. */
    private volatile long sendingSinceNs;
    private KafkaProducer<byte[], byte[]> producer;
    private long lastComplaintNs;
    /** Whether to keep following; {@link #finish} turns it off. */
    private volatile boolean follow;
    /** Whether a stop closed the producer under a send (or with entries in flight): its errors are no failure then. */
    private volatile boolean aborted;

    /**
     * Opens the journals (each must have a readable header; two journals of one node id are refused).
     *
     * @throws InputException when a journal cannot be opened or two share a node id
     */
    public Shipper(Options options, PrintWriter err) {
        this.options = options;
        this.err = err;
        this.follow = options.follow();
        Map<String, Path> seen = new LinkedHashMap<>();
        try {
            for (Path dir : options.journals()) {
                Source s = new Source(dir);
                sources.add(s);
                known.add(absolute(dir));
                Path other = seen.putIfAbsent(s.node, dir);
                if (other != null) {
                    throw new InputException("the journals " + other + " and " + dir + " are both of node " + s.node
                            + ": a topic keys entries by node id, so each node is shipped from one journal");
                }
            }
        } catch (JournalException e) {
            close();
            throw new InputException("cannot ship: " + e.getMessage(), e);
        } catch (InputException e) {
            close();
            throw e;
        }
    }

    /** The node ids shipped, in the order the journals were given. */
    public List<String> nodes() {
        return sources.stream().map(s -> s.node).toList();
    }

    /**
     * Stops following (any thread): {@link #run} ships what the journals hold by now, waits for the
     * acknowledgements and returns, as with {@code follow} off from the start.
     */
    public void finish() {
        follow = false;
    }

    /** Entries handed to the producer. */
    @Override
    public long sent() {
        return sent.get();
    }

    /** Entries the broker acknowledged. */
    @Override
    public long acknowledged() {
        return acked.get();
    }

    /** Entries sent and not acknowledged yet: what the producer holds in memory. */
    @Override
    public long backlog() {
        return sent.get() - acked.get();
    }

    /** Bytes of the entries sent and not acknowledged yet (the entries' own bytes, not the producer's overhead). */
    @Override
    public long backlogBytes() {
        return sentBytes.get() - ackedBytes.get();
    }

    /** Each followed journal's counters, in the order they were opened (journals that appear later come last). */
    List<NodeCounters> nodeCounters() {
        return sources.stream().map(s -> s.counters).toList();
    }

    /**
     * Whether a send has waited for {@code minNs} or more (for room in the producer's full buffer,
     * or for the topic's metadata while the broker is away).
     */
    boolean sendWaiting(long minNs) {
        long since = sendingSinceNs;
        return since != 0 && System.nanoTime() - since >= minNs;
    }

    /** Entries left out at start because the topic already held them. */
    @Override
    public long skipped() {
        return skipped.get();
    }

    /**
     * Journals whose shipping stopped or that were refused, each said on standard error: one that
     * appeared in a watched directory under a node id shipped already, or holding inputs only; a recording (JSON lines) at a
     * line that is not a valid entry line, or replaced under its name; a journal that is not the
     * one the topic holds for its node (its entry at the topic's last seq differs, or it ends
     * before it: another run under the same node id).
     */
    long stoppedAtBadLine() {
        return stoppedAtBadLine.get();
    }

    /** {@link #stoppedAtBadLine}. */
    @Override
    public long journalsStopped() {
        return stoppedAtBadLine();
    }

    /** Whether a send has waited {@value ShipSeries#FULL_AFTER_S} s or more ({@link #sendWaiting}). */
    @Override
    public boolean bufferFull() {
        return sendWaiting(TimeUnit.SECONDS.toNanos(ShipSeries.FULL_AFTER_S));
    }

    /**
     * Ships until {@code stop} says so (or, without {@code follow}, until the journals' entries
     * written so far are acknowledged).
     *
     * @return 0 when stopped or done; 1 when the producer failed for good (what failed is on
     *         standard error; a restart resumes from what the topic holds); 3 when done or stopped
     *         but a recording's shipping stopped at a bad line ({@link #stoppedAtBadLine});
     *         {@value #STOPPED_UNACKNOWLEDGED} when stopped with entries sent and not acknowledged
     *         ({@link #backlog}: a broker away, the buffer full): they are in the journals, and a
     *         restart ships them. A stop waits {@link #STOP_GRACE} for acknowledgements, and a
     *         send waiting for room in a full buffer is broken off, so a stop takes seconds.
     */
    public int run(BooleanSupplier stop) throws InterruptedException {
        if (!prepare(stop)) {
            return 0;
        }
        producer = producer();
        Thread watcher = Thread.ofPlatform().daemon().name("kvledger-ship-watch").start(() -> {
            for (long tick = 0; !Thread.currentThread().isInterrupted(); tick++) {
                if (tick % 10 == 0) {
                    watch();
                }
                if (sendingSinceNs != 0 && stop.getAsBoolean()) {
                    abort(); // a send waits for room the broker will not make: the stop breaks it off
                }
                try {
                    Thread.sleep(100);
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
        int rc;
        try {
            rc = ship(stop);
        } finally {
            watcher.interrupt();
        }
        markClean();
        return rc;
    }

    private int ship(BooleanSupplier stop) throws InterruptedException {
        while (!stop.getAsBoolean()) {
            if (failure.get() != null) {
                return failed();
            }
            if (follow && !options.watch().isEmpty() && System.nanoTime() - nextScanNs >= 0) {
                scan();
                nextScanNs = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(SCAN_EVERY_MS);
            }
            int moved = 0;
            for (Source s : sources) {
                moved += pump(s, stop);
            }
            if (moved == 0) {
                if (!follow) {
                    break;
                }
                LockSupport.parkNanos(2_000_000);
            }
        }
        // without follow, done means acknowledged
        while (backlog() > 0 && failure.get() == null && !stop.getAsBoolean()) {
            Thread.sleep(10);
        }
        if (stop.getAsBoolean()) {
            // a stop waits a little for what is in flight; the rest is in the journals for a restart
            long end = System.nanoTime() + STOP_GRACE.toNanos();
            while (backlog() > 0 && failure.get() == null && !aborted && System.nanoTime() < end) {
                Thread.sleep(10);
            }
            if (backlog() > 0 && failure.get() == null) {
                abort();
            }
        }
        return failure.get() != null ? failed() : aborted && backlog() > 0 ? STOPPED_UNACKNOWLEDGED
                : stoppedAtBadLine.get() > 0 ? 3 : 0;
    }

    /** Closes the producer at once: what it holds unacknowledged is dropped from memory (the journals have it). */
    private synchronized void abort() {
        if (!aborted && producer != null) {
            aborted = true;
            producer.close(Duration.ZERO);
        }
    }

    /** Creates the topic when missing and reads where each node resumes; retried while the broker is away. */
    private boolean prepare(BooleanSupplier stop) throws InterruptedException {
        while (!stop.getAsBoolean()) {
            try {
                KafkaSource.Resume resume;
                try (Admin admin = admin()) {
                    ensureTopic(admin);
                    resume = resume(admin, sources, Duration.ofSeconds(30));
                }
                err.println("kvledger ship: " + resume.lastSeqs().size() + " of " + sources.size()
                        + " node(s) already in the topic, found in the tails of their partitions (" + resume.recordsRead()
                        + " records read)" + (resume.marked().isEmpty() ? "" : ", " + resume.marked().size()
                        + " of them at the record their last clean stop marked"));
                err.flush();
                return true;
            } catch (InputException | KafkaException e) {
                complain("cannot reach " + options.target() + " (" + e.getMessage() + "); retrying");
                Thread.sleep(1000);
            }
        }
        return false;
    }

    private Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, options.target().bootstrap());
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        return Admin.create(p);
    }

    /** Whether the nodes' marks are kept in the broker ({@link ShipMarks}); off when the broker refuses them. */
    private volatile boolean marking = true;

    /**
     * Where each of {@code list} resumes: at its clean mark when it has one, else from its partition's tail;
     * then marks them running, before anything of them is sent.
     */
    private KafkaSource.Resume resume(Admin admin, List<Source> list, Duration timeout) {
        List<String> nodes = list.stream().map(s -> s.node).toList();
        int partitions = partitions(admin, timeout);
        Map<String, long[]> marks = Map.of();
        if (marking) {
            try {
                marks = ShipMarks.read(admin, options.target(), partitions, nodes, timeout);
            } catch (org.apache.kafka.common.errors.GroupAuthorizationException
                     | org.apache.kafka.common.errors.UnsupportedVersionException e) {
                noMarks(e);
            }
        }
        KafkaSource.Resume resume = KafkaSource.resumePoints(options.target(), nodes, marks, KafkaSource.TAIL_WINDOW, timeout);
        if (marking) {
            try {
                ShipMarks.running(admin, options.target(), partitions, nodes, timeout);
            } catch (org.apache.kafka.common.errors.GroupAuthorizationException
                     | org.apache.kafka.common.errors.UnsupportedVersionException e) {
                noMarks(e);
            }
        }
        for (Source s : list) {
            s.resumeAfter = resume.lastSeqs().getOrDefault(s.node, -1L);
            s.topicSeq = s.resumeAfter;
            s.topicOffset = resume.lastOffsets().getOrDefault(s.node, -1L);
            s.expect = resume.lastEntries().get(s.node);
        }
        return resume;
    }

    private void noMarks(KafkaException e) {
        marking = false;
        err.println("kvledger ship: note: the broker keeps no marks of where shipping stopped (" + e.getMessage()
                + "); every start reads the tails of the partitions");
        err.flush();
    }

    private int partitions(Admin admin, Duration timeout) {
        try {
            return admin.describeTopics(List.of(options.target().topic())).allTopicNames().get(timeout.toMillis(),
                    TimeUnit.MILLISECONDS).get(options.target().topic()).partitions().size();
        } catch (ExecutionException e) {
            throw new KafkaException(e.getCause().getMessage(), e.getCause());
        } catch (java.util.concurrent.TimeoutException e) {
            throw new KafkaException("no answer within " + timeout.toSeconds() + " s", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new KafkaException("interrupted", e);
        }
    }

    /**
     * Marks every node clean at its last record ({@link ShipMarks}) once the run ended with every
     * entry sent acknowledged: the next start reads one record per node instead of the tails. A
     * node refused (not the topic's journal) keeps its mark; a failure leaves them running (said).
     */
    private void markClean() {
        if (!marking || aborted || failure.get() != null || backlog() != 0) {
            return;
        }
        Map<String, long[]> at = new LinkedHashMap<>();
        for (Source s : sources) {
            if (s.mismatch != null) {
                continue;
            }
            long offset = s.counters.ackedOffset.get();
            if (offset >= 0) {
                at.put(s.node, new long[] {offset, s.counters.ackedSeq.get()});
            } else if (s.topicOffset >= 0) {
                at.put(s.node, new long[] {s.topicOffset, s.topicSeq});
            }
        }
        if (at.isEmpty()) {
            return;
        }
        Admin admin = admin();
        try {
            ShipMarks.clean(admin, options.target(), partitions(admin, Duration.ofSeconds(5)), at, Duration.ofSeconds(5));
        } catch (KafkaException e) {
            err.println("kvledger ship: note: could not mark where shipping stopped (" + e.getMessage()
                    + "); the next start reads the tails of the partitions");
            err.flush();
        } finally {
            admin.close(Duration.ZERO); // a stop does not wait for an answer that did not come in time
        }
    }

    private void ensureTopic(Admin admin) {
        try {
            if (admin.listTopics().names().get(30, TimeUnit.SECONDS).contains(options.target().topic())) {
                return;
            }
            admin.createTopics(List.of(new NewTopic(options.target().topic(), options.partitions(), (short) -1)))
                    .all().get(30, TimeUnit.SECONDS);
            err.println("kvledger ship: created topic " + options.target().topic() + " (" + options.partitions()
                    + " partitions, the broker's default replication and retention)");
            err.flush();
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) {
                throw new KafkaException(e.getCause().getMessage(), e.getCause());
            }
        } catch (java.util.concurrent.TimeoutException e) {
            throw new KafkaException("no answer within 30 s", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new KafkaException("interrupted", e);
        }
    }

    /** A journal directory or recording in a watched directory; {@code inputsOnly}: a recording of inputs only. */
    private record Found(Path path, boolean inputsOnly) {}

    /**
     * The journals a watched directory holds now: the recordings of {@link JsonLinesInputs#files}
     * (earlier runs left out), else the directory itself when it is a journal, else its
     * subdirectories that are journals. None when it does not exist.
     */
    private static List<Found> found(Path dir) {
        JsonLinesInputs.Recordings rec = JsonLinesInputs.files(dir.toString());
        if (!rec.nodes().isEmpty()) {
            return rec.nodes().stream().map(f -> new Found(f.jsonl(), f.inputsOnly())).toList();
        }
        if (JournalInputs.holdsQueueFiles(dir)) {
            return List.of(new Found(dir, false));
        }
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (java.util.stream.Stream<Path> s = Files.list(dir)) {
            return s.filter(JournalInputs::holdsQueueFiles).sorted().map(p -> new Found(p, false)).toList();
        } catch (java.io.IOException e) {
            return List.of();
        }
    }

    /**
     * Lists the watched directories and follows what appeared there, each said on standard error,
     * from what the topic holds of its node. A journal that cannot be opened yet (its header not
     * written) is said once and tried again at the next listing, as is everything new while the
     * broker does not answer; one whose node id is followed already, or a recording of inputs only,
     * is refused, said, and makes the exit status 3.
     */
    private void scan() {
        List<Source> fresh = new ArrayList<>();
        for (Path root : options.watch()) {
            for (Found f : found(root)) {
                Path p = f.path();
                Path key = absolute(p);
                if (known.contains(key) || fresh.stream().anyMatch(o -> absolute(o.where).equals(key))) {
                    continue;
                }
                if (f.inputsOnly()) {
                    refuse(key, p + " holds inputs only: ship sends lines as journal import takes them; import it "
                            + "with --derive (kvledger journal import --derive) and ship that journal");
                    continue;
                }
                Source s;
                try {
                    s = new Source(p);
                } catch (JournalException e) {
                    if (waiting.add(key)) {
                        err.println("kvledger ship: note: " + p + " appeared and cannot be read yet (" + e.getMessage()
                                + "); trying again every " + SCAN_EVERY_MS + " ms");
                        err.flush();
                    }
                    continue;
                }
                if (sources.stream().anyMatch(o -> o.node.equals(s.node)) || fresh.stream().anyMatch(o -> o.node.equals(s.node))) {
                    s.close();
                    refuse(key, p + " is of node " + s.node + ", shipped from another journal already: a topic keys entries "
                            + "by node id, so each node is shipped from one journal; nothing of it is shipped");
                    continue;
                }
                fresh.add(s);
            }
        }
        if (fresh.isEmpty()) {
            return;
        }
        KafkaSource.Resume resume;
        try (Admin admin = admin()) {
            // a short bound: a stop is looked at between two listings, and the next listing tries again
            resume = resume(admin, fresh, SCAN_RESUME_TIMEOUT);
        } catch (InputException | KafkaException e) {
            complain("cannot reach " + options.target() + " (" + e.getMessage() + ") to find where the new journals "
                    + "resume; retrying");
            fresh.forEach(Source::close);
            return;
        }
        for (Source s : fresh) {
            sources.add(s);
            known.add(absolute(s.where));
            waiting.remove(absolute(s.where));
            err.println("kvledger ship: following " + s.where + " (node " + s.node + ", new since the start; "
                    + (s.resumeAfter < 0 ? "nothing of it in the topic yet)" : "the topic holds it up to seq " + s.resumeAfter + ")"));
        }
        err.flush();
    }

    private void refuse(Path key, String why) {
        known.add(key);
        stoppedAtBadLine.incrementAndGet();
        err.println("kvledger ship: error: " + why + " (the exit status will be 3)");
        err.flush();
    }

    private static Path absolute(Path p) {
        return p.toAbsolutePath().normalize();
    }

    /** Moves up to a batch of one journal's entries to the producer; returns how many. */
    private int pump(Source s, BooleanSupplier stop) {
        int moved = 0;
        while (moved < 1024 && !stop.getAsBoolean() && failure.get() == null && s.mismatch == null) {
            byte[] e = s.pending != null ? s.pending : s.poll(!follow);
            if (e == null) {
                if (!follow && s.expect != null && (s.lines == null || s.lines.problem() == null)) {
                    s.mismatch = "it ends at seq " + s.lastSeqRead + ", before seq " + s.resumeAfter + ", the last the topic holds";
                }
                tell(s);
                break;
            }
            long seq = RawEntryTailer.seq(e);
            s.lastSeqRead = seq;
            if (seq <= s.resumeAfter) {
                if (seq == s.resumeAfter && s.expect != null) {
                    if (!java.util.Arrays.equals(e, s.expect)) {
                        s.mismatch = "its entry seq " + seq + " differs from the topic's, the last the topic holds";
                    }
                    s.expect = null;
                }
                if (s.mismatch != null) {
                    tell(s);
                    break;
                }
                skipped.incrementAndGet();
                continue;
            }
            s.pending = e;
            RecordHeaders headers = new RecordHeaders();
            headers.add(ShippedEntry.SEQ_HEADER, ShippedEntry.seqHeader(seq));
            NodeCounters counters = s.counters;
            int bytes = e.length;
            // counted before the send: its acknowledgement may come before send returns, and backlog never goes below 0
            sentBytes.addAndGet(bytes);
            counters.sent.incrementAndGet();
            sent.incrementAndGet();
            sendingSinceNs = System.nanoTime();
            try {
                producer.send(new ProducerRecord<>(options.target().topic(), null, s.key, e, headers), (md, ex) -> {
                    if (ex == null) {
                        // bytes and the node's counters first: a reader that sees acked reach sent sees them too
                        ackedBytes.addAndGet(bytes);
                        counters.acked.incrementAndGet();
                        counters.ackedSeq.accumulateAndGet(seq, Math::max);
                        counters.ackedOffset.accumulateAndGet(md.offset(), Math::max);
                        acked.incrementAndGet();
                    } else if (!aborted) {
                        failure.compareAndSet(null, ex);
                    }
                });
            } catch (KafkaException | IllegalStateException fatal) {
                sentBytes.addAndGet(-bytes);
                counters.sent.decrementAndGet();
                sent.decrementAndGet();
                if (!aborted) {
                    failure.compareAndSet(null, fatal);
                }
                return moved;
            } finally {
                sendingSinceNs = 0;
            }
            s.pending = null;
            s.resumeAfter = seq;
            moved++;
        }
        return moved;
    }

    /** Says once what stopped a recording's shipping, or what its end left out. */
    private void tell(Source s) {
        if (s.told) {
            return;
        }
        if (s.mismatch != null) {
            s.told = true;
            stoppedAtBadLine.incrementAndGet();
            err.println("kvledger ship: error: " + s.where + " is not the journal the topic holds for node " + s.node + ": "
                    + s.mismatch + " (another run of the node under the same id: a restarted recorder, a journal made "
                    + "anew?); nothing of it is shipped: ship it to another topic (the exit status will be 3)");
            err.flush();
            return;
        }
        if (s.lines == null) {
            return;
        }
        String problem = s.lines.problem();
        if (problem != null) {
            s.told = true;
            stoppedAtBadLine.incrementAndGet();
            err.println("kvledger ship: error: " + problem + "; " + s.node + " is shipped up to seq " + s.resumeAfter
                    + " (the exit status will be 3)");
            err.flush();
        } else if (!s.lines.warnings().isEmpty()) {
            s.told = true;
            for (String w : s.lines.warnings()) {
                err.println("kvledger ship: warning: " + w);
            }
            err.flush();
        }
    }

    private long ackSeen;
    private long ackSeenNs;

    /**
     * Says so (watcher thread) when entries wait and no acknowledgement came for
     * {@value #COMPLAINT_EVERY_S} s, or a send waits that long for room in the buffer.
     */
    private void watch() {
        long now = System.nanoTime();
        long a = acked.get();
        long since = sendingSinceNs;
        if (since != 0 && now - since >= TimeUnit.SECONDS.toNanos(COMPLAINT_EVERY_S)) {
            complain("the broker at " + options.target().bootstrap() + " takes no entries: the buffer ("
                    + (options.bufferBytes() >> 20) + " MiB, " + backlog() + " entries) is full for "
                    + TimeUnit.NANOSECONDS.toSeconds(now - since) + " s; the journals keep the rest; waiting");
            return;
        }
        if (a != ackSeen || backlog() == 0 || ackSeenNs == 0) {
            ackSeen = a;
            ackSeenNs = now;
            return;
        }
        if (now - ackSeenNs >= TimeUnit.SECONDS.toNanos(COMPLAINT_EVERY_S)) {
            complain("no acknowledgement from " + options.target().bootstrap() + " for "
                    + TimeUnit.NANOSECONDS.toSeconds(now - ackSeenNs) + " s; " + backlog()
                    + " entries wait in memory (at most " + (options.bufferBytes() >> 20)
                    + " MiB, then the journals keep the rest); retrying");
        }
    }

    private synchronized void complain(String what) {
        long now = System.nanoTime();
        if (lastComplaintNs == 0 || now - lastComplaintNs >= TimeUnit.SECONDS.toNanos(COMPLAINT_EVERY_S)) {
            lastComplaintNs = now;
            err.println("kvledger ship: " + what);
            err.flush();
        }
    }

    private int failed() {
        err.println("kvledger ship: error: the producer failed: " + failure.get() + "; " + acknowledged()
                + " entries acknowledged; a restart resumes from what the topic holds");
        err.flush();
        return 1;
    }

    private KafkaProducer<byte[], byte[]> producer() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, options.target().bootstrap());
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "kvledger-ship");
        // per-node order across retries and broker restarts; an entry counts once the ISR has it
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5");
        p.put(ProducerConfig.RETRIES_CONFIG, String.valueOf(Integer.MAX_VALUE));
        // retried until the broker is back: a give-up would leave a gap only a restart repairs
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, String.valueOf(Integer.MAX_VALUE));
        p.put(ProducerConfig.BUFFER_MEMORY_CONFIG, String.valueOf(options.bufferBytes()));
        // a send waits for room (or for the topic's metadata while the broker is away) rather than fail
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, String.valueOf(Long.MAX_VALUE));
        // Keep the topic's metadata while every broker is away: a rebootstrap (the default since Kafka 4) forgets it,
        // and each send then waits for metadata with one entry in hand, the backlog staying in the journals where
        // /metrics cannot see it; without one, entries go to the buffer (the backlog grows, bounded) until it is full.
        p.put(org.apache.kafka.clients.CommonClientConfigs.METADATA_RECOVERY_STRATEGY_CONFIG, "none");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, String.valueOf(256 * 1024));
        return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }

    @Override
    public synchronized void close() {
        if (producer != null) {
            producer.close(aborted ? Duration.ZERO : Duration.ofSeconds(3));
            producer = null;
        }
        for (Source s : sources) {
            s.close();
        }
    }
}
