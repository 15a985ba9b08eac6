package io.kvledger.zmq;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.event.NodeEventSink;
import io.kvledger.wire.EffectFrames;
import io.kvledger.wire.OutboundFrame;
import io.kvledger.wire.WireEncodingException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.zeromq.ZMQ;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;

/**
 * Sends the reducer's notify effects ({@link Effect.Notify}: {@code SendRemoteBlocks}, {@code SendRelease},
 * {@code SendWriteDone}, {@code SendWriteFailed}) as the Python peers do: each as one frame (no
 * empty delimiter) on a DEALER cached per {@code tcp://host:port}, configured with TCP keepalive
 * (idle 30 s, interval 10 s, 3 probes), {@code SNDHWM=0} and {@code LINGER=0}. The host and port
 * come from the effect unchanged: the reducer already applied the port form each message type
 * uses (protocol spec 2.1).
 *
 * <p>{@link #publish} encodes on the caller's thread (so the caller's values are read where they
 * live) and never blocks: it hands the frame to the publisher thread
 * ({@code kvledger-notify-publisher}), which owns every DEALER. Failures (an unencodable value,
 * an unresolvable host, a port out of range, a full queue) become {@link AdapterEvent.SendFailed}
 * events. As with Python's DEALERs, frames to a peer that is not up yet wait in ZMQ until it is.
 *
 * <p>The publisher thread also runs the {@link StallKicker} workaround for a JeroMQ race that can
 * leave a fresh connection without a handshake.
 *
 * <p>{@code publish} and {@code send} may be called from any thread (the queue is thread-safe);
 * frames from one caller are sent in order.
 *
 * <p>Two shapes of event sink: {@link #open} reports every {@link AdapterEvent} to an
 * {@link EventSink} and backs off for as long as it refuses; {@link #openForNode} reports each
 * send failure as a {@code NodeEvent.NotifySendFailed} to a node's {@link NodeEventSink}. On the
 * publisher thread a refused event is retried for up to a bound (default 1 s); on a caller's
 * thread (a failure found in {@link #publish} itself, whose caller may be the very loop that
 * drains the sink) it is offered once. A dropped event is counted in {@link #refused()} and
 * logged. {@code FrameSent} events have no node event and are not reported to a node sink.
 */
