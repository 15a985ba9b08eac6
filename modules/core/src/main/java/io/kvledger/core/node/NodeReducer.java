package io.kvledger.core.node;

import io.kvledger.core.config.GroupKind;
import io.kvledger.core.config.KvGroupSpec;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.Switch;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.KvTransferParams;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.moriio.PortMath;
import java.util.ArrayList;
import java.util.List;

/**
 * The node lifecycle reducer: {@code (NodeState, NodeEvent) -> (NodeState, List<Effect>)} for one
 * engine rank. It reproduces the MoRIIO connector's scheduler side ({@link SchedulerSide}) and
 * worker side ({@link WorkerSide}) branch by branch, with the {@link Switch}es of
 * {@link NodeConfig#behaviour()} choosing between upstream versions.
 *
 * <p>Total: it never throws. Where the Python connector raises, asserts or warns, the reducer
 * records an {@link Effect.Anomaly} and leaves the state as the Python code would have left it
 * when the exception unwound (usually: nothing further changed).
 *
 * <p>Threading: a state is owned by one thread; {@code apply} is not safe to call concurrently on
 * the same state. It has no clock, no randomness and no I/O: time comes in each event.
 */
public final class NodeReducer {

    private NodeReducer() {}

    /** The state after an event (the same instance, updated) and the effects it produced. */
    public record Transition(NodeState state, List<Effect> effects) {}

    /** Applies one event. */
    public static Transition apply(NodeState state, NodeEvent event) {
        List<Effect> out = new ArrayList<>(4);
        applyInto(state, event, out);
        return new Transition(state, out);
    }

    /**
     * Applies one event and appends its effects to {@code sink}, in order. The single reducer
     * loop of a live node uses this form with one reused list, handing the effects on before the
     * next event; it allocates nothing per event beyond what the decisions themselves need.
     */
    public static void applyInto(NodeState state, NodeEvent event, List<Effect> sink) {
        // The context of this one application, not part of the state: the sink, the event's time.
        dispatch(new Ctx(state, sink), event);
    }

    /**
     * A reducer bound to one state: {@link Bound#applyInto} is {@link #applyInto} without making a
     * context per event (the live loop's and the benchmarks' form).
     */
    public static Bound bind(NodeState state) {
        return new Bound(new Ctx(state, null));
    }

    /**
     * The reducer of one {@link NodeState}: one context, reused from event to event (the context
     * is the reducer's, not the state's: the state never refers to it). One thread at a time.
     */
    public static final class Bound {
        private final Ctx c;

        private Bound(Ctx c) {
            this.c = c;
        }

        /** The state this reducer applies events to. */
        public NodeState state() {
            return c.s;
        }

        /** Applies one event and appends its effects to {@code sink}, in order. */
        public void applyInto(NodeEvent event, List<Effect> sink) {
            c.out = sink;
            try {
                dispatch(c, event);
            } finally {
                c.out = null;
            }
        }
    }

    private static void dispatch(Ctx c, NodeEvent event) {
        // The time is read in each arm from the record's own accessor: event.atNs() here would be
        // an interface call over the six record types of a scheduler step (not inlined).
        switch (event) {
            case NodeEvent.RequestAdmitted e -> {
                c.now = e.atNs();
                SchedulerSide.admitted(c, e);
            }
            case NodeEvent.MatchedTokensQueried e -> {
                c.now = e.atNs();
                int from = c.out.size();
                SchedulerSide.matchedTokens(c, e);
                if (e.acted() != null) {
                    SchedulerSide.actedMatched(c, e, from);
                }
            }
            case NodeEvent.BlocksAllocated e -> {
                c.now = e.atNs();
                SchedulerSide.afterAlloc(c, e);
            }
            case NodeEvent.StepScheduled e -> {
                c.now = e.atNs();
                SchedulerSide.buildMeta(c, e);
            }
            case NodeEvent.RequestFinished e -> {
                c.now = e.atNs();
                int from = c.out.size();
                SchedulerSide.finished(c, e);
                if (e.acted() != null) {
                    SchedulerSide.actedFinished(c, e, from);
                }
            }
            case NodeEvent.ConnectorOutputReceived e -> {
                c.now = e.atNs();
                int from = c.out.size();
                SchedulerSide.connectorOutput(c, e);
                if (e.acted() != null) {
                    SchedulerSide.actedFreed(c, e, from);
                }
            }
            case NodeEvent.LoadStarted e -> {
                c.now = e.atNs();
                WorkerSide.startLoad(c);
            }
            case NodeEvent.LayerSaved e -> {
                c.now = e.atNs();
                WorkerSide.saveLayer(c, e.layerName());
            }
            case NodeEvent.SaveWaited e -> {
                c.now = e.atNs();
                WorkerSide.waitForSave(c);
            }
            case NodeEvent.FinishedPolled e -> {
                c.now = e.atNs();
                WorkerSide.getFinished(c);
            }
            case NodeEvent.HandshakeCompleted e -> {
                c.now = e.atNs();
                WorkerSide.handshakeCompleted(c, e.key());
            }
            case NodeEvent.HandshakeFailed e -> {
                c.now = e.atNs();
                WorkerSide.handshakeFailed(c, e.key(), e.reason());
            }
            case NodeEvent.HandshakeVoted e -> {
                c.now = e.atNs();
                WorkerSide.handshakeVoted(c, e);
            }
            case NodeEvent.TransferCompleted e -> {
                c.now = e.atNs();
                WorkerSide.transferCompleted(c, e);
            }
            case NodeEvent.RemoteBlocksReceived e -> {
                c.now = e.atNs();
                WorkerSide.remoteBlocks(c, e);
            }
            case NodeEvent.WriteDoneReceived e -> {
                c.now = e.atNs();
                WorkerSide.writeDone(c, e.transferId());
            }
            case NodeEvent.ReleaseReceived e -> {
                c.now = e.atNs();
                WorkerSide.release(c, e.transferId(), e.consumerTpSize());
            }
            case NodeEvent.RawCompletionReceived e -> {
                c.now = e.atNs();
                WorkerSide.rawCompletion(c, e.completionId());
            }
            case NodeEvent.FrameRejected e -> {
                c.now = e.atNs();
                WorkerSide.frameRejected(c, e);
            }
            case NodeEvent.NotifySendFailed e -> {
                c.now = e.atNs();
                WorkerSide.notifySendFailed(c, e);
            }
            case NodeEvent.ShutDown e -> {
                c.now = e.atNs();
                SchedulerSide.shutDown(c, e);
            }
            case NodeEvent.Tick e -> {
                c.now = e.atNs();
                WorkerSide.tick(c);
            }
            case NodeEvent.KvCachesRegistered e -> { } // evidence for the detectors only
            case NodeEvent.ForwardDone e -> { } // evidence for the detectors only
        }
    }

