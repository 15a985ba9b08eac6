package io.kvledger.sim;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.node.Invariants;
import io.kvledger.core.node.NodeState;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Function;

/**
 * A deterministic discrete-event simulation of a disaggregated cluster: prefill and decode
 * engines (one reducer each), the toy proxy in front of them, and the network and data plane
 * between them, all driven by one seed.
 *
 * <p>Single-threaded and without a clock of its own: virtual time advances from agenda entry to
 * agenda entry, and the same {@link SimOptions} always give the same result. Random draws come from
 * {@link SplittableRandom} streams split off the seed in a fixed order (workload, aborts, HTTP
 * latencies, network latencies, faults, then one per node), so that, for example, changing a fault rate leaves the
 * requests, their ids and prompt lengths unchanged.
 *
 * <p>A run stops when every request on every node is in a terminal phase, or when the time limit
 * passes; in the second case it runs on for {@code defer_timeout + 1 s} so that deferred frees are
 * reaped, then gives every node one last {@code Tick}.
 */
public final class Simulation {

    private final SimOptions opts;
    private final Recorder recorder;
    private final EventQueue queue = new EventQueue();
    private final SplittableRandom workload;
    private final SplittableRandom aborts;
    private final SplittableRandom http;
    private final Network network;
    private final ToyRouter<SimNode> router;
    private final List<SimNode> prefills = new ArrayList<>();
    private final List<SimNode> decodes = new ArrayList<>();
    private final List<SimNode> nodes = new ArrayList<>();
    /** The nodes of TP ranks above 0, driven by their instance's engine (TP rank 0's node). */
    private final List<SimNode> tpWorkers = new ArrayList<>();
    private final List<AnomalyRecord> anomalies = new ArrayList<>();
    /** What each node's state is checked with after every event ({@link NodeState#checkInvariants()}). */
    private final Function<NodeState, List<Invariants.Violation>> invariants;

    private int arrived;
    /** Legs the proxy has sent or will send (READ decode legs) that no engine has admitted yet. */
    private int outstandingLegs;
    private int decodeCompleted;
    private int abortsInjected;
    private int decodeNotDispatched;
    private long loadErrorBlocks;
    private long unexpectedFrees;
    private long unexpectedRecvs;
    private long stepsBlockedTimeout;

    private Simulation(SimOptions opts, Recorder recorder, Function<NodeState, List<Invariants.Violation>> invariants) {
        this.opts = opts;
        this.recorder = recorder;
        this.invariants = invariants;
        SplittableRandom root = new SplittableRandom(opts.seed());
        this.workload = root.split();
        this.aborts = root.split();
        this.http = root.split();
        SplittableRandom latency = root.split();
        SplittableRandom faults = root.split();
        this.network = new Network(this, latency, faults);
        // with DP above 1, each DP rank of an instance is an engine of its own (P<i>-dp<r>); the
        // proxy's flat interleaved route takes rank 0 of every instance, then rank 1, and so on
        // in a multi-pod READ deployment the prefill DP ranks live on pods of podRanks ranks, each pod
        // on a host of its own
        for (int dp = 0; dp < opts.prefillDp(); dp++) {
            for (int i = 0; i < opts.prefillNodes(); i++) {
                prefills.add(instance("P" + i + (dp == 0 ? "" : "-dp" + dp), Role.PRODUCER, prefillHost(i, dp),
                        dp, opts.prefillDp(), podsOfRanks() ? podRanks() : opts.prefillDp(), opts.prefillTp(), root));
            }
        }
        for (int dp = 0; dp < opts.decodeDp(); dp++) {
            for (int i = 0; i < opts.decodeNodes(); i++) {
                decodes.add(instance("D" + i + (dp == 0 ? "" : "-dp" + dp), Role.CONSUMER, "10.0.1." + (i + 1),
                        dp, opts.decodeDp(), opts.decodeDp(), opts.decodeTp(), root));
            }
        }
        nodes.addAll(prefills);
        nodes.addAll(decodes);
        this.router = new ToyRouter<>(prefills, decodes);
    }

    /**
     * One instance: TP rank 0's node, the engine the proxy talks to, and with TP above 1 a node
     * per other TP rank ({@code <name>-tp<rank>}) that the engine hands every hook call to.
     */
    private SimNode instance(String name, Role role, String host, int dpRank, int dpSize, int dpLocal, int tp,
                             SplittableRandom root) {
        SimNode engine = new SimNode(this, name, nodeConfig(role, host, dpRank, dpSize, dpLocal, 0, tp), root.split());
        for (int t = 1; t < tp; t++) {
            SimNode w = new SimNode(this, name + "-tp" + t, nodeConfig(role, host, dpRank, dpSize, dpLocal, t, tp),
                    root.split());
            engine.addTpWorker(w);
            tpWorkers.add(w);
        }
        return engine;
    }

