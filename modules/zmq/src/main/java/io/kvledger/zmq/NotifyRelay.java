package io.kvledger.zmq;

import io.kvledger.core.event.NodeEvent;
import io.kvledger.wire.NotifyEvents;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.zeromq.ZMQ;

/**
 * A transparent interposer on one MoRIIO notify port: a ROUTER bound where the peers were told
 * to send (the tap port), which forwards every message it receives, unchanged and whether or not
 * it decodes, to the real notify ROUTER (the target), and hands each message with what it decoded
 * to (a {@code FrameRejected} when it did not) and whether it was forwarded to a sink (which
 * journals it).
 *
 * <p>Forwarding preserves the frames exactly: all the frames after the ROUTER identity, in order,
 * as one message (a DEALER that added an empty delimiter is forwarded with its delimiter, so the
 * real listener sees what it would have seen). Each sending DEALER gets its own forwarding DEALER
 * (created on its first message, configured as the Python notify DEALERs are: keepalive,
 * {@code SNDHWM=0}, short linger), so per-sender order is kept and the target sees one connection
 * per sender, as without the tap. The number of forwarding DEALERs is capped; the least recently
 * used is closed beyond it.
 *
 * <p>Unlike {@link NotifyListenerAdapter}, a multi-frame message is received whole (each frame
 * still bounded by {@link NotifyListenerConfig#maxMessageBytes()}) so that it can be forwarded;
 * its rejection keeps the same leading bytes the listener keeps.
 *
 * <p>One thread ({@code kvledger-notify-relay-<port>}) owns every socket; it also runs the
 * {@link StallKicker} workaround for the forwarding DEALERs' fresh connects. Nothing that arrives
 * can end it. A forward that fails (the DEALER refused the message, or ZMQ threw) is reported in
 * {@link Relayed#forwardFailure()}; with {@code SNDHWM=0} a target that is down does not fail the
 * send: the message waits in ZMQ until the target is up, as it would in the Python sender.
 */
