package io.kvledger.sim;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.moriio.PortMath;
import io.kvledger.core.moriio.ZmqAddress;
import io.kvledger.core.node.Invariants;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * One engine rank (one DP rank of its instance) with its connector, on the simulator's agenda: the {@link EngineModel}
 * (the toy vLLM engine, written once for the simulator and the live node) driven in seeded virtual
 * time, around one reducer whose effects go to the {@link Network}. With TP above 1 this is TP
 * rank 0's node; the other ranks' nodes ({@link #addTpWorker}) get every hook call it makes and
 * run no engine of their own.
 *
 * <p>An engine step runs in stages, each its own agenda entry so that notify frames and transfer
 * completions can arrive between them: the scheduler's half ({@link EngineModel#beginStep}),
 * {@code LoadStarted}, {@code LayerSaved} for each layer, then the output
 * ({@link EngineModel#finishStep}). Handshakes started and reads posted during the forward (the
 * load and layer stages) block the step, as the Python worker's busy-wait and per-layer read
 * barrier do, until they complete or {@code transfer_timeout} passes (reads without bound under
 * {@link SimOptions#unboundedReadWait()}, the WideEP reader of #45749; handshakes under
 * {@link SimOptions#unboundedEagerHandshake()}, the newest eager handshake's join). Writes never block (the
 * writer thread posts them).
 */
final class SimNode implements ToyRouter.Instance {

    /** A request leg inside this engine, with the client request it belongs to. */
    static final class Req extends EngineModel.Request {
        final Transaction tx;
        final boolean prefillLeg;

        Req(String id, Transaction tx, boolean prefillLeg, int promptTokens, int maxOutputTokens,
            FinishStatus naturalFinish, KvParams params) {
            super(id, promptTokens, maxOutputTokens, naturalFinish, params);
            this.tx = tx;
            this.prefillLeg = prefillLeg;
        }
    }

    private static final int STAGE_SCHEDULE = 0;
    private static final int STAGE_LOAD = 1;
    private static final int STAGE_FIRST_LAYER = 2;
    private static final long STEP_GAP_NS = 50_000L;

    private final Simulation sim;
    private final SimOptions opts;
    private final String name;
    private final NodeConfig config;
    private final NodeState state;
    private final int notifyPort;
    private final int handshakePort;
    private final SplittableRandom rng;
    /** The engine (TP rank 0's; a TP worker's is never stepped). */
    private final EngineModel engineModel;
    private final int finishStage;

    private final List<AppliedEvent> log = new ArrayList<>();
    private long seq;
    /** Request ids whose reducer phase was not terminal when last looked at. */
    private final LinkedHashSet<String> open = new LinkedHashSet<>();
    /**
     * Requests per reducer phase, kept from the {@code PhaseChanged} effects (+1 for the phase
     * entered, -1 for the one left): the reducer's own phase table forgets old terminal requests
     * once it holds 65,536, so the report cannot count from it.
     */
    private final long[] phaseCounts = new long[RequestPhase.values().length];

    private boolean stepping;
    private long stepNo;
    private long stepStartNs;
    private long stepDurationNs;
    private long shiftNs;
    private boolean inForward;
    private final LinkedHashSet<String> blockers = new LinkedHashSet<>();
    private int waitingStage = -1;
    private long waitGeneration;
    private long tickGeneration;

    /** With TP above 1, on TP rank 0's node (the engine): the nodes of the other TP ranks. */
    private final List<SimNode> tpWorkers = new ArrayList<>();
    /** On another TP rank's node: TP rank 0's node, whose engine hands it every hook call. */
    private SimNode engine;
    /** Whether the event being applied arrived on this rank's own listener or completion queue. */
    private boolean delivering;
    /** On TP rank 0's node with TP above 1: its workers' {@code get_finished} made into the engine's. */
    private final KvOutputAggregator aggregator = new KvOutputAggregator();

    SimNode(Simulation sim, String name, NodeConfig config, SplittableRandom rng) {
        this.sim = sim;
        this.opts = sim.options();
        this.name = name;
        this.config = config;
        this.state = NodeState.initial(config);
        this.rng = rng;
        this.engineModel = new EngineModel(new EngineModel.Rules(opts.blockSize(), opts.blocksPerNode(),
                opts.tokenBudget(), opts.maxRunning(), opts.connectorOutputFirst(), true), new EngineModel.Host() {
            @Override
            public List<Effect> call(NodeEvent event) {
                return apply(event);
            }

            @Override
            public void admitted(EngineModel.Request r) {
                track(r.id());
                sim.legAdmitted();
            }

            @Override
            public void finished(EngineModel.Request r, FinishStatus status, KvParams returned) {
                sim.legFinished((Req) r, status, returned);
            }

            @Override
            public void loadErrors(List<Integer> blocks) {
                sim.loadErrors(blocks.size());
            }

            @Override
            public void unexpectedRecv() {
                sim.unexpectedRecv();
            }

            @Override
            public void unexpectedFree() {
                sim.unexpectedFree();
            }
        });
        int offset = PortMath.portOffset(PortMath.foldLocalRank(config.dpRank(), config.dpSizeLocal()), config.tpRank());
        this.notifyPort = config.notifyPortBase() + offset;
        this.handshakePort = config.handshakePortBase() + offset;
        this.finishStage = STAGE_FIRST_LAYER + config.layerNames().size();
    }

    String name() {
        return name;
    }

    NodeConfig config() {
        return config;
    }

    int notifyPort() {
        return notifyPort;
    }

    int handshakePort() {
        return handshakePort;
    }

    /** The address its instance registers with the proxy (the ports of DP0/TP0, whatever this rank). */
    @Override
    public ZmqAddress zmqAddress() {
        return new ZmqAddress(config.hostIp(), config.handshakePortBase(), config.notifyPortBase());
    }

    @Override
    public int dpRank() {
        return config.dpRank();
    }

    @Override
    public int dpSize() {
        return config.dpSize();
    }

    @Override
    public int tpSize() {
        return config.tpSize();
    }

    /**
     * Makes {@code worker} (the node of another TP rank of this engine's DP rank) one of this
     * engine's workers: every hook call this engine makes on its own reducer is made on the
     * worker's too, as vLLM's engine core broadcasts the scheduler output to every worker.
     */
    void addTpWorker(SimNode worker) {
        tpWorkers.add(worker);
        worker.engine = this;
    }

    /** Runs the start-up checks and starts the idle background tick (an engine's; a TP worker has none). */
    void start() {
        List<Effect> init = NodeReducer.startupChecks(config);
        sim.recorder().nodeStarted(name, config, init);
        for (Effect e : init) {
            if (e instanceof Effect.Anomaly a) {
                sim.anomaly(this, 0, a);
            }
        }
        if (engine == null) {
            scheduleBackgroundTick();
        }
    }

    // ------------------------------------------------------------------ inputs from the proxy

    /** A leg reaches the engine core ({@code add_request}); it is admitted at the next step. */
    void add(Req req) {
        engineModel.add(req);
        kick();
    }

    /** An abort reaches the engine core; it is processed at the next step. */
    void abort(String requestId) {
        engineModel.abort(requestId);
        kick();
    }

    /** A frame, handshake answer or transfer completion arrives: applied at once (listener threads). */
    void deliver(NodeEvent event) {
        delivering = true;
        try {
            apply(event);
        } finally {
            delivering = false;
        }
        switch (event) {
            case NodeEvent.HandshakeCompleted h -> unblock("hs:" + h.key());
            case NodeEvent.HandshakeFailed h -> unblock("hs:" + h.key());
            case NodeEvent.TransferCompleted t -> unblock("st:" + t.statusId());
            case NodeEvent.RequestAdmitted _, NodeEvent.MatchedTokensQueried _, NodeEvent.BlocksAllocated _,
                    NodeEvent.StepScheduled _, NodeEvent.RequestFinished _, NodeEvent.ConnectorOutputReceived _,
                    NodeEvent.LoadStarted _, NodeEvent.LayerSaved _, NodeEvent.SaveWaited _,
                    NodeEvent.FinishedPolled _, NodeEvent.RemoteBlocksReceived _, NodeEvent.WriteDoneReceived _,
                    NodeEvent.ReleaseReceived _, NodeEvent.RawCompletionReceived _, NodeEvent.FrameRejected _,
                    NodeEvent.NotifySendFailed _, NodeEvent.HandshakeVoted _, NodeEvent.Tick _, NodeEvent.ShutDown _,
                    NodeEvent.KvCachesRegistered _, NodeEvent.ForwardDone _ -> { }
        }
    }

    // ------------------------------------------------------------------ the reducer

    List<Effect> apply(NodeEvent event) {
        List<Effect> effects = NodeReducer.apply(state, event).effects();
        long s = seq++;
        List<Invariants.Violation> broken = sim.invariants().apply(state);
        if (!broken.isEmpty()) {
            throw new InvariantBroken(opts.seed(), name, s, event, broken);
        }
        sim.recorder().applied(name, s, event, effects);
        if (opts.keepLog()) {
            log.add(new AppliedEvent(s, event, effects));
        }
        for (Effect effect : effects) {
            route(event, effect);
        }
        if (delivering || tpWorkers.isEmpty()) {
            return effects;
        }
        // a hook call of the engine: every TP worker gets it too, and get_finished is aggregated
        List<Effect.FinishedReported> reports = new ArrayList<>();
        for (SimNode w : tpWorkers) {
            for (Effect e : w.apply(event)) {
                if (e instanceof Effect.FinishedReported fr) {
                    reports.add(fr);
                }
            }
        }
        if (!(event instanceof NodeEvent.FinishedPolled)) {
            return effects;
        }
        List<Effect> out = new ArrayList<>(effects.size());
        for (Effect e : effects) {
            if (e instanceof Effect.FinishedReported fr) {
                reports.add(0, fr);
                out.add(aggregator.aggregate(reports));
            } else {
                out.add(e);
            }
        }
        return out;
    }

    private void route(NodeEvent cause, Effect effect) {
        Network net = sim.network();
        if (engine != null && (effect instanceof Effect.SendRemoteBlocks
                || effect instanceof Effect.SendRelease r && r.sender() == Effect.Sender.SCHEDULER)) {
            return; // one scheduler per DP rank: TP rank 0's node sends its notifies
        }
        switch (effect) {
            case Effect.SendRemoteBlocks m -> net.notify(this, "remote_blocks", m.transferId().text(), m.host(), m.port(),
                    at -> new NodeEvent.RemoteBlocksReceived(at, m.reqId(), m.transferId().text(),
                            m.blockNotifyList(), m.decodeRank(), false));
            case Effect.SendWriteDone m -> net.notify(this, "write_done", m.transferId(), m.host(), m.port(),
                    at -> new NodeEvent.WriteDoneReceived(at, m.transferId()));
            case Effect.SendRelease m -> net.notify(this, "release", m.transferId().text(), m.host(), m.port(),
                    at -> new NodeEvent.ReleaseReceived(at, m.transferId().text(), m.consumerTpSize()));
            case Effect.SendWriteFailed m -> net.unsupported();
            case Effect.StartHandshake h -> {
                if (inForward) {
                    blockers.add("hs:" + h.key());
                }
                net.handshake(this, h);
            }
            case Effect.PostWrite w -> net.transfer(this, w.statusId(), w.localBlockIds().length);
            case Effect.PostRead r -> {
                if (inForward) {
                    blockers.add("st:" + r.statusId());
                }
                net.transfer(this, r.statusId(), r.localBlockIds().length);
            }
            case Effect.Anomaly a -> sim.anomaly(this, cause.atNs(), a);
            case Effect.PhaseChanged p -> {
                if (p.from() != null) {
                    phaseCounts[p.from().ordinal()]--;
                }
                phaseCounts[p.to().ordinal()]++;
                track(p.requestId());
            }
            case Effect.HookReply _, Effect.DeferralStarted _, Effect.AckParked _, Effect.AckSurfaced _,
                    Effect.StaleAckDropped _, Effect.Unmapped _ -> { }
        }
    }

    private void track(String requestId) {
        RequestPhase p = state.phaseOf(requestId);
        if (p == null || p.terminal()) {
            open.remove(requestId);
        } else {
            open.add(requestId);
        }
    }

    /** Drops ids from {@link #open} whose phase became terminal without a visible phase change. */
    private void revalidateOpen() {
        open.removeIf(id -> {
            RequestPhase p = state.phaseOf(id);
            return p == null || p.terminal();
        });
    }

    /** Rebuilds {@link #open} from the reducer's full phase map. */
    void rescanOpen() {
        open.clear();
        for (Map.Entry<String, RequestPhase> e : state.phases().entrySet()) {
            if (!e.getValue().terminal()) {
                open.add(e.getKey());
            }
        }
    }

    /** Whether every request this node holds reached a terminal phase and nothing is queued. */
    boolean settled() {
        return open.isEmpty() && !engineModel.hasInputs();
    }

    // ------------------------------------------------------------------ the step machine

    private void kick() {
        if (!stepping) {
            stepping = true;
            tickGeneration++;
            scheduleStep(sim.now());
        }
    }

    private void scheduleStep(long atNs) {
        long n = ++stepNo;
        sim.at(atNs, () -> runStage(n, STAGE_SCHEDULE));
    }

    private void runStage(long step, int stage) {
        if (step != stepNo) {
            return;
        }
        long now = sim.now();
        if (stage == STAGE_SCHEDULE) {
            stepStartNs = now;
            shiftNs = 0;
            blockers.clear();
            boolean busy = engineModel.beginStep(() -> now, stepNo);
            stepDurationNs = busy ? between(opts.stepMinNs(), opts.stepMaxNs()) : opts.idleStepNs();
            next(step, STAGE_LOAD);
        } else if (stage == STAGE_LOAD) {
            inForward = true;
            apply(new NodeEvent.LoadStarted(now));
            next(step, STAGE_FIRST_LAYER);
        } else if (stage < finishStage) {
            saveHook(new NodeEvent.LayerSaved(now, config.layerNames().get(stage - STAGE_FIRST_LAYER)));
            next(step, stage + 1);
        } else {
            inForward = false;
            blockers.clear();
            engineModel.finishStep(() -> now);
            revalidateOpen();
            if (engineModel.live() > 0 || engineModel.hasInputs()) {
                scheduleStep(now + STEP_GAP_NS);
            } else {
                stepping = false;
                scheduleBackgroundTick();
            }
        }
    }

    /**
     * One layer's {@code save_kv_layer} hook; on a WRITE prefill engine the {@code hook-skip} and
     * {@code hook-repeat} faults drop it or fire it twice (drawn only when asked for, so that other
     * runs keep their random streams).
     */
    private void saveHook(NodeEvent.LayerSaved hook) {
        FaultSpec f = opts.faults();
        if ((f.hookSkip() > 0 || f.hookRepeat() > 0) && config.mode() == io.kvledger.core.config.TransferMode.WRITE
                && config.role() == io.kvledger.core.config.Role.PRODUCER) {
            double x = rng.nextDouble();
            if (x < f.hookSkip()) {
                return;
            }
            if (x < f.hookSkip() + f.hookRepeat()) {
                apply(hook);
            }
        }
        apply(hook);
    }

    /** Planned start of {@code stage} relative to the step start, before any blocking shift. */
    private long offset(int stage) {
        if (stage == STAGE_LOAD) {
            return stepDurationNs / 20;
        }
        if (stage == finishStage) {
            return stepDurationNs;
        }
        int layers = config.layerNames().size();
        int i = stage - STAGE_FIRST_LAYER;
        return stepDurationNs / 20 + (i + 1) * (stepDurationNs * 17 / 20) / layers;
    }

    private void next(long step, int stage) {
        if (blockers.isEmpty()) {
            sim.at(stepStartNs + offset(stage) + shiftNs, () -> runStage(step, stage));
            return;
        }
        waitingStage = stage;
        long generation = ++waitGeneration;
        sim.at(sim.now() + config.transferTimeoutNs(), () -> {
            if (waitingStage >= 0 && waitGeneration == generation) {
                boolean reads = opts.unboundedReadWait();
                boolean handshakes = opts.unboundedEagerHandshake();
                if (reads || handshakes) {
                    // the WideEP reader (#45749) waits for every read it posted without a deadline, and
                    // the newest eager handshake's join for every handshake it started
                    blockers.removeIf(k -> k.startsWith("hs:") ? !handshakes : !reads);
                    if (!blockers.isEmpty()) {
                        return;
                    }
                }
                sim.stepBlockedTimeout();
                blockers.clear();
                resume();
            }
        });
    }

    private void unblock(String key) {
        if (blockers.remove(key) && blockers.isEmpty() && waitingStage >= 0) {
            resume();
        }
    }

    private void resume() {
        int stage = waitingStage;
        waitingStage = -1;
        waitGeneration++;
        long planned = stepStartNs + offset(stage) + shiftNs;
        if (sim.now() > planned) {
            shiftNs += sim.now() - planned;
        }
        long step = stepNo;
        sim.at(Math.max(sim.now(), planned), () -> runStage(step, stage));
    }

    /** An engine with no requests still gets Ticks: the worker's writer and listener threads run on. */
    private void scheduleBackgroundTick() {
        long generation = ++tickGeneration;
        sim.at(sim.now() + opts.backgroundTickNs(), () -> {
            if (!stepping && tickGeneration == generation) {
                apply(new NodeEvent.Tick(sim.now()));
                scheduleBackgroundTick();
            }
        });
    }

    private long between(long min, long max) {
        return min == max ? min : min + rng.nextLong(max - min + 1);
    }

    // ------------------------------------------------------------------ the report

    NodeReport report() {
        EnumMap<RequestPhase, Integer> counts = new EnumMap<>(RequestPhase.class);
        int terminal = 0;
        for (RequestPhase p : RequestPhase.values()) {
            long n = phaseCounts[p.ordinal()];
            if (n != 0) {
                counts.put(p, Math.toIntExact(n));
                if (p.terminal()) {
                    terminal += Math.toIntExact(n);
                }
            }
        }
        // The reducer never forgets a request in a non-terminal phase.
        List<HungRequest> hung = new ArrayList<>();
        for (Map.Entry<String, RequestPhase> e : state.phases().entrySet()) {
            if (!e.getValue().terminal()) {
                hung.add(new HungRequest(name, e.getKey(), e.getValue()));
            }
        }
        return new NodeReport(name, config, notifyPort, handshakePort, counts, terminal, hung.size(), hung,
                state.stateHash(), seq, engineModel.blocksInUse(), engineModel.retained(), engineModel.peakRetained(), log);
    }
}
