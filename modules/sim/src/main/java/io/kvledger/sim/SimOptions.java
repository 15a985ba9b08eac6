package io.kvledger.sim;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.TransferMode;
import java.util.Objects;

/**
 * Everything a simulation run is configured with besides its {@link Recorder}. Together with the
 * seed it fixes the run: the same options give the same events, effects and state hashes.
 * Durations are virtual nanoseconds.
 *
 * @param seed                 the only source of randomness
 * @param mode                 READ or WRITE, for every node
 * @param requests             client requests the proxy receives
 * @param prefillNodes         prefill (producer) instances, each {@code prefillDp} DP and {@code prefillTp} TP ranks
 * @param decodeNodes          decode (consumer) instances, each {@code decodeDp} DP and {@code decodeTp} TP ranks
 * @param faults               faults to inject
 * @param behaviour            the reducer's behaviour switches (every node)
 * @param blockSize            tokens per KV block ({@code cache_config.block_size})
 * @param blocksPerNode        KV blocks in each engine's pool
 * @param tokenBudget          tokens per engine step ({@code max_num_batched_tokens}); longer
 *                             prompts are prefilled in chunks
 * @param maxRunning           requests running at once per engine ({@code max_num_seqs})
 * @param layers               attention layers (each gets a {@code save_kv_layer} per step)
 * @param promptMinTokens      shortest prompt
 * @param promptMaxTokens      longest prompt
 * @param decodeMinTokens      fewest tokens a decode leg generates
 * @param decodeMaxTokens      most tokens a decode leg generates
 * @param stepMinNs            shortest busy engine step
 * @param stepMaxNs            longest busy engine step
 * @param idleStepNs           an engine step that schedules no tokens (it still polls the worker)
 * @param backgroundTickNs     period of the Tick an engine with no requests still gets (the
 *                             worker's writer and listener threads keep running)
 * @param meanInterArrivalNs   mean gap between client requests (exponential)
 * @param httpMinNs            shortest proxy-to-engine (and back) HTTP latency
 * @param httpMaxNs            longest HTTP latency
 * @param netMinNs             shortest notify-frame latency
 * @param netMaxNs             longest notify-frame latency
 * @param longDelayMinNs       shortest extra latency of a frame hit by the {@code delay} fault
 * @param longDelayMaxNs       longest extra latency of a frame hit by the {@code delay} fault
 * @param handshakeMinNs       shortest handshake round trip
 * @param handshakeMaxNs       longest handshake round trip
 * @param transferBaseNs       fixed cost of one posted transfer
 * @param transferPerBlockNs   cost per block of one posted transfer
 * @param abortWindowNs        an aborted leg is aborted within this long after it reaches its engine
 * @param deferTimeoutNs       the connector's {@code defer_timeout}
 * @param transferTimeoutNs    the connector's {@code transfer_timeout} (also bounds how long an
 *                             engine step blocks on handshakes and reads)
 * @param timeLimitNs          virtual time after which the run stops waiting for requests to
 *                             finish; it then runs {@code deferTimeoutNs + 1 s} longer so that
 *                             deferred frees are reaped, and stops
 * @param connectorOutputFirst whether an engine step calls {@code update_connector_output} before
 *                             {@code request_finished} for the requests that finished in it; vLLM's
 *                             {@code update_from_output} does the opposite (false, the default),
 *                             so an ACK surfacing in the step its request finishes finds the
 *                             deferral; true makes such ACKs early (parked)
 * @param keepLog              whether the result keeps every node's (event, effects) log
 * @param prefillTp            the TP size of every prefill instance: TP rank 0 is its engine, the
 *                             other ranks are workers the engine hands every hook call to
 * @param decodeTp             the TP size of every decode instance, likewise
 * @param prefillDp            the DP size of every prefill instance: each DP rank is an engine of
 *                             its own (its own scheduler, ports {@code base + dp_rank + tp_rank})
 *                             on the instance's host, and the proxy routes to each rank in turn; not
 *                             with {@code prefillTp} above 1, whose listeners would collide (class 23)
 * @param multiPod             whether the deployment spreads DP ranks over pods on several hosts, and the proxy,
 *                             as a multi-pod (Wide-EP) sidecar does, gives the leg that dials them their pod layout
 *                             ({@code remote_hosts} and {@code remote_dp_size_local}). WRITE: each decode instance a
 *                             pod on a host of its own, given to the prefill leg, whose worker routes
 *                             {@code write_done} by it. READ: each prefill DP rank a pod on a host of its own
 *                             ({@code remote_dp_size_local} 1, or {@code prefillPodRanks}), given to the decode leg; the decode's eager
 *                             handshake still dials the single {@code remote_host} with the global DP rank (class
 *                             37), and under the newest profile its join waits without a deadline
 *                             ({@link #unboundedEagerHandshake()})
 * @param decodeDp             the DP size of every decode instance: each DP rank an engine of its own
 *                             ({@code D<i>-dp<r>}, ports {@code base + dp_rank}) on the instance's host, the
 *                             proxy routing decode legs to the ranks in the same flat interleaved order; not
 *                             with {@code decodeTp} above 1 (class 23, as for the prefill)
 * @param prefillPodRanks      in a multi-pod READ deployment, how many consecutive DP ranks of a prefill instance
 *                             each pod holds ({@code remote_dp_size_local}); 0 means 1, a pod per rank. Ranks
 *                             from this one on live on other pods, so with {@code prefillDp} up to it every eager
 *                             handshake dials a rank of the pod that {@code remote_host} names
 * @param unboundedReadWait    whether a READ decode engine step blocked on its reads waits for every one of them
 *                             without bound, as the WideEP reader of issue #45749 does (its shared-memory wait has
 *                             no deadline), instead of giving up at {@code transfer_timeout}; a read that never
 *                             completes ({@code stall}) then leaves its request with partial completions and the
 *                             engine stopped in that step (class 33). Handshakes still give up
 */
