package io.kvledger.ledger.otlp;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.journal.format.EntryType;
import io.kvledger.ledger.replay.Mentions;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Follows each request's lifecycle on each node from the events a node applied and the effects its
 * reducer produced (a journal replay, or a live node loop), as the material of one trace leg: the
 * phases it went through (from {@code PhaseChanged}, with their reasons), the notify frames it
 * received and sent, the decisions and anomalies recorded for it, and the data-plane posts made
 * for it. One {@link Leg} per (node, request id); a leg is reported to the {@code ended} consumer
 * when it reaches a terminal phase.
 *
 * <p>An entry belongs to a leg when it names the leg's request id, its transfer id (on that node),
 * or a status id posted for it; a rejected frame when its bytes contain the request or transfer
 * id. Request ids another node admitted (the decode's id in a {@code remote_blocks} a prefill
 * receives) do not make legs.
 *
 * <p>Bounded: a leg holds at most {@value #MAX_EVENTS} events (later ones are counted as
 * dropped), and at most {@code maxOpen} legs are followed at once (the oldest is forgotten and
 * counted). Single-threaded.
 */
public final class TraceRecorder {

    /** Events kept per leg (the OpenTelemetry SDK's default span event limit). */
    static final int MAX_EVENTS = 128;
    private static final int MAX_TEXT = 512;

    /** One phase the request went through on one node. */
    public static final class Phase {
        final RequestPhase phase;
        final long startNs;
        final String reason;
        long endNs = Long.MIN_VALUE;
        String exitReason;
        final List<Event> events = new ArrayList<>();

        Phase(RequestPhase phase, long startNs, String reason) {
            this.phase = phase;
            this.startNs = startNs;
            this.reason = reason;
        }

        public RequestPhase phase() {
            return phase;
        }

        public long startNs() {
            return startNs;
        }

        /** The end, or {@code Long.MIN_VALUE} while the request is still in it. */
        public long endNs() {
            return endNs;
        }

        public String reason() {
            return reason;
        }

        /** The reason of the change that ended it, or null. */
        String exitReason() {
            return exitReason;
        }

        /** What happened while the request was in this phase. */
        public List<Event> events() {
            return events;
        }
    }

    /**
     * Something that happened to a request: a frame, a decision, an anomaly.
     *
     * @param name  the journal type name ({@code remote_blocks_received}, {@code anomaly}, ...)
     * @param text  the entry as {@code inspect} prints it (cut at 512 characters)
     * @param attrs extra attributes (anomaly kind, severity, bug class), may be empty
     */
    public record Event(long atNs, long seq, String name, String text, Map<String, Object> attrs) {}

    /** A request's lifecycle on one node. */
    public static final class Leg {
        final String node;
        final NodeConfig config;
        final String requestId;
        String transferId;
        String traceparent;
        boolean remotePrefill;
        final List<Event> early = new ArrayList<>(0);
        final long admittedAtNs;
        long lastAtNs;
        final List<Phase> phases = new ArrayList<>();
        int events;
        int droppedEvents;
        long posts;
        long completions;
        long failedCompletions;

        Leg(String node, NodeConfig config, String requestId, long admittedAtNs) {
            this.node = node;
            this.config = config;
            this.requestId = requestId;
            this.admittedAtNs = admittedAtNs;
            this.lastAtNs = admittedAtNs;
        }

        public String node() {
            return node;
        }

        public NodeConfig config() {
            return config;
        }

        public String requestId() {
            return requestId;
        }

        /** The first transfer id the request was tied to on this node, or null. */
        public String transferId() {
            return transferId;
        }

        public long admittedAtNs() {
            return admittedAtNs;
        }

        /** The time of the last entry that named the request. */
        public long lastAtNs() {
            return lastAtNs;
        }

        /**
         * Frames for its transfer id that this node received before it knew the request (a WRITE
         * decode's remote_blocks can reach the prefill before the prefill admits the request).
         */
        public List<Event> early() {
            return early;
        }

        /** The phases in order; the last one is open while the request is not terminal. */
        public List<Phase> phases() {
            return phases;
        }

        public Phase current() {
            return phases.isEmpty() ? null : phases.get(phases.size() - 1);
        }

        /** Whether the request reached a terminal phase. */
        public boolean ended() {
            Phase p = current();
            return p != null && p.phase.terminal();
        }

        int droppedEvents() {
            return droppedEvents;
        }

        /** Layer batches posted for it ({@code PostWrite}/{@code PostRead}). */
        long posts() {
            return posts;
        }

        /** Completions of its posts, and how many of them failed. */
        public long completions() {
            return completions;
        }

        long failedCompletions() {
            return failedCompletions;
        }

