package io.kvledger.node;

import io.kvledger.node.loop.NodeLoop;
import io.kvledger.node.loop.NodeStatus;
import io.kvledger.node.loop.Inbox;
import io.kvledger.node.loop.Delivery;
import io.kvledger.node.loop.EffectRouter;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.PyValue;
import io.kvledger.core.moriio.PortMath;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import io.kvledger.journal.ServiceClock;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalWriter;
import io.kvledger.rdma.Result;
import io.kvledger.node.data.DataPlane;
import io.kvledger.node.engine.HookPort;
import io.kvledger.node.engine.SimulatedEngine;
import io.kvledger.node.http.HttpFront;
import io.kvledger.wire.Registration;
import io.kvledger.wire.bridge.BridgeNodeInfo;
import io.kvledger.zmq.AdapterEvent;
import io.kvledger.zmq.BridgeCall;
import io.kvledger.zmq.EngineBridgeConfig;
import io.kvledger.zmq.EngineBridgeServer;
import io.kvledger.zmq.HookHandler;
import io.kvledger.zmq.EventSink;
import io.kvledger.zmq.HandshakeServer;
import io.kvledger.zmq.NotifyListenerAdapter;
import io.kvledger.zmq.NotifyListenerConfig;
import io.kvledger.zmq.NotifyPublisher;
import io.kvledger.zmq.PublisherConfig;
import io.kvledger.zmq.RegistrationHeartbeat;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One live node: the control plane of one engine rank. {@link #start} recovers the state from
 * the journal when there is one (or writes a new journal's header and start-up checks), binds the
 * notify listener (notify port + {@code dp + tp}) and the handshake server (handshake port +
 * {@code dp + tp}), opens the notify publisher, the data plane and, when a proxy is given, the
 * registration heartbeat, then starts the loop and the engine. {@link #close} stops them in the
 * reverse order and flushes the journal.
 *
 * <p>Every adapter hands its events to the loop's one {@link Inbox} through a {@link Delivery}
 * (bounded retry, counted loss); the loop's I/O commands reach the publishers through the router
 * built here, which switches over the command families with no default.
 */
public final class NodeService implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger("io.kvledger.node");
    private static final long HOOK_WAIT_NS = TimeUnit.SECONDS.toNanos(5);
    /** How long a socket thread waits for the loop to start over with another profile. */
    private static final long REBASE_WAIT_NS = TimeUnit.SECONDS.toNanos(120);

    /**
     * The header origin of a shadow node's journal: it starts like a vLLM-bridge recording's, since
     * it holds the real connector's answers ({@code replay --verify} compares only those).
     */
    static final String SHADOW_ORIGIN = io.kvledger.ledger.replay.BridgeReplies.ORIGIN
            + "shadow (kvledger node --engine shadow)";

    /** The header origin of a drive node's journal (its own decisions, as any node's). */
    static final String DRIVE_ORIGIN = "kvledger node --engine drive";

    /**
     * The header origin of a TP rank's worker node: its scheduler-side entries replay TP rank 0's
     * scheduler; the {@code remote_blocks} (and scheduler {@code release}) it journals were sent by
     * TP rank 0's node, not by this one.
     */
    static final String SIM_WORKER_ORIGIN = JournalHeader.SIM_WORKER_ORIGIN + " (a TP rank's worker process; "
            + "scheduler-side notifies are sent by TP rank 0's node)";

    private final NodeOptions options;
    private final boolean journaled;
    private final ServiceClock clock = ServiceClock.system();
    private final Inbox inbox;
    private final Delivery delivery;
    private final List<AutoCloseable> opened = new ArrayList<>();
    private final AtomicLong adapterFailures = new AtomicLong();
    private volatile JournalWriter journal;
    private NodeState state;
    /** The configuration the reducer runs (the options', or the profile the engine's vLLM needs). */
    private volatile NodeConfig config;
    private final Object profileLock = new Object();
    /** Whether the profile is settled: the node took or kept one for an engine, or recovered a journal. */
    private boolean profileSettled;
    /** Where the node took its profile from, when it took one. */
    private String profileSource;
    private NodeLoop loop;
    private volatile DataPlane dataPlane;
    private volatile NotifyPublisher publisher;
    private volatile NotifyListenerAdapter listener;
    private HandshakeServer handshakeServer;
    private volatile SimulatedEngine engine;
    private volatile io.kvledger.node.engine.SimulatedWorker worker;
    private HttpFront http;
    private volatile EngineBridgeServer bridge;
    private volatile io.kvledger.zmq.ShadowStreamServer shadowServer;
    private volatile io.kvledger.node.shadow.ShadowMonitor shadow;
    private final boolean passive;
    private Recovery recovery;
    private volatile LiveFaults faults;
    private java.util.concurrent.ScheduledExecutorService lossReporter;
    private long lossesReported;
    private volatile boolean closed;

    private NodeService(NodeOptions options, boolean journaled) {
        this.options = options;
        this.journaled = journaled;
        this.passive = options.engine() == NodeOptions.EngineKind.SHADOW || options.engine() == NodeOptions.EngineKind.DRIVE;
        this.inbox = new Inbox(options.inboxCapacity());
        this.delivery = new Delivery(inbox, options.deliveryBound().toNanos());
    }

    /**
     * Starts a node. On failure everything opened so far is closed again, and the exception says
     * what could not start.
     */
    public static NodeService start(NodeOptions options) {
        return start(options, true);
    }

    /**
     * Starts a node that keeps no journal: nothing is recovered, written or flushed, and
     * {@code journalDir} is not touched. For benchmarks only (the journal's cost, measured
     * against the same run with it); such a node cannot be replayed or recovered.
     */
    public static NodeService startWithoutJournal(NodeOptions options) {
        return start(options, false);
    }

    private static NodeService start(NodeOptions options, boolean journaled) {
        NodeService n = new NodeService(options, journaled);
        try {
            n.startAll();
            return n;
        } catch (RuntimeException e) {
            n.close();
            throw e;
        }
    }

    private void startAll() {
        NodeConfig cfg = options.config();
        long lastSeq = 0;
        if (journaled && options.profileFromEngine() && Recovery.present(options.journalDir())) {
            cfg = journalsProfile(cfg);
        }
        config = cfg;
        if (journaled && Recovery.present(options.journalDir())) {
            recovery = Recovery.replay(options.journalDir(), cfg);
            state = recovery.state();
            lastSeq = recovery.lastSeq();
            clock.notBefore(recovery.lastAtNs());
            LOG.log(System.Logger.Level.INFO, "node " + options.nodeId() + ": recovered " + recovery.inputs()
                    + " inputs (last seq " + lastSeq + ") in " + io.kvledger.ledger.text.Seconds.duration(recovery.recoveryNs()));
        } else {
            state = NodeState.initial(cfg);
        }

        int dpLocal = PortMath.foldLocalRank(cfg.dpRank(), cfg.dpSizeLocal());
        boolean observing = isPassive();
        // A shadow or drive node posts nothing: the in-JVM engine only gives it a region to describe.
        dataPlane = orThrow(DataPlane.open(cfg.engineId() + "-dp" + cfg.dpRank() + "-tp" + cfg.tpRank(),
                options.layout(), observing ? io.kvledger.rdma.engine.TransferEngines.Choice.IN_JVM : options.transferEngine(), Duration.ofNanos(cfg.transferTimeoutNs()),
                options.handshakeTimeout(), inbox::offer, delivery::deliver, options.deliveryBound(), clock),
                "the data plane");
        opened.add(dataPlane);

        publisher = NotifyPublisher.openForNode(new PublisherConfig(65_536, 4096, false, clock), inbox::offer,
                options.deliveryBound());
        opened.add(publisher);
        if (!observing) {
            // A shadow or drive node leaves the rank's notify and handshake ports to the real connector.
            listener = NotifyListenerAdapter.openForNode(NotifyListenerConfig.forRank(cfg.hostIp(), cfg.notifyPortBase(),
                    dpLocal, cfg.tpRank()).withClock(clock), inbox::offer, options.deliveryBound());
            opened.add(listener);
            handshakeServer = HandshakeServer.open(HandshakeServer.rankEndpoint(cfg.hostIp(), cfg.handshakePortBase(),
                    dpLocal, cfg.tpRank()), dataPlane.agentMetadata(), dataPlane.layerMap(), this::onAdapterEvent, clock);
            opened.add(handshakeServer);
        }

        if (!options.faults().isNone()) {
            // Called on the loop thread: one offer, never a wait (the loop is what drains the inbox).
            faults = new LiveFaults(options.faults(), options.faultSeed(), inbox::offer, clock);
            opened.add(faults);
        }
        // The journal opens last: a node that cannot bind its ports leaves no journal behind. What
        // the adapters received meanwhile waits in the inbox for the loop.
        if (journaled) {
            journal = JournalWriter.open(options.journalDir(), JournalHeader.of(options.nodeId(), cfg, origin()));
            opened.add(journal);
        }
        if (journaled && recovery == null) {
            for (Effect e : NodeReducer.startupChecks(cfg)) {
                journal.appendDerived(0, e);
            }
            lastSeq = journal.nextSeq() - 1;
        }
        if (journaled && recovery != null && !recovery.unjournaled().isEmpty()) {
            // The old process died between its last input and that input's derived entries: the
            // entries go in now, and the effects (never routed) are executed below.
            for (Effect e : recovery.unjournaled()) {
                journal.appendDerived(recovery.lastInputSeq(), e);
            }
            lastSeq = journal.nextSeq() - 1;
            LOG.log(System.Logger.Level.INFO, "node " + options.nodeId() + ": the last input (seq "
                    + recovery.lastInputSeq() + ") had " + recovery.unjournaled().size()
                    + " derived entries missing; journaled them, its effects run once the sessions are back");
        }
        lossReporter = java.util.concurrent.Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "kvledger-loss-report-" + options.nodeId());
            t.setDaemon(true);
            return t;
        });
        lossReporter.scheduleWithFixedDelay(this::reportLosses, 1, 1, TimeUnit.SECONDS);
        loop = new NodeLoop(options.nodeId(), state, journal, passive ? EffectRouter.none() : this::execute, clock, inbox,
                lastSeq);
        loop.publishStatusWith(this::snapshot);
        if (isShadow()) {
            shadow = new io.kvledger.node.shadow.ShadowMonitor();
            loop.observeWith(shadow);
        }
        loop.start();

        if (isShadow()) {
            shadowServer = io.kvledger.zmq.ShadowStreamServer.open(options.bridgeEndpoint(), clock,
                    new io.kvledger.node.shadow.ShadowIntake(inbox, cfg, shadow, options.deliveryBound().toNanos(),
                            new io.kvledger.node.shadow.ShadowIntake.Profiles() {
                                @Override
                                public io.kvledger.core.config.Behaviour current() {
                                    return config.behaviour();
                                }

                                @Override
                                public String take(io.kvledger.core.config.Behaviour wanted, String source) {
                                    return takeProfile(wanted, source);
                                }
                            }));
            opened.add(shadowServer);
        }
        if (!observing && recovery != null && !recovery.handshakes().isEmpty()) {
            reopenSessions();
        }
        if (recovery != null && !recovery.unrouted().isEmpty()) {
            routeUnrouted(recovery.unrouted());
        }
        if (options.engine() == NodeOptions.EngineKind.SIM) {
            io.kvledger.node.engine.TpWorkers workers = options.tpWorkers().isEmpty() ? null
                    : new io.kvledger.node.engine.TpWorkers(options.tpWorkers(), cfg.transferTimeoutNs()
                            + options.handshakeTimeout().toNanos() + TimeUnit.SECONDS.toNanos(5));
            engine = new SimulatedEngine(options.nodeId(), cfg, hookPort(), clock, options.layout(), dataPlane.memory(),
                    options.engineOptions(), workers);
            engine.start();
        }
        if (options.engine() == NodeOptions.EngineKind.SIM_WORKER) {
            worker = new io.kvledger.node.engine.SimulatedWorker(cfg, options.layout(), dataPlane.memory());
        }
        if (options.engine() == NodeOptions.EngineKind.BRIDGE || options.engine() == NodeOptions.EngineKind.DRIVE
                || options.engine() == NodeOptions.EngineKind.SIM_WORKER) {
            bridge = EngineBridgeServer.openServedByCaller(EngineBridgeConfig.forEndpoint(options.bridgeEndpoint())
                    .withClock(clock), BridgeNodeInfo.of(cfg), bridgeHandler());
            opened.add(bridge);
            if (bridge.servedByCaller()) {
                // the loop reads the engine's calls itself while it idles (a Unix socket, or the ZMQ
                // ROUTER, which it then owns while it waits): a call is applied and answered on the
                // thread that read it, with no hand-off to or from the socket thread
                EngineBridgeServer b = bridge;
                inbox.idleWith(new Inbox.Idle() {
                    @Override
                    public boolean serve(long waitNs) {
                        return b.serve(waitNs);
                    }

                    @Override
                    public void wake() {
                        b.wakeServer();
                    }
                });
            }
        }
        if (options.httpHost() != null) {
            http = HttpFront.start(httpSources(), options.httpHost(), options.httpPort(), options.bearerToken());
            opened.add(http);
        }
        if (options.proxyPing() != null) {
            String httpAddr = options.httpAdvertised() != null ? options.httpAdvertised()
                    : http != null ? cfg.hostIp() + ":" + http.port() : cfg.hostIp() + ":0";
            Registration reg = new Registration(cfg.isProducer() ? Registration.PRODUCER : Registration.CONSUMER,
                    httpAddr, Registration.zmqAddress(cfg.hostIp(), cfg.handshakePortBase(), cfg.notifyPortBase()),
                    cfg.dpSize(), cfg.tpSize(), cfg.mode().name());
            opened.add(RegistrationHeartbeat.start(options.proxyPing(), reg, RegistrationHeartbeat.PING_INTERVAL,
                    this::onAdapterEvent, clock));
        }
    }

    private String origin() {
        return isShadow() ? SHADOW_ORIGIN : isPassive() ? DRIVE_ORIGIN
                : options.engine() == NodeOptions.EngineKind.SIM_WORKER ? SIM_WORKER_ORIGIN : "kvledger node";
    }

    /**
     * The configuration to recover with when the node takes its profile from the engine: the
     * journal's profile, which the engine's vLLM gave it before it restarted (the rest of the
     * configuration must still match, as for any node).
     */
    private NodeConfig journalsProfile(NodeConfig cfg) {
        JournalHeader h;
        try (io.kvledger.journal.JournalReader r = io.kvledger.journal.JournalReader.open(options.journalDir())) {
            h = r.header();
        } catch (RuntimeException e) {
            return cfg; // the writer says what is wrong with it
        }
        if (h == null || h.config().behaviour().equals(cfg.behaviour())) {
            return cfg;
        }
        NodeConfig withJournals = cfg.toBuilder().behaviour(h.config().behaviour()).build();
        if (!h.differences(JournalHeader.of(options.nodeId(), withJournals, origin())).isEmpty()) {
            return cfg;
        }
        LOG.log(System.Logger.Level.INFO, "node " + options.nodeId() + ": runs profile " + withJournals.behaviour().profile()
                + ", its journal's (no --profile given)");
        synchronized (profileLock) {
            profileSettled = true;
            profileSource = "its journal";
        }
        return withJournals;
    }

    /**
     * Makes the node run {@code wanted} for an engine whose vLLM kvledger's table maps to it (a
     * shadow node's first scheduler stream, a drive node's {@code hello}; called on their socket
     * threads). A node started without {@code --profile} ({@link NodeOptions#profileFromEngine})
     * takes it as long as its loop has applied nothing: the loop starts over with a fresh state of
     * that profile and a new journal (the one opened at start held only its header and start-up
     * checks). The first engine settles the profile: another one later is refused.
     *
     * @return {@code null} when the node runs {@code wanted} now; else the end of the refusal's
     *         line: the node's profile and, in parentheses, what to do
     */
    String takeProfile(io.kvledger.core.config.Behaviour wanted, String source) {
        synchronized (profileLock) {
            NodeConfig cur = config;
            String mine = cur.behaviour().profile();
            if (wanted.equals(cur.behaviour())) {
                profileSettled = true;
                return null;
            }
            if (!options.profileFromEngine()) {
                return mine + " (start the node with --profile " + wanted.profile() + ")";
            }
            if (profileSettled) {
                return mine + " (the node follows " + (profileSource == null ? "an engine of that profile" : profileSource)
                        + "; start a node with --profile " + wanted.profile() + " for this one)";
            }
            NodeConfig next = cur.toBuilder().behaviour(wanted).build();
            Boolean done;
            try {
                done = loop.rebase(NodeState.initial(next), (old, fresh) -> reopenJournal(old, fresh))
                        .get(REBASE_WAIT_NS, TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                done = null;
            } catch (ExecutionException | TimeoutException e) {
                LOG.log(System.Logger.Level.WARNING, "node " + options.nodeId() + ": cannot take profile "
                        + wanted.profile() + ": " + (e.getCause() == null ? e : e.getCause()));
                done = null;
            }
            profileSettled = true;
            if (!Boolean.TRUE.equals(done)) {
                return mine + " (" + (done == null ? "the node could not start over" : "the node has applied an engine's calls under it")
                        + "; start it with --profile " + wanted.profile() + ")";
            }
            config = next;
            profileSource = source;
            LOG.log(System.Logger.Level.INFO, "node " + options.nodeId() + ": runs profile " + wanted.profile()
                    + " (no --profile given), as kvledger's table of upstream versions models " + source);
            return null;
        }
    }

    /**
     * On the loop thread: the journal opened at start (its header names the old profile) is
     * replaced by one in the same directory, when it holds nothing but its start-up checks and the
     * node's own notes ({@code frame_rejected}: streams refused or lost before this one), which
     * are applied to {@code fresh} and journaled again; else {@code null} (the engine's calls were
     * applied under the old profile).
     */
    private JournalWriter reopenJournal(JournalWriter old, NodeState fresh) {
        java.nio.file.Path dir = options.journalDir();
        List<NodeEvent> notes = new ArrayList<>();
        try (io.kvledger.journal.JournalReader r = io.kvledger.journal.JournalReader.open(dir)) {
            for (io.kvledger.journal.JournalEntry e : r) {
                if (e instanceof io.kvledger.journal.JournalEntry.Input in) {
                    if (!(in.event() instanceof NodeEvent.FrameRejected)) {
                        return null;
                    }
                    notes.add(in.event());
                }
            }
        }
        old.close();
        try (var files = java.nio.file.Files.list(dir)) {
            for (java.nio.file.Path p : files.toList()) {
                String name = p.getFileName().toString();
                if (name.endsWith(".cq4") || name.endsWith(".cq4t")) {
                    java.nio.file.Files.delete(p);
                }
            }
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException("cannot remove the journal opened at start in " + dir, e);
        }
        JournalWriter jw = JournalWriter.open(dir, JournalHeader.of(options.nodeId(), fresh.config(), origin()));
        for (Effect e : NodeReducer.startupChecks(fresh.config())) {
            jw.appendDerived(0, e);
        }
        List<Effect> effects = new ArrayList<>();
        for (NodeEvent n : notes) {
            effects.clear();
            NodeReducer.applyInto(fresh, n, effects);
            jw.appendApplied(n, effects);
        }
        journal = jw;
        return jw;
    }

    /**
     * A recovered state counts on the sessions its handshakes opened, which died with the old
     * process: hand-shake again with every peer it knew (the outcomes are journaled like any
     * other), waiting a bounded time so the engine does not post on a session that is not back yet.
     */
    private void reopenSessions() {
        List<java.util.concurrent.CompletableFuture<Void>> pending = new ArrayList<>();
        for (Effect.StartHandshake h : recovery.handshakes().values()) {
            pending.add(dataPlane.startHandshake(h));
        }
        try {
            java.util.concurrent.CompletableFuture.allOf(pending.toArray(java.util.concurrent.CompletableFuture[]::new))
                    .get(options.handshakeTimeout().toMillis() + 1000, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            LOG.log(System.Logger.Level.WARNING, "node " + options.nodeId() + ": re-handshakes after recovery: " + e);
        }
    }

    /**
     * Runs the I/O commands of an input the old process applied but died before routing, on the
     * loop thread (hook replies had no caller left; decisions are journaled).
     */
    private void routeUnrouted(List<Effect> effects) {
        try {
            inbox.query(s -> {
                for (Effect e : effects) {
                    if (!passive && e instanceof Effect.IoCommand c) {
                        execute(c);
                    }
                }
                return null;
            }).get(HOOK_WAIT_NS, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            LOG.log(System.Logger.Level.WARNING, "node " + options.nodeId() + ": effects left by the old process: " + e);
        }
    }

    private static <T> T orThrow(Result<T> r, String what) {
        if (r.errorOrNull() != null) {
            throw new IllegalStateException("cannot open " + what + ": " + r.errorOrNull().message());
        }
        return r.valueOrNull();
    }

    /** The hook port of an in-process engine: a bounded wait for the loop's reply. */
    public HookPort hookPort() {
        return new HookPort() {
            @Override
            public List<Effect> call(NodeEvent event) {
                return await(inbox.call(event, HOOK_WAIT_NS), event.getClass().getSimpleName());
            }

            @Override
            public boolean forwardSettled() {
                return await(inbox.query(NodeService::settled), "forwardSettled");
            }

            @Override
            public List<String> failedHandshakes() {
                return await(inbox.query(s -> List.copyOf(s.failedHandshakes())), "failedHandshakes");
            }
        };
    }

    private static <T> T await(java.util.concurrent.CompletableFuture<T> f, String what) {
        try {
            return f.get(HOOK_WAIT_NS, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new HookPort.HookCallException("interrupted", e);
        } catch (ExecutionException | TimeoutException e) {
            throw new HookPort.HookCallException("hook call " + what + " got no reply: "
                    + (e.getCause() == null ? e : e.getCause()).getMessage(), e);
        }
    }

    /**
     * Engine hook calls from the bridge: each becomes a hook call on the inbox, answered with the
     * effects of its transition. Runs on the thread that reads the socket (the node loop itself
     * over a Unix socket), so it never waits: a full inbox answers "node busy" at once (the engine
     * sees the error; nothing was journaled).
     */
    private HookHandler bridgeHandler() {
        return new HookHandler() {
            @Override
            public BridgeNodeInfo onHello(io.kvledger.wire.bridge.HookCall.Hello hello, BridgeNodeInfo node) {
                String wanted = io.kvledger.wire.bridge.BridgeCodec.profileFor(hello);
                io.kvledger.core.config.Behaviour b = wanted == null ? null : io.kvledger.core.config.Behaviour.preset(wanted);
                if (b == null || !options.profileFromEngine()) {
                    return node;
                }
                BridgeNodeInfo asWanted = new BridgeNodeInfo(node.role(), node.mode(), node.dpRank(), node.dpSize(),
                        node.tpRank(), node.tpSize(), node.engineId(), b.profile());
                if (io.kvledger.wire.bridge.BridgeCodec.helloMismatch(hello, asWanted) != null) {
                    return node; // not this node's engine (its role, mode or rank): it gives the node nothing
                }
                String install = "the engine's vLLM " + (hello.vllmVersion() != null ? hello.vllmVersion() : hello.vllmCommit());
                return takeProfile(b, install) == null ? BridgeNodeInfo.of(config) : node;
            }

            @Override
            public void onHook(BridgeCall call) {
                if (worker != null) {
                    worker.before(call.event());
                }
                inbox.call(call.event(), 0).whenComplete((effects, error) -> {
                    if (worker != null && error == null) {
                        worker.after(call.event(), effects);
                    }
                    if (error != null) {
                        call.fail(error instanceof Inbox.InboxFullException ? "node busy: " + error.getMessage()
                                : "node: " + error.getMessage());
                    } else if (holdsForward(call.event(), effects)) {
                        // the Python worker busy-waits in start_load_kv for its handshakes and reads, and in
                        // save_kv_layer for the handshakes it started; a bridged engine's forward waits the
                        // same way, so a READ decode does not finish a request before its KV arrived and a
                        // WRITE prefill's next layer is not written to a decode DP rank still handshaking
                        // (bounded: the transfer timeout, then the reply)
                        long deadline = System.nanoTime() + options.config().transferTimeoutNs()
                                + options.handshakeTimeout().toNanos();
                        replyWhenSettled(call, effects, deadline);
                    } else {
                        call.reply(effects);
                    }
                });
            }
        };
    }

    /**
     * Whether the reply to this bridged hook waits for the worker's reads and handshakes: a READ
     * consumer's {@code start_load_kv}, and any forward hook that started a handshake (a WRITE
     * producer's {@code save_kv_layer}: released when rank 0 of the decode answered, the next
     * layer's write to a decode on rank 1 found no session and failed).
     */
    static boolean holdsForward(NodeOptions.EngineKind engine, NodeConfig cfg, NodeEvent e,
                                List<Effect> effects) {
        if (engine != NodeOptions.EngineKind.BRIDGE && engine != NodeOptions.EngineKind.SIM_WORKER) {
            return false;
        }
        if ((e instanceof NodeEvent.LoadStarted || e instanceof NodeEvent.HandshakeVoted)
                && cfg.mode() == io.kvledger.core.config.TransferMode.READ && !cfg.isProducer()) {
            return true; // the vote lets the held reads go: its reply waits for them as start_load_kv's did
        }
        if (!(e instanceof NodeEvent.LoadStarted || e instanceof NodeEvent.LayerSaved || e instanceof NodeEvent.SaveWaited)) {
            return false;
        }
        for (Effect x : effects) {
            if (x instanceof Effect.StartHandshake) {
                return true;
            }
        }
        return false;
    }

    private boolean holdsForward(NodeEvent e, List<Effect> effects) {
        return holdsForward(options.engine(), options.config(), e, effects);
    }

    /**
     * Whether the worker's forward may go on: no handshake in flight and no READ load, or, with
     * reads held for the TP vote ({@code awaits_tp_vote}), no handshake in flight (the engine
     * sends the vote next, and the reply to {@code handshake_voted} waits for the reads).
     */
    static boolean settled(io.kvledger.core.node.NodeState s) {
        return s.handshakesInFlight() == 0 && (s.readsInFlight() == 0 || s.votesPending() > 0);
    }

    private void replyWhenSettled(BridgeCall call, List<Effect> effects, long deadline) {
        inbox.query(s -> settled(s) ? voteExtra(call, s) : null).whenComplete((extra, error) -> {
            if (error != null || extra != null || System.nanoTime() > deadline) {
                call.reply(effects, extra == null ? Map.of() : extra);
            } else {
                java.util.concurrent.CompletableFuture.delayedExecutor(1, TimeUnit.MILLISECONDS)
                        .execute(() -> replyWhenSettled(call, effects, deadline));
            }
        });
    }

    /**
     * What a settled forward reply adds: to {@code start_load_kv} of a rank that awaits the TP vote,
     * {@code failed_handshakes} (the keys whose last handshake failed, for the engine core's
     * all_reduce(MIN)); nothing otherwise.
     */
    private Map<String, PyValue> voteExtra(BridgeCall call, io.kvledger.core.node.NodeState s) {
        if (call.hook() == io.kvledger.wire.bridge.BridgeHook.START_LOAD_KV && s.config().awaitsTpVote()) {
            return failedHandshakes(s.failedHandshakes());
        }
        return Map.of();
    }

    /** The {@code failed_handshakes} entry: the keys as a list of str, in the set's order. */
    static Map<String, PyValue> failedHandshakes(java.util.Set<String> failed) {
        if (failed.isEmpty()) {
            return NO_FAILED_HANDSHAKES;
        }
        ArrayList<PyValue> keys = new ArrayList<>(failed.size());
        for (String k : failed) {
            keys.add(k == null ? PyValue.NONE : new PyValue.Str(k));
        }
        return Map.of("failed_handshakes", new PyValue.List(keys));
    }

    /** {@link #failedHandshakes} when no handshake failed (the usual case): built once. */
    private static final Map<String, PyValue> NO_FAILED_HANDSHAKES = Map.of("failed_handshakes", new PyValue.List(List.of()));

    private boolean onAdapterEvent(AdapterEvent e) {
        switch (e) {
            case AdapterEvent.SendFailed f -> delivery.deliver(f.toNodeEvent());
            case AdapterEvent.FrameSent s -> { }
            case AdapterEvent.HandshakeServed s -> { }
            case AdapterEvent.HandshakeRequestRejected r -> adapterFailures.incrementAndGet();
            case AdapterEvent.HeartbeatFailed h -> adapterFailures.incrementAndGet();
        }
        return true;
    }

    /**
     * Executes one I/O command (loop thread): each sub-family goes to the one publisher that owns
     * it, through the injected faults when there are some. A new command type breaks the build here
     * until it is given a publisher. A shadow or drive node executes none (its loop has no router):
     * the real connector does.
     */
    private void execute(Effect.IoCommand command) {
        switch (command) {
            case Effect.Notify n -> {
                if (sendsSchedulerNotifies() || !fromScheduler(n)) {
                    notify(n);
                }
            }
            case Effect.Post p -> post(p);
            case Effect.StartHandshake h -> handshake(h);
        }
    }

    /** Whether the connector's scheduler side sends this notify (as opposed to its worker side). */
    static boolean fromScheduler(Effect.Notify n) {
        return switch (n) {
            case Effect.SendRemoteBlocks _ -> true;
            case Effect.SendRelease r -> r.sender() == Effect.Sender.SCHEDULER;
            case Effect.SendWriteDone _, Effect.SendWriteFailed _ -> false;
        };
    }

    /**
     * Whether this node sends what the connector's scheduler side sends: not on a TP rank's worker
     * process ({@link NodeOptions.EngineKind#SIM_WORKER}), whose scheduler side only replays the
     * calls of its DP rank's one scheduler (in TP rank 0's node), which sends them once.
     */
    private boolean sendsSchedulerNotifies() {
        return options.engine() != NodeOptions.EngineKind.SIM_WORKER;
    }

    private void notify(Effect.Notify n) {
        if (faults != null) {
            faults.notify(n, publisher::publish);
        } else {
            publisher.publish(n);
        }
    }

    private void post(Effect.Post p) {
        if (faults != null) {
            faults.transfer(p, dataPlane::post);
        } else {
            dataPlane.post(p);
        }
    }

    private void handshake(Effect.StartHandshake h) {
        if (faults != null) {
            faults.handshake(h, dataPlane::startHandshake);
        } else {
            dataPlane.startHandshake(h);
        }
    }

    /**
     * The node's status snapshot, as its loop builds it (loop thread): the loop's and inbox's
     * counters, and those of every adapter and engine this node runs.
     */
    private NodeStatus snapshot() {
        NodeConfig cfg = options.config();
        DataPlane dp = dataPlane;
        NotifyPublisher pub = publisher;
        NotifyListenerAdapter l = listener;
        io.kvledger.node.shadow.ShadowMonitor sh = shadow;
        io.kvledger.zmq.ShadowStreamServer shs = shadowServer;
        EngineBridgeServer b = bridge;
        io.kvledger.node.engine.SimulatedWorker w = worker;
        SimulatedEngine e = engine;
        LiveFaults f = faults;
        NodeStatus.Shadow shadowStatus = null;
        if (sh != null) {
            Map<String, Long> byHook = new java.util.LinkedHashMap<>();
            for (String hook : sh.hooks()) {
                byHook.put(hook, sh.divergences(hook));
            }
            shadowStatus = new NodeStatus.Shadow(sh.observed(), sh.divergences(), sh.compared(), sh.linesReceived(),
                    sh.linesLost(), shs == null ? 0L : shs.messages(), byHook);
        }
        return new NodeStatus(options.nodeId(), cfg.role().name().toLowerCase(java.util.Locale.ROOT),
                cfg.mode().name().toLowerCase(java.util.Locale.ROOT), isRunning(),
                loop.applied(), loop.ticks(), loop.lastSeq(), loop.journalErrors(), loop.loopErrors(),
                loop.lastEventAtNs(), inbox.depth(), inbox.capacity(), inbox.refused(), eventsLost(),
                dp.engineKind(), dp.sessionsBound(), dp.handshakesFailed(), dp.pendingTransfers(),
                pub.sent(), pub.failed(), l == null ? 0L : l.received(), l == null ? 0L : l.rejected(),
                f == null ? 0 : f.injected(), shadowStatus,
                b == null ? null : new NodeStatus.Bridge(b.received(), b.handedOff(), b.busy(), b.timedOut(),
                        b.rejected(), b.inFlight(), b.heldReplies(), b.undeliverable(), b.undeliverableApplied()),
                w == null ? null : new NodeStatus.Worker(cfg.tpRank(), w.verifiedBytes(), w.verifiedRequests(),
                        w.corruptRequests()),
                e == null ? null : new NodeStatus.Engine(e.submitted(), e.completed(), e.failed(), e.verifiedBytes(),
                        e.corruptRequests(), e.steps(), e.freeBlocks(), e.heldRequests()));
    }

    /**
     * The node's status: a snapshot its loop publishes for this call, once it has handled what
     * came before (the last one published, marked not running, when the loop has stopped; see
     * {@link NodeLoop#freshStatus}). Waits for the loop at most 5 s.
     */
    public NodeStatus status() {
        return loop.freshStatus(java.time.Duration.ofSeconds(5));
    }

    /** What this node's HTTP servers serve from. */
    private HttpFront.Sources httpSources() {
        return new HttpFront.Sources(options.nodeId(), options.config(), options.journalDir(),
                options.engine().name().toLowerCase(), loop, inbox, clock, dataPlane, engine, shadow);
    }

    /**
     * Binds another HTTP server over this node (tests of the server itself: its own header
     * timeout), beside the one {@code --http} started, if any; the caller closes it.
     *
     * @throws IllegalStateException when the address cannot be bound
     */
    public HttpFront openHttp(String host, int port, String token, java.time.Duration headerTimeout) {
        return HttpFront.start(httpSources(), host, port, token, headerTimeout);
    }

    /**
     * Events the adapters could not hand to a full inbox, in all, counted now (readers of the
     * node's status get it in the snapshot; this one answers while the loop is held too).
     */
    public long eventsLost() {
        return (listener == null ? 0 : listener.refused()) + (publisher == null ? 0 : publisher.refused())
                + (dataPlane == null ? 0 : dataPlane.refused()) + delivery.lost();
    }

    /**
     * Journals what the adapters lost to a full inbox since the last report, once there is room:
     * a {@code FrameRejected} saying how many events were refused, so the journal itself says
     * that it is missing something (checked every second, on its own thread).
     */
    private void reportLosses() {
        long lost = eventsLost();
        if (lost > lossesReported) {
            String why = "inbox full: " + (lost - lossesReported) + " event(s) refused since the last report ("
                    + "listener " + (listener == null ? 0 : listener.refused()) + ", publisher " + publisher.refused() + ", transfers "
                    + dataPlane.refused() + ", handshakes " + delivery.lost() + " in all)";
            if (inbox.offer(new NodeEvent.FrameRejected(clock.getAsLong(), why, new byte[0], false))) {
                lossesReported = lost;
            }
        }
    }

    /**
     * Completes once the node's loop has ended: {@link NodeLoop.Stopped#requested()} when
     * {@link #close} stopped it, else why it stopped by itself (the journal refused an applied
     * input, the journaller thread died, ...). A node whose loop stopped by itself applies and
     * sends nothing more while its adapters stay bound: its owner should {@link #close} it and
     * end the process, so that a restart recovers the node from its journal.
     */
    public java.util.concurrent.CompletableFuture<NodeLoop.Stopped> loopStopped() {
        return loop.stopped();
    }

    /**
     * Injects the named fault {@code journal-refuses} ({@code kvledger node --fail-journal-after N},
     * testing only): after {@code inputs} more inputs the journal refuses every input, as a full
     * disk would (nothing more is written), so the loop stops by itself as it does when its
     * journal fails.
     */
    public void failJournalAfter(long inputs) {
        if (inputs < 0) {
            throw new IllegalArgumentException("inputs must be at least 0, got " + inputs);
        }
        loop.failJournalAfter(inputs, "injected fault (--fail-journal-after " + inputs
                + "): the journal refuses every input after the next " + inputs + ", as a full disk would");
    }

    /** Offers an event from outside (tests, bridges); false when the inbox refused it. */
    public boolean offer(NodeEvent event) {
        return inbox.offer(event);
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (engine != null) {
            engine.close();
        }
        if (lossReporter != null) {
            lossReporter.shutdownNow();
        }
        // Stop the inputs first, then the loop (it drains what is queued), then the outputs.
        for (AutoCloseable c : List.copyOf(opened).reversed()) {
            if (c == journal || c == dataPlane || c == publisher) {
                continue;
            }
            closeQuietly(c);
        }
        if (loop != null) {
            // The connector's shutdown(), journaled as the node's last input. The notify sockets
            // are closed after the loop has drained (below), so their close failures are not
            // known here: close_failures is null (the format's "not seen").
            if (journal != null && loop.isRunning()) {
                inbox.offer(new NodeEvent.ShutDown(clock.getAsLong(), null));
            }
            loop.close();
        }
        closeQuietly(publisher);
        closeQuietly(dataPlane);
        closeQuietly(journal);
    }

    private static void closeQuietly(AutoCloseable c) {
        if (c == null) {
            return;
        }
        try {
            c.close();
        } catch (Exception e) {
            LOG.log(System.Logger.Level.WARNING, "closing " + c.getClass().getSimpleName() + ": " + e);
        }
    }

    // ------------------------------------------------------------------ views

    public NodeOptions options() {
        return options;
    }

    /**
     * The configuration the reducer runs: the options', or with the behaviour profile the node
     * took from its engine or its journal ({@link NodeOptions#profileFromEngine}).
     */
    public NodeConfig config() {
        return config;
    }

    public ServiceClock clock() {
        return clock;
    }

    public Inbox inbox() {
        return inbox;
    }

    public NodeLoop loop() {
        return loop;
    }

    public DataPlane dataPlane() {
        return dataPlane;
    }

    /** The simulated engine, or {@code null} when another engine drives the node. */
    public SimulatedEngine engine() {
        return engine;
    }

    /** What recovery did at start, or {@code null} for a new journal. */
    public Recovery recovery() {
        return recovery;
    }

    /** The notify listener, or {@code null} on a shadow node. */
    public NotifyListenerAdapter listener() {
        return listener;
    }

    /** The handshake server, or {@code null} on a shadow node. */
    public HandshakeServer handshakeServer() {
        return handshakeServer;
    }

    /** The engine bridge, or {@code null} when the engine is not bridged. */
    public EngineBridgeServer bridge() {
        return bridge;
    }

    /** Whether this node observes a real connector ({@code --engine shadow}). */
    public boolean isShadow() {
        return options.engine() == NodeOptions.EngineKind.SHADOW;
    }

    /**
     * Whether the node leaves the transfers to a real connector ({@code --engine shadow} or
     * {@code drive}): no notify or handshake port, no effect executed.
     */
    public boolean isPassive() {
        return passive;
    }

    /** The shadow socket, or {@code null} when the node is not a shadow. */
    public io.kvledger.zmq.ShadowStreamServer shadowServer() {
        return shadowServer;
    }

    /** The admin HTTP server, or {@code null}. */
    public HttpFront http() {
        return http;
    }

    long adapterFailures() {
        return adapterFailures.get();
    }

    public boolean isRunning() {
        return !closed && loop != null && loop.isRunning();
    }
}