    /** Whether the prefill DP ranks live on pods of several hosts (a multi-pod READ deployment). */
    private boolean podsOfRanks() {
        return opts.multiPod() && opts.mode() == TransferMode.READ;
    }

    /** DP ranks per prefill pod in a multi-pod READ deployment ({@code remote_dp_size_local}). */
    private int podRanks() {
        return Math.max(1, opts.prefillPodRanks());
    }

    /** Prefill instance {@code i}'s host for DP rank {@code dp}: its pod's host in a multi-pod READ deployment. */
    private String prefillHost(int i, int dp) {
        int pod = podsOfRanks() ? dp / podRanks() : 0;
        return (pod > 0 ? "10.0." + (pod + 1) + "." : "10.0.0.") + (i + 1);
    }

    private NodeConfig nodeConfig(Role role, String host, int dpRank, int dpSize, int dpLocal, int tpRank, int tpSize) {
        List<String> layers = new ArrayList<>();
        for (int i = 0; i < opts.layers(); i++) {
            layers.add("model.layers." + i + ".self_attn.attn");
        }
        return NodeConfig.builder(role, opts.mode())
                .hostIp(host)
                .cacheBlockSize(opts.blockSize())
                .layerNames(layers)
                .deferTimeoutNs(opts.deferTimeoutNs())
                .transferTimeoutNs(opts.transferTimeoutNs())
                .behaviour(opts.behaviour())
                .dp(dpRank, dpSize, dpLocal)
                .tp(tpRank, tpSize)
                .build();
    }

    /** Runs a simulation and keeps nothing but the result. */
    public static SimulationResult run(SimOptions options) {
        return run(options, Recorder.NONE);
    }

    /**
     * Runs a simulation, telling {@code recorder} about every event applied to every node. Each
     * node's state is checked against the reducer's invariants after every event.
     *
     * @throws InvariantBroken when a node's state breaks one (a defect of the reducer): the run
     *                         stops there, and the exception names the seed, node and event
     */
    public static SimulationResult run(SimOptions options, Recorder recorder) {
        return run(options, recorder, NodeState::checkInvariants);
    }

    /**
     * Runs a simulation checking each node's state after every event with {@code invariants}
     * instead of {@link NodeState#checkInvariants()} (for tests of the failing run).
     *
     * @throws InvariantBroken when a check finds a violation: the run stops there
     */
    static SimulationResult run(SimOptions options, Recorder recorder,
                                Function<NodeState, List<Invariants.Violation>> invariants) {
        return new Simulation(options, recorder, invariants).execute();
    }

    private SimulationResult execute() {
        for (SimNode n : nodes) {
            network.bind(n);
        }
        for (SimNode n : tpWorkers) {
            network.bind(n);
        }
        for (SimNode n : nodes) {
            n.start();
        }
        for (SimNode n : tpWorkers) {
            n.start();
        }
        if (opts.requests() > 0) {
            queue.at(interArrival(), () -> arrive(0));
        }
        SimStats.StopReason reason;
        long reapEndNs = -1;
        while (true) {
            if (queue.isEmpty()) {
                reason = SimStats.StopReason.QUIESCENT;
                break;
            }
            long next = queue.peekTime();
            if (reapEndNs < 0 && next > opts.timeLimitNs()) {
                reapEndNs = opts.timeLimitNs() + opts.deferTimeoutNs() + NodeConfig.NS_PER_S;
            }
            if (reapEndNs >= 0 && next > reapEndNs) {
                reason = SimStats.StopReason.TIME_LIMIT;
                queue.advanceTo(reapEndNs);
                break;
            }
            queue.runNext();
            if (settled()) {
                reason = SimStats.StopReason.ALL_TERMINAL;
                break;
            }
        }
        if (reason != SimStats.StopReason.ALL_TERMINAL) {
            long end = reason == SimStats.StopReason.QUIESCENT
                    ? queue.now() + opts.deferTimeoutNs() + NodeConfig.NS_PER_S : queue.now();
            queue.advanceTo(end);
            for (SimNode n : nodes) {
                n.apply(new NodeEvent.Tick(end));
            }
        }
        List<NodeReport> reports = new ArrayList<>();
        for (SimNode n : nodes) {
            reports.add(n.report());
            for (SimNode w : tpWorkers) {
                if (w.name().startsWith(n.name() + "-tp")) {
                    reports.add(w.report());
                }
            }
        }
        SimStats stats = new SimStats(arrived, decodeCompleted, abortsInjected, decodeNotDispatched,
                network.framesSent, network.framesDelivered, network.framesLost, network.framesDropped,
                network.framesDuplicated, network.framesDelayed, network.framesReordered, network.framesUnsupported,
                network.framesSendFailed,
                network.handshakesStarted, network.handshakesFailed, network.transfersPosted, network.transfersFailed,
                network.transfersStalled, loadErrorBlocks, unexpectedFrees, unexpectedRecvs, stepsBlockedTimeout,
                queue.now(), reason);
        return new SimulationResult(opts, reports, anomalies, stats);
    }