    /**
     * The anomalies the connector's constructors would raise or warn about for this
     * configuration (hybrid and HMA validation, the full-CUDA-graph READ warning, kv_both, the
     * DP > 1 and TP > 1 port-form disagreement).
     */
    public static List<Effect> startupChecks(NodeConfig config) {
        List<Effect> out = new ArrayList<>();
        NodeState s = NodeState.initial(config);
        if (config.role() == Role.BOTH) {
            out.add(anomaly(AnomalyKind.KV_BOTH_ROLE_ASYMMETRY, null, null,
                    "kv_role kv_both: the scheduler runs as a consumer (kv_role != \"kv_producer\"), the worker as a producer"
                            + " (is_kv_producer): receives the scheduler stages are never read, and the listener rejects write_done"));
        }
        if (PortMath.portFormsDisagree(config.dpSize(), config.tpSize())) {
            out.add(anomaly(AnomalyKind.PORT_FORMS_DISAGREE, null, null,
                    "dp_size=" + config.dpSize() + " tp_size=" + config.tpSize()
                            + ": listeners bind base+dp+tp, dialers use base+dp*tp_size+tp"));
        }
        if (config.on(Switch.READ_FULL_CUDAGRAPH_WARNING) && config.mode() == TransferMode.READ
                && config.role() == Role.CONSUMER && config.fullCudagraph()) {
            out.add(anomaly(AnomalyKind.READ_FULL_CUDAGRAPH, null, null,
                    "set cudagraph_mode=PIECEWISE: the per-layer KV-read barrier cannot fire inside full graphs"));
        }
        if (config.on(Switch.INIT_HYBRID_VALIDATION) && s.hybrid) {
            List<String> why = new ArrayList<>();
            if (s.attentionGroups.length != 1) {
                why.add("hybrid models need exactly one attention transfer group, got " + s.attentionGroups.length);
            }
            KvGroupSpec first = config.groups().get(s.mambaGroups[0]);
            for (int idx : s.mambaGroups) {
                KvGroupSpec g = config.groups().get(idx);
                if (g.mambaStates() != 2) {
                    why.add("mamba group " + idx + " has " + g.mambaStates() + " states, expected 2");
                }
                if (!g.equals(first)) {
                    why.add("mamba specs differ (group " + idx + ")");
                }
            }
            if (config.speculativeMethod() != null && !"dspark".equalsIgnoreCase(config.speculativeMethod())) {
                why.add("speculative method " + config.speculativeMethod() + " is not supported (DSpark only)");
            }
            if (config.mode() == TransferMode.WRITE) {
                why.add("hybrid models are READ only");
            }
            for (String w : why) {
                out.add(anomaly(AnomalyKind.INIT_HYBRID_INVALID, null, null, w));
            }
        }
        if (config.on(Switch.INIT_HMA_VALIDATION) && s.hmaActive) {
            boolean nonFull = false;
            boolean unsupported = false;
            for (int idx : s.transferGroups) {
                GroupKind k = config.groups().get(idx).kind();
                nonFull |= k != GroupKind.FULL_ATTENTION;
                unsupported |= k == GroupKind.OTHER;
            }
            if (nonFull && unsupported) {
                out.add(anomaly(AnomalyKind.INIT_HMA_UNSUPPORTED, null, null,
                        "HMA supports only full-attention, sliding-window and mamba groups"));
            }
            if (nonFull && config.mode() == TransferMode.WRITE) {
                out.add(anomaly(AnomalyKind.INIT_HMA_UNSUPPORTED, null, null,
                        "WRITE mode with HMA: pass --disable-hybrid-kv-cache-manager"));
            }
        }
        return out;
    }