public record SimOptions(
        long seed,
        TransferMode mode,
        int requests,
        int prefillNodes,
        int decodeNodes,
        FaultSpec faults,
        Behaviour behaviour,
        int blockSize,
        int blocksPerNode,
        int tokenBudget,
        int maxRunning,
        int layers,
        int promptMinTokens,
        int promptMaxTokens,
        int decodeMinTokens,
        int decodeMaxTokens,
        long stepMinNs,
        long stepMaxNs,
        long idleStepNs,
        long backgroundTickNs,
        long meanInterArrivalNs,
        long httpMinNs,
        long httpMaxNs,
        long netMinNs,
        long netMaxNs,
        long longDelayMinNs,
        long longDelayMaxNs,
        long handshakeMinNs,
        long handshakeMaxNs,
        long transferBaseNs,
        long transferPerBlockNs,
        long abortWindowNs,
        long deferTimeoutNs,
        long transferTimeoutNs,
        long timeLimitNs,
        boolean connectorOutputFirst,
        boolean keepLog,
        int prefillTp,
        int decodeTp,
        int prefillDp,
        boolean multiPod,
        boolean unboundedReadWait,
        int decodeDp,
        int prefillPodRanks) {

    /**
     * Whether a READ decode's eager handshake join ({@code _eager_handshake_all_dp_ranks}) waits
     * without a deadline for a handshake nobody answers: in a multi-pod READ deployment under the
     * newest profile, whose worker joins the handshake futures and receives on the DEALER with no
     * timeout. The step it runs in then never ends. Elsewhere the simulated step gives up at
     * {@code transfer_timeout}, as before.
     */
    boolean unboundedEagerHandshake() {
        return multiPod && mode == TransferMode.READ && behaviour.profile().startsWith("newest");
    }

    static final long MS = 1_000_000L;
    static final long US = 1_000L;
    static final long S = NodeConfig.NS_PER_S;

    public SimOptions {
        Objects.requireNonNull(mode, "mode");
        Objects.requireNonNull(faults, "faults");
        Objects.requireNonNull(behaviour, "behaviour");
        positive("requests", requests, true);
        positive("prefillNodes", prefillNodes, false);
        positive("decodeNodes", decodeNodes, false);
        positive("prefillTp", prefillTp, false);
        positive("decodeTp", decodeTp, false);
        positive("prefillDp", prefillDp, false);
        positive("decodeDp", decodeDp, false);
        if (prefillPodRanks < 0 || prefillPodRanks > 0 && !(multiPod && mode == TransferMode.READ)) {
            throw new IllegalArgumentException("prefillPodRanks " + prefillPodRanks
                    + ": DP ranks per prefill pod are for a multi-pod READ deployment, at least 1");
        }
        if (decodeDp > 1 && decodeTp > 1) {
            throw new IllegalArgumentException("decode DP " + decodeDp + " with decode TP " + decodeTp
                    + ": the ranks' listeners would collide on ports (base + dp_rank + tp_rank, class 23)");
        }
        if (unboundedReadWait && mode != TransferMode.READ) {
            throw new IllegalArgumentException("the unbounded read wait (WideEP reader) needs READ mode: WRITE decodes post no reads");
        }
        if (multiPod && mode == TransferMode.READ && prefillTp > 1) {
            throw new IllegalArgumentException("a multi-pod READ deployment puts each prefill DP rank on a pod of its own: "
                    + "it is simulated with prefill TP 1");
        }
        if (prefillDp > 1 && prefillTp > 1) {
            // the listeners bind base + dp + tp: dp1/tp0 and dp0/tp1 would share a port (class 23)
            throw new IllegalArgumentException("prefill DP " + prefillDp + " with prefill TP " + prefillTp
                    + ": the ranks' listeners would collide on ports (base + dp_rank + tp_rank, class 23)");
        }
        positive("blockSize", blockSize, false);
        positive("blocksPerNode", blocksPerNode, false);
        positive("tokenBudget", tokenBudget, false);
        positive("maxRunning", maxRunning, false);
        positive("layers", layers, false);
        positive("promptMinTokens", promptMinTokens, false);
        positive("decodeMinTokens", decodeMinTokens, false);
        range("prompt tokens", promptMinTokens, promptMaxTokens);
        range("decode tokens", decodeMinTokens, decodeMaxTokens);
        range("step", stepMinNs, stepMaxNs);
        range("http latency", httpMinNs, httpMaxNs);
        range("notify latency", netMinNs, netMaxNs);
        range("long delay", longDelayMinNs, longDelayMaxNs);
        range("handshake latency", handshakeMinNs, handshakeMaxNs);
        if (stepMinNs <= 0 || idleStepNs <= 0 || backgroundTickNs <= 0 || meanInterArrivalNs <= 0) {
            throw new IllegalArgumentException("step, idle step, background tick and inter-arrival times must be positive");
        }
        if (httpMinNs < 0 || netMinNs < 0 || longDelayMinNs < 0 || handshakeMinNs < 0 || transferBaseNs < 0
                || transferPerBlockNs < 0 || abortWindowNs < 0) {
            throw new IllegalArgumentException("latencies must not be negative");
        }
        if (deferTimeoutNs <= 0 || transferTimeoutNs <= 0 || timeLimitNs <= 0) {
            throw new IllegalArgumentException("timeouts and the time limit must be positive");
        }
    }

    private static void positive(String name, int v, boolean allowZero) {
        if (v < 0 || (v == 0 && !allowZero)) {
            throw new IllegalArgumentException(name + " must be " + (allowZero ? "non-negative" : "positive") + ", got " + v);
        }
    }

    private static void range(String name, long min, long max) {
        if (min > max) {
            throw new IllegalArgumentException(name + ": minimum " + min + " exceeds maximum " + max);
        }
    }

    /** Defaults for a 1P1D cluster in {@code mode}: 100 requests, no faults, newest behaviour. */
    public static Builder builder(long seed, TransferMode mode) {
        return new Builder(seed, mode);
    }

    public Builder toBuilder() {
        Builder b = new Builder(seed, mode);
        b.requests = requests;
        b.prefillNodes = prefillNodes;
        b.decodeNodes = decodeNodes;
        b.faults = faults;
        b.behaviour = behaviour;
        b.blockSize = blockSize;
        b.blocksPerNode = blocksPerNode;
        b.tokenBudget = tokenBudget;
        b.maxRunning = maxRunning;
        b.layers = layers;
        b.promptMinTokens = promptMinTokens;
        b.promptMaxTokens = promptMaxTokens;
        b.decodeMinTokens = decodeMinTokens;
        b.decodeMaxTokens = decodeMaxTokens;
        b.stepMinNs = stepMinNs;
        b.stepMaxNs = stepMaxNs;
        b.idleStepNs = idleStepNs;
        b.backgroundTickNs = backgroundTickNs;
        b.meanInterArrivalNs = meanInterArrivalNs;
        b.httpMinNs = httpMinNs;
        b.httpMaxNs = httpMaxNs;
        b.netMinNs = netMinNs;
        b.netMaxNs = netMaxNs;
        b.longDelayMinNs = longDelayMinNs;
        b.longDelayMaxNs = longDelayMaxNs;
        b.handshakeMinNs = handshakeMinNs;
        b.handshakeMaxNs = handshakeMaxNs;
        b.transferBaseNs = transferBaseNs;
        b.transferPerBlockNs = transferPerBlockNs;
        b.abortWindowNs = abortWindowNs;
        b.deferTimeoutNs = deferTimeoutNs;
        b.transferTimeoutNs = transferTimeoutNs;
        b.timeLimitNs = timeLimitNs;
        b.connectorOutputFirst = connectorOutputFirst;
        b.keepLog = keepLog;
        b.prefillTp = prefillTp;
        b.decodeTp = decodeTp;
        b.prefillDp = prefillDp;
        b.multiPod = multiPod;
        b.unboundedReadWait = unboundedReadWait;
        b.decodeDp = decodeDp;
        b.prefillPodRanks = prefillPodRanks;
        return b;
    }

    /** Fluent construction; every field starts at a plausible default. */
    public static final class Builder {
        private long seed;
        private TransferMode mode;
        private int requests = 100;
        private int prefillNodes = 1;
        private int decodeNodes = 1;
        private FaultSpec faults = FaultSpec.NONE;
        private Behaviour behaviour = Behaviour.newest();
        private int blockSize = 16;
        private int blocksPerNode = 8192;
        private int tokenBudget = 512;
        private int maxRunning = 128;
        private int layers = 4;
        private int promptMinTokens = 32;
        private int promptMaxTokens = 1536;
        private int decodeMinTokens = 1;
        private int decodeMaxTokens = 8;
        private long stepMinNs = 5 * MS;
        private long stepMaxNs = 20 * MS;
        private long idleStepNs = 10 * MS;
        private long backgroundTickNs = 100 * MS;
        private long meanInterArrivalNs = 15 * MS;
        private long httpMinNs = 200 * US;
        private long httpMaxNs = 1 * MS;
        private long netMinNs = 100 * US;
        private long netMaxNs = 1 * MS;
        private long longDelayMinNs = 200 * MS;
        private long longDelayMaxNs = 3 * S;
        private long handshakeMinNs = 1 * MS;
        private long handshakeMaxNs = 5 * MS;
        private long transferBaseNs = 20 * US;
        private long transferPerBlockNs = 4 * US;
        private long abortWindowNs = 60 * MS;
        private long deferTimeoutNs = NodeConfig.seconds(60);
        private long transferTimeoutNs = NodeConfig.seconds(30);
        private long timeLimitNs = NodeConfig.seconds(120);
        private boolean connectorOutputFirst;
        private boolean keepLog = true;
        private int prefillTp = 1;
        private int decodeTp = 1;
        private int prefillDp = 1;
        private boolean multiPod;
        private boolean unboundedReadWait;
        private int decodeDp = 1;
        private int prefillPodRanks;

        private Builder(long seed, TransferMode mode) {
            this.seed = seed;
            this.mode = mode;
        }

        public Builder seed(long v) { seed = v; return this; }
        public Builder mode(TransferMode v) { mode = v; return this; }
        public Builder requests(int v) { requests = v; return this; }
        public Builder nodes(int prefill, int decode) { prefillNodes = prefill; decodeNodes = decode; return this; }
        public Builder faults(FaultSpec v) { faults = v; return this; }
        public Builder faults(String spec) { faults = FaultSpec.parse(spec); return this; }
        public Builder behaviour(Behaviour v) { behaviour = v; return this; }
        public Builder blockSize(int v) { blockSize = v; return this; }
        public Builder blocksPerNode(int v) { blocksPerNode = v; return this; }
        public Builder tokenBudget(int v) { tokenBudget = v; return this; }
        Builder maxRunning(int v) { maxRunning = v; return this; }
        public Builder layers(int v) { layers = v; return this; }
        public Builder promptTokens(int min, int max) { promptMinTokens = min; promptMaxTokens = max; return this; }
        public Builder decodeTokens(int min, int max) { decodeMinTokens = min; decodeMaxTokens = max; return this; }
        Builder stepNs(long min, long max) { stepMinNs = min; stepMaxNs = max; return this; }
        public Builder idleStepNs(long v) { idleStepNs = v; return this; }
        public Builder backgroundTickNs(long v) { backgroundTickNs = v; return this; }
        public Builder meanInterArrivalNs(long v) { meanInterArrivalNs = v; return this; }
        Builder httpNs(long min, long max) { httpMinNs = min; httpMaxNs = max; return this; }
        Builder netNs(long min, long max) { netMinNs = min; netMaxNs = max; return this; }
        Builder longDelayNs(long min, long max) { longDelayMinNs = min; longDelayMaxNs = max; return this; }
        Builder handshakeNs(long min, long max) { handshakeMinNs = min; handshakeMaxNs = max; return this; }
        Builder transferNs(long base, long perBlock) { transferBaseNs = base; transferPerBlockNs = perBlock; return this; }
        Builder abortWindowNs(long v) { abortWindowNs = v; return this; }
        public Builder deferTimeoutNs(long v) { deferTimeoutNs = v; return this; }
        public Builder transferTimeoutNs(long v) { transferTimeoutNs = v; return this; }
        public Builder timeLimitNs(long v) { timeLimitNs = v; return this; }
        Builder connectorOutputFirst(boolean v) { connectorOutputFirst = v; return this; }
        public Builder keepLog(boolean v) { keepLog = v; return this; }
        public Builder tp(int prefill, int decode) { prefillTp = prefill; decodeTp = decode; return this; }
        Builder prefillDp(int v) { prefillDp = v; return this; }
        Builder multiPod(boolean v) { multiPod = v; return this; }
        Builder unboundedReadWait(boolean v) { unboundedReadWait = v; return this; }
        Builder decodeDp(int v) { decodeDp = v; return this; }
        Builder prefillPodRanks(int v) { prefillPodRanks = v; return this; }

        public SimOptions build() {
            return new SimOptions(seed, mode, requests, prefillNodes, decodeNodes, faults, behaviour, blockSize,
                    blocksPerNode, tokenBudget, maxRunning, layers, promptMinTokens, promptMaxTokens, decodeMinTokens,
                    decodeMaxTokens, stepMinNs, stepMaxNs, idleStepNs, backgroundTickNs, meanInterArrivalNs, httpMinNs,
                    httpMaxNs, netMinNs, netMaxNs, longDelayMinNs, longDelayMaxNs, handshakeMinNs, handshakeMaxNs,
                    transferBaseNs, transferPerBlockNs, abortWindowNs, deferTimeoutNs, transferTimeoutNs, timeLimitNs,
                    connectorOutputFirst, keepLog, prefillTp, decodeTp, prefillDp, multiPod, unboundedReadWait, decodeDp,
                    prefillPodRanks);
        }
    }
}
