package io.kvledger.zmq;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.event.NodeEventSink;
import io.kvledger.wire.AgentMetadata;
import io.kvledger.wire.DecodeResult;
import io.kvledger.wire.HandshakeCodec;
import io.kvledger.wire.HandshakeRequest;
import io.kvledger.wire.LayerMap;
import io.kvledger.wire.OutboundFrame;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.zeromq.ZMQ;
import org.zeromq.SocketType;
import reactor.core.publisher.Mono;

/**
 * The handshake initiator (protocol spec 3.2): for each handshake a short-lived DEALER connects
 * to the peer's handshake ROUTER, sends {@code get_meta_msg} and expects two replies of exactly
 * two frames each, an empty frame then the payload: the agent metadata, then the layer map.
 * Unlike the Python initiator, which blocks forever on a silent peer, every handshake has a
 * deadline; a timeout, a malformed reply or an unreachable address completes it with a
 * {@code NodeEvent.HandshakeFailed} (and a failed future), a good reply with
 * {@code NodeEvent.HandshakeCompleted} and the {@link HandshakeResult}.
 *
 * <p>Handshakes run on up to {@code maxConcurrent} threads ({@code kvledger-handshake-client-N}),
 * each owning its DEALER from connect to close. The methods that start a handshake never block.
 *
 * <p>Two shapes of event sink: {@link #open} offers the result events to an {@link EventSink}
 * and backs off for as long as it refuses; {@link #openForNode} offers them to a node's
 * {@link NodeEventSink}, retrying on a handshake thread for up to a bound (default 1 s) and
 * offering once on a caller's thread (a handshake refused at once), then drops and counts the
 * event in {@link #refused()}. The returned future completes either way.
 */
