package io.kvledger.node;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.rdma.engine.TransferEngines;
import io.kvledger.node.data.KvLayout;
import io.kvledger.node.engine.SimulatedEngine;
import io.kvledger.sim.FaultSpec;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * Everything a live node is started with.
 *
 * @param nodeId         the journal's node id (for example {@code P0}, {@code D1})
 * @param config         the connector configuration the reducer runs with
 * @param journalDir     the node's journal (created, or recovered and continued)
 * @param engine         which engine calls the hooks
 * @param layout         the KV region registered with the transfer engine
 * @param transferEngine which transfer engine moves the blocks
 * @param httpHost       the admin HTTP server's address, or {@code null} for none
 * @param httpPort       its port (0: ephemeral)
 * @param bearerToken    a token every HTTP request must carry, or {@code null}
 * @param proxyPing      {@code tcp://host:port} of a proxy's registration socket, or {@code null}
 * @param httpAdvertised the {@code http_address} registered with the proxy, or {@code null}
 * @param inboxCapacity  bound of the loop's inbox
 * @param deliveryBound  how long an adapter retries a full inbox before it counts a loss
 * @param handshakeTimeout bound of one handshake
 * @param engineOptions  the simulated engine's pacing
 * @param faults         faults injected between the loop and the publishers ({@link FaultSpec#NONE}: none)
 * @param faultSeed      the seed of the fault draws
 * @param bridgeEndpoint where the engine bridge binds with {@link EngineKind#BRIDGE} and {@link EngineKind#DRIVE},
 *                       or the shadow socket with
 *                       {@link EngineKind#SHADOW} ({@code tcp://127.0.0.1:PORT}, port 0: any)
 * @param tpWorkers      with {@link EngineKind#SIM} on TP rank 0 of a TP > 1 engine: the engine bridges of the
 *                       nodes of TP ranks 1, 2, ... ({@link EngineKind#SIM_WORKER}), in rank order; empty otherwise
 * @param profileFromEngine with {@link EngineKind#SHADOW} or {@link EngineKind#DRIVE} and no {@code --profile}: the
 *                       node takes the behaviour profile that kvledger's table of upstream versions gives the
 *                       engine's vLLM (its first scheduler stream's header, or its {@code hello}) instead of
 *                       {@code config}'s, as long as it has applied nothing; or its journal's, when it recovers one
 */
public record NodeOptions(String nodeId, NodeConfig config, Path journalDir, EngineKind engine, KvLayout layout,
                          TransferEngines.Choice transferEngine, String httpHost, int httpPort, String bearerToken,
                          String proxyPing, String httpAdvertised, int inboxCapacity, Duration deliveryBound,
                          Duration handshakeTimeout, SimulatedEngine.Options engineOptions,
                          FaultSpec faults, long faultSeed, String bridgeEndpoint, List<String> tpWorkers,
                          boolean profileFromEngine) {

    /** Who calls the connector's hooks. */
    public enum EngineKind {
        /** The built-in simulated engine ({@link SimulatedEngine}). */
        SIM,
        /** An engine over the bridge socket (the vLLM connector of modules/vllm-bridge). */
        BRIDGE,
        /** Nobody: the node only runs its adapters (a listener and data plane for tests). */
        NONE,
        /**
         * A real connector that kvledger observes: the vLLM bridge's recorder streams its hook calls
         * and answers to the shadow socket; the node runs the reducer on them and reports where it
         * answers otherwise. Binds no notify or handshake port and executes no effect.
         */
        SHADOW,
        /**
         * A real engine whose scheduler hooks the node answers over the bridge socket (the vLLM bridge's
         * drive mode), while the engine's own connector does the worker's part (transfers, notifies,
         * handshakes): the node binds no notify or handshake port and executes no effect.
         */
        DRIVE,
        /**
         * A TP rank above 0 of a simulated engine: the node is that rank's worker process. The engine
         * core runs in TP rank 0's node ({@link EngineKind#SIM} with {@code tpWorkers}), which sends
         * every hook call to this node's engine bridge as well; the node fills and checks its own KV
         * region as the rank's model runner would ({@link io.kvledger.node.engine.SimulatedWorker}).
         * Its scheduler side replays the same scheduler calls, so its worker sees the same connector
         * metadata; the scheduler's own notifies ({@code remote_blocks}, the scheduler's
         * {@code release}) are sent by TP rank 0's node only, as vLLM's one scheduler per DP rank does.
         */
        SIM_WORKER
    }

    public NodeOptions {
        Objects.requireNonNull(nodeId, "nodeId");
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(journalDir, "journalDir");
        Objects.requireNonNull(engine, "engine");
        Objects.requireNonNull(layout, "layout");
        Objects.requireNonNull(transferEngine, "transferEngine");
        tpWorkers = tpWorkers == null ? List.of() : List.copyOf(tpWorkers);
        if (inboxCapacity < 1) {
            throw new IllegalArgumentException("inbox capacity must be at least 1");
        }
    }

    /** Defaults for everything but the node's identity, configuration and journal. */
    public static NodeOptions defaults(String nodeId, NodeConfig config, Path journalDir) {
        return new NodeOptions(nodeId, config, journalDir, EngineKind.SIM,
                new KvLayout(config.layerNames(), 1024, 256), TransferEngines.Choice.AUTO, null, 0, null, null, null,
                65_536, Duration.ofSeconds(1), Duration.ofSeconds(10), SimulatedEngine.Options.DEFAULT, FaultSpec.NONE, 0L,
                "tcp://127.0.0.1:0", List.of(), false);
    }

    public NodeOptions withEngine(EngineKind e) {
        return new NodeOptions(nodeId, config, journalDir, e, layout, transferEngine, httpHost, httpPort, bearerToken,
                proxyPing, httpAdvertised, inboxCapacity, deliveryBound, handshakeTimeout, engineOptions, faults, faultSeed, bridgeEndpoint, tpWorkers, profileFromEngine);
    }

    public NodeOptions withLayout(KvLayout l) {
        return new NodeOptions(nodeId, config, journalDir, engine, l, transferEngine, httpHost, httpPort, bearerToken,
                proxyPing, httpAdvertised, inboxCapacity, deliveryBound, handshakeTimeout, engineOptions, faults, faultSeed, bridgeEndpoint, tpWorkers, profileFromEngine);
    }

    public NodeOptions withTransferEngine(TransferEngines.Choice c) {
        return new NodeOptions(nodeId, config, journalDir, engine, layout, c, httpHost, httpPort, bearerToken,
                proxyPing, httpAdvertised, inboxCapacity, deliveryBound, handshakeTimeout, engineOptions, faults, faultSeed, bridgeEndpoint, tpWorkers, profileFromEngine);
    }

    public NodeOptions withHttp(String host, int port, String token) {
        return new NodeOptions(nodeId, config, journalDir, engine, layout, transferEngine, host, port, token,
                proxyPing, httpAdvertised, inboxCapacity, deliveryBound, handshakeTimeout, engineOptions, faults, faultSeed, bridgeEndpoint, tpWorkers, profileFromEngine);
    }

    public NodeOptions withProxy(String ping, String advertisedHttp) {
        return new NodeOptions(nodeId, config, journalDir, engine, layout, transferEngine, httpHost, httpPort,
                bearerToken, ping, advertisedHttp, inboxCapacity, deliveryBound, handshakeTimeout, engineOptions, faults, faultSeed, bridgeEndpoint, tpWorkers, profileFromEngine);
    }

    NodeOptions withInbox(int capacity, Duration bound) {
        return new NodeOptions(nodeId, config, journalDir, engine, layout, transferEngine, httpHost, httpPort,
                bearerToken, proxyPing, httpAdvertised, capacity, bound, handshakeTimeout, engineOptions, faults, faultSeed, bridgeEndpoint, tpWorkers, profileFromEngine);
    }

    public NodeOptions withHandshakeTimeout(Duration d) {
        return new NodeOptions(nodeId, config, journalDir, engine, layout, transferEngine, httpHost, httpPort,
                bearerToken, proxyPing, httpAdvertised, inboxCapacity, deliveryBound, d, engineOptions, faults, faultSeed, bridgeEndpoint, tpWorkers, profileFromEngine);
    }

    public NodeOptions withEngineOptions(SimulatedEngine.Options o) {
        return new NodeOptions(nodeId, config, journalDir, engine, layout, transferEngine, httpHost, httpPort,
                bearerToken, proxyPing, httpAdvertised, inboxCapacity, deliveryBound, handshakeTimeout, o, faults, faultSeed, bridgeEndpoint, tpWorkers, profileFromEngine);
    }

    public NodeOptions withFaults(FaultSpec f, long seed) {
        return new NodeOptions(nodeId, config, journalDir, engine, layout, transferEngine, httpHost, httpPort,
                bearerToken, proxyPing, httpAdvertised, inboxCapacity, deliveryBound, handshakeTimeout, engineOptions,
                f, seed, bridgeEndpoint, tpWorkers, profileFromEngine);
    }

    public NodeOptions withBridge(String endpoint) {
        return new NodeOptions(nodeId, config, journalDir, engine, layout, transferEngine, httpHost, httpPort,
                bearerToken, proxyPing, httpAdvertised, inboxCapacity, deliveryBound, handshakeTimeout, engineOptions,
                faults, faultSeed, endpoint, tpWorkers, profileFromEngine);
    }

    public NodeOptions withTpWorkers(List<String> endpoints) {
        return new NodeOptions(nodeId, config, journalDir, engine, layout, transferEngine, httpHost, httpPort,
                bearerToken, proxyPing, httpAdvertised, inboxCapacity, deliveryBound, handshakeTimeout, engineOptions,
                faults, faultSeed, bridgeEndpoint, endpoints, profileFromEngine);
    }

    public NodeOptions withProfileFromEngine(boolean fromEngine) {
        return new NodeOptions(nodeId, config, journalDir, engine, layout, transferEngine, httpHost, httpPort,
                bearerToken, proxyPing, httpAdvertised, inboxCapacity, deliveryBound, handshakeTimeout, engineOptions,
                faults, faultSeed, bridgeEndpoint, tpWorkers, fromEngine);
    }
}