public final class NotifyPublisher implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(NotifyPublisher.class.getName());
    private static final OutboundFrame STOP = new OutboundFrame("stop", 0, "stop", null, new byte[0]);

    private final PublisherConfig config;
    private final EventSink<? super AdapterEvent> events;
    private final NodeEventSink nodeSink;
    private final long refuseAfterNs;
    private final ArrayBlockingQueue<OutboundFrame> queue;
    private final ZMQ.Context ctx;
    private final Thread thread;
    private final ThreadLocal<EffectFrames> encoders = ThreadLocal.withInitial(EffectFrames::new);
    private final CloseOnce closeOnce = new CloseOnce();

    private final AtomicLong sent = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicLong eventsAbandoned = new AtomicLong();
    private final AtomicLong refused = new AtomicLong();

    private NotifyPublisher(PublisherConfig config, EventSink<? super AdapterEvent> events, NodeEventSink nodeSink,
                            Duration refuseAfter) {
        this.config = config;
        this.events = events;
        this.nodeSink = nodeSink;
        this.refuseAfterNs = refuseAfter.toNanos();
        this.queue = new ArrayBlockingQueue<>(config.queueCapacity());
        this.ctx = ZmqRuntime.context("publisher");
        this.thread = ZmqRuntime.thread("kvledger-notify-publisher", this::run);
    }

    public static NotifyPublisher open(PublisherConfig config, EventSink<? super AdapterEvent> events) {
        NotifyPublisher p = new NotifyPublisher(config, Objects.requireNonNull(events, "events"), null, Duration.ZERO);
        p.thread.start();
        return p;
    }

    /**
     * Opens a publisher for a node: send failures reach {@code sink} as
     * {@code NodeEvent.NotifySendFailed}; a refused one is retried (on the publisher thread) for
     * up to {@link BoundedOffer#DEFAULT_BOUND} (1 s), then dropped and counted in {@link #refused()}.
     */
    static NotifyPublisher openForNode(PublisherConfig config, NodeEventSink sink) {
        return openForNode(config, sink, BoundedOffer.DEFAULT_BOUND);
    }

    /** As {@link #openForNode(PublisherConfig, NodeEventSink)} with a refusal bound (zero: offer once). */
    public static NotifyPublisher openForNode(PublisherConfig config, NodeEventSink sink, Duration refuseAfter) {
        NotifyPublisher p = new NotifyPublisher(config, null, Objects.requireNonNull(sink, "sink"),
                BoundedOffer.checked(refuseAfter));
        p.thread.start();
        return p;
    }

    /**
     * Publishes a notify effect. Returns {@code false} for sends that failed at once (reported as
     * {@code SendFailed}); never throws, never blocks.
     */
    public boolean publish(Effect.Notify effect) {
        OutboundFrame f;
        try {
            f = encoders.get().encode(effect);
        } catch (WireEncodingException | IllegalArgumentException e) {
            fail(OutboundFrame.tcpEndpoint(effect.host(), effect.port()), EffectFrames.messageType(effect), null,
                    "cannot encode: " + e.getMessage(), new byte[0]);
            return false;
        }
        return send(f);
    }

    /** Sends an already encoded frame; same contract as {@link #publish}. */
    public boolean send(OutboundFrame frame) {
        if (closeOnce.closing()) {
            fail(frame.endpoint(), frame.messageType(), frame.transferId(), "publisher closed", frame.frame());
            return false;
        }
        if (!queue.offer(frame)) {
            fail(frame.endpoint(), frame.messageType(), frame.transferId(), "publisher queue full (" + config.queueCapacity()
                    + " frames waiting)", frame.frame());
            return false;
        }
        return true;
    }

    /** Publishes every notify effect of {@code effects} until disposed. */
    Disposable attach(Flux<? extends Effect.Notify> effects) {
        return effects.subscribe(this::publish, e -> LOG.log(System.Logger.Level.ERROR, "effect stream failed", e));
    }

    /** Frames handed to ZMQ. */
    public long sent() {
        return sent.get();
    }

    /** Sends that failed (each reported as a {@code SendFailed} event). */
    public long failed() {
        return failed.get();
    }

    /** Events the sink had no room for when the publisher closed. */
    long eventsAbandonedOnClose() {
        return eventsAbandoned.get();
    }

    /** Send-failure events a node sink refused for longer than the bound, dropped ({@link #openForNode} only). */
    public long refused() {
        return refused.get();
    }

    /** Frames waiting for the publisher thread. */
    int queued() {
        return queue.size();
    }

    private void run() {
        Map<String, ZMQ.Socket> dealers = new LinkedHashMap<>(16, 0.75f, true);
        StallKicker kicker = null;
        java.util.List<OutboundFrame> batch = new java.util.ArrayList<>(256);
        boolean stop = false;
        try {
            kicker = new StallKicker(ctx);
            while (true) {
                OutboundFrame f;
                long wait = dealers.isEmpty() ? 100_000_000L : Math.min(100_000_000L, kicker.nanosToNextKick(System.nanoTime()));
                try {
                    f = queue.poll(Math.max(1, wait), TimeUnit.NANOSECONDS);
                } catch (InterruptedException e) {
                    // not ours to interrupt: keep the socket thread alive until close
                    continue;
                }
                if (f == STOP || (f == null && closeOnce.closing())) {
                    break;
                }
                if (f != null) {
                    sendNow(dealers, f, kicker);
                    // take what else is waiting in one go: one lock round instead of one per frame
                    batch.clear();
                    queue.drainTo(batch, 256);
                    for (OutboundFrame more : batch) {
                        if (more == STOP) {
                            stop = true;
                            break;
                        }
                        sendNow(dealers, more, kicker);
                    }
                    if (stop) {
                        break;
                    }
                }
                if (!dealers.isEmpty()) {
                    kicker.maybeKick(System.nanoTime());
                }
            }
            for (OutboundFrame left; (left = queue.poll()) != null; ) {
                if (left != STOP) {
                    fail(left.endpoint(), left.messageType(), left.transferId(), "publisher closed before sending", left.frame());
                }
            }
        } finally {
            dealers.values().forEach(ZmqRuntime::closeQuietly);
            dealers.clear();
            if (kicker != null) {
                kicker.close();
            }
        }
    }

    private void sendNow(Map<String, ZMQ.Socket> dealers, OutboundFrame f, StallKicker kicker) {
        String endpoint = f.endpoint();
        try {
            if (f.host() == null || f.host().isEmpty()) {
                fail(endpoint, f.messageType(), f.transferId(), "no host", f.frame());
                return;
            }
            if (f.port() <= 0 || f.port() > 65535) {
                fail(endpoint, f.messageType(), f.transferId(), "port " + f.port() + " out of range", f.frame());
                return;
            }
            ZMQ.Socket s = dealers.get(endpoint);
            if (s == null) {
                s = ZmqRuntime.notifyDealer(ctx, ZmqRuntime.ipv6(endpoint));
                try {
                    s.connect(endpoint);
                } catch (RuntimeException e) {
                    ZmqRuntime.closeQuietly(s);
                    throw e;
                }
                dealers.put(endpoint, s);
                kicker.connected(System.nanoTime());
                evictBeyond(dealers, config.maxCachedPeers());
            }
            if (!s.send(f.frame(), ZMQ.DONTWAIT)) {
                fail(endpoint, f.messageType(), f.transferId(), "ZMQ refused the frame (errno " + s.errno() + ")", f.frame());
                return;
            }
            sent.incrementAndGet();
            if (config.reportSentFrames()) {
                emit(new AdapterEvent.FrameSent(config.clock().getAsLong(), endpoint, f.messageType(), f.transferId(), f.frame()));
            }
        } catch (RuntimeException e) {
            if (ZmqRuntime.isTerm(e)) {
                fail(endpoint, f.messageType(), f.transferId(), "publisher closed", f.frame());
                return;
            }
            ZMQ.Socket broken = dealers.remove(endpoint);
            ZmqRuntime.closeQuietly(broken);
            fail(endpoint, f.messageType(), f.transferId(), ZmqRuntime.describe(e), f.frame());
        }
    }

    private static void evictBeyond(Map<String, ZMQ.Socket> dealers, int max) {
        var it = dealers.entrySet().iterator();
        while (dealers.size() > max && it.hasNext()) {
            ZmqRuntime.closeQuietly(it.next().getValue());
            it.remove();
        }
    }

    private void fail(String endpoint, String type, String tid, String reason, byte[] frame) {
        failed.incrementAndGet();
        emit(new AdapterEvent.SendFailed(config.clock().getAsLong(), endpoint, type, tid, reason, frame));
    }

    private void emit(AdapterEvent e) {
        if (nodeSink != null) {
            emitToNode(e);
            return;
        }
        try {
            if (!Backoff.offer(events, e, closeOnce::closing)) {
                eventsAbandoned.incrementAndGet();
            }
        } catch (RuntimeException ex) {
            LOG.log(System.Logger.Level.WARNING, "publisher event sink threw: " + ZmqRuntime.describe(ex), ex);
        }
    }

    private void emitToNode(AdapterEvent e) {
        NodeEvent ne = switch (e) {
            case AdapterEvent.SendFailed f -> f.toNodeEvent();
            // a sent frame is not an input of the reducer; the publisher never emits the others
            case AdapterEvent.FrameSent _, AdapterEvent.HandshakeServed _, AdapterEvent.HandshakeRequestRejected _,
                    AdapterEvent.HeartbeatFailed _ -> null;
        };
        if (ne == null) {
            return;
        }
        long bound = Thread.currentThread() == thread ? refuseAfterNs : 0;
        try {
            switch (BoundedOffer.offer(nodeSink, ne, bound, closeOnce::closing)) {
                case TAKEN -> { }
                case CLOSING -> eventsAbandoned.incrementAndGet();
                case REFUSED -> BoundedOffer.logRefused(LOG, "notify publisher", refused.incrementAndGet(), ne, bound);
            }
        } catch (RuntimeException ex) {
            LOG.log(System.Logger.Level.WARNING, "publisher node sink threw: " + ZmqRuntime.describe(ex), ex);
        }
    }

    /**
     * Sends what is queued, then closes every DEALER (linger 0), terminates the context and ends
     * the thread; idempotent; blocks until done. Frames still queued behind a closing publisher
     * are reported as failed.
     */
    @Override
    public void close() {
        closeOnce.close(() -> {
            queue.offer(STOP);
            NotifyListenerAdapter.joinQuietly(thread);
            ctx.term();
        });
    }

    CompletableFuture<Void> closeAsync() {
        return closeOnce.closeAsync("kvledger-notify-publisher-closer", this::close);
    }
}