    /** Every request arrived, every leg was admitted, and every node's requests are terminal. */
    private boolean settled() {
        if (arrived < opts.requests() || outstandingLegs > 0) {
            return false;
        }
        for (SimNode n : nodes) {
            if (!n.settled()) {
                return false;
            }
        }
        for (SimNode n : tpWorkers) {
            if (!n.settled()) {
                return false;
            }
        }
        // The incremental view says yes: confirm against the reducers' full phase maps.
        boolean all = true;
        for (SimNode n : nodes) {
            n.rescanOpen();
            all &= n.settled();
        }
        for (SimNode n : tpWorkers) {
            n.rescanOpen();
            all &= n.settled();
        }
        return all;
    }

    // ------------------------------------------------------------------ the proxy's side

    private void arrive(int index) {
        arrived++;
        Transaction tx = accept(index);
        if (aborts.nextDouble() < opts.faults().abort()) {
            tx.abortLeg = aborts.nextBoolean() ? Transaction.Leg.PREFILL : Transaction.Leg.DECODE;
            tx.abortAfterNs = opts.abortWindowNs() == 0 ? 0 : aborts.nextLong(opts.abortWindowNs() + 1);
        }
        // drawn only when asked for, so that every other fault family keeps its random sequence
        int dp = tx.prefill.dpSize();
        if (opts.faults().dpAlias() > 0 && dp > 1 && aborts.nextDouble() < opts.faults().dpAlias()) {
            tx.aliasedDpRank = (tx.prefill.dpRank() + 1 + aborts.nextInt(dp - 1)) % dp;
        }
        // drawn only when asked for, so that every other fault family keeps its random sequence
        tx.siblings = opts.faults().siblings() > 0 && aborts.nextDouble() < opts.faults().siblings();
        // Both legs are expected now; in READ the decode leg follows the prefill response (or never comes).
        outstandingLegs += 2;
        if (tx.siblings) {
            // n = 2: vLLM fans the prefill leg out into children <index>_<request id>, each with the
            // parent's kv_transfer_params (one transfer id for both)
            outstandingLegs++;
            KvParams params = prefillParams(tx);
            for (int i = 0; i < 2; i++) {
                sendLeg(tx.prefill, new SimNode.Req(i + "_" + tx.prefillRequestId, tx, true, tx.promptTokens, 1,
                        FinishStatus.FINISHED_LENGTH_CAPPED, params.copy()), Transaction.Leg.PREFILL, tx);
            }
        } else {
            sendLeg(tx.prefill, new SimNode.Req(tx.prefillRequestId, tx, true, tx.promptTokens, 1,
                    FinishStatus.FINISHED_LENGTH_CAPPED, prefillParams(tx)),
                    Transaction.Leg.PREFILL, tx);
        }
        if (opts.mode() == TransferMode.WRITE) {
            sendDecodeLeg(tx, null);
        }
        if (index + 1 < opts.requests()) {
            queue.at(queue.now() + interArrival(), () -> arrive(index + 1));
        }
    }

    /**
     * Client request number {@code index} (from 0): the toy router picks the instances and makes
     * the ids, then vLLM's per-leg request-id suffixes and the workload (prompt length, decode
     * length and how decode ends) are drawn, all from the workload stream.
     */
    private Transaction accept(int index) {
        ToyRouter.Route<SimNode> route = router.route(index, workload);
        String pSuffix = ToyRouter.hex8(workload);
        String dSuffix = ToyRouter.hex8(workload);
        while (dSuffix.equals(pSuffix)) {
            dSuffix = ToyRouter.hex8(workload);
        }
        int prompt = opts.promptMinTokens() + workload.nextInt(opts.promptMaxTokens() - opts.promptMinTokens() + 1);
        int decodeTokens = opts.decodeMinTokens() + workload.nextInt(opts.decodeMaxTokens() - opts.decodeMinTokens() + 1);
        FinishStatus finish = workload.nextInt(4) == 0 ? FinishStatus.FINISHED_STOPPED : FinishStatus.FINISHED_LENGTH_CAPPED;
        return new Transaction(route.xRequestId(), route.transferId(), route.prefill(), route.decode(),
                ToyRouter.vllmRequestId(route.xRequestId(), pSuffix), ToyRouter.vllmRequestId(route.xRequestId(), dSuffix),
                prompt, decodeTokens, finish);
    }