public final class NotifyRelay implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(NotifyRelay.class.getName());
    /** How long the socket thread waits for a message before it looks at the kicker again. */
    private static final int POLL_MS = 20;
    /** How long a closing relay gives forwarded messages still queued in ZMQ to leave. */
    private static final int CLOSE_LINGER_MS = 500;

    /**
     * One message the relay received.
     *
     * @param frame          what it was, as a notify listener sees it (identity, frames, event)
     * @param target         the endpoint it was forwarded to
     * @param forwardFailure why it could not be handed to the forwarding DEALER, or {@code null}
     *                       when it was
     */
    public record Relayed(InboundFrame frame, String target, String forwardFailure) {
        public Relayed {
            Objects.requireNonNull(frame, "frame");
            Objects.requireNonNull(target, "target");
        }

        public boolean forwarded() {
            return forwardFailure == null;
        }
    }

    private final NotifyListenerConfig config;
    private final String target;
    private final int maxSenders;
    private final EventSink<? super Relayed> sink;
    private final ZMQ.Context ctx;
    private final SocketThread socketThread;
    private volatile String endpoint;

    private final AtomicLong received = new AtomicLong();
    private final AtomicLong rejected = new AtomicLong();
    private final AtomicLong forwarded = new AtomicLong();
    private final AtomicLong forwardFailed = new AtomicLong();
    private final AtomicLong abandoned = new AtomicLong();

    private NotifyRelay(NotifyListenerConfig config, String target, int maxSenders, EventSink<? super Relayed> sink) {
        this.config = config;
        this.target = target;
        this.maxSenders = maxSenders;
        this.sink = sink;
        this.ctx = ZmqRuntime.context("relay");
        this.socketThread = new SocketThread("kvledger-notify-relay", this::run);
    }

    /**
     * Binds {@code listen} and starts relaying to {@code targetEndpoint} ({@code tcp://HOST:PORT});
     * returns once bound.
     *
     * @param maxSenders how many forwarding DEALERs (one per sending peer) are kept open at most
     * @throws IllegalStateException when the listen endpoint cannot be bound (the message says why)
     */
    public static NotifyRelay open(NotifyListenerConfig listen, String targetEndpoint, int maxSenders,
                                   EventSink<? super Relayed> sink) {
        Objects.requireNonNull(targetEndpoint, "targetEndpoint");
        if (maxSenders < 1) {
            throw new IllegalArgumentException("maxSenders must be at least 1, got " + maxSenders);
        }
        NotifyRelay r = new NotifyRelay(listen, targetEndpoint, maxSenders, Objects.requireNonNull(sink, "sink"));
        r.endpoint = r.socketThread.start(r::close, "notify relay", listen.bindEndpoint(), "kvledger-notify-relay-");
        return r;
    }

    /** The endpoint actually bound (the tap port). */
    public String endpoint() {
        return endpoint;
    }

    int port() {
        String e = endpoint;
        return ZmqRuntime.portOf(e);
    }

    /** Where every message is forwarded. */
    String target() {
        return target;
    }

    /** Messages received. */
    long received() {
        return received.get();
    }

    /** Messages that did not decode (forwarded all the same). */
    long rejected() {
        return rejected.get();
    }

    /** Messages handed to a forwarding DEALER. */
    public long forwarded() {
        return forwarded.get();
    }

    /** Messages that could not be forwarded. */
    long forwardFailed() {
        return forwardFailed.get();
    }

    /** Messages the sink had no room for when the relay was closed (forwarded, not reported). */
    long abandonedOnClose() {
        return abandoned.get();
    }

    boolean isRunning() {
        return socketThread.isRunning();
    }

    private void run() {
        ZMQ.Socket router = NotifyListenerAdapter.bindRouter(ctx, config, socketThread.bound());
        if (router == null) {
            return;
        }
        endpoint = socketThread.bound().join();
        // a timed receive: the kicker must run while no message comes
        router.setReceiveTimeOut(POLL_MS);
        // access order: the least recently used sender's DEALER is evicted first
        Map<String, ZMQ.Socket> dealers = new LinkedHashMap<>(16, 0.75f, true);
        StallKicker kicker = new StallKicker(ctx);
        NotifyEvents events = new NotifyEvents(config.limits());
        int budget = config.limits().keptRejectedBytes();
        long seq = 0;
        try {
            while (!socketThread.closing()) {
                try {
                    byte[] identity = router.recv(0);
                    if (identity == null) {
                        if (!dealers.isEmpty()) {
                            kicker.maybeKick(System.nanoTime());
                        }
                        continue;
                    }
                    List<byte[]> frames = new ArrayList<>(1);
                    do {
                        byte[] f = router.recv(0);
                        frames.add(f == null ? new byte[0] : f);
                    } while (router.hasReceiveMore());
                    long atNs = config.clock().getAsLong();
                    String failure = forward(dealers, kicker, identity, frames);
                    NodeEvent event;
                    List<byte[]> kept;
                    if (frames.size() == 1) {
                        event = events.toEvent(frames.get(0), atNs);
                        kept = frames;
                    } else {
                        NotifyListenerAdapter.Parts parts = NotifyListenerAdapter.Parts.of(frames, budget);
                        event = parts.rejection(atNs);
                        kept = parts.kept;
                    }
                    InboundFrame in = new InboundFrame(seq++, atNs, endpoint, identity, kept, event);
                    received.incrementAndGet();
                    if (in.rejected()) {
                        rejected.incrementAndGet();
                    }
                    deliver(new Relayed(in, target, failure));
                    kicker.maybeKick(System.nanoTime());
                } catch (RuntimeException e) {
                    if (socketThread.ends(e)) {
                        break;
                    }
                    LOG.log(System.Logger.Level.WARNING, "notify relay " + endpoint + ": " + ZmqRuntime.describe(e), e);
                } catch (Error e) {
                    if (e instanceof VirtualMachineError) {
                        throw e;
                    }
                    LOG.log(System.Logger.Level.ERROR, "notify relay " + endpoint + ": " + ZmqRuntime.describe(e), e);
                }
            }
        } finally {
            ZmqRuntime.closeQuietly(router);
            for (ZMQ.Socket d : dealers.values()) {
                closeLingering(d);
            }
            dealers.clear();
            kicker.close();
        }
    }

    /** Forwards one message on its sender's DEALER; returns {@code null} or why it could not. */
    private String forward(Map<String, ZMQ.Socket> dealers, StallKicker kicker, byte[] identity, List<byte[]> frames) {
        String key = HexFormat.of().formatHex(identity);
        try {
            ZMQ.Socket s = dealers.get(key);
            if (s == null) {
                s = ZmqRuntime.notifyDealer(ctx, ZmqRuntime.ipv6(target));
                try {
                    s.connect(target);
                } catch (RuntimeException e) {
                    ZmqRuntime.closeQuietly(s);
                    throw e;
                }
                dealers.put(key, s);
                kicker.connected(System.nanoTime());
                var it = dealers.entrySet().iterator();
                while (dealers.size() > maxSenders && it.hasNext()) {
                    closeLingering(it.next().getValue());
                    it.remove();
                }
            }
            for (int i = 0; i < frames.size(); i++) {
                boolean more = i < frames.size() - 1;
                // JeroMQ keeps the array it sends: the received arrays are ours and never reused
                if (!s.send(frames.get(i), more ? ZMQ.DONTWAIT | ZMQ.SNDMORE : ZMQ.DONTWAIT)) {
                    forwardFailed.incrementAndGet();
                    return "ZMQ refused frame " + (i + 1) + " of " + frames.size() + " (errno " + s.errno() + ")";
                }
            }
            forwarded.incrementAndGet();
            return null;
        } catch (RuntimeException e) {
            if (ZmqRuntime.isTerm(e)) {
                throw e;
            }
            ZmqRuntime.closeQuietly(dealers.remove(key));
            forwardFailed.incrementAndGet();
            return ZmqRuntime.describe(e);
        }
    }

    /** Closes a forwarding DEALER, giving what it still holds a moment to leave. */
    private static void closeLingering(ZMQ.Socket s) {
        try {
            s.setLinger(CLOSE_LINGER_MS);
            s.close();
        } catch (RuntimeException e) {
            ZmqRuntime.closeQuietly(s);
        }
    }

    private void deliver(Relayed r) {
        try {
            if (!Backoff.offer(sink, r, socketThread::closing)) {
                abandoned.incrementAndGet();
            }
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "notify relay " + endpoint + ": sink threw on frame " + r.frame().seq()
                    + ": " + ZmqRuntime.describe(e), e);
        }
    }

    /**
     * Stops receiving, closes the forwarding DEALERs (each gets {@value #CLOSE_LINGER_MS} ms to
     * send what it still holds), terminates the context and ends the thread; idempotent; blocks
     * until done.
     */
    @Override
    public void close() {
        socketThread.close(() -> {
            NotifyListenerAdapter.joinQuietly(socketThread.thread());
            ctx.term();
        });
    }
}
