package io.kvledger.core.config;

import io.kvledger.core.moriio.ExtraConfig;
import java.util.List;
import java.util.Objects;

/**
 * Everything one engine rank's connector is configured with, as data. The reducer reads nothing
 * else: no environment, no clock.
 *
 * @param role               producer (prefill) or consumer (decode)
 * @param mode               READ or WRITE
 * @param hostIp             the advertised IP ({@code host_ip} or {@code get_ip()})
 * @param handshakePort      the base handshake port as configured (the string "6301" when defaulted)
 * @param notifyPort         the base notify port as configured (the string "61005" when defaulted)
 * @param dpRank             the global data-parallel rank ({@code data_parallel_rank})
 * @param dpSize             the global data-parallel size
 * @param dpSizeLocal        {@code data_parallel_size_local} (0 is the external-DP sentinel)
 * @param tpRank             the tensor-parallel rank of the worker this node models
 * @param tpSize             the tensor-parallel world size
 * @param cacheBlockSize     {@code cache_config.block_size} in tokens
 * @param groups             the KV-cache groups in {@code KVCacheConfig} order
 * @param layerNames         the registered KV-cache layers, in registration order
 * @param hmaEnabled         whether vLLM runs the hybrid KV-cache manager (only with SupportsHMA)
 * @param fullCudagraph      whether the compilation config uses full CUDA graphs
 * @param lookaheadTokens    scheduler lookahead slots (decode tail tolerance)
 * @param speculativeTokens  speculative tokens per step (decode tail tolerance for hybrid models)
 * @param speculativeMethod  the speculative decoding method, or {@code null}
 * @param deferTimeoutNs     {@code defer_timeout}: reap deadline, parked-ACK deadline, deferred WRITE expiry
 * @param transferTimeoutNs  {@code transfer_timeout}: bound of blocking transfer waits
 * @param recvAbortTimeoutNs {@code recv_abort_timeout}: age at which an in-flight READ is aborted
 * @param unmappedAckTtlNs   TTL of ACKs waiting for the worker mapping (switch unmapped-ack-bounds)
 * @param unmappedAckCap     cap of ACKs waiting for the worker mapping (switch unmapped-ack-bounds)
 * @param behaviour          the behaviour switches
 * @param awaitsTpVote       whether this rank's journal carries the TP-wide eager-handshake vote
 *                           ({@code HandshakeVoted}): a READ consumer then holds each step's reads
 *                           for an engine not yet voted on until the vote comes, as upstream's
 *                           {@code start_load_kv} blocks in the all-reduce. False for recorders
 *                           that do not journal the vote (reads go out once this rank's own
 *                           handshakes are done); a journal header without the key means false.
 */
