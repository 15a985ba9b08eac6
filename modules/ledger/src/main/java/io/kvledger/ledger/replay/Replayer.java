package io.kvledger.ledger.replay;

import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.node.Invariants;
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
import java.util.function.Function;

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
 * <p>Single-threaded: everything, the listener included, runs on the thread that calls
 * {@link #run}. (Decoding and reducing each journal on a thread of its own was tried: it used a
 * third more CPU time and finished later on the shared 2-core machines of benchmarks/README.md.)
 * Not reusable after {@link #run}.
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

        /**
         * After the input last passed to {@link #applied}, the node's state broke the reducer's
         * invariants ({@link NodeState#checkInvariants()}); called only when
         * {@link Replayer#invariants(boolean) checked}, and only for a broken state.
         */
        default void invariantsBroken(Node node, JournalEntry.Input input, List<Invariants.Violation> violations) {
        }

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
    private java.util.function.Predicate<Node> recordedAlso = n -> false;
    /** What each node's state is checked with after every input; null: not checked. */
    private Function<NodeState, List<Invariants.Violation>> invariants;
    private NodeCounts[] counts;
    private Progress progress = Progress.NONE;

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
        // as verify: two journals of one node id cannot be told apart (a file of one copied into another)
        for (String id : new LinkedHashSet<>(ids)) {
            int n = Collections.frequency(ids, id);
            if (n > 1) {
                List<String> where = new ArrayList<>();
                for (int i = 0; i < ids.size(); i++) {
                    if (ids.get(i).equals(id)) {
                        where.add(journals.get(i).name());
                    }
                }
                r.warnings.add("node id " + id + " is used by " + n + " journals (" + String.join(", ", where)
                        + "): each is analysed under its journal's name, but they may be one node's entries twice");
            }
        }
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
     * The nodes whose recorded derived entries are read even with {@link #recorded(boolean)} off
     * ({@code hangs} reads a vLLM bridge worker stream's {@code get_finished} replies, which the
     * reducer cannot recompute).
     */
    Replayer recordedFor(java.util.function.Predicate<Node> nodes) {
        this.recordedAlso = nodes;
        return this;
    }

    /**
     * Whether each node's state is checked against the reducer's invariants after every input
     * (off by default; {@link NodeState#checkInvariantsSinceLastCheck()}, which costs what each
     * input changed); a broken state goes to {@link Listener#invariantsBroken}.
     */
    public Replayer invariants(boolean check) {
        return invariants(check ? NodeState::checkInvariantsSinceLastCheck : null);
    }

    /**
     * As {@link #invariants(boolean)}, checking each state with {@code check} ({@code null}: no
     * check): {@link NodeState#checkInvariantsSinceLastCheck()}, or a stand-in in tests of what a broken state
     * does to a caller.
     */
    public Replayer invariants(Function<NodeState, List<Invariants.Violation>> check) {
        this.invariants = check;
        return this;
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
            cursors[i] = new Cursor(nodes.get(i), readers.get(i), untilSeq,
                    readRecorded || recordedAlso.test(nodes.get(i)), invariants);
        }
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
            if (!best.broken.isEmpty()) {
                listener.invariantsBroken(best.node, best.head, best.broken);
            }
            best.advance();
            if ((++applied & (PROGRESS_EVERY - 1)) == 0) {
                progress.inputsApplied(applied);
            }
        }
        counts = new NodeCounts[n];
        for (int i = 0; i < n; i++) {
            Cursor c = cursors[i];
            counts[i] = new NodeCounts(c.inputs, c.readRecorded ? c.derivedCount : -1, c.unknown, c.orphans);
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

    /**
     * The names of the nodes whose journal the run did not read clean ({@link JournalReader#clean()}:
     * damaged regions, entries against the order rules, entries it could not decode), or whose node
     * id another journal of the run has too (they cannot be told apart); empty before
     * {@link #run}. An analysis of these nodes may miss what the damage held: it is never reported
     * clean.
     */
    List<String> uncleanNodes() {
        List<String> out = new ArrayList<>();
        if (ran) {
            List<String> ids = nodes.stream().map(n -> n.header().nodeId()).toList();
            for (int i = 0; i < nodes.size(); i++) {
                if (!readers.get(i).clean() || Collections.frequency(ids, ids.get(i)) > 1) {
                    out.add(nodes.get(i).name());
                }
            }
        }
        return out;
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
    void addWarnings(List<String> more) {
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
        final Function<NodeState, List<Invariants.Violation>> invariants;
        /** What the state broke after {@link #head} was applied (empty when unchecked or sound). */
        List<Invariants.Violation> broken = List.of();
        Iterator<JournalEntry> it;
        NodeState state;
        NodeReducer.Bound reducer;
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

        Cursor(Node node, JournalReader reader, long until, boolean readRecorded,
               Function<NodeState, List<Invariants.Violation>> invariants) {
            this.node = node;
            this.reader = reader;
            this.until = until;
            this.readRecorded = readRecorded;
            this.invariants = invariants;
        }

        /** Opens the pass. */
        void start() {
            it = readRecorded ? reader.iterator() : reader.inputIterator();
            state = NodeState.initial(node.config());
            reducer = NodeReducer.bind(state);
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
            reducer.applyInto(head.event(), sink);
            if (invariants != null) {
                broken = invariants.apply(state);
            }
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
}
