package io.kvledger.zmq;

import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.event.NodeEventSink;
import io.kvledger.wire.NotifyEvents;
import io.kvledger.wire.RejectReason;
import io.kvledger.wire.Rejection;
import java.io.ByteArrayOutputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.zeromq.SocketType;
import org.zeromq.ZMQ;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * A MoRIIO notify listener: a ROUTER bound where the Python worker binds its own (see
 * {@link NotifyListenerConfig#forRank}), receiving {@code [identity, payload]} exactly as Python
 * DEALERs send it. Every message becomes one {@link InboundFrame} whose event is the decoded
 * notify ({@code RemoteBlocksReceived}, {@code WriteDoneReceived}, {@code ReleaseReceived},
 * {@code RawCompletionReceived}) or a {@code FrameRejected} with the reason, the bytes and whether
 * the same frame would have ended the Python listener thread. A message with more than one frame
 * after the identity (a DEALER that added an empty delimiter) is rejected as
 * {@code BAD_FRAMING}: the Python listener's 2-tuple unpack raises on it. Such a rejection keeps
 * at most {@link io.kvledger.wire.WireLimits#keptRejectedBytes()} (64 KiB by default) of the
 * message in total, however many frames it has and however large they are (each frame is still
 * bounded by {@link NotifyListenerConfig#maxMessageBytes()}); the reason lists the sizes.
 *
 * <p>One thread ({@code kvledger-notify-listener-<port>}) owns the socket: it receives, decodes
 * and offers to the sink, backing off while the sink is full (ZMQ then stops reading, so nothing
 * is lost). Nothing that arrives can end that thread; a sink that throws loses that one frame,
 * counted in {@link #sinkErrors()}.
 *
 * <p>Two shapes of sink: {@link #open} hands whole {@link InboundFrame}s (identity, frames and
 * event; {@code kvledger listen} journals them) to an {@link EventSink} and backs off for as long
 * as it refuses; {@link #openForNode} hands each frame's {@link NodeEvent} to a node's
 * {@link NodeEventSink} and backs off for at most a bound (default 1 s), then drops the event and
 * counts it in {@link #refused()} (and logs the first and every 1024th refusal).
 */
public final class NotifyListenerAdapter implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(NotifyListenerAdapter.class.getName());
    /** Frame sizes of one multi-part message listed in its rejection; the rest are counted. */
    private static final int MAX_LISTED_SIZES = 16;

    private final NotifyListenerConfig config;
    private final EventSink<? super InboundFrame> sink;
    private final NodeEventSink nodeSink;
    private final long refuseAfterNs;
    private final ZMQ.Context ctx;
    private final SocketThread socketThread;
    private volatile String endpoint;

    private final AtomicLong received = new AtomicLong();
    private final AtomicLong rejected = new AtomicLong();
    private final AtomicLong abandoned = new AtomicLong();
    private final AtomicLong sinkErrors = new AtomicLong();
    private final AtomicLong loopErrors = new AtomicLong();
    private final AtomicLong refused = new AtomicLong();

    private NotifyListenerAdapter(NotifyListenerConfig config, EventSink<? super InboundFrame> sink,
                                  NodeEventSink nodeSink, Duration refuseAfter) {
        this.config = config;
        this.sink = sink;
        this.nodeSink = nodeSink;
        this.refuseAfterNs = refuseAfter.toNanos();
        this.ctx = ZmqRuntime.context("notify");
        this.socketThread = new SocketThread("kvledger-notify-listener", this::run);
    }

    /**
     * Binds and starts listening; returns once bound.
     *
     * @throws IllegalStateException when the endpoint cannot be bound (the message says why)
     */
    public static NotifyListenerAdapter open(NotifyListenerConfig config, EventSink<? super InboundFrame> sink) {
        return start(new NotifyListenerAdapter(config, Objects.requireNonNull(sink, "sink"), null, Duration.ZERO));
    }

    /**
     * Binds and starts listening for a node: each frame's event (decoded notify or
     * {@code FrameRejected}) is offered to {@code sink}; a refused event is retried for up to
     * {@link BoundedOffer#DEFAULT_BOUND} (1 s), then dropped and counted in {@link #refused()}.
     *
     * @throws IllegalStateException when the endpoint cannot be bound (the message says why)
     */
    static NotifyListenerAdapter openForNode(NotifyListenerConfig config, NodeEventSink sink) {
        return openForNode(config, sink, BoundedOffer.DEFAULT_BOUND);
    }

    /**
     * As {@link #openForNode(NotifyListenerConfig, NodeEventSink)}, retrying a refused event for
     * up to {@code refuseAfter} (zero: offer once).
     */
    public static NotifyListenerAdapter openForNode(NotifyListenerConfig config, NodeEventSink sink,
                                                    Duration refuseAfter) {
        return start(new NotifyListenerAdapter(config, null, Objects.requireNonNull(sink, "sink"),
                BoundedOffer.checked(refuseAfter)));
    }

    private static NotifyListenerAdapter start(NotifyListenerAdapter a) {
        NotifyListenerConfig config = a.config;
        a.endpoint = a.socketThread.start(a::close, "notify listener", config.bindEndpoint(), "kvledger-notify-listener-");
        return a;
    }

    /**
     * The received frames as a {@code Flux}: binds on subscription (off the subscribing thread),
     * buffers up to {@code capacity} frames ahead of demand, and closes the listener when the
     * subscription ends.
     */
    static Flux<InboundFrame> receive(NotifyListenerConfig config, int capacity) {
        return receive(config, capacity, endpoint -> { });
    }

    /**
     * As {@link #receive(NotifyListenerConfig, int)}, telling {@code onBound} the endpoint actually
     * bound (an ephemeral port's number, for a caller that prints or advertises it) before the
     * first frame.
     */
    static Flux<InboundFrame> receive(NotifyListenerConfig config, int capacity, Consumer<String> onBound) {
        return Flux.usingWhen(
                Mono.fromCallable(() -> {
                    BoundedFluxSink<InboundFrame> s = new BoundedFluxSink<>(capacity);
                    NotifyListenerAdapter a = open(config, s);
                    try {
                        onBound.accept(a.endpoint());
                    } catch (RuntimeException e) {
                        a.close();
                        throw e;
                    }
                    return new Opened(a, s);
                }).subscribeOn(Schedulers.boundedElastic()),
                o -> o.sink().flux(),
                o -> Mono.fromFuture(o.adapter().closeAsync()));
    }

    private record Opened(NotifyListenerAdapter adapter, BoundedFluxSink<InboundFrame> sink) {}

    /** The endpoint actually bound, e.g. {@code tcp://127.0.0.1:54321} for an ephemeral port. */
    public String endpoint() {
        return endpoint;
    }

    public int port() {
        String e = endpoint;
        return ZmqRuntime.portOf(e);
    }

    /** Messages received (each became exactly one frame offered to the sink, or was abandoned on close). */
    public long received() {
        return received.get();
    }

    /** Messages that became {@code FrameRejected}. */
    public long rejected() {
        return rejected.get();
    }

    /** Frames the sink had no room for when the listener was closed. */
    long abandonedOnClose() {
        return abandoned.get();
    }

    /**
     * Events a node sink refused for longer than the bound and that were dropped
     * ({@link #openForNode} only; always 0 for {@link #open}).
     */
    public long refused() {
        return refused.get();
    }

    /** Frames lost because the sink threw. */
    long sinkErrors() {
        return sinkErrors.get();
    }

    /** The listener thread's id (tests measure what it allocates). */
    long threadId() {
        return socketThread.thread().threadId();
    }

    /** Whether the listener thread is alive (it only ends on close). */
    public boolean isRunning() {
        return socketThread.isRunning();
    }

    /**
     * A notify ROUTER bound as {@code config} says (linger 0, ZMQ's message cap, the receive
     * high-water mark); {@code null} when binding failed, which {@code bound} then carries.
     */
    static ZMQ.Socket bindRouter(ZMQ.Context ctx, NotifyListenerConfig config, CompletableFuture<String> bound) {
        ZMQ.Socket router = null;
        try {
            router = ctx.socket(SocketType.ROUTER);
            router.setLinger(0);
            router.setMaxMsgSize(config.maxMessageBytes());
            router.setRcvHWM(config.receiveHwm());
            router.setIPv6(ZmqRuntime.ipv6(config.bindEndpoint()));
            router.bind(config.bindEndpoint());
            bound.complete(router.getLastEndpoint());
            return router;
        } catch (RuntimeException e) {
            ZmqRuntime.closeQuietly(router);
            bound.completeExceptionally(e);
            return null;
        }
    }

    private void run() {
        ZMQ.Socket router = bindRouter(ctx, config, socketThread.bound());
        if (router == null) {
            return;
        }
        endpoint = socketThread.bound().join();
        NotifyEvents events = new NotifyEvents(config.limits());
        long seq = 0;
        try {
            while (!socketThread.closing()) {
                byte[] identity;
                List<byte[]> frames;
                try {
                    identity = router.recv(0);
                    if (identity == null) {
                        continue;
                    }
                    byte[] first = router.recv(0);
                    if (first == null) {
                        first = new byte[0];
                    }
                    Parts parts = router.hasReceiveMore() ? Parts.multi(router, first, config.limits().keptRejectedBytes())
                            : null;
                    frames = parts == null ? List.of(first) : parts.kept;
                    long atNs = config.clock().getAsLong();
                    NodeEvent event = parts == null ? events.toEvent(first, atNs) : parts.rejection(atNs);
                    InboundFrame in = new InboundFrame(seq++, atNs, endpoint, identity, frames, event);
                    received.incrementAndGet();
                    if (in.rejected()) {
                        rejected.incrementAndGet();
                    }
                    deliver(in);
                } catch (RuntimeException e) {
                    if (socketThread.ends(e)) {
                        break;
                    }
                    loopErrors.incrementAndGet();
                    LOG.log(System.Logger.Level.WARNING, "notify listener " + endpoint + ": " + ZmqRuntime.describe(e), e);
                } catch (Error e) {
                    if (e instanceof VirtualMachineError) {
                        throw e;
                    }
                    loopErrors.incrementAndGet();
                    LOG.log(System.Logger.Level.ERROR, "notify listener " + endpoint + ": " + ZmqRuntime.describe(e), e);
                }
            }
        } finally {
            ZmqRuntime.closeQuietly(router);
        }
    }

    /**
     * The frames of a multi-part message (more than one frame after the identity), received to the
     * end but kept only up to {@code budget} bytes in total, however many frames there are and
     * however large: the first frames' leading bytes, in order. The sizes of the first
     * {@link #MAX_LISTED_SIZES} frames, the frame count and the total are kept for the reason.
     */
    static final class Parts {
        final List<byte[]> kept = new ArrayList<>(2);
        final StringBuilder sizes = new StringBuilder();
        int count;
        long total;
        int keptBytes;

        static Parts multi(ZMQ.Socket router, byte[] first, int budget) {
            Parts p = new Parts();
            p.add(first, budget);
            while (router.hasReceiveMore()) {
                byte[] f = router.recv(0);
                p.add(f == null ? new byte[0] : f, budget);
            }
            return p;
        }

        /** The same, for a message whose frames are already received ({@link NotifyRelay} keeps them all to forward). */
        static Parts of(List<byte[]> frames, int budget) {
            Parts p = new Parts();
            for (byte[] f : frames) {
                p.add(f, budget);
            }
            return p;
        }

        private void add(byte[] f, int budget) {
            if (count < MAX_LISTED_SIZES) {
                sizes.append(count == 0 ? "" : ", ").append(f.length);
            }
            count++;
            total += f.length;
            int room = budget - keptBytes;
            if (room > 0) {
                byte[] k = f.length <= room ? f : Arrays.copyOf(f, room);
                kept.add(k);
                keptBytes += k.length;
            }
        }

        NodeEvent.FrameRejected rejection(long atNs) {
            ByteArrayOutputStream all = new ByteArrayOutputStream(keptBytes);
            for (byte[] k : kept) {
                all.writeBytes(k);
            }
            String detail = count + " frames after the identity (sizes " + sizes
                    + (count > MAX_LISTED_SIZES ? ", ... " + (count - MAX_LISTED_SIZES) + " more" : "") + "; " + total
                    + " bytes in all); a MoRIIO DEALER sends exactly one, with no empty delimiter; "
                    + (keptBytes == total ? "the frames are kept concatenated"
                            : "the first " + keptBytes + " bytes of the frames, concatenated, are kept");
            Rejection r = new Rejection(RejectReason.BAD_FRAMING, detail, true);
            return new NodeEvent.FrameRejected(atNs, r.text(), all.toByteArray(), true);
        }
    }

    private void deliver(InboundFrame in) {
        try {
            if (nodeSink != null) {
                switch (BoundedOffer.offer(nodeSink, in.event(), refuseAfterNs, socketThread::closing)) {
                    case TAKEN -> { }
                    case CLOSING -> abandoned.incrementAndGet();
                    case REFUSED -> BoundedOffer.logRefused(LOG, "notify listener " + endpoint, refused.incrementAndGet(),
                            in.event(), refuseAfterNs);
                }
            } else if (!Backoff.offer(sink, in, socketThread::closing)) {
                abandoned.incrementAndGet();
            }
        } catch (RuntimeException e) {
            sinkErrors.incrementAndGet();
            LOG.log(System.Logger.Level.WARNING, "notify listener " + endpoint + ": sink threw on frame " + in.seq() + ": "
                    + ZmqRuntime.describe(e), e);
        }
    }

    /** Closes the socket, terminates the context and ends the thread; idempotent. Blocks until done. */
    @Override
    public void close() {
        socketThread.close(() -> {
            ctx.term();
            joinQuietly(socketThread.thread());
        });
    }

    /** Closes on a short-lived thread of its own; never blocks the caller. */
    CompletableFuture<Void> closeAsync() {
        return socketThread.closeAsync("kvledger-notify-listener-closer", this::close);
    }

    static void joinQuietly(Thread t) {
        boolean interrupted = false;
        while (t.isAlive()) {
            try {
                t.join();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }
}