        /**
         * The W3C {@code traceparent} the request's {@code kv_transfer_params} carried at admission
         * (a proxy that puts the client's header there links kvledger's leg to vLLM's trace), or null.
         */
        String traceparent() {
            return traceparent;
        }

        /**
         * Whether the request's {@code kv_transfer_params} said {@code do_remote_prefill} at
         * admission (a decode leg whose KV cache a prefill leg computes).
         */
        boolean remotePrefill() {
            return remotePrefill;
        }

        /** The key the trace is joined by: the transfer id, or the request id when it has none. */
        String traceKey() {
            return transferId != null ? transferId : requestId;
        }
    }

    private record NodeView(String name, NodeConfig config, LinkedHashMap<String, Leg> legs,
                            HashMap<String, LinkedHashSet<String>> ridsOfTid, HashMap<Long, Leg> statuses,
                            LinkedHashMap<String, List<Event>> early) {}

    /** Transfer ids whose early frames are kept per node, and frames kept per transfer id. */
    private static final int EARLY_TIDS = 4096;
    private static final int EARLY_PER_TID = 8;

    private final Map<String, NodeView> nodes = new LinkedHashMap<>();
    private final Consumer<Leg> ended;
    private final int maxOpen;
    private long forgotten;
    private int open;

    /**
     * @param ended   told of each leg when it reaches a terminal phase (may be a no-op)
     * @param maxOpen how many legs not yet ended are followed at once
     */
    public TraceRecorder(Consumer<Leg> ended, int maxOpen) {
        this.ended = ended;
        this.maxOpen = maxOpen;
    }

    /** Registers a node before its events. */
    public void node(String name, NodeConfig config) {
        nodes.put(name, new NodeView(name, config, new LinkedHashMap<>(), new HashMap<>(), new HashMap<>(),
                new LinkedHashMap<>() {
                    @Override
                    protected boolean removeEldestEntry(Map.Entry<String, List<Event>> eldest) {
                        return size() > EARLY_TIDS;
                    }
                }));
    }

    /** Legs forgotten because more than {@code maxOpen} were open. */
    long forgotten() {
        return forgotten;
    }

    /** Every leg still followed on {@code node} (ended ones too, until {@link #drop}). */
    public Collection<Leg> legs(String node) {
        NodeView v = nodes.get(node);
        return v == null ? List.of() : v.legs.values();
    }

    /** Every leg still followed, node by node. */
    public List<Leg> legs() {
        List<Leg> all = new ArrayList<>();
        for (NodeView v : nodes.values()) {
            all.addAll(v.legs.values());
        }
        return all;
    }

    /** The leg of {@code requestId} on {@code node}, or null. */
    public Leg leg(String node, String requestId) {
        NodeView v = nodes.get(node);
        return v == null ? null : v.legs.get(requestId);
    }

    /** Forgets a leg (after it was exported). */
    public void drop(Leg leg) {
        NodeView v = nodes.get(leg.node);
        if (v != null && v.legs.remove(leg.requestId, leg)) {
            if (!leg.ended()) {
                open--;
            }
            unbind(v, leg);
        }
    }

    private static void unbind(NodeView v, Leg leg) {
        if (leg.transferId != null) {
            LinkedHashSet<String> rids = v.ridsOfTid.get(leg.transferId);
            if (rids != null) {
                rids.remove(leg.requestId);
                if (rids.isEmpty()) {
                    v.ridsOfTid.remove(leg.transferId);
                }
            }
        }
        v.statuses.values().removeIf(l -> l == leg);
    }

