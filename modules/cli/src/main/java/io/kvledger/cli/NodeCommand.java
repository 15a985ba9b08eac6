package io.kvledger.cli;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.moriio.Checked;
import io.kvledger.core.moriio.ExtraConfig;
import io.kvledger.journal.json.Json;
import io.kvledger.rdma.engine.TransferEngines;
import io.kvledger.node.loop.NodeLoop;
import io.kvledger.node.NodeOptions;
import io.kvledger.node.NodeService;
import io.kvledger.node.data.KvLayout;
import io.kvledger.node.otlp.LiveTraces;
import io.kvledger.ledger.otlp.OtlpSender;
import io.kvledger.ledger.diagnosis.Bounds;
import java.time.Duration;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvledger node}: runs the control plane of one engine rank live until it is stopped
 * (SIGINT/SIGTERM, or {@code --duration-s}): journal, reducer loop, notify listener and
 * publisher, handshake server and initiator, transfer engine, optional registration heartbeat
 * and HTTP server, and the engine that calls the hooks (the built-in simulated one by default).
 * A node restarted on its journal recovers its state from it and continues.
 *
 * <p>A node whose loop stops by itself (its journal refused an applied input, its journaller thread
 * died) sends nothing more: the process says why on stderr in one line, stops its adapters, closes
 * what it can of the journal and exits {@value #LOOP_STOPPED}, so that a supervisor restarts it and
 * the restart recovers the state from the journal.
 */
@Command(name = "node", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Run kvledger live as the control plane of one engine rank (journal, reducer, ZMQ, transfers, timers).",
        exitCodeListHeading = "%nExit status:%n",
        exitCodeList = {
            "0:stopped by Ctrl-C/SIGTERM or --duration-s (adapters stopped, journal flushed)",
            "1:internal error",
            "2:usage error, or the node could not start (a port in use, a journal it cannot open)",
            "3:the node loop stopped by itself (e.g. the journal refused an applied input); the reason is on "
                    + "stderr; restart the node: it recovers from its journal"})
final class NodeCommand implements Callable<Integer> {

    /** The exit status of a node whose loop stopped by itself. */
    static final int LOOP_STOPPED = 3;

    @Spec
    CommandSpec spec;

    @Option(names = "--role", paramLabel = "producer|consumer", description = "The rank's role (or kv_role in --kv-transfer-config).")
    String role;

    @Option(names = "--mode", paramLabel = "read|write", description = "Transfer mode (or read_mode in --kv-transfer-config, or with --profile vllm-239b5ff30 the environment variable VLLM_MORIIO_CONNECTOR_READ_MODE as that vLLM reads it; default write).")
    String mode;

    @Option(names = "--kv-transfer-config", paramLabel = "JSON",
            description = "vLLM's --kv-transfer-config string: kv_role and kv_connector_extra_config (handshake_port, notify_port, read_mode, host_ip, proxy_ip, proxy_ping_port, http_port, defer_timeout, ...) configure the node as they configure the connector.")
    String kvTransferConfig;

    @Option(names = "--dp", defaultValue = "0/1", paramLabel = "R/SIZE", description = "Data-parallel rank and size (default: ${DEFAULT-VALUE}).")
    String dp;

    @Option(names = "--tp", defaultValue = "0/1", paramLabel = "R/SIZE", description = "Tensor-parallel rank and size (default: ${DEFAULT-VALUE}).")
    String tp;

    @Option(names = "--host", paramLabel = "IP", description = "The IP this rank advertises and binds (default 127.0.0.1).")
    String host;

    @Option(names = "--handshake-port", paramLabel = "P", description = "Handshake port base (default 6301); the rank binds base + dp + tp.")
    Integer handshakePort;

    @Option(names = "--notify-port", paramLabel = "P", description = "Notify port base (default 61005); the rank binds base + dp + tp.")
    Integer notifyPort;

    @Option(names = "--engine", defaultValue = "sim", paramLabel = "sim|sim-worker|bridge|shadow|drive|none",
            description = "Who calls the hooks: the built-in simulated engine (sim), an engine's connector over the bridge socket (bridge), "
                    + "a real connector the node only observes through the vLLM bridge's recorder stream (shadow: see --shadow), "
                    + "a real engine whose scheduler hooks the node answers over the bridge socket while the engine's own "
                    + "connector moves the KV (drive: the vLLM bridge's drive_node; no port bound, nothing sent), "
                    + "or nobody (none: adapters only); sim-worker: TP rank > 0 of a simulated engine, whose hooks come over "
                    + "the bridge socket from TP rank 0's node (see --tp-workers) (default: ${DEFAULT-VALUE}).")
    String engine;

    @Option(names = "--tp-workers", split = ",", paramLabel = "tcp://127.0.0.1:PORT",
            description = "With --engine sim on TP rank 0 of TP > 1: the engine bridges of the nodes of TP ranks 1, 2, ... "
                    + "(--engine sim-worker), in rank order; the simulated engine sends them every hook call and "
                    + "aggregates their get_finished.")
    List<String> tpWorkers;

    @Option(names = "--await-tp-vote",
            description = "A READ consumer rank that journals the TP-wide eager-handshake vote (awaits_tp_vote): "
                    + "start_load_kv holds the step's reads until the engine sent handshake_voted for each engine the "
                    + "step names (the all_reduce(MIN) over the TP group); kvledger cluster sets it on READ decode ranks with TP > 1.")
    boolean awaitTpVote;

    @Option(names = "--shadow", defaultValue = "tcp://127.0.0.1:0", paramLabel = "tcp://127.0.0.1:PORT",
            description = "With --engine shadow: where the node receives the recorder's streams (the record_to of the "
                    + "engine's kvledger_vllm connector; loopback only; port 0: any free port, printed at start). The node "
                    + "runs the reducer on the scheduler's hook calls, reports where it answers otherwise than the real "
                    + "connector, and binds no notify or handshake port, sends nothing (default: ${DEFAULT-VALUE}).")
    String shadowEndpoint;

    @Option(names = "--bridge", paramLabel = "unix:///PATH|ipc:///PATH|tcp://127.0.0.1:PORT",
            description = "Where the engine bridge binds with --engine bridge, drive or sim-worker: a Unix domain socket for an "
                    + "engine on this host (a directory only this user may write; the vLLM bridge's drive_node takes the "
                    + "same unix:// address), ZMQ over a Unix socket as libzmq's ipc:// (any ZMQ DEALER or REQ on this host "
                    + "connects to it; a relative PATH is taken from where the command runs), or loopback TCP (port 0: any "
                    + "free port). Printed at start. Default with "
                    + "--engine bridge or drive: unix://JOURNAL/" + BRIDGE_SOCKET + " (the journal directory's, absolute; "
                    + "an existing socket there is replaced when nothing answers on it); with sim-worker "
                    + SIM_WORKER_BRIDGE + " (TP rank 0's node connects over ZMQ).")
    String bridgeEndpoint;

    /** The socket file in the journal directory a bridge or drive node listens on without {@code --bridge}. */
    static final String BRIDGE_SOCKET = "bridge.sock";

    /** Where a sim-worker node's bridge binds without {@code --bridge}: TP rank 0's engine reaches it over ZMQ. */
    static final String SIM_WORKER_BRIDGE = "tcp://127.0.0.1:0";

    /** The longest path a Unix socket may have, in bytes: {@code sun_path} holds 108 with the terminating NUL. */
    static final int UNIX_PATH_MAX_BYTES = 107;

    @Option(names = "--journal", required = true, paramLabel = "DIR", description = "The node's journal (created, or recovered and continued).")
    Path journal;

    @Option(names = "--node-id", paramLabel = "ID", description = "Node id in the journal (default: P<dp> or D<dp>, with -tp<R> when TP > 1).")
    String nodeId;

    @Option(names = "--http", paramLabel = "HOST:PORT", description = "Serve the HTTP API (health, status, completions) here; loopback recommended.")
    String http;

    @Option(names = "--http-token", paramLabel = "TOKEN", description = "Require 'Authorization: Bearer TOKEN' on every HTTP route but /healthz.")
    String httpToken;

    @Option(names = "--proxy", paramLabel = "tcp://HOST:PORT", description = "Send registration heartbeats to this proxy ROUTER (or proxy_ip/proxy_ping_port in the config).")
    String proxy;

    @Option(names = "--profile", defaultValue = "newest", paramLabel = "vllm-239b5ff30|seed|newest", description = "Behaviour profile (default: ${DEFAULT-VALUE}; a shadow or drive node without it takes the one kvledger's table of upstream versions gives its engine's vLLM, from the first scheduler stream or hello, or its journal's).")
    String profile;

    @Option(names = "--transfer-engine", defaultValue = "auto", paramLabel = "auto|ucx|in-jvm",
            description = "Data plane: UCX when it loads (auto), or the in-JVM engine (peers in this JVM only) (default: ${DEFAULT-VALUE}).")
    String transferEngine;

    @Option(names = "--blocks", defaultValue = "1024", description = "KV blocks the region holds (default: ${DEFAULT-VALUE}).")
    int blocks;

    @Option(names = "--block-bytes", defaultValue = "1024", description = "Bytes of one block's K (and of its V) per layer (default: ${DEFAULT-VALUE}).")
    long blockBytes;

    @Option(names = "--faults", paramLabel = "SPEC", description = "Inject faults between the loop and the publishers (testing only). "
            + FaultSpecOption.KEYS_HELP)
    String faults;

    @Option(names = "--fault-seed", defaultValue = "1", description = "Seed of the fault draws (default: ${DEFAULT-VALUE}).")
    long faultSeed;

    @Option(names = "--fail-journal-after", paramLabel = "N",
            description = "Testing only, an injected fault: after N more inputs the journal refuses every input, as a "
                    + "full disk would; the node loop stops and the process exits " + LOOP_STOPPED + ".")
    Long failJournalAfter;

    @Option(names = "--duration-s", converter = DurationOption.class, defaultValue = "0", description = "Stop after this many seconds (0: run until stopped).")
    double durationS;

    @Option(names = "--status-file", paramLabel = "FILE", description = "Write the node's final counters as JSON here when it stops.")
    Path statusFile;

    @Option(names = "--otlp", paramLabel = "URL",
            description = "Export each request's trace to this OTLP/HTTP receiver (e.g. http://127.0.0.1:4318) when it "
                    + "ends or the hang detectors find something about it; as 'kvledger export' makes them from the "
                    + "journal. Never holds the node up.")
    String otlp;

    @Option(names = "--otlp-stuck-after", converter = DurationOption.class, defaultValue = "30", paramLabel = "SECONDS",
            description = "With --otlp: a request longer than this in a non-terminal phase, with no lifecycle event "
                    + "meanwhile, is exported as stuck (default: ${DEFAULT-VALUE}).")
    double otlpStuckAfter;

    @Option(names = "--ship", paramLabel = "kafka://HOST:PORT/TOPIC",
            description = "Ship the node's journal to this Kafka topic as 'kvledger ship' does, on a thread of its own "
                    + "that reads the journal apart from its writer; at stop, what the journal holds is shipped (up to "
                    + "10 s). Never holds the node up.")
    String ship;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        NodeOptions options = options();
        if (failJournalAfter != null && failJournalAfter < 0) {
            throw usage("--fail-journal-after takes a number of inputs, 0 or more, got " + failJournalAfter);
        }
        OtlpSender sender = null;
        if (otlp != null) {
            if (!(otlpStuckAfter > 0) || Double.isInfinite(otlpStuckAfter)) {
                throw usage("--otlp-stuck-after must be a positive number of seconds, got " + otlpStuckAfter);
            }
            try {
                sender = OtlpSender.to(otlp, Duration.ofSeconds(10), Map.of(), true, true);
            } catch (OtlpSender.ExportException e) {
                throw usage(e.getMessage());
            }
        }
        io.kvledger.ledger.kafka.KafkaUri shipTo = null;
        if (ship != null) {
            try {
                shipTo = io.kvledger.ledger.kafka.KafkaUri.parse(ship);
            } catch (IllegalArgumentException e) {
                throw usage("--ship: " + e.getMessage());
            }
        }
        NodeService node;
        try {
            node = NodeService.start(options);
        } catch (RuntimeException e) {
            if (sender != null) {
                sender.close();
            }
            String why = e.getMessage();
            if (bridgeEndpoint == null && options.bridgeEndpoint().startsWith("unix://") && why != null
                    && why.contains("engine bridge")) {
                // the socket was not asked for: say where it comes from and how to move it
                why += " (without --bridge the engine bridge listens on the journal directory's " + BRIDGE_SOCKET
                        + "; pass --bridge unix:///PATH, ipc:///PATH or tcp://127.0.0.1:0 to put it elsewhere)";
            }
            err.println("kvledger node: " + why);
            err.flush();
            return 2;
        }
        if (failJournalAfter != null) {
            // before the start-up line: a caller that waits for it counts the inputs from there
            node.failJournalAfter(failJournalAfter);
        }
        LiveTraces traces = sender == null ? null : LiveTraces.attach(node, sender,
                LiveTraces.Options.defaults().withBounds(new Bounds(NodeConfig.seconds(otlpStuckAfter))));
        io.kvledger.node.ship.ShipThread shipping;
        try {
            shipping = shipTo == null ? null : io.kvledger.node.ship.ShipThread.open(shipTo, options.journalDir(), err);
        } catch (RuntimeException e) {
            node.close();
            err.println("kvledger node: --ship: " + e.getMessage());
            err.flush();
            return 2;
        }
        if (shipping != null) {
            if (node.http() != null) {
                // /metrics reads the shipper's counters from before its first entry
                io.kvledger.node.ship.Shipper shipper = shipping.shipper();
                node.http().metrics().shipping(shipper);
            }
            shipping.begin();
        }
        Foreground fg = Foreground.install("kvledger-node-shutdown");
        java.util.concurrent.CompletableFuture<NodeLoop.Stopped> loopStopped = node.loopStopped();
        loopStopped.thenAccept(s -> {
            if (!s.requested()) {
                fg.wake();
            }
        });
        NodeLoop.Stopped failed = null;
        try {
            NodeConfig c = options.config();
            err.println("node " + options.nodeId() + ": " + c.role().name().toLowerCase(Locale.ROOT) + " "
                    + c.mode().name().toLowerCase(Locale.ROOT) + " dp" + c.dpRank() + "/" + c.dpSize() + " tp" + c.tpRank()
                    + "/" + c.tpSize()
                    + (node.isShadow() ? ", shadow of a real connector: streams at " + node.shadowServer().endpoint()
                            + " (record_to), no notify or handshake port, nothing sent"
                            : node.isPassive() ? ", driving a real engine's scheduler: engine bridge " + node.bridge().endpoint()
                            + " (drive_node), no notify or handshake port, nothing sent"
                            : ", notify " + node.listener().endpoint() + ", handshake "
                            + node.handshakeServer().endpoint() + ", " + node.dataPlane().engineReason())
                    + (node.http() != null ? ", http " + node.http().host() + ":" + node.http().port() : "")
                    + (node.bridge() != null && !node.isPassive() ? ", engine bridge " + node.bridge().endpoint() : "")
                    + (traces != null ? ", traces to " + traces.endpoint() : "")
                    + (node.recovery() != null ? ", recovered " + node.recovery().inputs() + " inputs in "
                    + io.kvledger.ledger.text.Seconds.duration(node.recovery().recoveryNs()) : "")
                    + "; journal " + journal + (durationS > 0 ? "" : "; stop with Ctrl-C"));
            err.flush();
            fg.await(durationS);
            // said first, in one line, in case closing what is left hangs
            failed = failedLoop(options.nodeId(), loopStopped, err);
        } finally {
            Map<String, Object> status = node.status().toJson();
            node.close();
            if (shipping != null) {
                // after the node: its last entries are in the journal
                shipping.close();
                status.put("ship_acknowledged", shipping.shipper().acknowledged());
            }
            if (failed == null) {
                // the loop failed while the node was being stopped (a SIGTERM at the same moment):
                // its failure still decides the status, so a supervisor restarts and recovers it
                failed = failedLoop(options.nodeId(), loopStopped, err);
            }
            if (failed != null) {
                status.put("loop_stopped", failed.cause());
            }
            if (traces != null) {
                // after the node: the last events are in the exporter's queue
                traces.close();
                status.put("otlp_spans_exported", traces.exportedSpans());
                status.put("otlp_spans_failed", traces.failedSpans());
                status.put("otlp_events_dropped", traces.dropped());
            }
            if (statusFile != null) {
                java.nio.file.Files.writeString(statusFile, Json.write(status) + "\n");
            }
            out.println("node " + options.nodeId() + ": stopped after " + status.get("events_applied")
                    + " events; journal " + journal + (traces != null ? "; " + traces.exportedSpans()
                    + " spans exported" + (traces.failedSpans() > 0 ? ", " + traces.failedSpans() + " refused" : "") : ""));
            out.flush();
            fg.close();
        }
        return failed != null ? LOOP_STOPPED : 0;
    }

    /**
     * The loop's stop when it stopped by itself (else {@code null}), said on {@code err} in one
     * line with the status the process exits with.
     */
    private static NodeLoop.Stopped failedLoop(String nodeId,
                                               java.util.concurrent.CompletableFuture<NodeLoop.Stopped> loopStopped,
                                               PrintWriter err) {
        NodeLoop.Stopped s = loopStopped.getNow(null);
        if (s == null || s.requested()) {
            return null;
        }
        err.println("kvledger node " + nodeId + ": the node loop stopped: " + s.cause()
                + "; exiting with status " + LOOP_STOPPED + " (restart it: it recovers from its journal)");
        err.flush();
        return s;
    }

    private NodeOptions options() {
        int[] dpv = rankSize("--dp", dp);
        int[] tpv = rankSize("--tp", tp);
        Behaviour behaviour = Behaviour.preset(profile);
        if (behaviour == null) {
            throw usage("--profile takes one of " + String.join(", ", io.kvledger.core.config.Behaviour.PRESETS) + ", got " + profile);
        }
        Map<String, Object> extra = new LinkedHashMap<>();
        String kvRole = null;
        if (kvTransferConfig != null) {
            Object parsed;
            try {
                parsed = Json.parse(kvTransferConfig);
            } catch (RuntimeException e) {
                throw usage("--kv-transfer-config is not JSON: " + e.getMessage());
            }
            if (!(parsed instanceof Map<?, ?> m)) {
                throw usage("--kv-transfer-config must be a JSON object");
            }
            kvRole = m.get("kv_role") instanceof String s ? s : null;
            if (m.get("kv_connector_extra_config") instanceof Map<?, ?> x) {
                x.forEach((k, v) -> extra.put(String.valueOf(k), v));
            }
        }
        if (role != null) {
            kvRole = switch (role.toLowerCase(Locale.ROOT)) {
                case "producer", "prefill", "p" -> "kv_producer";
                case "consumer", "decode", "d" -> "kv_consumer";
                default -> throw usage("--role takes producer or consumer, got " + role);
            };
        }
        if (kvRole == null) {
            throw usage("give --role producer|consumer (or kv_role in --kv-transfer-config)");
        }
        if (!kvRole.equals("kv_producer") && !kvRole.equals("kv_consumer")) {
            throw usage("kv_role " + kvRole + " is not supported by a live node (kv_producer or kv_consumer)");
        }
        if (mode != null) {
            extra.put("read_mode", ModeOption.parse(spec, mode) == TransferMode.READ);
        }
        if (host != null) {
            extra.put("host_ip", host);
        }
        if (handshakePort != null) {
            extra.put("handshake_port", (long) handshakePort);
        }
        if (notifyPort != null) {
            extra.put("notify_port", (long) notifyPort);
        }
        // --mode wins; else the environment variable vLLM 239b5ff30 reads (mode-from-env), or read_mode
        String envReadMode = mode != null ? String.valueOf(ModeOption.parse(spec, mode) == TransferMode.READ)
                : System.getenv("VLLM_MORIIO_CONNECTOR_READ_MODE");
        Checked<NodeConfig> checked = NodeConfig.fromExtraConfig(kvRole, extra,
                System.getenv("VLLM_MORIIO_DEFERRED_TIMEOUT_S"), envReadMode, behaviour, dpv[0], dpv[1], dpv[1], tpv[0], tpv[1]);
        if (!checked.isOk()) {
            throw usage("the connector configuration is invalid: " + checked.error());
        }
        NodeConfig config = checked.value();
        if (awaitTpVote) {
            if (config.isProducer() || config.mode() != TransferMode.READ) {
                throw usage("--await-tp-vote goes with a READ consumer (--role consumer --mode read)");
            }
            config = config.toBuilder().awaitsTpVote(true).build();
        }
        String id = nodeId != null ? nodeId : (config.isProducer() ? "P" : "D") + config.dpRank()
                + (config.tpSize() > 1 ? "-tp" + config.tpRank() : "");
        NodeOptions o = NodeOptions.defaults(id, config, journal.toAbsolutePath().normalize());
        o = o.withEngine(switch (engine.toLowerCase(Locale.ROOT)) {
            case "sim" -> NodeOptions.EngineKind.SIM;
            case "none" -> NodeOptions.EngineKind.NONE;
            case "bridge" -> NodeOptions.EngineKind.BRIDGE;
            case "shadow" -> NodeOptions.EngineKind.SHADOW;
            case "drive" -> NodeOptions.EngineKind.DRIVE;
            case "sim-worker" -> NodeOptions.EngineKind.SIM_WORKER;
            default -> throw usage("--engine takes sim, sim-worker, bridge, shadow, drive or none, got " + engine);
        });
        List<String> workers = tpWorkers == null ? List.of() : tpWorkers;
        if (!workers.isEmpty()) {
            if (o.engine() != NodeOptions.EngineKind.SIM || config.tpRank() != 0 || workers.size() != config.tpSize() - 1) {
                throw usage("--tp-workers takes the bridges of TP ranks 1.." + (config.tpSize() - 1)
                        + " and goes with --engine sim on --tp 0/SIZE (got " + workers.size() + " for tp "
                        + config.tpRank() + "/" + config.tpSize() + ", --engine " + engine + ")");
            }
            for (String w : workers) {
                if (!w.startsWith("tcp://")) {
                    // TP rank 0 reaches its workers through JeroMQ, which reaches only tcp:// (its ipc:// is
                    // loopback TCP, and unix:// is not ZMQ): another scheme would never connect
                    throw usage("--tp-workers takes tcp://HOST:PORT bridges (rank 0 reaches them with JeroMQ), got " + w);
                }
            }
            o = o.withTpWorkers(workers);
        }
        if (o.engine() == NodeOptions.EngineKind.SIM_WORKER && config.tpRank() == 0) {
            throw usage("--engine sim-worker is a TP rank above 0 (give --tp R/SIZE with R >= 1); TP rank 0 runs --engine sim");
        }
        boolean observing = o.engine() == NodeOptions.EngineKind.SHADOW;
        boolean passive = observing || o.engine() == NodeOptions.EngineKind.DRIVE;
        String which = "a " + engine.toLowerCase(Locale.ROOT) + " node (--engine " + engine.toLowerCase(Locale.ROOT) + ")";
        if (passive && faults != null && !faults.isBlank()) {
            throw usage("--faults injects faults into what a node sends; " + which + " sends nothing");
        }
        if (passive && proxy != null) {
            throw usage("--proxy registers an engine with a proxy; " + which + " is not one (the real engine registers itself)");
        }
        o = o.withTransferEngine(switch (transferEngine.toLowerCase(Locale.ROOT)) {
            case "auto" -> TransferEngines.Choice.AUTO;
            case "ucx" -> TransferEngines.Choice.UCX;
            case "in-jvm", "injvm" -> TransferEngines.Choice.IN_JVM;
            default -> throw usage("--transfer-engine takes auto, ucx or in-jvm, got " + transferEngine);
        });
        o = o.withBridge(observing ? shadowEndpoint : bridgeEndpoint != null ? bridgeEndpoint
                : defaultBridge(o.engine(), o.journalDir()));
        // a shadow or drive node without --profile runs the profile its engine's vLLM needs
        o = o.withProfileFromEngine(passive && !spec.commandLine().getParseResult().hasMatchedOption("--profile"));
        if (blocks < 1 || blockBytes < 8 || blockBytes % 8 != 0) {
            throw usage("--blocks must be positive and --block-bytes a positive multiple of 8");
        }
        o = o.withLayout(new KvLayout(config.layerNames(), blocks, blockBytes));
        if (http != null) {
            HostPort at;
            try {
                at = HostPort.parse("--http", http);
            } catch (IllegalArgumentException e) {
                throw usage(e.getMessage());
            }
            o = o.withHttp(at.host(), at.port(), httpToken);
        }
        String ping = proxy;
        if (ping == null && ExtraConfig.pythonTruthy(extra.get("proxy_ip"))) {
            ping = "tcp://" + extra.get("proxy_ip") + ":" + extra.getOrDefault("proxy_ping_port", 36367L);
        }
        if (ping != null && !passive) {
            String adv = extra.get("http_port") != null ? config.hostIp() + ":" + extra.get("http_port") : null;
            o = o.withProxy(ping, adv);
        }
        if (faults != null && !faults.isBlank()) {
            try {
                o = o.withFaults(io.kvledger.sim.FaultSpec.parse(faults), faultSeed);
            } catch (IllegalArgumentException e) {
                throw usage("--faults: " + e.getMessage());
            }
        }
        return o;
    }

    /**
     * Where the engine bridge binds when {@code --bridge} is not given: a bridge or drive node's
     * engine shares its host, so the journal directory's {@value #BRIDGE_SOCKET} (a path its user
     * can predict and name as drive_node); a sim-worker's TP rank 0 connects over ZMQ, so loopback
     * TCP. A journal path too long for a Unix socket is a usage error naming {@code --bridge}.
     */
    private String defaultBridge(NodeOptions.EngineKind kind, Path journalDir) {
        if (kind != NodeOptions.EngineKind.BRIDGE && kind != NodeOptions.EngineKind.DRIVE) {
            return SIM_WORKER_BRIDGE;
        }
        String path = journalDir.resolve(BRIDGE_SOCKET).toString();
        int bytes = path.getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
        if (bytes > UNIX_PATH_MAX_BYTES) {
            throw usage("the engine bridge listens on the journal directory's " + BRIDGE_SOCKET + " by default, but " + path
                    + " is " + bytes + " bytes, longer than a Unix socket path may be (" + UNIX_PATH_MAX_BYTES
                    + "); pass --bridge unix:///SHORTER/PATH (a directory only this user may write) or --bridge "
                    + "tcp://127.0.0.1:0");
        }
        return "unix://" + path;
    }

    private int[] rankSize(String opt, String v) {
        String[] parts = v.split("/", -1);
        try {
            int r = Integer.parseInt(parts[0].trim());
            int n = Integer.parseInt(parts[1].trim());
            if (parts.length != 2 || n < 1 || r < 0 || r >= n) {
                throw new NumberFormatException();
            }
            return new int[] {r, n};
        } catch (RuntimeException e) {
            throw usage(opt + " takes RANK/SIZE with 0 <= RANK < SIZE, got " + v);
        }
    }

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }
}
