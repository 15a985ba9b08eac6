package io.kvledger.zmq;

import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.zeromq.SocketType;
import org.zeromq.ZMQ;

/**
 * Where a shadow node ({@code kvledger node --engine shadow}) receives the streams of the vLLM
 * bridge's recorder ({@code record_to: tcp://127.0.0.1:PORT}, modules/vllm-bridge): a PULL socket
 * bound on loopback that any number of recorder processes push to.
 *
 * <p>A message is three frames (the recorder's {@code ZmqSink} documents them): a JSON envelope,
 * the stream's header line, and a batch of JSON lines. This class reads messages on its own
 * thread ({@code kvledger-shadow-stream-<port>}), stamps each with the clock and hands the raw
 * frames to the {@link Handler} in arrival order; what the frames mean is the handler's business.
 * A message of another shape is counted ({@link #malformed()}) and reported to the handler, never
 * fatal. The socket is one-way: nothing is ever sent back, so a slow node only fills the
 * recorder's bounded ZMQ queue, which drops and counts on its side.
 */
public final class ShadowStreamServer implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(ShadowStreamServer.class.getName());

    /** Receives what arrives; called on the socket thread, one message at a time. */
    public interface Handler {
        /** One well-shaped message, read at {@code atNs}. */
        void onMessage(long atNs, byte[] envelope, byte[] header, byte[] batch);

        /** A message of another shape (its frame count), read at {@code atNs}. */
        void onMalformed(long atNs, String reason);
    }

    private final String bindEndpoint;
    private final java.util.function.LongSupplier clock;
    private final Handler handler;
    private final ZMQ.Context ctx;
    private final SocketThread socketThread;
    private final AtomicLong messages = new AtomicLong();
    private final AtomicLong malformed = new AtomicLong();
    private final AtomicLong handlerErrors = new AtomicLong();
    private volatile String endpoint;

    private ShadowStreamServer(String bindEndpoint, java.util.function.LongSupplier clock, Handler handler) {
        this.bindEndpoint = bindEndpoint;
        this.clock = clock;
        this.handler = handler;
        this.ctx = ZmqRuntime.context("shadow-stream");
        this.socketThread = new SocketThread("kvledger-shadow-stream", this::run);
    }

    /**
     * Binds {@code endpoint} ({@code tcp://127.0.0.1:PORT}, {@code localhost} or {@code [::1]};
     * port 0: any free port) and starts reading.
     *
     * @throws IllegalArgumentException when the endpoint is not loopback TCP
     * @throws IllegalStateException    when it cannot be bound
     */
    public static ShadowStreamServer open(String endpoint, java.util.function.LongSupplier clock, Handler handler) {
        Objects.requireNonNull(endpoint, "endpoint");
        Objects.requireNonNull(clock, "clock");
        Objects.requireNonNull(handler, "handler");
        String problem = EngineBridgeConfig.endpointProblem(endpoint);
        if (problem != null) {
            throw new IllegalArgumentException(problem.replace("the engine bridge takes unauthenticated hook calls",
                    "the shadow socket takes unauthenticated streams").replace("the engine bridge", "the shadow socket"));
        }
        ShadowStreamServer s = new ShadowStreamServer(endpoint, clock, handler);
        s.socketThread.start(s::close, "the shadow socket", endpoint, "kvledger-shadow-stream-");
        return s;
    }

    private void run() {
        ZMQ.Socket pull = null;
        try {
            pull = ctx.socket(SocketType.PULL);
            pull.setLinger(0);
            pull.setMaxMsgSize(64L << 20);
            pull.setReceiveTimeOut(100);
            pull.setIPv6(ZmqRuntime.ipv6(bindEndpoint));
            pull.bind(bindEndpoint.endsWith(":0") ? bindEndpoint.substring(0, bindEndpoint.length() - 1) + "*" : bindEndpoint);
            endpoint = pull.getLastEndpoint();
            socketThread.bound().complete(endpoint);
        } catch (RuntimeException | Error e) {
            ZmqRuntime.closeQuietly(pull);
            socketThread.bound().completeExceptionally(e);
            return;
        }
        try {
            while (!socketThread.closing()) {
                try {
                    byte[] first = pull.recv(0);
                    if (first == null) {
                        continue;
                    }
                    long at = clock.getAsLong();
                    byte[][] frames = new byte[3][];
                    int n = 0;
                    byte[] f = first;
                    while (true) {
                        if (n < 3) {
                            frames[n] = f;
                        }
                        n++;
                        if (!pull.hasReceiveMore()) {
                            break;
                        }
                        f = pull.recv(0);
                    }
                    messages.incrementAndGet();
                    try {
                        if (n == 3) {
                            handler.onMessage(at, frames[0], frames[1], frames[2]);
                        } else {
                            malformed.incrementAndGet();
                            handler.onMalformed(at, "a message of " + n + " frame(s) (a stream message has 3: envelope, "
                                    + "header, lines)");
                        }
                    } catch (RuntimeException e) {
                        handlerErrors.incrementAndGet();
                        LOG.log(System.Logger.Level.WARNING, "shadow stream handler: " + e, e);
                    }
                } catch (RuntimeException e) {
                    if (socketThread.ends(e)) {
                        break;
                    }
                    LOG.log(System.Logger.Level.WARNING, "shadow socket " + endpoint + ": " + ZmqRuntime.describe(e), e);
                    java.util.concurrent.locks.LockSupport.parkNanos(10_000_000L);
                }
            }
        } finally {
            ZmqRuntime.closeQuietly(pull);
        }
    }

    /** The bound endpoint, e.g. {@code tcp://127.0.0.1:41234} (the real port when 0 was asked). */
    public String endpoint() {
        return endpoint;
    }

    int port() {
        String e = endpoint;
        return ZmqRuntime.portOf(e);
    }

    /** Messages read. */
    public long messages() {
        return messages.get();
    }

    /** Messages that were not three frames. */
    long malformed() {
        return malformed.get();
    }

    /** Messages whose handler threw (the thread went on). */
    long handlerErrors() {
        return handlerErrors.get();
    }

    /** Closes on a short-lived thread of its own; never blocks the caller. */
    CompletableFuture<Void> closeAsync() {
        return socketThread.closeAsync("kvledger-shadow-stream-closer", this::close);
    }

    @Override
    public void close() {
        socketThread.close(() -> {
            try {
                socketThread.thread().join(5000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            ctx.term();
        });
    }
}