    /**
     * The prefill leg's params; in a multi-pod WRITE deployment with the decode's pod layout
     * ({@code remote_hosts}: the pod hosts, each decode instance one pod of its own; and
     * {@code remote_dp_size_local}), as the Wide-EP sidecar gives it.
     */
    private KvParams prefillParams(Transaction tx) {
        KvParams params = ToyRouter.prefillParams(tx.decode, tx.transferId);
        if (opts.multiPod() && opts.mode() == TransferMode.WRITE) {
            params.put("remote_hosts", List.of(tx.decode.config().hostIp()));
            params.put("remote_dp_size_local", (long) tx.decode.dpSize());
        }
        return params;
    }

    private void sendDecodeLeg(Transaction tx, KvParams prefillResponse) {
        KvParams params = ToyRouter.decodeParams(tx.prefill, tx.transferId,
                prefillResponse == null ? null : prefillResponse.asMap());
        if (opts.multiPod() && opts.mode() == TransferMode.READ) {
            // the prefill's pod layout, as a multi-pod sidecar gives it
            int instance = prefills.indexOf(tx.prefill) % opts.prefillNodes();
            List<String> pods = new ArrayList<>();
            for (int dp = 0; dp < opts.prefillDp(); dp += podRanks()) {
                pods.add(prefillHost(instance, dp));
            }
            params.put("remote_hosts", pods);
            params.put("remote_dp_size_local", (long) podRanks());
        }
        if (tx.aliasedDpRank >= 0) {
            params.put("remote_dp_rank", (long) tx.aliasedDpRank); // the dp-alias fault: another rank than the prefill's
        }
        sendLeg(tx.decode, new SimNode.Req(tx.decodeRequestId, tx, false, tx.promptTokens, tx.decodeTokens,
                tx.decodeFinish, params), Transaction.Leg.DECODE, tx);
    }

    /** The proxy's HTTP request reaches the engine after a latency; an abort, if drawn, follows it. */
    private void sendLeg(SimNode node, SimNode.Req req, Transaction.Leg leg, Transaction tx) {
        long at = queue.now() + httpLatency();
        queue.at(at, () -> node.add(req));
        if (tx.abortLeg == leg) {
            queue.at(at + tx.abortAfterNs, () -> {
                abortsInjected++;
                node.abort(req.id);
            });
        }
    }

    /** An engine admitted a leg the proxy sent. */
    void legAdmitted() {
        outstandingLegs--;
    }

    /** A leg's {@code request_finished} ran; in READ the prefill response goes back to the proxy. */
    void legFinished(SimNode.Req req, FinishStatus status, KvParams returned) {
        Transaction tx = req.tx;
        if (!req.prefillLeg) {
            if (status == FinishStatus.FINISHED_STOPPED || status == FinishStatus.FINISHED_LENGTH_CAPPED) {
                decodeCompleted++;
            }
            return;
        }
        if (opts.mode() != TransferMode.READ || tx.decodeDecided) {
            return; // of n > 1 children, the proxy forwards the first response
        }
        tx.decodeDecided = true;
        KvParams response = returned == null ? null : returned.copy();
        queue.at(queue.now() + httpLatency(), () -> {
            if (status != FinishStatus.FINISHED_LENGTH_CAPPED || response == null) {
                // The prefill leg failed or returned no kv_transfer_params: the proxy gives up.
                decodeNotDispatched++;
                outstandingLegs--;
            } else {
                sendDecodeLeg(tx, response);
            }
        });
    }

    // ------------------------------------------------------------------ services for nodes

    SimOptions options() {
        return opts;
    }

    /** The check each node runs after every event. */
    Function<NodeState, List<Invariants.Violation>> invariants() {
        return invariants;
    }

    Recorder recorder() {
        return recorder;
    }

    Network network() {
        return network;
    }

    long now() {
        return queue.now();
    }

    void at(long atNs, Runnable action) {
        queue.at(atNs, action);
    }

    void anomaly(SimNode node, long atNs, Effect.Anomaly a) {
        anomalies.add(new AnomalyRecord(node.name(), atNs, a.kind(), a.requestId(), a.transferId(), a.detail()));
    }

    void loadErrors(int blocks) {
        loadErrorBlocks += blocks;
    }

    void unexpectedFree() {
        unexpectedFrees++;
    }

    void unexpectedRecv() {
        unexpectedRecvs++;
    }

    void stepBlockedTimeout() {
        stepsBlockedTimeout++;
    }

    private long interArrival() {
        // Exponential gaps: a Poisson arrival process with the configured mean.
        double u = workload.nextDouble();
        return Math.max(1, Math.round(-StrictMath.log1p(-u) * opts.meanInterArrivalNs()));
    }

    private long httpLatency() {
        long min = opts.httpMinNs();
        long max = opts.httpMaxNs();
        return min == max ? min : min + http.nextLong(max - min + 1);
    }
}
