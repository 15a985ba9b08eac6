package io.kvledger.journal.replay;

import io.kvledger.journal.replay.JournalInputs.NodeJournal;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalReader;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Replays several node journals as one deployment: the input entries of every journal, merged by
 * event time ({@code atNs}; ties go to the journal listed first, then to the lower seq), each
 * re-run through a fresh {@link NodeReducer} of its node, configured from the journal header
 * (with {@link ConfigOverrides} applied). The effects handed to the {@link Listener} are the
 * recomputed ones; the derived entries the journal recorded for the same input come alongside,
 * for comparison ({@code replay --verify}), and may be missing altogether (journals imported from
 * JSON lines often hold inputs only).
 *
 * <p>Typical use:
 * <pre>{@code
 * try (Replayer r = Replayer.open(JournalInputs.resolveArgs(dirs), ConfigOverrides.none())) {
 *     r.run((node, input, effects, recorded) -> ...);
 * }
 * }</pre>
 *
 * <p>Streaming: memory does not grow with the journals' length (one pending input per journal); what a listener keeps is its own business. Unknown entries (a newer format)
 * are skipped and show up in {@link #warnings()}.
 *
 * <p>Threads: the listener runs on the thread that calls {@link #run}, in merged order. Reading,
 * decoding and reducing the journals runs there too by default ({@link #threads(int) threads(0)});
 * with {@code threads(n)}, n helper threads do it ahead of the listener, a batch of inputs of one journal at a time (each journal's reducer
 * stays on one batch's thread at a time, in journal order), and hand the batches over; the
 * listener sees the same inputs, effects and recorded entries in the same order either way, and
 * an error of a journal (an unreadable file) surfaces at the same point of the merge.
 * Memory stays bounded: at most {@value #AHEAD} batches of {@value #BATCH} inputs per journal
 * wait for the listener. Not reusable after {@link #run}.
 */
public final class Replayer implements AutoCloseable {

    /**
     * One node of the replay.
     *
     * @param index   its position in the journal order (ties of the merge go to the lower index)
     * @param name    the node's name in output: the header's node id, or, when two journals
     *                carry the same id, the journal's display name
     * @param journal where it was read from
     * @param header  the journal header
     * @param config  the configuration the reducer runs with (the header's, overrides applied)
     */
    public record Node(int index, String name, NodeJournal journal, JournalHeader header, NodeConfig config) {

        /** The configuration the journal recorded. */
        public NodeConfig recordedConfig() {
            return header.config();
        }
    }

    /** Receives the replay, in merged order. The lists passed are reused: copy what you keep. */
    public interface Listener {

        /**
         * A node starts, before any input of any node.
         *
         * @param startupEffects  what {@link NodeReducer#startupChecks} finds for its configuration
         * @param recordedStartup the derived entries the journal recorded for the header (cause 0)
         */
        default void started(Node node, List<Effect> startupEffects, List<JournalEntry.Derived> recordedStartup) {
        }

        /**
         * One input was applied.
         *
         * @param effects  what the reducer produced for it now, in order
         * @param recorded the derived entries the journal holds for it (cause seq = its seq), in order
         */
        void applied(Node node, JournalEntry.Input input, List<Effect> effects, List<JournalEntry.Derived> recorded);

        /** Every journal is exhausted (or past {@code until}). */
        default void finished() {
        }
    }

    /**
     * What a run read, per node.
     *
     * @param inputs        inputs applied
     * @param derived       derived entries read (-1 when {@link #recorded(boolean) not read})
     * @param unknown       entries skipped as unknown (a newer format)
     * @param orphanDerived derived entries whose cause is not the input before them (not compared)
     */
    public record NodeCounts(long inputs, long derived, long unknown, long orphanDerived) {}

    private final List<Node> nodes;
    private final List<JournalReader> readers;
    private List<NodeJournal> proxyJournals = List.of();
    private final Set<String> warnings = new LinkedHashSet<>();
    private long untilSeq = Long.MAX_VALUE;
    private boolean ran;
    private boolean readRecorded = true;
    private NodeCounts[] counts;
    private Progress progress = Progress.NONE;
    private int threads = defaultThreads();

    private Replayer(List<Node> nodes, List<JournalReader> readers) {
        this.nodes = nodes;
        this.readers = readers;
    }

    /**
     * Opens every journal and reads its header.
     *
     * @throws JournalInputs.InputException when a journal cannot be read
     */
    public static Replayer open(List<NodeJournal> journals, ConfigOverrides overrides) {
        List<JournalReader> readers = new ArrayList<>();
        List<NodeJournal> proxies = new ArrayList<>();
        List<NodeJournal> nodeJournals = new ArrayList<>();
        try {
            for (NodeJournal j : journals) {
                JournalReader r = j.open();
                if (r.header().proxy()) {
                    // a proxy's journal holds no node inputs: callers that want it read it with ProxyLedger
                    r.close();
                    proxies.add(j);
                } else {
                    readers.add(r);
                    nodeJournals.add(j);
                }
            }
        } catch (RuntimeException e) {
            readers.forEach(JournalReader::close);
            throw e;
        }
        journals = nodeJournals;
        List<String> ids = new ArrayList<>();
        for (JournalReader r : readers) {
            ids.add(r.header().nodeId());
        }
        List<Node> nodes = new ArrayList<>();
        Set<String> used = new LinkedHashSet<>();
        for (int i = 0; i < journals.size(); i++) {
            JournalHeader h = readers.get(i).header();
            String name = Collections.frequency(ids, h.nodeId()) > 1 ? journals.get(i).name() : h.nodeId();
            String unique = name;
            for (int k = 2; !used.add(unique); k++) {
                unique = name + "#" + k;
            }
            nodes.add(new Node(i, unique, journals.get(i), h, overrides.apply(h.config())));
        }
        Replayer r = new Replayer(List.copyOf(nodes), readers);
        r.proxyJournals = List.copyOf(proxies);
        return r;
    }

    /** The journals given to {@link #open} that a proxy wrote: not replayed (see {@code ProxyLedger}). */
    public List<NodeJournal> proxyJournals() {
        return proxyJournals;
    }

    /** The nodes, in journal order. */
    public List<Node> nodes() {
        return nodes;
    }

    /** Replays each journal only up to its entry {@code seq} (inputs after it are not applied). */
    public Replayer until(long seq) {
        this.untilSeq = seq;
        return this;
    }

    /**
     * Whether the derived entries the journals recorded are read and handed to the listener
     * (the default). Off, they are skipped before their payloads are decoded
     * ({@link JournalReader#inputIterator()}), which saves about a third of the decoding: the
     * recorded lists are then always empty and {@link NodeCounts#derived()} is -1. For passes
     * that recompute effects and do not compare them.
     */
    public Replayer recorded(boolean read) {
        this.readRecorded = read;
        return this;
    }

    /**
     * How many helper threads read, decode and reduce the journals ahead of the listener: 0 (the
     * default) does everything on the caller's thread; at most one per journal is used. The
     * system property {@code kvledger.replay.threads} sets the default for a whole JVM. (On the
     * shared 2-core machines of benchmarks/README.md two helpers cost about a third more CPU
     * time and finished later than none, so none is the default.)
     */
    public Replayer threads(int n) {
        if (n < 0) {
            throw new IllegalArgumentException("threads must be 0 or more, got " + n);
        }
        this.threads = n;
        return this;
    }

    private static int defaultThreads() {
        String p = System.getProperty("kvledger.replay.threads");
        if (p != null) {
            try {
                return Math.max(0, Integer.parseInt(p.strip()));
            } catch (NumberFormatException e) {
                // ignored: the default below
            }
        }
        return 0;
    }

    /** Reports inputs applied so far (for a progress line on stderr). */
    public Replayer progress(Progress p) {
        this.progress = p == null ? Progress.NONE : p;
        return this;
    }

    /** Called every {@value #PROGRESS_EVERY} inputs with the count so far. */
    @FunctionalInterface
    public interface Progress {
        Progress NONE = n -> { };

        void inputsApplied(long total);
    }

    static final int PROGRESS_EVERY = 1 << 16;

    /** Runs the replay to the end, calling {@code listener} for every input in merged order. */
    public void run(Listener listener) {
        if (ran) {
            throw new IllegalStateException("a Replayer runs once");
        }
        ran = true;
        int n = nodes.size();
        Cursor[] cursors = new Cursor[n];
        for (int i = 0; i < n; i++) {
            cursors[i] = new Cursor(nodes.get(i), readers.get(i), untilSeq, readRecorded);
        }
        int helpers = Math.min(threads, n);
        if (helpers == 0) {
            runHere(cursors, listener);
        } else {
            try (Pipeline p = new Pipeline(cursors, helpers)) {
                p.run(listener, progress);
            }
        }
        counts = new NodeCounts[n];
        for (int i = 0; i < n; i++) {
            Cursor c = cursors[i];
            counts[i] = new NodeCounts(c.inputs, readRecorded ? c.derivedCount : -1, c.unknown, c.orphans);
        }
        for (int i = 0; i < n; i++) {
            for (String w : readers.get(i).warnings()) {
                warnings.add(w);
            }
            long orphans = cursors[i].orphans;
            if (orphans > 0) {
                warnings.add(nodes.get(i).journal().name() + ": " + orphans
                        + " derived entries name a cause that is not the input before them; not compared");
            }
        }
        listener.finished();
    }

    /** The replay on the caller's thread alone. */
    private void runHere(Cursor[] cursors, Listener listener) {
        for (Cursor c : cursors) {
            c.start();
            c.advance();
            listener.started(c.node, c.startupEffects, c.startup);
        }
        long applied = 0;
        while (true) {
            // A linear scan: deployments have tens of nodes, and it beats a heap for a handful.
            Cursor best = null;
            for (Cursor c : cursors) {
                if (c.head != null && (best == null || c.head.atNs() < best.head.atNs())) {
                    best = c;
                }
            }
            if (best == null) {
                break;
            }
            listener.applied(best.node, best.head, best.sink, best.derived);
            best.advance();
            if ((++applied & (PROGRESS_EVERY - 1)) == 0) {
                progress.inputsApplied(applied);
            }
        }
    }

    /** Per node (journal order), what the run read; {@code null} before {@link #run}. */
    public List<NodeCounts> counts() {
        return counts == null ? null : List.of(counts);
    }

    /**
     * What the readers skipped or doubted, one line each (unknown type ids, undecodable entries,
     * unknown header keys). The readers prefix lines with the journal directory as opened.
     */
    /** Adds warnings of a pass that read other journals alongside (the proxies'). */
    public void addWarnings(List<String> more) {
        warnings.addAll(more);
    }

    public List<String> warnings() {
        return List.copyOf(warnings);
    }

    @Override
    public void close() {
        for (JournalReader r : readers) {
            r.close();
        }
    }

    /**
     * One journal's position: the next input ({@code head}), the effects the reducer produced for
     * it, and the derived entries the journal recorded for it (read ahead up to the input after it).
     */
    private static final class Cursor {
        final Node node;
        final JournalReader reader;
        final long until;
        final boolean readRecorded;
        Iterator<JournalEntry> it;
        NodeState state;
        final List<Effect> sink = new ArrayList<>();
        List<Effect> startupEffects = List.of();
        final List<JournalEntry.Derived> startup = new ArrayList<>();
        final List<JournalEntry.Derived> derived = new ArrayList<>();
        JournalEntry.Input head;
        JournalEntry.Input lookahead;
        boolean started;
        long inputs;
        long derivedCount;
        long unknown;
        long orphans;

        Cursor(Node node, JournalReader reader, long until, boolean readRecorded) {
            this.node = node;
            this.reader = reader;
            this.until = until;
            this.readRecorded = readRecorded;
        }

        /** Opens the pass. */
        void start() {
            it = readRecorded ? reader.iterator() : reader.inputIterator();
            state = NodeState.initial(node.config());
            startupEffects = NodeReducer.startupChecks(node.config());
        }

        void advance() {
            derived.clear();
            sink.clear();
            head = null;
            if (!started) {
                started = true;
                head = readInput(startup);
            } else if (lookahead != null) {
                head = lookahead;
                lookahead = null;
            }
            if (head == null) {
                return;
            }
            if (head.seq() > until) {
                head = null;
                return;
            }
            inputs++;
            lookahead = readInput(derived);
            NodeReducer.applyInto(state, head.event(), sink);
        }

        /**
         * Reads up to the next input, adding the derived entries on the way to {@code into} (those
         * whose cause is the current head, or the header when there is no head yet).
         */
        private JournalEntry.Input readInput(List<JournalEntry.Derived> into) {
            long cause = head == null ? 0 : head.seq();
            while (it.hasNext()) {
                JournalEntry e = it.next();
                switch (e) {
                    case JournalEntry.Input in -> {
                        return in;
                    }
                    case JournalEntry.Derived d -> {
                        derivedCount++;
                        if (d.causeSeq() == cause) {
                            into.add(d);
                        } else {
                            orphans++;
                        }
                    }
                    case JournalEntry.Unknown u -> unknown++;
                    case JournalEntry.Header h -> { }
                    case JournalEntry.Proxy px -> { }
                }
            }
            return null;
        }
    }

    // ---------------------------------------------------------------- the replay on helper threads

    /** Inputs per batch handed from a helper thread to the listener's. */
    static final int BATCH = 2048;
    /** Batches of one journal waiting for the listener, at most. */
    static final int AHEAD = 4;

    /**
     * A run of consecutive inputs of one journal, each with the effects its reducer produced and
     * the derived entries recorded for it (flat arrays, with each input's end offset).
     */
    private static final class Batch {
        final JournalEntry.Input[] inputs = new JournalEntry.Input[BATCH];
        /** Each input's atNs, for the merge (it compares times without touching the inputs). */
        final long[] at = new long[BATCH];
        final int[] fxEnd = new int[BATCH];
        final int[] recEnd;
        Effect[] fx = new Effect[BATCH];
        JournalEntry.Derived[] rec;
        int n;
        int fxN;
        int recN;
        /** The journal has no input after this batch. */
        boolean last;
        /** What reading the journal further threw: thrown where the journal's next input would be. */
        Throwable error;

        Batch(boolean recorded) {
            this.recEnd = recorded ? new int[BATCH] : null;
            this.rec = recorded ? new JournalEntry.Derived[16] : null;
        }

        void add(JournalEntry.Input in, List<Effect> effects, List<JournalEntry.Derived> recorded) {
            inputs[n] = in;
            at[n] = in.atNs();
            int k = effects.size();
            if (fxN + k > fx.length) {
                fx = java.util.Arrays.copyOf(fx, Math.max(fx.length * 2, fxN + k));
            }
            for (int i = 0; i < k; i++) {
                fx[fxN++] = effects.get(i);
            }
            fxEnd[n] = fxN;
            if (recEnd != null) {
                int r = recorded.size();
                if (recN + r > rec.length) {
                    rec = java.util.Arrays.copyOf(rec, Math.max(rec.length * 2, recN + r));
                }
                for (int i = 0; i < r; i++) {
                    rec[recN++] = recorded.get(i);
                }
                recEnd[n] = recN;
            }
            n++;
        }
    }

    /** A read-only view of {@code a[from, to)}, repointed for each input (the listener's lists are reused). */
    private static final class Slice<T> extends java.util.AbstractList<T> implements java.util.RandomAccess {
        private T[] a;
        private int from;
        private int size;

        void point(T[] a, int from, int to) {
            this.a = a;
            this.from = from;
            this.size = to - from;
        }

        @Override
        public T get(int i) {
            java.util.Objects.checkIndex(i, size);
            return a[from + i];
        }

        @Override
        public int size() {
            return size;
        }
    }

    /** One journal as the helpers see it: its cursor, and the batches it has made for the listener. */
    private static final class Feed {
        final Cursor cursor;
        final java.util.ArrayDeque<Batch> ready = new java.util.ArrayDeque<>();
        /** A helper is making its next batch. */
        boolean busy;
        /** The last batch is made. */
        boolean done;
        /** {@link Cursor#start} and the first advance have run (startup effects and entries known). */
        boolean started;
        List<Effect> startupEffects;
        List<JournalEntry.Derived> startup;

        Feed(Cursor cursor) {
            this.cursor = cursor;
        }
    }

    /**
     * Helper threads making batches for every journal, the fullest feeds last, and the merge on
     * the caller's thread. One lock guards the feeds' queues and flags; a feed's cursor is touched
     * only by the helper that marked it busy (the lock hands it from helper to helper).
     */
    private static final class Pipeline implements AutoCloseable {
        private final Feed[] feeds;
        private final boolean recorded;
        private final java.util.concurrent.locks.ReentrantLock lock = new java.util.concurrent.locks.ReentrantLock();
        private final java.util.concurrent.locks.Condition work = lock.newCondition();
        private final java.util.concurrent.locks.Condition made = lock.newCondition();
        private final Thread[] helpers;
        private boolean closed;

        Pipeline(Cursor[] cursors, int threads) {
            feeds = new Feed[cursors.length];
            for (int i = 0; i < cursors.length; i++) {
                feeds[i] = new Feed(cursors[i]);
            }
            recorded = cursors.length > 0 && cursors[0].readRecorded;
            helpers = new Thread[threads];
            for (int i = 0; i < threads; i++) {
                helpers[i] = Thread.ofPlatform().daemon().name("kvledger-replay-" + i).unstarted(this::help);
                helpers[i].start();
            }
        }

        /** A helper: makes the next batch of the feed with the fewest waiting, until every feed is done. */
        private void help() {
            while (true) {
                Feed f;
                lock.lock();
                try {
                    while (true) {
                        if (closed) {
                            return;
                        }
                        f = pick();
                        if (f != null) {
                            f.busy = true;
                            break;
                        }
                        if (allDone()) {
                            return;
                        }
                        work.awaitUninterruptibly();
                    }
                } finally {
                    lock.unlock();
                }
                Batch b = fill(f);
                lock.lock();
                try {
                    f.ready.addLast(b);
                    f.busy = false;
                    f.done = b.last;
                    made.signalAll();
                    if (f.done) {
                        work.signalAll(); // helpers waiting for the end may leave
                    }
                } finally {
                    lock.unlock();
                }
            }
        }

        private Feed pick() {
            Feed best = null;
            for (Feed f : feeds) {
                if (!f.busy && !f.done && f.ready.size() < AHEAD && (best == null || f.ready.size() < best.ready.size())) {
                    best = f;
                }
            }
            return best;
        }

        private boolean allDone() {
            for (Feed f : feeds) {
                if (!f.done) {
                    return false;
                }
            }
            return true;
        }

        /** Runs the cursor on for one batch (the first batch starts it). */
        private Batch fill(Feed f) {
            Cursor c = f.cursor;
            Batch b = new Batch(recorded);
            try {
                if (!f.started) {
                    c.start();
                    c.advance();
                    f.startupEffects = c.startupEffects;
                    f.startup = List.copyOf(c.startup);
                    f.started = true;
                }
                while (b.n < BATCH && c.head != null) {
                    b.add(c.head, c.sink, c.derived);
                    c.advance();
                }
                b.last = c.head == null;
            } catch (Throwable t) {
                b.error = t;
                b.last = true;
            }
            return b;
        }

        /** The next batch of feed {@code i}, waiting for a helper to make it. */
        private Batch take(int i) {
            Feed f = feeds[i];
            lock.lock();
            try {
                while (f.ready.isEmpty()) {
                    made.awaitUninterruptibly();
                }
                Batch b = f.ready.pollFirst();
                work.signal();
                return b;
            } finally {
                lock.unlock();
            }
        }

        /** The merge: as {@link Replayer#runHere}, over the batches. */
        void run(Listener listener, Progress progress) {
            int n = feeds.length;
            Batch[] cur = new Batch[n];
            int[] at = new int[n];
            long[] headAt = new long[n];
            for (int i = 0; i < n; i++) {
                cur[i] = take(i);
                Feed f = feeds[i];
                boolean startedNow;
                lock.lock();
                try {
                    startedNow = f.started;
                } finally {
                    lock.unlock();
                }
                if (!startedNow) {
                    rethrow(cur[i].error);
                }
                listener.started(f.cursor.node, f.startupEffects, f.startup);
                cur[i] = settle(i, cur[i], 0);
                if (cur[i] != null) {
                    headAt[i] = cur[i].at[0];
                }
            }
            Slice<Effect> fx = new Slice<>();
            Slice<JournalEntry.Derived> rec = new Slice<>();
            List<JournalEntry.Derived> none = List.of();
            long applied = 0;
            while (true) {
                int best = -1;
                long bestAt = 0;
                for (int i = 0; i < n; i++) {
                    if (cur[i] != null && (best < 0 || headAt[i] < bestAt)) {
                        best = i;
                        bestAt = headAt[i];
                    }
                }
                if (best < 0) {
                    break;
                }
                Batch b = cur[best];
                int k = at[best];
                fx.point(b.fx, k == 0 ? 0 : b.fxEnd[k - 1], b.fxEnd[k]);
                List<JournalEntry.Derived> recorded = none;
                if (b.recEnd != null) {
                    rec.point(b.rec, k == 0 ? 0 : b.recEnd[k - 1], b.recEnd[k]);
                    recorded = rec;
                }
                listener.applied(feeds[best].cursor.node, b.inputs[k], fx, recorded);
                b.inputs[k] = null;
                at[best] = k + 1;
                Batch next = settle(best, b, k + 1);
                cur[best] = next;
                if (next != b) {
                    at[best] = 0;
                }
                if (next != null) {
                    headAt[best] = next.at[at[best]];
                }
                if ((++applied & (PROGRESS_EVERY - 1)) == 0) {
                    progress.inputsApplied(applied);
                }
            }
        }

        /**
         * The batch that holds feed {@code i}'s next input, given that {@code b}'s next is at
         * {@code k}: {@code b}, the next batch, or null at the end; throws what reading the
         * journal threw, where its next input would have been.
         */
        private Batch settle(int i, Batch b, int k) {
            while (k >= b.n) {
                if (b.error != null) {
                    rethrow(b.error);
                }
                if (b.last) {
                    return null;
                }
                b = take(i);
                k = 0;
            }
            return b;
        }

        private static void rethrow(Throwable t) {
            if (t instanceof RuntimeException e) {
                throw e;
            }
            if (t instanceof Error e) {
                throw e;
            }
            throw new IllegalStateException(t);
        }

        @Override
        public void close() {
            lock.lock();
            try {
                closed = true;
                work.signalAll();
            } finally {
                lock.unlock();
            }
            for (Thread t : helpers) {
                boolean interrupted = false;
                while (true) {
                    try {
                        t.join();
                        break;
                    } catch (InterruptedException e) {
                        interrupted = true;
                    }
                }
                if (interrupted) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }
}
