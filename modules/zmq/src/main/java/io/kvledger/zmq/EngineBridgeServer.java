package io.kvledger.zmq;

import io.kvledger.wire.RejectReason;
import io.kvledger.wire.Rejection;
import io.kvledger.wire.bridge.BridgeCodec;
import io.kvledger.wire.bridge.BridgeDecoded;
import io.kvledger.wire.bridge.BridgeNodeInfo;
import io.kvledger.wire.bridge.BridgeRequest;
import io.kvledger.wire.bridge.BridgeSession;
import io.kvledger.wire.bridge.HookCall;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The engine bridge: a ROUTER on a loopback endpoint where an engine's connector sends its hook
 * calls ({@link BridgeCodec}, protocol version 1), each answered with the node's reply (ZMTP spoken
 * by {@link ZmtpBridgeTransport} itself, or JeroMQ's ROUTER, {@link ZmqBridgeTransport}, with
 * {@code -Dkvledger.bridge.zmq=jeromq}; over {@code ipc:///PATH}, a Unix domain socket, only the
 * bridge's own); or, for {@code unix:///PATH}, a Unix domain socket with
 * length-prefixed frames ({@link UnixBridgeTransport}), under the same rules. Over the bridge's own
 * transports the answering thread writes an answer itself when the socket thread is waiting and
 * nothing is queued before it ({@link BridgeTransport#answersDirectly}), over JeroMQ's when the
 * server is {@link #openServedByCaller served by its caller} and no other thread holds the socket.
 *
 * <p>One thread ({@code kvledger-engine-bridge-<port>}) owns the socket. It reads each call,
 * stamps it with the configured clock, decodes it, and:
 * <ul>
 *   <li>answers at once, on the socket thread, what needs no node: malformed frames
 *       ({@code ok: False} with the rejection, counted in {@link #rejected()} and reported to
 *       {@link HookHandler#onRejected}), {@code ping},
 *       {@code hello} (the {@link BridgeNodeInfo}, or {@code ok: False} when the caller's role,
 *       mode or ranks differ), and calls beyond {@link EngineBridgeConfig#maxInFlight()}
 *       ({@code "busy"});</li>
 *   <li>hands every engine hook to the {@link HookHandler} as a {@link BridgeCall}, in the order
 *       read. The handler answers it later from any thread; answers are written by that thread
 *       or queued and sent by the socket thread, woken through its selector. A call
 *       still unanswered after {@link EngineBridgeConfig#replyTimeout()} is answered
 *       {@code ok: False, error: "timed out ..."}.</li>
 *   <li>takes each call of a {@code batch} ({@link BridgeDecoded.Batch}) as if it came alone, in
 *       order, and sends the batch's replies as one frame once the last of them is answered.</li>
 * </ul>
 *
 * <p>Callers may be DEALERs (one frame per request; replies come as one frame) or REQs (an empty
 * delimiter first; replies keep it). Replies go back with {@code ROUTER_MANDATORY} and without
 * blocking. A caller that sends faster than it reads (unawaited calls) fills its queue on the
 * socket: the replies that do not fit are held here, in order, and sent as it reads
 * ({@link #heldReplies()}), and while a caller has replies held its new hook calls are refused
 * {@code "busy"} instead of applied (back-pressure before applying: what is held is bounded by
 * the calls in flight). So every call handed to the handler is answered while its caller is
 * connected; a reply to a caller that has gone is dropped and counted ({@link #undeliverable()},
 * {@link #undeliverableApplied()} for calls handed to the handler), and so is a reply to a call
 * that was not handed on (busy, ping, hello, malformed) when more than {@code maxInFlight} replies
 * already wait for that caller. (Replies ZMQ took for a connection in the moment it drops go down
 * with it: ZMQ does not say which; they are not counted.)
 *
 * <p>Ordering: the handler sees the calls of one caller in the order it sent them, and the
 * server sends answers in the order they are given. A handler that answers in order (one node
 * loop) therefore answers each caller in request order; the answers the server gives itself
 * (malformed, ping, hello, busy, timed out) can overtake hook replies still in the loop.
 * Callers match replies by {@code id}.
 *
 * <p>Nothing that arrives on the socket ends the thread; neither does a handler that throws.
 * {@link #close()} answers calls still waiting with {@code ok: False, error: "node closing"},
 * closes the socket and ends the thread and the context's threads.
 *
 * <p>JeroMQ 0.6.0's fresh-connect stall ({@link StallKicker}) affects the connecting side's
 * context; this server only accepts connections and needs no kicker (pyzmq callers use libzmq).
 */
public final class EngineBridgeServer implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(EngineBridgeServer.class.getName());
    private static final int MAX_READ_PER_ROUND = 1024;
    private static final long HOUSEKEEPING_NS = 100_000_000L;
    private static final long HELD_RETRY_NS = 2_000_000L;

    private final EngineBridgeConfig config;
    /** Who the node is (its profile may change once, at a hello: {@link HookHandler#onHello}). */
    private volatile BridgeNodeInfo node;
    private final HookHandler handler;
    private final BridgeTransport transport;
    /**
     * Held by the socket thread for each round of work between two waits, and by an answering
     * thread that sends its answer itself ({@link BridgeTransport#answersDirectly}): the calls,
     * held replies and the socket's writes are touched only under it.
     */
    private final java.util.concurrent.locks.ReentrantLock round = new java.util.concurrent.locks.ReentrantLock();
    private final SocketThread socketThread;
    /**
     * Whether the caller's thread reads the socket ({@link #serve}, the node loop while it idles)
     * and the socket thread only keeps time (timeouts, held replies, answers of other threads).
     */
    private final boolean servedByCaller;
    /**
     * Whether answering threads write their answers themselves under {@link #round} when it is free
     * (a transport whose socket any thread may write, or one served by its caller: every use of
     * the socket is then under {@link #round}).
     */
    private final boolean directAnswers;
    /**
     * Whether {@link #serve} waits for the socket holding {@link #round} (a ZMQ socket, which
     * belongs to one thread at a time: its poll reads the socket's state, so no other thread may
     * send meanwhile; the lock hands it from thread to thread with the memory barrier ZMQ asks).
     */
    private final boolean awaitsUnderLock;
    private final AtomicBoolean wakePending = new AtomicBoolean();
    private final ConcurrentLinkedQueue<Outgoing> outbox = new ConcurrentLinkedQueue<>();
    private volatile boolean stopped;
    private volatile String endpoint;
    private volatile int inFlight;

    /** Calls handed to the handler and not yet sent an answer, in arrival (= deadline) order. Socket thread only. */
    private final LinkedHashMap<Long, BridgeCall> pending = new LinkedHashMap<>();
    private long nextSeq;

    private final AtomicLong received = new AtomicLong();
    private final AtomicLong rejected = new AtomicLong();
    private final AtomicLong handedOff = new AtomicLong();
    private final AtomicLong replied = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicLong handlerErrors = new AtomicLong();
    private final AtomicLong timedOut = new AtomicLong();
    private final AtomicLong busy = new AtomicLong();
    private final AtomicLong control = new AtomicLong();
    private final AtomicLong lateAnswers = new AtomicLong();
    private final AtomicLong undeliverable = new AtomicLong();
    private final AtomicLong undeliverableApplied = new AtomicLong();

    /**
     * Replies a caller's full queue on the socket could not take yet, per caller (its routing id),
     * in send order. Socket thread only.
     */
    private final HashMap<ByteBuffer, ArrayDeque<Held>> held = new HashMap<>();
    private volatile int heldCount;

    /**
     * What the node remembers of each caller (its routing id) between frames ({@link BridgeSession}:
     * the last step read, for a compact step's ids sent as that step's number). A caller that
     * reconnects has a new routing id, so nothing: its first such step is refused and the next comes
     * in full. The least recently heard of go past {@link #MAX_SESSIONS}. Socket thread only.
     */
    private final LinkedHashMap<ByteBuffer, BridgeSession> sessions = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(java.util.Map.Entry<ByteBuffer, BridgeSession> eldest) {
            return size() > MAX_SESSIONS;
        }
    };
    private static final int MAX_SESSIONS = 1024;

    /** A reply waiting for its caller to read; {@code handed}: the answer to a call handed to the handler. */
    private record Held(byte[] identity, boolean reqFraming, byte[] frame, boolean handed) {}

    /** An encoded answer on its way to the socket thread. */
    private record Outgoing(BridgeCall call, byte[] identity, boolean reqFraming, byte[] frame) {}

    /**
     * The reply to a batch, filled in call by call (each engine hook's answer as the handler gives
     * it, the server's own answers at once) and sent as one frame when the last call is answered.
     * Socket thread only.
     */
    static final class BatchReply {
        final long id;
        final byte[] identity;
        final boolean reqFraming;
        final byte[][] frames;
        final boolean compact;
        /** The caller asked for the agreed form ({@link BridgeDecoded.Batch#agreed}). */
        final boolean agreed;
        /**
         * With {@link #agreed}: the calls whose reply is listed even when it is an empty answer
         * (they carried {@code acted} and their answer differs); set by the answering thread before
         * it hands the answer on.
         */
        final boolean[] kept;
        /** With {@link #agreed}: an ok answer to build_connector_meta is left out ({@link BridgeDecoded.Batch#brief}). */
        final boolean brief;
        int missing;
        boolean handed;

        BatchReply(long id, byte[] identity, boolean reqFraming, int size, boolean compact, boolean agreed,
                   boolean brief) {
            this.id = id;
            this.compact = compact;
            this.agreed = agreed;
            this.brief = brief;
            this.kept = agreed ? new boolean[size] : null;
            this.identity = identity;
            this.reqFraming = reqFraming;
            this.frames = new byte[size][];
            this.missing = size;
        }
    }

    private EngineBridgeServer(EngineBridgeConfig config, BridgeNodeInfo node, HookHandler handler, boolean callerServes,
                               boolean jeromq) throws IOException {
        this.config = config;
        this.node = node;
        this.handler = handler;
        if (jeromq && config.isIpc()) {
            throw new IllegalArgumentException("-D" + TCP_ROUTER_PROPERTY + "=jeromq cannot serve " + config.bindEndpoint()
                    + ": JeroMQ 0.6.0 emulates ipc:// over a loopback TCP port that a libzmq (pyzmq) engine cannot reach; "
                    + "leave the property out (the bridge's own ZMTP serves ipc://) or bind tcp://127.0.0.1:PORT");
        }
        this.transport = config.isUnix() ? new UnixBridgeTransport(config)
                : jeromq ? new ZmqBridgeTransport(config) : new ZmtpBridgeTransport(config);
        this.servedByCaller = callerServes;
        this.directAnswers = transport.answersDirectly() || callerServes;
        this.awaitsUnderLock = callerServes && !transport.answersDirectly();
        this.socketThread = new SocketThread("kvledger-engine-bridge", this::run);
    }

    /** The system property that picks JeroMQ's ROUTER over {@code tcp://}: {@code jeromq}; {@code zmtp} (the default) the bridge's own. */
    static final String TCP_ROUTER_PROPERTY = "kvledger.bridge.zmq";

    /** Whether {@code tcp://} is served by JeroMQ's ROUTER ({@value #TCP_ROUTER_PROPERTY}{@code =jeromq}). */
    private static boolean jeromq() {
        String v = System.getProperty(TCP_ROUTER_PROPERTY, "zmtp");
        return switch (v) {
            case "jeromq" -> true;
            case "zmtp" -> false;
            default -> throw new IllegalArgumentException("-D" + TCP_ROUTER_PROPERTY + " takes zmtp or jeromq, got " + v);
        };
    }

    /**
     * Binds {@code config.bindEndpoint()} and starts serving.
     *
     * @throws IllegalStateException when the endpoint cannot be bound
     */
    static EngineBridgeServer open(EngineBridgeConfig config, BridgeNodeInfo node, HookHandler handler) {
        return open(config, node, handler, false);
    }

    /**
     * As {@link #open}, but the socket is read by whoever calls {@link #serve} (the node loop,
     * while it has nothing else to do), so a call reaches the handler on that thread with no
     * hand-off ({@link #servedByCaller}), and its answer leaves from the answering thread; the
     * socket thread then only answers timeouts, sends held replies and the answers of other
     * threads. Over {@code tcp://} the ZMQ socket belongs to whoever holds the server's lock: the
     * serving thread holds it while it waits in the poller (a {@link #wake} ends the wait).
     */
    public static EngineBridgeServer openServedByCaller(EngineBridgeConfig config, BridgeNodeInfo node, HookHandler handler) {
        return open(config, node, handler, true);
    }

    private static EngineBridgeServer open(EngineBridgeConfig config, BridgeNodeInfo node, HookHandler handler,
                                           boolean callerServes) {
        return open(config, node, handler, callerServes, jeromq());
    }

    /** As {@link #open}, over {@code tcp://} with JeroMQ's ROUTER ({@code jeromq}) or the bridge's own. */
    static EngineBridgeServer open(EngineBridgeConfig config, BridgeNodeInfo node, HookHandler handler,
                                   boolean callerServes, boolean jeromq) {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(node, "node");
        Objects.requireNonNull(handler, "handler");
        EngineBridgeServer s;
        try {
            s = new EngineBridgeServer(config, node, handler, callerServes, jeromq);
        } catch (IOException e) {
            throw new IllegalStateException("cannot open the engine bridge's wake-up channel: " + e, e);
        }
        s.socketThread.start(s::close, "the engine bridge", config.bindEndpoint(), "kvledger-engine-bridge-");
        return s;
    }

    /** The bound endpoint, e.g. {@code tcp://127.0.0.1:41234} (the real port when 0 was asked). */
    public String endpoint() {
        return endpoint;
    }

    int port() {
        String e = endpoint;
        return ZmqRuntime.portOf(e);
    }

    BridgeNodeInfo node() {
        return node;
    }

    /** Messages read from the socket. */
    public long received() { return received.get(); }

    /** Malformed messages, answered at once with {@code ok: False}. */
    public long rejected() { return rejected.get(); }

    /** Engine hook calls handed to the handler. */
    public long handedOff() { return handedOff.get(); }

    /** Calls the handler answered with {@link BridgeCall#reply}. */
    long replied() { return replied.get(); }

    /** Calls the handler answered with {@link BridgeCall#fail}. */
    long failed() { return failed.get(); }

    /** Calls whose handler threw (answered {@code ok: False}). */
    long handlerErrors() { return handlerErrors.get(); }

    /** Calls answered {@code "timed out"} by the server. */
    public long timedOut() { return timedOut.get(); }

    /** Calls refused because {@code maxInFlight} calls were waiting. */
    public long busy() { return busy.get(); }

    /** {@code hello} and {@code ping} calls answered. */
    long control() { return control.get(); }

    /** Answers given after the call was already answered (timed out, closed, or answered twice). */
    long lateAnswers() { return lateAnswers.get(); }

    /**
     * Replies dropped: the caller had disconnected, or (for a call not handed to the handler) more
     * than {@code maxInFlight} replies already waited for it to read.
     */
    public long undeliverable() { return undeliverable.get(); }

    /** Of {@link #undeliverable()}, answers to calls handed to the handler: their caller had disconnected. */
    public long undeliverableApplied() { return undeliverableApplied.get(); }

    /** Replies waiting for their callers to read what the socket already queued for them. */
    public int heldReplies() { return heldCount; }

    /** Calls handed to the handler whose answer has not been sent yet. */
    public int inFlight() { return inFlight; }

    boolean isRunning() {
        return socketThread.isRunning();
    }

    /** Whether the wake-up pipe is still open (for tests: an interrupted answerer must not close it). */
    boolean wakeUpOpen() {
        return transport.wakeUpOpen();
    }

    // ---------------------------------------------------------------- answers (any thread)

    boolean answer(BridgeCall call, byte[] frame, boolean ok) {
        if (stopped) {
            lateAnswers.incrementAndGet();
            return false;
        }
        (ok ? replied : failed).incrementAndGet();
        // a transport without I/O threads of its own: the answering thread (the node loop) writes
        // the answer itself when the socket thread is waiting and nothing is queued before it,
        // rather than waking the socket thread to write it (one thread hand-off less per reply)
        if (directAnswers && !round.isHeldByCurrentThread() && round.tryLock()) {
            try {
                if (!stopped && outbox.isEmpty()) {
                    pending.remove(call.seq);
                    inFlight = pending.size();
                    // a batch's call goes into its batch's reply, as on the socket thread
                    deliver(transport, call, frame);
                    return true;
                }
            } finally {
                round.unlock();
            }
        }
        outbox.add(new Outgoing(call, call.identity, call.reqFraming, frame));
        wake();
        return true;
    }

    void lateAnswer() {
        lateAnswers.incrementAndGet();
    }

    /** Whether the socket is read by the caller of {@link #serve} (see {@link #openServedByCaller}). */
    public boolean servedByCaller() {
        return servedByCaller;
    }

    /**
     * One round of the socket's work on the calling thread (a server {@link #openServedByCaller
     * served by its caller}; one thread only): waits up to {@code waitNs} (0: not at all) for a
     * message, then sends what is queued and reads what arrived, handing each engine hook to the
     * handler on this thread. Stops reading after the first message that handed a call on, so that
     * the caller applies it before it reads the next (the handler's waits, such as a hello taking a
     * profile, find nothing of this round queued before them).
     *
     * @return whether the server still serves (false once it is closing, or when it is not served
     *         by its caller: wait otherwise)
     */
    public boolean serve(long waitNs) {
        if (!servedByCaller || stopped || socketThread.closing()) {
            return false;
        }
        try {
            if (awaitsUnderLock) {
                return serveOwned(waitNs);
            }
            long waitMs = 0;
            if (waitNs > 0) {
                round.lock();
                try {
                    waitMs = Math.min(waitMillis(config.clock().getAsLong()),
                            Math.max(1, TimeUnit.NANOSECONDS.toMillis(Math.min(waitNs, Long.MAX_VALUE - 999_999) + 999_999)));
                } finally {
                    round.unlock();
                }
            }
            transport.await(waitMs);
            wakePending.set(false);
            round.lock();
            try {
                if (stopped) {
                    return false;
                }
                exchange();
            } finally {
                round.unlock();
            }
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "engine bridge " + endpoint + ": " + ZmqRuntime.describe(e), e);
        }
        return !stopped;
    }

    /**
     * One exchange with the socket, under {@link #round}: replies held for a slow reader, the
     * answers queued so far, then up to {@link #MAX_READ_PER_ROUND} calls read (until one is handed
     * to the caller), the answers that gave, and the calls past their deadline.
     */
    private void exchange() {
        flushHeld(transport);
        sendAnswers(transport);
        long before = handedOff.get();
        for (int i = 0; i < MAX_READ_PER_ROUND && handedOff.get() == before; i++) {
            if (!readOne(transport)) {
                break;
            }
        }
        sendAnswers(transport);
        expire(transport, config.clock().getAsLong());
    }

    /**
     * {@link #serve} over a socket one thread owns at a time (ZMQ): the wait, the reads and the
     * sends all hold {@link #round}; a {@link #wake} ends the wait (the poller watches the wake-up
     * pipe), so an answer another thread queued meanwhile leaves at once, from here.
     */
    private boolean serveOwned(long waitNs) {
        round.lock();
        try {
            if (stopped || socketThread.closing()) {
                return false;
            }
            long waitMs = waitNs <= 0 ? 0 : Math.min(waitMillis(config.clock().getAsLong()),
                    Math.max(1, TimeUnit.NANOSECONDS.toMillis(Math.min(waitNs, Long.MAX_VALUE - 999_999) + 999_999)));
            if (waitMs > 0 && !outbox.isEmpty()) {
                waitMs = 0;
            }
            transport.await(waitMs);
            wakePending.set(false);
            exchange();
            return !stopped;
        } finally {
            round.unlock();
        }
    }

    /** Wakes a {@link #serve} waiting for a message (any thread). */
    public void wakeServer() {
        transport.wake();
    }

    private void wake() {
        if (wakePending.compareAndSet(false, true)) {
            transport.wake();
        }
        if (servedByCaller) {
            // the socket thread sends what the serving thread, busy elsewhere, does not
            java.util.concurrent.locks.LockSupport.unpark(socketThread.thread());
        }
    }

    // ---------------------------------------------------------------- socket thread

    private void run() {
        BridgeTransport router = transport;
        try {
            endpoint = router.bind();
            socketThread.bound().complete(endpoint);
        } catch (RuntimeException e) {
            stopped = true;
            socketThread.bound().completeExceptionally(e);
            return;
        } catch (Error e) {
            stopped = true;
            socketThread.bound().completeExceptionally(e);
            throw e;
        }
        try {
            while (!socketThread.closing()) {
                try {
                    long waitMs;
                    round.lock();
                    try {
                        waitMs = waitMillis(config.clock().getAsLong());
                    } finally {
                        round.unlock();
                    }
                    if (servedByCaller) {
                        // the serving thread reads the socket; this one keeps time and sends
                        java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(waitMs));
                    } else {
                        router.await(waitMs);
                        wakePending.set(false);
                    }
                    round.lock();
                    try {
                        flushHeld(router);
                        sendAnswers(router);
                        for (int i = 0; i < MAX_READ_PER_ROUND && !servedByCaller && !socketThread.closing(); i++) {
                            if (!readOne(router)) {
                                break;
                            }
                        }
                        sendAnswers(router);
                        expire(router, config.clock().getAsLong());
                    } finally {
                        round.unlock();
                    }
                } catch (RuntimeException e) {
                    if (socketThread.ends(e)) {
                        break;
                    }
                    LOG.log(System.Logger.Level.WARNING, "engine bridge " + endpoint + ": " + ZmqRuntime.describe(e), e);
                    // never spin on a fault that repeats
                    java.util.concurrent.locks.LockSupport.parkNanos(10_000_000L);
                }
            }
        } finally {
            round.lock();
            try {
                // claim what is unanswered first (later answers are then refused), send what was
                // answered before, and only then refuse to queue more
                for (BridgeCall c : pending.values()) {
                    if (c.claim()) {
                        deliver(router, c, BridgeCodec.encodeError(c.id(), "node closing"));
                    }
                }
                sendAnswers(router);
                stopped = true;
                sendAnswers(router);
                pending.clear();
                inFlight = 0;
                // what callers have not read by now is not sent: the socket closes
                flushHeld(router);
                dropHeld();
            } catch (RuntimeException e) {
                stopped = true;
                LOG.log(System.Logger.Level.DEBUG, "engine bridge closing: " + ZmqRuntime.describe(e), e);
            } finally {
                round.unlock();
            }
            router.close();
        }
    }

    private long waitMillis(long nowNs) {
        long wait = HOUSEKEEPING_NS;
        if (!pending.isEmpty()) {
            BridgeCall head = pending.values().iterator().next();
            wait = Math.min(wait, Math.max(0, head.deadlineNs - nowNs));
        }
        if (!held.isEmpty()) {
            // a ROUTER cannot say when one caller's queue has room again: look every 2 ms
            wait = Math.min(wait, HELD_RETRY_NS);
        }
        return Math.max(1, TimeUnit.NANOSECONDS.toMillis(wait + 999_999));
    }

    private void sendAnswers(BridgeTransport router) {
        for (Outgoing o; (o = outbox.poll()) != null; ) {
            if (o.call() != null) {
                pending.remove(o.call().seq);
                // before the send: a caller holding its answer sees the count without it
                inFlight = pending.size();
            }
            if (o.call() != null) {
                deliver(router, o.call(), o.frame());
            } else {
                trySend(router, o.identity(), o.reqFraming(), o.frame(), false);
            }
        }
    }

    /** Sends the answer to a call handed to the handler, or puts it into its batch's reply. */
    private void deliver(BridgeTransport router, BridgeCall c, byte[] frame) {
        if (c.batch == null) {
            trySend(router, c.identity, c.reqFraming, frame, true);
        } else {
            c.batch.handed = true;
            fill(router, c.batch, c.index, frame);
        }
    }

    /** One call's reply into its batch; the batch's frame goes out with the last. */
    private void fill(BridgeTransport router, BatchReply b, int index, byte[] frame) {
        if (b.frames[index] != null) {
            return;
        }
        b.frames[index] = frame;
        if (--b.missing == 0) {
            trySend(router, b.identity, b.reqFraming, BridgeCodec.encodeBatchReply(b.id, java.util.Arrays.asList(b.frames), b.compact, b.kept),
                    b.handed);
        }
    }

    /** Reads and handles one message; false when none is waiting. */
    private boolean readOne(BridgeTransport router) {
        BridgeTransport.Message m = router.receive();
        if (m == null) {
            return false;
        }
        if (m.closed() != null) {
            // the transport closed a connection for what it sent: reported as bad input (nothing to answer)
            rejected.incrementAndGet();
            LOG.log(System.Logger.Level.WARNING, "engine bridge " + endpoint + ": " + m.closed());
            reportRejected(config.clock().getAsLong(), new byte[0], new BridgeDecoded.Rejected(null, null,
                    new Rejection(RejectReason.BAD_FRAMING, m.closed(), false)));
            return true;
        }
        byte[] identity = m.identity();
        List<byte[]> frames = m.frames();
        int parts = m.parts();
        long atNs = config.clock().getAsLong();
        received.incrementAndGet();
        byte[] payload;
        boolean reqFraming;
        if (parts == 1) {
            payload = frames.get(0);
            reqFraming = false;
        } else if (parts == 2 && frames.get(0).length == 0) {
            payload = frames.get(1);
            reqFraming = true;
        } else {
            rejected.incrementAndGet();
            boolean req = parts > 0 && frames.get(0).length == 0;
            BridgeDecoded.Rejected r = new BridgeDecoded.Rejected(null, null, new Rejection(RejectReason.BAD_FRAMING,
                    parts + " frames after the routing id; send one frame (DEALER) or an empty frame and one (REQ)", false));
            reportRejected(atNs, frames.isEmpty() ? new byte[0] : frames.get(frames.size() - 1), r);
            trySend(router, identity, req, BridgeCodec.encodeError(r), false);
            return true;
        }
        BridgeSession session = sessions.computeIfAbsent(ByteBuffer.wrap(identity), k -> new BridgeSession());
        switch (BridgeCodec.decode(payload, config.limits(), session)) {
            case BridgeDecoded.Rejected r -> {
                rejected.incrementAndGet();
                reportRejected(atNs, payload, r); // journaled before its answer leaves
                trySend(router, identity, reqFraming, BridgeCodec.encodeError(r), false);
            }
            case BridgeDecoded.Request ok -> dispatch(router, identity, reqFraming, ok.request(), atNs);
            case BridgeDecoded.Batch b -> dispatchBatch(router, identity, reqFraming, b, payload, atNs);
        }
        return true;
    }

    /**
     * A batch: each call as if it came alone, in order (an engine hook handed to the handler, the
     * others answered at once), the replies gathered into one frame sent when every call is answered.
     */
    private void dispatchBatch(BridgeTransport router, byte[] identity, boolean reqFraming, BridgeDecoded.Batch batch,
                               byte[] payload, long atNs) {
        BatchReply reply = new BatchReply(batch.id(), identity, reqFraming, batch.calls().size(), batch.compact(),
                batch.agreed(), batch.brief());
        if (batch.calls().isEmpty()) {
            trySend(router, identity, reqFraming, BridgeCodec.encodeBatchReply(batch.id(), List.of()), false);
            return;
        }
        for (int i = 0; i < batch.calls().size(); i++) {
            switch (batch.calls().get(i)) {
                case BridgeDecoded.Rejected r -> {
                    rejected.incrementAndGet();
                    reportRejected(atNs, payload, r);
                    fill(router, reply, i, BridgeCodec.encodeError(r));
                }
                case BridgeDecoded.Request ok -> {
                    byte[] now = take(router, identity, reqFraming, ok.request(), atNs, reply, i);
                    if (now != null) {
                        fill(router, reply, i, now);
                    }
                }
                case BridgeDecoded.Batch nested -> fill(router, reply, i,
                        BridgeCodec.encodeError(nested.id(), "INVALID_VALUE: a batch cannot hold a batch"));
            }
        }
    }

    private void reportRejected(long atNs, byte[] frame, BridgeDecoded.Rejected r) {
        try {
            handler.onRejected(atNs, frame, r);
        } catch (Exception | StackOverflowError ex) {
            handlerErrors.incrementAndGet();
            LOG.log(System.Logger.Level.WARNING, "engine bridge handler threw on a rejected request: " + ZmqRuntime.describe(ex), ex);
        }
    }

    private void dispatch(BridgeTransport router, byte[] identity, boolean reqFraming, BridgeRequest request, long atNs) {
        byte[] now = take(router, identity, reqFraming, request, atNs, null, 0);
        if (now != null) {
            trySend(router, identity, reqFraming, now, false);
        }
    }

    /**
     * Takes one call: returns the answer the server gives at once (ping, hello, busy), or hands an
     * engine hook to the handler and returns {@code null} (its answer comes later; when the handler
     * throws, it is given here through {@link #deliver}). {@code batch}: the batch it came in, or null.
     */
    private byte[] take(BridgeTransport router, byte[] identity, boolean reqFraming, BridgeRequest request, long atNs,
                        BatchReply batch, int index) {
        switch (request.call()) {
            case HookCall.Ping p -> {
                control.incrementAndGet();
                return BridgeCodec.encodeEmpty(request.id());
            }
            case HookCall.Hello h -> {
                control.incrementAndGet();
                try {
                    node = Objects.requireNonNull(handler.onHello(h, node), "onHello returned null");
                } catch (Exception | StackOverflowError ex) {
                    handlerErrors.incrementAndGet();
                    LOG.log(System.Logger.Level.WARNING, "engine bridge handler threw on a hello: " + ZmqRuntime.describe(ex), ex);
                }
                String mismatch = BridgeCodec.helloMismatch(h, node);
                return mismatch == null
                        ? BridgeCodec.encodeHello(request.id(), node)
                        : BridgeCodec.encodeError(request.id(), mismatch);
            }
            case HookCall.Engine e -> {
                ArrayDeque<Held> unread = held.get(ByteBuffer.wrap(identity));
                if (unread != null) {
                    // back-pressure before applying: this caller has not read the replies it has
                    busy.incrementAndGet();
                    return BridgeCodec.encodeError(request.id(),
                            "busy: " + unread.size() + " replies wait for this caller to read them");
                }
                if (pending.size() >= config.maxInFlight()) {
                    busy.incrementAndGet();
                    return BridgeCodec.encodeError(request.id(),
                            "busy: " + pending.size() + " calls already wait for the node");
                }
                long seq = nextSeq++;
                BridgeCall call = new BridgeCall(this, request, atNs, identity, reqFraming, seq,
                        atNs + config.replyTimeout().toNanos(), batch, index);
                pending.put(seq, call);
                inFlight = pending.size();
                handedOff.incrementAndGet();
                if (batch != null) {
                    batch.handed = true;
                }
                try {
                    handler.onHook(call);
                } catch (Exception | StackOverflowError ex) {
                    handlerErrors.incrementAndGet();
                    LOG.log(System.Logger.Level.WARNING, "engine bridge handler threw on " + call + ": " + ZmqRuntime.describe(ex), ex);
                    if (call.claim()) {
                        pending.remove(seq);
                        inFlight = pending.size();
                        deliver(router, call, BridgeCodec.encodeError(request.id(),
                                "node failed to take the call: " + ZmqRuntime.describe(ex)));
                    }
                }
                return null;
            }
        }
    }

    /** Answers, with "timed out", every call whose deadline passed. */
    private void expire(BridgeTransport router, long nowNs) {
        Iterator<BridgeCall> it = pending.values().iterator();
        while (it.hasNext()) {
            BridgeCall c = it.next();
            if (c.deadlineNs > nowNs) {
                break;
            }
            it.remove();
            inFlight = pending.size();
            if (c.claim()) {
                timedOut.incrementAndGet();
                deliver(router, c, BridgeCodec.encodeError(c.id(), "timed out: the node did not answer "
                        + c.hook().wireName() + " within " + config.replyTimeout().toMillis() + " ms"));
            }
        }
        inFlight = pending.size();
    }

    /**
     * Sends a reply without blocking. Behind replies already held for its caller, or when the
     * caller's queue on the socket is full, it is held (a reply to a call not handed on only while
     * fewer than {@code maxInFlight} wait); to a caller that has gone it is dropped and counted.
     * {@code handed}: the answer to a call handed to the handler.
     */
    private void trySend(BridgeTransport router, byte[] identity, boolean reqFraming, byte[] frame, boolean handed) {
        ByteBuffer caller = ByteBuffer.wrap(identity);
        ArrayDeque<Held> q = held.get(caller);
        if (q == null) {
            BridgeTransport.Send r = router.send(identity, reqFraming, frame);
            if (r == BridgeTransport.Send.SENT) {
                return;
            }
            if (r == BridgeTransport.Send.GONE) {
                dropped(handed);
                return;
            }
            q = new ArrayDeque<>();
            held.put(caller, q);
        } else if (!handed && q.size() >= config.maxInFlight()) {
            dropped(false);
            return;
        }
        q.add(new Held(identity, reqFraming, frame, handed));
        heldCount++;
    }

    /** Sends what is held, per caller in order, until a caller's queue is full again. */
    private void flushHeld(BridgeTransport router) {
        if (held.isEmpty()) {
            return;
        }
        Iterator<ArrayDeque<Held>> it = held.values().iterator();
        while (it.hasNext()) {
            ArrayDeque<Held> q = it.next();
            while (!q.isEmpty()) {
                Held h = q.peek();
                BridgeTransport.Send r = router.send(h.identity(), h.reqFraming(), h.frame());
                if (r == BridgeTransport.Send.FULL) {
                    break;
                }
                if (r == BridgeTransport.Send.GONE) {
                    for (Held g : q) {
                        dropped(g.handed());
                    }
                    heldCount -= q.size();
                    q.clear();
                    break;
                }
                q.poll();
                heldCount--;
            }
            if (q.isEmpty()) {
                it.remove();
            }
        }
    }

    /** Drops, counted, every reply still held (the server is closing). */
    private void dropHeld() {
        for (ArrayDeque<Held> q : held.values()) {
            for (Held g : q) {
                dropped(g.handed());
            }
        }
        held.clear();
        heldCount = 0;
    }

    private void dropped(boolean handed) {
        undeliverable.incrementAndGet();
        if (handed) {
            undeliverableApplied.incrementAndGet();
        }
    }

    // ---------------------------------------------------------------- close

    @Override
    public void close() {
        socketThread.close(() -> {
            wake();
            if (socketThread.thread().isAlive()) {
                joinBounded(socketThread.thread());
            }
            transport.release();
        });
    }

    /** Closes on a short-lived thread of its own; never blocks the caller. */
    CompletableFuture<Void> closeAsync() {
        return socketThread.closeAsync("kvledger-engine-bridge-closer", this::close);
    }

    /** Waits for the socket thread; interrupts it once if a handler keeps it past 5 s. */
    private static void joinBounded(Thread t) {
        boolean interrupted = false;
        long deadline = System.nanoTime() + 5_000_000_000L;
        boolean kicked = false;
        while (t.isAlive()) {
            try {
                t.join(200);
            } catch (InterruptedException e) {
                interrupted = true;
            }
            if (!kicked && System.nanoTime() > deadline) {
                kicked = true;
                t.interrupt();
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }
}