    /** {@code requires_full_step_completion}: newest says true iff READ; the seed inherits false. */
    public static boolean requiresFullStepCompletion(NodeConfig config) {
        return config.on(Switch.CONNECTOR_FULL_STEP_COMPLETION) && config.mode() == TransferMode.READ;
    }

    /** {@code supports_divergent_local_hybrid_hits}: READ with a mamba transfer group (newest). */
    static boolean supportsDivergentLocalHybridHits(NodeConfig config) {
        return config.on(Switch.CONNECTOR_DIVERGENT_HYBRID_HITS) && config.mode() == TransferMode.READ
                && NodeState.initial(config).mambaGroups.length > 0;
    }

    /**
     * {@code requires_piecewise_for_cudagraph}: false in both modes. The connector never overrides
     * the requested CUDA-graph mode; the seed only warns (switch read-full-cudagraph-warning) and
     * the newest worker waits for the whole step's reads under FULL graphs instead.
     */
    static boolean requiresPiecewiseForCudagraph(NodeConfig config) {
        return false;
    }

    /**
     * {@code get_sync_load_block_ids}: the destinations a synchronous READ load initialises
     * before the forward. Only a READ consumer of a hybrid model whose attention cache uses the
     * LBNHC layout has any: its attention group's blocks. Empty otherwise.
     */
    static int[] syncLoadBlockIds(NodeConfig config, io.kvledger.core.model.BlockGroups allocated,
                                         boolean lbnhcLayout) {
        NodeState s = NodeState.initial(config);
        if (config.mode() != TransferMode.READ || config.role() != Role.CONSUMER || !s.hybrid || !lbnhcLayout
                || s.attentionGroups.length == 0 || allocated.size() <= s.attentionGroups[0]) {
            return new int[0];
        }
        return allocated.group(s.attentionGroups[0]).clone();
    }

    static Effect.Anomaly anomaly(AnomalyKind kind, String rid, String tid, String detail) {
        return new Effect.Anomaly(kind, rid, tid, detail);
    }

    /**
     * The context of one application of the reducer: the state it changes, the event's time and
     * the sink its effects go to. Made per event ({@link NodeReducer#applyInto}) or owned by a
     * {@link Bound} reducer and reused; never kept in the state.
     */
    static final class Ctx {
        final NodeState s;
        final NodeConfig cfg;
        /** Where this event's effects go (a bound reducer sets it per event). */
        List<Effect> out;
        long now;

        Ctx(NodeState s, List<Effect> out) {
            this.s = s;
            this.cfg = s.config;
            this.out = out;
        }

        /** The reused instance {@code add_new_req} parses a snapshot into (made on first use). */
        private KvTransferParams metaParams;

        KvTransferParams metaParams() {
            KvTransferParams p = metaParams;
            if (p == null) {
                p = new KvTransferParams();
                metaParams = p;
            }
            return p;
        }

        void emit(Effect e) {
            out.add(e);
        }

        void anomaly(AnomalyKind kind, String rid, String tid, String detail) {
            out.add(new Effect.Anomaly(kind, rid, tid, detail));
        }

        boolean on(Switch sw) {
            return cfg.on(sw);
        }

        /** The one place phases change: records the change and its reason. */
        void phase(NodeState.Req r, RequestPhase to, String reason) {
            if (r.phase == to) {
                return;
            }
            // Phases only move forward: a freed request keeps its terminal phase (only a new
            // admission starts it again), and a deferred free ends only in a terminal phase.
            if (r.phase.terminal() || (r.phase == RequestPhase.DEFERRED_FREE && !to.terminal())) {
                return;
            }
            RequestPhase from = r.phase;
            r.phase = to;
            if (r.slot != null) {
                s.slots.touch(r.slot); // for the incremental invariant check
            }
            s.phases.set(r, to);
            out.add(new Effect.PhaseChanged(r.requestId, from, to, reason));
        }

        /**
         * The phase an allocation gives: only a request that was just admitted takes it (a second
         * alloc of a staged or running request keeps its phase).
         */
        void allocPhase(NodeState.Req r, RequestPhase to, String reason) {
            if (r.phase == RequestPhase.ADMITTED) {
                phase(r, to, reason);
            }
        }

        /** vLLM frees the request: it leaves the scheduler's table. */
        void free(NodeState.Req r) {
            s.requests.remove(r.slot != null ? r.slot : s.slots.get(r.requestId));
        }
    }
}