    /** One event {@code node} applied (seq is its journal seq), with the effects its reducer produced. */
    public void observe(String node, long seq, NodeEvent event, List<Effect> effects) {
        NodeView v = nodes.get(node);
        if (v == null) {
            throw new IllegalStateException("node() was not called for " + node);
        }
        long at = event.atNs();
        // Admissions first: the input that admits a request comes before the phase change that
        // creates its leg, and belongs to it.
        for (Effect e : effects) {
            if (e instanceof Effect.PhaseChanged p && p.from() == null && !v.legs.containsKey(p.requestId())) {
                admit(v, p.requestId(), at);
            }
        }
        Touch touched = touch(v, event); // binds a request to its transfer id even when not recorded
        if (event instanceof NodeEvent.RequestAdmitted a && a.params() != null
                && v.legs.get(a.requestId()) instanceof Leg leg) {
            if (a.params().get("traceparent") instanceof String tp) {
                leg.traceparent = tp;
            }
            leg.remotePrefill = Boolean.TRUE.equals(a.params().get("do_remote_prefill"));
        }
        if (recordInput(event)) {
            EntryType type = EntryType.of(event);
            for (Leg leg : touched.legs) {
                addEvent(leg, at, seq, type.typeName(), type.dissect(event), inputAttrs(event));
            }
            if (touched.legs.isEmpty()) {
                for (String tid : touched.unknownTids) {
                    List<Event> kept = v.early.computeIfAbsent(tid, k -> new ArrayList<>(1));
                    if (kept.size() < EARLY_PER_TID) {
                        kept.add(new Event(at, seq, type.typeName(), cut(type.dissect(event)), inputAttrs(event)));
                    }
                }
            }
        }
        if (event instanceof NodeEvent.TransferCompleted tc) {
            Leg leg = v.statuses.remove(tc.statusId());
            if (leg != null) {
                leg.completions++;
                leg.lastAtNs = Math.max(leg.lastAtNs, at);
                if (!tc.succeeded()) {
                    leg.failedCompletions++;
                    addEvent(leg, at, seq, EntryType.TRANSFER_COMPLETED.typeName(),
                            EntryType.TRANSFER_COMPLETED.dissect(tc), Map.of());
                }
            }
        } else if (event instanceof NodeEvent.FrameRejected f && f.frame() != null) {
            String text = new String(f.frame(), StandardCharsets.ISO_8859_1);
            for (Leg leg : List.copyOf(v.legs.values())) {
                if (!leg.ended() && (text.contains(leg.requestId)
                        || (leg.transferId != null && text.contains(leg.transferId)))) {
                    addEvent(leg, at, seq, EntryType.FRAME_REJECTED.typeName(), EntryType.FRAME_REJECTED.dissect(f),
                            Map.of("kvledger.would_kill_python_listener", f.wouldKillPythonListener()));
                }
            }
        }
        List<Leg> endedNow = new ArrayList<>(0);
        for (Effect e : effects) {
            if (e instanceof Effect.PhaseChanged p) {
                Leg leg = v.legs.get(p.requestId());
                if (leg != null) {
                    phase(leg, p, at);
                    if (p.to().terminal()) {
                        endedNow.add(leg);
                    }
                }
                continue;
            }
            Touch t = touch(v, e);
            if (e instanceof Effect.PostWrite || e instanceof Effect.PostRead) {
                long status = e instanceof Effect.PostWrite w ? w.statusId() : ((Effect.PostRead) e).statusId();
                for (Leg leg : t.legs) {
                    leg.posts++;
                    leg.lastAtNs = Math.max(leg.lastAtNs, at);
                    v.statuses.put(status, leg);
                }
                continue;
            }
            if (!recordEffect(e)) {
                continue;
            }
            EntryType type = EntryType.of(e);
            for (Leg leg : t.legs) {
                addEvent(leg, at, seq, type.typeName(), type.dissect(e), effectAttrs(e));
            }
        }
        for (Leg leg : endedNow) {
            if (leg.ended()) {
                open--;
                ended.accept(leg);
            }
        }
    }

    private void admit(NodeView v, String rid, long at) {
        Leg old = v.legs.remove(rid);
        if (old != null) {
            unbind(v, old);
            if (!old.ended()) {
                open--;
            }
        }
        v.legs.put(rid, new Leg(v.name, v.config, rid, at));
        open++;
        while (open > maxOpen) {
            Leg oldest = oldestOpen();
            if (oldest == null) {
                break;
            }
            drop(oldest);
            forgotten++;
        }
    }

    private Leg oldestOpen() {
        Leg best = null;
        for (NodeView v : nodes.values()) {
            for (Leg l : v.legs.values()) {
                if (!l.ended()) {
                    if (best == null || l.admittedAtNs < best.admittedAtNs) {
                        best = l;
                    }
                    break; // legs are in admission order per node: the first open one is that node's oldest
                }
            }
        }
        return best;
    }

    private static void phase(Leg leg, Effect.PhaseChanged p, long at) {
        Phase cur = leg.current();
        if (cur != null && cur.endNs == Long.MIN_VALUE) {
            cur.endNs = at;
            cur.exitReason = p.reason();
        }
        Phase next = new Phase(p.to(), at, p.reason());
        if (p.to().terminal()) {
            next.endNs = at;
        }
        leg.phases.add(next);
        leg.lastAtNs = Math.max(leg.lastAtNs, at);
    }

    private static void addEvent(Leg leg, long at, long seq, String name, String text, Map<String, Object> attrs) {
        leg.lastAtNs = Math.max(leg.lastAtNs, at);
        if (leg.events >= MAX_EVENTS) {
            leg.droppedEvents++;
            return;
        }
        Phase p = leg.current();
        if (p == null) {
            return;
        }
        leg.events++;
        p.events.add(new Event(at, seq, name, cut(text), attrs));
    }

