package io.kvledger.zmq;

import io.kvledger.wire.Registration;
import io.kvledger.wire.RegistrationCodec;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.zeromq.SocketType;
import org.zeromq.ZMQ;

/**
 * The registration heartbeat a MoRIIO worker (world rank 0, when {@code proxy_ip} is set) sends
 * to the proxy (protocol spec 3.1): the {@link Registration} map as one frame on a DEALER to
 * {@code tcp://{proxy_ip}:{proxy_ping_port}}, first at once, then every interval (3 s in the
 * newest peers). The proxy never expires instances, so the heartbeat is what keeps a restarted
 * proxy's table filled.
 *
 * <p>One thread ({@code kvledger-registration-heartbeat}) owns the socket (linger 0). A send
 * ZMQ refuses (the proxy has been unreachable long enough to fill the queue) or an address
 * that does not resolve becomes a {@link AdapterEvent.HeartbeatFailed}; the heartbeat keeps
 * going.
 */
public final class RegistrationHeartbeat implements AutoCloseable {

    /** {@code MoRIIOConstants.PING_INTERVAL}. */
    public static final Duration PING_INTERVAL = Duration.ofSeconds(3);

    private final String endpoint;
    private final byte[] frame;
    private final EventSink<? super AdapterEvent> events;
    private final LongSupplier clock;
    private final ZMQ.Context ctx;
    private final ScheduledThreadPoolExecutor owner;
    private final CloseOnce closeOnce = new CloseOnce();
    private final AtomicLong sent = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private ZMQ.Socket socket;
    private StallKicker kicker;

    private RegistrationHeartbeat(String endpoint, Registration registration, EventSink<? super AdapterEvent> events, LongSupplier clock) {
        this.endpoint = endpoint;
        this.frame = new RegistrationCodec().encode(registration);
        this.events = events;
        this.clock = clock;
        this.ctx = ZmqRuntime.context("heartbeat");
        this.owner = new ScheduledThreadPoolExecutor(1, r -> ZmqRuntime.thread("kvledger-registration-heartbeat", r));
        this.owner.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
    }

    /**
     * Starts sending {@code registration} to {@code proxyEndpoint} ({@code tcp://host:port}) every
     * {@code interval}.
     */
    public static RegistrationHeartbeat start(String proxyEndpoint, Registration registration, Duration interval,
                                              EventSink<? super AdapterEvent> events, LongSupplier clock) {
        if (interval.isNegative() || interval.isZero()) {
            throw new IllegalArgumentException("interval must be positive: " + interval);
        }
        RegistrationHeartbeat h = new RegistrationHeartbeat(proxyEndpoint, registration, events, clock);
        h.owner.scheduleAtFixedRate(h::beat, 0, interval.toNanos(), TimeUnit.NANOSECONDS);
        h.owner.scheduleWithFixedDelay(h::kick, 20, 20, TimeUnit.MILLISECONDS);
        return h;
    }

    String endpoint() {
        return endpoint;
    }

    /** Heartbeats handed to ZMQ. */
    long sent() {
        return sent.get();
    }

    /** Heartbeats that failed (each reported as {@code HeartbeatFailed}). */
    long failed() {
        return failed.get();
    }

    private void beat() {
        if (closeOnce.closing()) {
            return;
        }
        try {
            if (socket == null) {
                ZMQ.Socket s = ctx.socket(SocketType.DEALER);
                s.setLinger(0);
                s.setIPv6(ZmqRuntime.ipv6(endpoint));
                try {
                    s.connect(endpoint);
                } catch (RuntimeException e) {
                    ZmqRuntime.closeQuietly(s);
                    throw e;
                }
                socket = s;
                kicker = new StallKicker(ctx);
                kicker.connected(System.nanoTime());
            }
            if (socket.send(frame.clone(), ZMQ.DONTWAIT)) {
                sent.incrementAndGet();
            } else {
                fail("ZMQ refused the heartbeat (errno " + socket.errno() + "; proxy unreachable and queue full?)");
            }
        } catch (RuntimeException e) {
            if (!ZmqRuntime.isTerm(e) && !closeOnce.closing()) {
                fail(ZmqRuntime.describe(e));
            }
        }
    }

    /** The {@link StallKicker} workaround, on the socket's own thread. */
    private void kick() {
        if (!closeOnce.closing() && kicker != null) {
            kicker.maybeKick(System.nanoTime());
        }
    }

    private void fail(String reason) {
        failed.incrementAndGet();
        Backoff.offer(events, new AdapterEvent.HeartbeatFailed(clock.getAsLong(), endpoint, reason), closeOnce::closing);
    }

    /** Stops the heartbeat, closes the socket, terminates the context and ends the thread; idempotent. */
    @Override
    public void close() {
        closeOnce.close(() -> {
            owner.execute(() -> {
                ZmqRuntime.closeQuietly(socket);
                socket = null;
                if (kicker != null) {
                    kicker.close();
                    kicker = null;
                }
            });
            owner.shutdown();
            ZmqRuntime.awaitThenTerminate(owner, ctx);
        });
    }

    CompletableFuture<Void> closeAsync() {
        return closeOnce.closeAsync("kvledger-registration-heartbeat-closer", this::close);
    }
}