public final class HandshakeClient implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(HandshakeClient.class.getName());

    private final Duration timeout;
    private final EventSink<? super NodeEvent> events;
    private final NodeEventSink nodeSink;
    private final long refuseAfterNs;
    private final AtomicLong refused = new AtomicLong();
    private final AtomicLong abandoned = new AtomicLong();
    private final LongSupplier clock;
    private final ZMQ.Context ctx;
    private final ThreadPoolExecutor pool;
    private final CloseOnce closeOnce = new CloseOnce();

    private HandshakeClient(Duration timeout, int maxConcurrent, EventSink<? super NodeEvent> events, NodeEventSink nodeSink,
                            Duration refuseAfter, LongSupplier clock) {
        this.timeout = timeout;
        this.events = events;
        this.nodeSink = nodeSink;
        this.refuseAfterNs = refuseAfter.toNanos();
        this.clock = clock;
        this.ctx = ZmqRuntime.context("handshake-client");
        AtomicInteger n = new AtomicInteger();
        this.pool = new ThreadPoolExecutor(maxConcurrent, maxConcurrent, 30, TimeUnit.SECONDS, new ArrayBlockingQueue<>(1024),
                r -> ZmqRuntime.thread("kvledger-handshake-client-" + n.incrementAndGet(), r));
        this.pool.allowCoreThreadTimeOut(true);
    }

    /**
     * @param timeout       how long a handshake may take from connect to the second reply
     * @param maxConcurrent handshakes in flight at once (more wait, up to 1024, then fail)
     */
    public static HandshakeClient open(Duration timeout, int maxConcurrent, EventSink<? super NodeEvent> events, LongSupplier clock) {
        if (timeout.isNegative() || timeout.isZero() || maxConcurrent < 1) {
            throw new IllegalArgumentException("timeout must be positive and maxConcurrent at least 1");
        }
        return new HandshakeClient(timeout, maxConcurrent, Objects.requireNonNull(events, "events"), null, Duration.ZERO,
                clock);
    }

    /**
     * Opens a client for a node: {@code HandshakeCompleted}/{@code HandshakeFailed} are offered to
     * {@code sink}, a refused one retried for up to {@link BoundedOffer#DEFAULT_BOUND} (1 s), then
     * dropped and counted in {@link #refused()}.
     */
    static HandshakeClient openForNode(Duration timeout, int maxConcurrent, NodeEventSink sink, LongSupplier clock) {
        return openForNode(timeout, maxConcurrent, sink, clock, BoundedOffer.DEFAULT_BOUND);
    }

    /** As {@link #openForNode(Duration, int, NodeEventSink, LongSupplier)} with a refusal bound (zero: offer once). */
    static HandshakeClient openForNode(Duration timeout, int maxConcurrent, NodeEventSink sink, LongSupplier clock,
                                              Duration refuseAfter) {
        if (timeout.isNegative() || timeout.isZero() || maxConcurrent < 1) {
            throw new IllegalArgumentException("timeout must be positive and maxConcurrent at least 1");
        }
        return new HandshakeClient(timeout, maxConcurrent, null, Objects.requireNonNull(sink, "sink"),
                BoundedOffer.checked(refuseAfter), clock);
    }

    /** Result events a node sink refused for longer than the bound, dropped ({@link #openForNode} only). */
    long refused() {
        return refused.get();
    }

    /** Result events not delivered because the client was closing. */
    long abandonedOnClose() {
        return abandoned.get();
    }

    /** Starts the handshake a {@code StartHandshake} effect asks for. */
    public CompletableFuture<HandshakeResult> start(Effect.StartHandshake e) {
        return handshake(e.key(), e.host(), e.port());
    }

    /** Lazily starts a handshake when subscribed. */
    Mono<HandshakeResult> handshakeMono(String key, String host, int port) {
        return Mono.fromFuture(() -> handshake(key, host, port));
    }

    /** Starts a handshake with {@code tcp://host:port}; the future and an event tell how it ended. */
    CompletableFuture<HandshakeResult> handshake(String key, String host, int port) {
        CompletableFuture<HandshakeResult> result = new CompletableFuture<>();
        String endpoint = OutboundFrame.tcpEndpoint(host, port);
        if (closeOnce.closing()) {
            failOnCaller(result, key, "handshake client closed");
            return result;
        }
        try {
            pool.execute(() -> run(result, key, endpoint, host, port));
        } catch (RejectedExecutionException e) {
            failOnCaller(result, key, closeOnce.closing() ? "handshake client closed" : "too many handshakes pending");
        }
        return result;
    }

    private void run(CompletableFuture<HandshakeResult> result, String key, String endpoint, String host, int port) {
        if (closeOnce.closing()) {
            fail(result, key, "handshake client closed");
            return;
        }
        if (host == null || host.isEmpty() || port <= 0 || port > 65535) {
            fail(result, key, "invalid handshake address " + endpoint);
            return;
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        ZMQ.Socket s = null;
        StallKicker kicker = null;
        try {
            kicker = new StallKicker(ctx);
            s = ctx.socket(SocketType.DEALER);
            s.setLinger(0);
            s.setMaxMsgSize(64L << 20);
            s.setIPv6(ZmqRuntime.ipv6(endpoint));
            s.connect(endpoint);
            kicker.connected(System.nanoTime());
            if (!s.send(HandshakeRequest.GET_META_MSG.bytes(), 0)) {
                fail(result, key, "cannot send get_meta_msg to " + endpoint + " (errno " + s.errno() + ")");
                return;
            }
            List<byte[]> first = reply(s, deadline, kicker);
            if (first == null) {
                fail(result, key, closeOnce.closing() ? "handshake client closed" : timedOut(endpoint, "the metadata reply"));
                return;
            }
            String bad = checkReply(first, "first");
            if (bad != null) {
                fail(result, key, bad + " from " + endpoint);
                return;
            }
            List<byte[]> second = reply(s, deadline, kicker);
            if (second == null) {
                fail(result, key, closeOnce.closing() ? "handshake client closed" : timedOut(endpoint, "the layer map reply"));
                return;
            }
            bad = checkReply(second, "second");
            if (bad != null) {
                fail(result, key, bad + " from " + endpoint);
                return;
            }
            HandshakeCodec codec = new HandshakeCodec();
            DecodeResult<AgentMetadata> md = codec.decodeMetadata(first.get(1));
            if (md.rejectionOrNull() != null) {
                fail(result, key, "undecodable agent metadata from " + endpoint + ": " + md.rejectionOrNull().text());
                return;
            }
            DecodeResult<LayerMap> lm = codec.decodeLayerMap(second.get(1));
            if (lm.rejectionOrNull() != null) {
                fail(result, key, "undecodable layer map from " + endpoint + ": " + lm.rejectionOrNull().text());
                return;
            }
            emit(new NodeEvent.HandshakeCompleted(clock.getAsLong(), key), true);
            result.complete(new HandshakeResult(key, endpoint, md.valueOrNull(), lm.valueOrNull()));
        } catch (RuntimeException e) {
            fail(result, key, ZmqRuntime.isTerm(e) || closeOnce.closing() ? "handshake client closed" : "handshake with " + endpoint + " failed: "
                    + ZmqRuntime.describe(e));
        } finally {
            ZmqRuntime.closeQuietly(s);
            if (kicker != null) {
                kicker.close();
            }
        }
    }

    private String timedOut(String endpoint, String what) {
        return "no " + what.replace("the ", "") + " from " + endpoint + " within " + timeout.toMillis()
                + " ms (the Python initiator would block forever)";
    }

    /** The frames of the next message, or {@code null} at the deadline. */
    private List<byte[]> reply(ZMQ.Socket s, long deadlineNs, StallKicker kicker) {
        List<byte[]> frames = new ArrayList<>(2);
        while (true) {
            long now = System.nanoTime();
            long leftMs = TimeUnit.NANOSECONDS.toMillis(deadlineNs - now);
            if (leftMs <= 0) {
                return null;
            }
            // wait in slices so the kicker can run (see StallKicker)
            long sliceMs = Math.max(1, TimeUnit.NANOSECONDS.toMillis(kicker.nanosToNextKick(now)));
            s.setReceiveTimeOut((int) Math.min(leftMs, sliceMs));
            byte[] f = s.recv(0);
            if (f == null) {
                if (closeOnce.closing()) {
                    return null;
                }
                kicker.maybeKick(System.nanoTime());
                continue;
            }
            frames.add(f);
            while (s.hasReceiveMore()) {
                byte[] more = s.recv(0);
                if (frames.size() < 8) {
                    frames.add(more == null ? new byte[0] : more);
                }
            }
            return frames;
        }
    }

    /** The Python initiator's check: {@code len(frames) == 2 and frames[0] == b""}. */
    static String checkReply(List<byte[]> frames, String which) {
        if (frames.size() != 2) {
            return "the " + which + " reply has " + frames.size() + " frames, expected 2";
        }
        if (frames.get(0).length != 0) {
            return "the " + which + " reply's first frame is " + frames.get(0).length + " bytes, expected the empty delimiter";
        }
        return null;
    }

    /** A failure on a handshake thread: a node sink's refusal is retried up to the bound. */
    private void fail(CompletableFuture<HandshakeResult> result, String key, String reason) {
        emit(new NodeEvent.HandshakeFailed(clock.getAsLong(), key, reason), true);
        result.completeExceptionally(new HandshakeException(key, reason));
    }

    /** A failure on the caller's thread (maybe the loop that drains the sink): a node sink is offered once. */
    private void failOnCaller(CompletableFuture<HandshakeResult> result, String key, String reason) {
        emit(new NodeEvent.HandshakeFailed(clock.getAsLong(), key, reason), false);
        result.completeExceptionally(new HandshakeException(key, reason));
    }

    private void emit(NodeEvent e, boolean mayWait) {
        if (nodeSink == null) {
            if (!Backoff.offer(events, e, closeOnce::closing)) {
                abandoned.incrementAndGet();
            }
            return;
        }
        long bound = mayWait ? refuseAfterNs : 0;
        switch (BoundedOffer.offer(nodeSink, e, bound, closeOnce::closing)) {
            case TAKEN -> { }
            case CLOSING -> abandoned.incrementAndGet();
            case REFUSED -> BoundedOffer.logRefused(LOG, "handshake client", refused.incrementAndGet(), e, bound);
        }
    }

    /** Fails every handshake in flight or waiting, closes their sockets and ends the threads. */
    @Override
    public void close() {
        closeOnce.close(() -> {
            pool.shutdown();
            // tasks notice `closing` within one wait slice and close their sockets; only then is
            // the context terminated (JeroMQ skips its shutdown for a context whose first socket
            // is created while term() runs, leaving that socket's threads running)
            ZmqRuntime.awaitThenTerminate(pool, ctx);
        });
    }

    CompletableFuture<Void> closeAsync() {
        return closeOnce.closeAsync("kvledger-handshake-client-closer", this::close);
    }
}