    private static String cut(String text) {
        return text.length() > MAX_TEXT ? text.substring(0, MAX_TEXT - 3) + "..." : text;
    }

    /** Inputs that become span events: frames, failures and the finish hook. */
    private static boolean recordInput(NodeEvent e) {
        return switch (e) {
            case NodeEvent.RemoteBlocksReceived _, NodeEvent.WriteDoneReceived _, NodeEvent.ReleaseReceived _,
                    NodeEvent.RawCompletionReceived _, NodeEvent.NotifySendFailed _, NodeEvent.RequestFinished _,
                    NodeEvent.ShutDown _ -> true;
            case NodeEvent.RequestAdmitted _, NodeEvent.MatchedTokensQueried _, NodeEvent.BlocksAllocated _,
                    NodeEvent.StepScheduled _, NodeEvent.ConnectorOutputReceived _, NodeEvent.LoadStarted _,
                    NodeEvent.LayerSaved _, NodeEvent.SaveWaited _, NodeEvent.FinishedPolled _,
                    NodeEvent.HandshakeCompleted _, NodeEvent.HandshakeFailed _, NodeEvent.HandshakeVoted _, NodeEvent.TransferCompleted _,
                    NodeEvent.FrameRejected _, NodeEvent.Tick _, NodeEvent.KvCachesRegistered _,
                    NodeEvent.ForwardDone _ -> false;
        };
    }

    /** Effects that become span events: frames sent, decisions about the request, anomalies. */
    private static boolean recordEffect(Effect e) {
        return switch (e) {
            case Effect.SendRemoteBlocks _, Effect.SendRelease _, Effect.SendWriteDone _, Effect.SendWriteFailed _,
                    Effect.DeferralStarted _, Effect.AckParked _, Effect.AckSurfaced _, Effect.StaleAckDropped _,
                    Effect.Unmapped _, Effect.Anomaly _, Effect.FinishDecision _ -> true;
            case Effect.MatchedTokens _, Effect.MetadataBuilt _, Effect.FinishedReported _,
                    Effect.FinishedSendingRewritten _, Effect.StartHandshake _, Effect.PostWrite _, Effect.PostRead _,
                    Effect.PhaseChanged _ -> false;
        };
    }

    private static Map<String, Object> inputAttrs(NodeEvent e) {
        if (e instanceof NodeEvent.NotifySendFailed f) {
            return Map.of("kvledger.endpoint", String.valueOf(f.endpoint()));
        }
        return Map.of();
    }

    private static Map<String, Object> effectAttrs(Effect e) {
        if (e instanceof Effect.Anomaly a) {
            LinkedHashMap<String, Object> m = new LinkedHashMap<>();
            m.put("kvledger.anomaly.kind", a.kind().name());
            m.put("kvledger.anomaly.severity", a.kind().severity().name());
            m.put("kvledger.bug_class", (long) a.kind().bugClass());
            return m;
        }
        return Map.of();
    }

    /** The legs of one node an event or effect names. */
    private static final class Touch implements Mentions.Sink {
        final NodeView v;
        final LinkedHashSet<Leg> legs = new LinkedHashSet<>();
        final LinkedHashSet<String> unknownTids = new LinkedHashSet<>(0);

        Touch(NodeView v) {
            this.v = v;
        }

        @Override
        public void requestId(String rid) {
            Leg l = v.legs.get(rid);
            if (l != null) {
                legs.add(l);
            }
        }

        @Override
        public void transferId(String tid) {
            LinkedHashSet<String> rids = v.ridsOfTid.get(tid);
            if (rids == null) {
                unknownTids.add(tid);
            } else {
                for (String rid : rids) {
                    Leg l = v.legs.get(rid);
                    if (l != null) {
                        legs.add(l);
                    }
                }
            }
        }

        @Override
        public void bind(String rid, String tid) {
            Leg l = v.legs.get(rid);
            if (l == null) {
                return;
            }
            if (l.transferId == null) {
                l.transferId = tid;
            }
            v.ridsOfTid.computeIfAbsent(tid, k -> new LinkedHashSet<>()).add(rid);
            unknownTids.remove(tid);
            List<Event> early = v.early.remove(tid);
            if (early != null) {
                l.early.addAll(early);
            }
            legs.add(l);
        }

        @Override
        public void status(long statusId, String tid) {
            if (tid == null) {
                Leg l = v.statuses.get(statusId);
                if (l != null) {
                    legs.add(l);
                }
            }
        }
    }

    private static Touch touch(NodeView v, NodeEvent e) {
        Touch t = new Touch(v);
        Mentions.of(e, t);
        return t;
    }

    private static Touch touch(NodeView v, Effect e) {
        Touch t = new Touch(v);
        Mentions.of(e, t);
        return t;
    }
}
