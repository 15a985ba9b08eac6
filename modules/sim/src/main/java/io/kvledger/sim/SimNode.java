package io.kvledger.sim;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.event.NodeEvent.CachedRequest;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.moriio.PortMath;
import io.kvledger.core.moriio.ZmqAddress;
import io.kvledger.core.node.Invariants;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * One engine rank (DP 1) with its connector: a toy vLLM engine that owns a block pool and calls
 * the reducer's hooks in the order vLLM's scheduler and model runner call the connector's. With TP
 * above 1 this is TP rank 0's node; the other ranks' nodes ({@link #addTpWorker}) get every hook
 * call it makes and run no engine of their own.
 *
 * <p>An engine step runs in stages, each its own agenda entry so that notify frames and transfer
 * completions can arrive between them:
 * <ol>
 *   <li>input processing ({@code RequestAdmitted} for new requests, {@code RequestFinished}
 *       with {@code FINISHED_ABORTED} for aborts), then scheduling: running requests first (next
 *       prefill chunk or one decode token; new blocks go into {@code StepScheduled.cachedRequests}),
 *       then requests whose remote KV arrived, then waiting ones
 *       ({@code MatchedTokensQueried}, {@code BlocksAllocated}), then {@code StepScheduled};</li>
 *   <li>{@code LoadStarted};</li>
 *   <li>{@code LayerSaved} for each layer;</li>
 *   <li>{@code SaveWaited}, {@code FinishedPolled}, {@code RequestFinished} for requests that
 *       finished this step, {@code ConnectorOutputReceived} with the worker's report and the frees
 *       its rewrite allows (vLLM's {@code update_from_output} order; see
 *       {@link SimOptions#connectorOutputFirst()}), {@code Tick}.</li>
 * </ol>
 * Handshakes started and reads posted during the forward (stages 2 and 3) block the step, as the
 * Python worker's busy-wait and per-layer read barrier do, until they complete or
 * {@code transfer_timeout} passes. Writes never block (the writer thread posts them).
 *
 * <p>Deviation from vLLM, for simplicity: the scheduler checks the pool before asking the
 * connector about a waiting request, so a request is never queried twice for lack of blocks; a
 * running request that cannot get a block skips the step instead of preempting another.
 */
final class SimNode {

    /** Where a request is in the engine (not in the connector: that is the reducer's phase). */
    enum Status { WAITING, WAITING_FOR_REMOTE_KVS, RUNNING, HELD, DONE }

    /** A request inside this engine. */
    static final class Req {
        final String id;
        final Transaction tx;
        final boolean prefillLeg;
        final int promptTokens;
        final int maxOutputTokens;
        final FinishStatus naturalFinish;
        final KvParams params;
        final List<Integer> blocks = new ArrayList<>();
        Status status = Status.WAITING;
        int computedTokens;
        int outputTokens;
        boolean promptDone;
        int scheduledTokens;
        boolean recvDone;

        Req(String id, Transaction tx, boolean prefillLeg, int promptTokens, int maxOutputTokens,
            FinishStatus naturalFinish, KvParams params) {
            this.id = id;
            this.tx = tx;
            this.prefillLeg = prefillLeg;
            this.promptTokens = promptTokens;
            this.maxOutputTokens = maxOutputTokens;
            this.naturalFinish = naturalFinish;
            this.params = params;
        }
    }

    /** What reaches the engine core between steps. */
    private sealed interface Input {
        record Add(Req req) implements Input {}
        record Abort(String requestId) implements Input {}
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
    private final BlockAllocator pool;
    private final int finishStage;

    private final ArrayDeque<Input> inputs = new ArrayDeque<>();
    /** Requests the engine still holds: admitted and not yet done (a done request is dropped). */
    private final LinkedHashMap<String, Req> requests = new LinkedHashMap<>();
    /** The most requests {@link #requests} held at once. */
    private int peakRetained;
    private final List<Req> waiting = new ArrayList<>();
    private final List<Req> remoteKvs = new ArrayList<>();
    private final List<Req> running = new ArrayList<>();
    private int live;

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
    /** Per request id, how many TP ranks have reported it finished sending (receiving) so far. */
    private final LinkedHashMap<String, Integer> sendingReports = new LinkedHashMap<>();
    private final LinkedHashMap<String, Integer> recvingReports = new LinkedHashMap<>();

    SimNode(Simulation sim, String name, NodeConfig config, SplittableRandom rng) {
        this.sim = sim;
        this.opts = sim.options();
        this.name = name;
        this.config = config;
        this.state = NodeState.initial(config);
        this.rng = rng;
        this.pool = new BlockAllocator(opts.blocksPerNode());
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

    /** The address this instance registers with the proxy (it is DP0/TP0 of its instance). */
    ZmqAddress zmqAddress() {
        return new ZmqAddress(config.hostIp(), config.handshakePortBase(), notifyPort);
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
        inputs.addLast(new Input.Add(req));
        kick();
    }

    /** An abort reaches the engine core; it is processed at the next step. */
    void abort(String requestId) {
        inputs.addLast(new Input.Abort(requestId));
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
                    NodeEvent.NotifySendFailed _, NodeEvent.HandshakeVoted _, NodeEvent.Tick _, NodeEvent.ShutDown _ -> { }
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
                out.add(aggregate(reports));
            } else {
                out.add(e);
            }
        }
        return out;
    }

    /**
     * vLLM's {@code KVOutputAggregator}: a request is finished sending (receiving) once every TP
     * rank's worker has reported it, in this step or an earlier one; the blocks that failed to
     * load are every rank's.
     */
    private Effect.FinishedReported aggregate(List<Effect.FinishedReported> reports) {
        int ranks = reports.size();
        List<String> sending = new ArrayList<>();
        List<String> recving = new ArrayList<>();
        List<Integer> errors = null;
        for (Effect.FinishedReported r : reports) {
            count(r.doneSending(), sendingReports, ranks, sending);
            count(r.doneRecving(), recvingReports, ranks, recving);
            if (r.loadErrorBlocks() != null) {
                if (errors == null) {
                    errors = new ArrayList<>();
                }
                errors.addAll(r.loadErrorBlocks());
            }
        }
        return new Effect.FinishedReported(sending, recving, errors);
    }

    private static void count(List<String> ids, LinkedHashMap<String, Integer> counts, int ranks, List<String> done) {
        if (ids == null) {
            return;
        }
        for (String id : ids) {
            int n = counts.merge(id, 1, Integer::sum);
            if (n >= ranks) {
                counts.remove(id);
                done.add(id);
            }
        }
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
        return open.isEmpty() && inputs.isEmpty();
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
            processInputs(now);
            boolean busy = schedule(now);
            stepDurationNs = busy ? between(opts.stepMinNs(), opts.stepMaxNs()) : opts.idleStepNs();
            next(step, STAGE_LOAD);
        } else if (stage == STAGE_LOAD) {
            inForward = true;
            apply(new NodeEvent.LoadStarted(now));
            next(step, STAGE_FIRST_LAYER);
        } else if (stage < finishStage) {
            apply(new NodeEvent.LayerSaved(now, config.layerNames().get(stage - STAGE_FIRST_LAYER)));
            next(step, stage + 1);
        } else {
            inForward = false;
            blockers.clear();
            finishStep(now);
            revalidateOpen();
            if (live > 0 || !inputs.isEmpty()) {
                scheduleStep(now + STEP_GAP_NS);
            } else {
                stepping = false;
                scheduleBackgroundTick();
            }
        }
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

    // ------------------------------------------------------------------ engine logic

    private void processInputs(long now) {
        while (!inputs.isEmpty()) {
            switch (inputs.pollFirst()) {
                case Input.Add a -> {
                    Req r = a.req();
                    requests.put(r.id, r);
                    peakRetained = Math.max(peakRetained, requests.size());
                    live++;
                    apply(new NodeEvent.RequestAdmitted(now, r.id, r.promptTokens, r.promptTokens, r.params));
                    track(r.id);
                    waiting.add(r);
                    sim.legAdmitted();
                }
                case Input.Abort b -> {
                    Req r = requests.get(b.requestId());
                    // vLLM ignores aborts of requests it no longer runs (finished, maybe still holding blocks).
                    if (r != null && r.status != Status.HELD && r.status != Status.DONE) {
                        finish(now, r, FinishStatus.FINISHED_ABORTED);
                    }
                }
            }
        }
    }

    private int blocksFor(int tokens) {
        return (tokens + opts.blockSize() - 1) / opts.blockSize();
    }

    /** Schedules one step; returns whether any token was scheduled. */
    private boolean schedule(long now) {
        int budget = opts.tokenBudget();
        boolean busy = false;
        List<CachedRequest> cached = new ArrayList<>();
        for (Req r : running) {
            r.scheduledTokens = 0;
            if (budget <= 0) {
                continue;
            }
            int n = r.promptDone ? 1 : Math.min(r.promptTokens - r.computedTokens, budget);
            int need = blocksFor(r.computedTokens + n) - r.blocks.size();
            if (need > pool.free()) {
                continue;
            }
            int[] fresh = grow(r, need);
            r.scheduledTokens = n;
            budget -= n;
            busy = true;
            cached.add(new CachedRequest(r.id, fresh.length > 0 ? BlockGroups.single(fresh) : null));
        }
        // WRITE consumers whose KV arrived rejoin as new requests and recompute the last prompt token.
        for (Iterator<Req> it = remoteKvs.iterator(); it.hasNext(); ) {
            Req r = it.next();
            if (!r.recvDone || budget <= 0 || running.size() >= opts.maxRunning()) {
                continue;
            }
            int need = blocksFor(r.promptTokens) - r.blocks.size();
            if (need > pool.free()) {
                continue;
            }
            grow(r, need);
            it.remove();
            r.computedTokens = r.promptTokens - 1;
            r.status = Status.RUNNING;
            r.scheduledTokens = 1;
            budget -= 1;
            busy = true;
            running.add(r);
        }
        while (!waiting.isEmpty() && budget > 0 && running.size() < opts.maxRunning()) {
            Req r = waiting.get(0);
            if (pool.free() < blocksFor(r.promptTokens) + 1) {
                break;
            }
            Effect.MatchedTokens mt = reply(apply(new NodeEvent.MatchedTokensQueried(now, r.id, 0)),
                    Effect.MatchedTokens.class, r.id);
            int count = mt == null ? 0 : Math.max(0, Math.min(mt.count(), r.promptTokens));
            waiting.remove(0);
            if (mt != null && mt.loadAsync()) {
                int[] ids = grow(r, blocksFor(count));
                apply(new NodeEvent.BlocksAllocated(now, r.id, BlockGroups.single(ids), count));
                r.status = Status.WAITING_FOR_REMOTE_KVS;
                remoteKvs.add(r);
                continue;
            }
            // vLLM always computes at least the last prompt token itself.
            count = Math.min(count, r.promptTokens - 1);
            int n = Math.min(r.promptTokens - count, budget);
            int[] ids = grow(r, blocksFor(count + n));
            apply(new NodeEvent.BlocksAllocated(now, r.id, BlockGroups.single(ids), count));
            r.computedTokens = count;
            r.status = Status.RUNNING;
            r.scheduledTokens = n;
            budget -= n;
            busy = true;
            running.add(r);
        }
        apply(new NodeEvent.StepScheduled(now, stepNo, cached));
        return busy;
    }

    private int[] grow(Req r, int n) {
        int[] ids = pool.allocate(Math.max(0, n));
        for (int id : ids) {
            r.blocks.add(id);
        }
        return ids;
    }

    /**
     * The end of a step: the worker's {@code wait_for_save} and {@code get_finished}, then the
     * scheduler's {@code update_from_output}: tokens are booked, requests that stopped are finished
     * ({@code request_finished}), then {@code update_connector_output} runs and the requests it names
     * are freed or marked received (or, with {@link SimOptions#connectorOutputFirst()}, the connector
     * output first), then {@code Tick}.
     */
    private void finishStep(long now) {
        apply(new NodeEvent.SaveWaited(now));
        Effect.FinishedReported report = first(apply(new NodeEvent.FinishedPolled(now)), Effect.FinishedReported.class);
        if (report != null && report.loadErrorBlocks() != null) {
            sim.loadErrors(report.loadErrorBlocks().size());
        }
        List<Req> finishing = bookTokens();
        if (opts.connectorOutputFirst()) {
            connectorOutput(now, report);
        }
        for (Req r : finishing) {
            finish(now, r, r.naturalFinish);
        }
        if (!opts.connectorOutputFirst()) {
            connectorOutput(now, report);
        }
        apply(new NodeEvent.Tick(now));
    }

    /** Advances every request scheduled this step; returns those that produced their last token. */
    private List<Req> bookTokens() {
        List<Req> finishing = new ArrayList<>();
        for (Req r : running) {
            if (r.scheduledTokens == 0) {
                continue;
            }
            if (!r.promptDone) {
                r.computedTokens += r.scheduledTokens;
                if (r.computedTokens >= r.promptTokens) {
                    r.promptDone = true;
                    r.outputTokens = 1;
                }
            } else {
                r.computedTokens += 1;
                r.outputTokens += 1;
            }
            r.scheduledTokens = 0;
            if (r.promptDone && r.outputTokens >= r.maxOutputTokens) {
                finishing.add(r);
            }
        }
        return finishing;
    }

    /** {@code _update_from_kv_xfer_finished}: {@code update_connector_output}, then the frees and receives. */
    private void connectorOutput(long now, Effect.FinishedReported report) {
        List<String> sending = report == null || report.doneSending() == null ? List.of() : report.doneSending();
        List<String> recving = report == null || report.doneRecving() == null ? List.of() : report.doneRecving();
        // vLLM's output aggregator turns empty sets into None.
        List<Effect> out = apply(new NodeEvent.ConnectorOutputReceived(now,
                sending.isEmpty() ? null : List.copyOf(sending), recving.isEmpty() ? null : List.copyOf(recving)));
        for (String id : recving) {
            Req r = requests.get(id);
            if (r != null && r.status == Status.WAITING_FOR_REMOTE_KVS) {
                r.recvDone = true;
            } else if (r != null && r.status == Status.HELD) {
                done(r); // finished while receiving: vLLM frees the delayed blocks now
            } else {
                sim.unexpectedRecv();
            }
        }
        Effect.FinishedSendingRewritten rewrite = first(out, Effect.FinishedSendingRewritten.class);
        if (rewrite != null) {
            for (String id : rewrite.safe()) {
                Req r = requests.get(id);
                if (r != null && r.status == Status.HELD) {
                    done(r);
                } else {
                    sim.unexpectedFree();
                }
            }
        }
    }

    /** {@code request_finished}, then vLLM frees the blocks now or keeps them until the rewrite names the request. */
    private void finish(long now, Req r, FinishStatus status) {
        waiting.remove(r);
        remoteKvs.remove(r);
        running.remove(r);
        int[] ids = new int[r.blocks.size()];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = r.blocks.get(i);
        }
        Effect.FinishDecision decision = reply(
                apply(new NodeEvent.RequestFinished(now, r.id, status, BlockGroups.single(ids))),
                Effect.FinishDecision.class, r.id);
        if (decision != null && decision.delayFree()) {
            r.status = Status.HELD;
        } else {
            done(r);
        }
        sim.legFinished(r, status, decision == null ? null : decision.params());
    }

    private void done(Req r) {
        pool.release(r.blocks);
        r.blocks.clear();
        r.status = Status.DONE;
        live--;
        // Nothing asks about a done request again: an abort or a worker report naming it finds no
        // request, which is handled as for a done one.
        requests.remove(r.id, r);
    }

    private long between(long min, long max) {
        return min == max ? min : min + rng.nextLong(max - min + 1);
    }

    private static <T extends Effect> T first(List<Effect> effects, Class<T> type) {
        for (Effect e : effects) {
            if (type.isInstance(e)) {
                return type.cast(e);
            }
        }
        return null;
    }

    /** The hook reply of {@code type} for {@code requestId}, or {@code null}. */
    private static <T extends Effect> T reply(List<Effect> effects, Class<T> type, String requestId) {
        for (Effect e : effects) {
            if (type.isInstance(e)) {
                String id = switch (e) {
                    case Effect.MatchedTokens m -> m.requestId();
                    case Effect.FinishDecision f -> f.requestId();
                    case Effect.MetadataBuilt _, Effect.FinishedReported _, Effect.FinishedSendingRewritten _,
                            Effect.IoCommand _, Effect.Decision _ -> requestId;
                };
                if (requestId.equals(id)) {
                    return type.cast(e);
                }
            }
        }
        return null;
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
                state.stateHash(), seq, pool.inUse(), requests.size(), peakRetained, log);
    }
}