public record NodeConfig(
        Role role,
        TransferMode mode,
        String hostIp,
        Object handshakePort,
        Object notifyPort,
        int dpRank,
        int dpSize,
        int dpSizeLocal,
        int tpRank,
        int tpSize,
        int cacheBlockSize,
        List<KvGroupSpec> groups,
        List<String> layerNames,
        boolean hmaEnabled,
        boolean fullCudagraph,
        int lookaheadTokens,
        int speculativeTokens,
        String speculativeMethod,
        long deferTimeoutNs,
        long transferTimeoutNs,
        long recvAbortTimeoutNs,
        long unmappedAckTtlNs,
        int unmappedAckCap,
        Behaviour behaviour,
        boolean awaitsTpVote) {

    public static final long NS_PER_S = 1_000_000_000L;

    public NodeConfig {
        Objects.requireNonNull(role, "role");
        Objects.requireNonNull(mode, "mode");
        Objects.requireNonNull(behaviour, "behaviour");
        groups = List.copyOf(groups);
        layerNames = List.copyOf(layerNames);
        handshakePort = ExtraConfig.portDefault(handshakePort, ExtraConfig.DEFAULT_HANDSHAKE_PORT);
        notifyPort = ExtraConfig.portDefault(notifyPort, ExtraConfig.DEFAULT_NOTIFY_PORT);
        hostIp = hostIp == null ? "127.0.0.1" : hostIp;
    }

    /**
     * Reads {@code kv_connector_extra_config} the way the connector does: {@code handshake_port}
     * and {@code notify_port} default to the strings "6301" and "61005" when missing or falsy,
     * {@code host_ip} overrides the advertised IP, {@code read_mode} picks READ or WRITE,
     * {@code defer_timeout} (60 s), {@code transfer_timeout} (30 s) and {@code recv_abort_timeout}
     * (120 s) are float seconds. Under the {@code defer-timeout-env} switch (open PR #51301) the
     * value of {@code VLLM_MORIIO_DEFERRED_TIMEOUT_S}, passed in as {@code envDeferTimeout} since
     * the core reads no environment, wins over extra_config, the default becomes 300 s, and
     * non-positive values are refused.
     *
     * @param kvRole          vLLM's kv_role ("kv_producer", "kv_consumer" or "kv_both")
     * @param envDeferTimeout the environment value, or {@code null} when unset
     * @return the configuration, or the message the connector would raise
     */
    public static io.kvledger.core.moriio.Checked<NodeConfig> fromExtraConfig(
            String kvRole, java.util.Map<String, ?> extra, String envDeferTimeout, Behaviour behaviour,
            int dpRank, int dpSize, int dpSizeLocal, int tpRank, int tpSize) {
        return fromExtraConfig(kvRole, extra, envDeferTimeout, null, behaviour, dpRank, dpSize, dpSizeLocal, tpRank, tpSize);
    }

    /**
     * {@link #fromExtraConfig(String, java.util.Map, String, Behaviour, int, int, int, int, int)}
     * with the value of {@code VLLM_MORIIO_CONNECTOR_READ_MODE} ({@code null} when unset), which
     * picks the mode instead of {@code read_mode} under the {@code mode-from-env} switch (vLLM
     * 239b5ff30's {@code get_moriio_mode()}).
     */
    public static io.kvledger.core.moriio.Checked<NodeConfig> fromExtraConfig(
            String kvRole, java.util.Map<String, ?> extra, String envDeferTimeout, String envReadMode, Behaviour behaviour,
            int dpRank, int dpSize, int dpSizeLocal, int tpRank, int tpSize) {
        TransferMode mode = behaviour.on(Switch.MODE_FROM_ENV) ? TransferMode.fromEnvReadMode(envReadMode)
                : TransferMode.fromReadMode(extra.get("read_mode"));
        Builder b = builder(Role.fromKvRole(kvRole), mode)
                .behaviour(behaviour)
                .dp(dpRank, dpSize, dpSizeLocal)
                .tp(tpRank, tpSize)
                .handshakePort(extra.get("handshake_port"))
                .notifyPort(extra.get("notify_port"));
        Object host = extra.get("host_ip");
        if (ExtraConfig.pythonTruthy(host)) {
            b.hostIp(ExtraConfig.pythonStr(host));
        }
        double deferDefault = ExtraConfig.DEFAULT_DEFER_TIMEOUT_S;
        Object deferValue = extra.get("defer_timeout");
        if (behaviour.on(Switch.DEFER_TIMEOUT_ENV)) {
            deferDefault = 300.0;
            if (envDeferTimeout != null && !envDeferTimeout.isBlank()) {
                deferValue = envDeferTimeout;
            }
        }
        var defer = ExtraConfig.parseSeconds(deferValue, deferDefault);
        var transfer = ExtraConfig.parseSeconds(extra.get("transfer_timeout"), ExtraConfig.DEFAULT_TRANSFER_TIMEOUT_S);
        var abort = ExtraConfig.parseSeconds(extra.get("recv_abort_timeout"), ExtraConfig.DEFAULT_RECV_ABORT_TIMEOUT_S);
        for (var v : java.util.List.of(defer, transfer, abort)) {
            if (!v.isOk()) {
                return io.kvledger.core.moriio.Checked.fail(v.error());
            }
        }
        if (behaviour.on(Switch.DEFER_TIMEOUT_ENV) && !(defer.value() > 0)) {
            return io.kvledger.core.moriio.Checked.fail("defer_timeout must be positive, got " + defer.value());
        }
        b.deferTimeoutNs(seconds(defer.value()))
                .transferTimeoutNs(seconds(transfer.value()))
                .recvAbortTimeoutNs(seconds(abort.value()));
        return io.kvledger.core.moriio.Checked.ok(b.build());
    }

    /** A single-group, single-layer-set node with every default, for tests, the simulator and demos. */
    public static Builder builder(Role role, TransferMode mode) {
        return new Builder(role, mode);
    }

    /** {@code engine_id}: {@code "{host_ip}:{handshake_port}"}, the same for every rank of an instance. */
    public String engineId() {
        return ExtraConfig.engineId(hostIp, handshakePort);
    }

    /** The base notify port as an int (Python {@code int(notify_port)}), or -1 when unparsable. */
    public int notifyPortBase() {
        return intOf(notifyPort);
    }

    /** The base handshake port as an int, or -1 when unparsable. */
    public int handshakePortBase() {
        return intOf(handshakePort);
    }

    /** The scheduler side's role test ({@code kv_role == "kv_producer"}): false for kv_both. */
    public boolean isProducer() {
        return role == Role.PRODUCER;
    }

    /** The worker side's role test ({@code is_kv_producer}): true for kv_producer and kv_both. */
    public boolean workerIsProducer() {
        return role != Role.CONSUMER;
    }

    public boolean on(Switch s) {
        return behaviour.on(s);
    }

    public NodeConfig withBehaviour(Behaviour b) {
        return new NodeConfig(role, mode, hostIp, handshakePort, notifyPort, dpRank, dpSize, dpSizeLocal,
                tpRank, tpSize, cacheBlockSize, groups, layerNames, hmaEnabled, fullCudagraph, lookaheadTokens,
                speculativeTokens, speculativeMethod, deferTimeoutNs, transferTimeoutNs, recvAbortTimeoutNs,
                unmappedAckTtlNs, unmappedAckCap, b, awaitsTpVote);
    }

    public Builder toBuilder() {
        Builder b = new Builder(role, mode);
        b.hostIp = hostIp;
        b.handshakePort = handshakePort;
        b.notifyPort = notifyPort;
        b.dpRank = dpRank;
        b.dpSize = dpSize;
        b.dpSizeLocal = dpSizeLocal;
        b.tpRank = tpRank;
        b.tpSize = tpSize;
        b.cacheBlockSize = cacheBlockSize;
        b.groups = groups;
        b.layerNames = layerNames;
        b.hmaEnabled = hmaEnabled;
        b.fullCudagraph = fullCudagraph;
        b.lookaheadTokens = lookaheadTokens;
        b.speculativeTokens = speculativeTokens;
        b.speculativeMethod = speculativeMethod;
        b.deferTimeoutNs = deferTimeoutNs;
        b.transferTimeoutNs = transferTimeoutNs;
        b.recvAbortTimeoutNs = recvAbortTimeoutNs;
        b.unmappedAckTtlNs = unmappedAckTtlNs;
        b.unmappedAckCap = unmappedAckCap;
        b.behaviour = behaviour;
        b.awaitsTpVote = awaitsTpVote;
        return b;
    }

    private static int intOf(Object port) {
        if (port instanceof Number n) {
            return n.intValue();
        }
        try {
            return Integer.parseInt(String.valueOf(port).strip());
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** Seconds (as in extra_config) to nanoseconds. */
    public static long seconds(double s) {
        return Math.round(s * NS_PER_S);
    }

    /** Fluent construction with the connector's defaults. */
    public static final class Builder {
        private final Role role;
        private final TransferMode mode;
        private String hostIp = "127.0.0.1";
        private Object handshakePort = null;
        private Object notifyPort = null;
        private int dpRank;
        private int dpSize = 1;
        private int dpSizeLocal = 1;
        private int tpRank;
        private int tpSize = 1;
        private int cacheBlockSize = 16;
        private List<KvGroupSpec> groups = null;
        private List<String> layerNames = List.of("model.layers.0.self_attn.attn", "model.layers.1.self_attn.attn");
        private boolean hmaEnabled;
        private boolean fullCudagraph;
        private int lookaheadTokens;
        private int speculativeTokens;
        private String speculativeMethod;
        private long deferTimeoutNs = seconds(ExtraConfig.DEFAULT_DEFER_TIMEOUT_S);
        private long transferTimeoutNs = seconds(ExtraConfig.DEFAULT_TRANSFER_TIMEOUT_S);
        private long recvAbortTimeoutNs = seconds(ExtraConfig.DEFAULT_RECV_ABORT_TIMEOUT_S);
        private long unmappedAckTtlNs = seconds(30);
        private int unmappedAckCap = 1024;
        private Behaviour behaviour = Behaviour.newest();
        private boolean awaitsTpVote;

        private Builder(Role role, TransferMode mode) {
            this.role = role;
            this.mode = mode;
        }

        public Builder hostIp(String v) { hostIp = v; return this; }
        public Builder handshakePort(Object v) { handshakePort = v; return this; }
        public Builder notifyPort(Object v) { notifyPort = v; return this; }
        public Builder dp(int rank, int size, int sizeLocal) { dpRank = rank; dpSize = size; dpSizeLocal = sizeLocal; return this; }
        public Builder tp(int rank, int size) { tpRank = rank; tpSize = size; return this; }
        public Builder cacheBlockSize(int v) { cacheBlockSize = v; return this; }
        public Builder groups(List<KvGroupSpec> v) { groups = v; return this; }
        public Builder layerNames(List<String> v) { layerNames = v; return this; }
        public Builder hmaEnabled(boolean v) { hmaEnabled = v; return this; }
        public Builder fullCudagraph(boolean v) { fullCudagraph = v; return this; }
        public Builder lookaheadTokens(int v) { lookaheadTokens = v; return this; }
        public Builder speculative(String method, int tokens) { speculativeMethod = method; speculativeTokens = tokens; return this; }
        public Builder deferTimeoutNs(long v) { deferTimeoutNs = v; return this; }
        public Builder transferTimeoutNs(long v) { transferTimeoutNs = v; return this; }
        public Builder recvAbortTimeoutNs(long v) { recvAbortTimeoutNs = v; return this; }
        public Builder unmappedAckBounds(long ttlNs, int cap) { unmappedAckTtlNs = ttlNs; unmappedAckCap = cap; return this; }
        public Builder behaviour(Behaviour v) { behaviour = v; return this; }
        public Builder awaitsTpVote(boolean v) { awaitsTpVote = v; return this; }

        public NodeConfig build() {
            List<KvGroupSpec> g = groups != null ? groups : List.of(KvGroupSpec.fullAttention(cacheBlockSize));
            return new NodeConfig(role, mode, hostIp, handshakePort, notifyPort, dpRank, dpSize, dpSizeLocal,
                    tpRank, tpSize, cacheBlockSize, g, layerNames, hmaEnabled, fullCudagraph, lookaheadTokens,
                    speculativeTokens, speculativeMethod, deferTimeoutNs, transferTimeoutNs, recvAbortTimeoutNs,
                    unmappedAckTtlNs, unmappedAckCap, behaviour, awaitsTpVote);
        }
    }
}
