package io.kvledger.zmq;

import org.zeromq.SocketType;
import org.zeromq.ZMQ;

/**
 * Works around a JeroMQ 0.6.0 race that can leave a freshly connected socket dead: when a TCP
 * connect completes at once (common on loopback), the connecter's poller handle is cancelled and
 * the stream engine's handle for the same channel is added in the same registration pass of the
 * I/O thread's {@code zmq.poll.Poller}; {@code keyFor(selector)} then returns the cancelled,
 * not yet flushed key, the engine's handle is never registered, and the ZMTP handshake never
 * starts (both ends sit on an established TCP connection; queued messages never leave). About 2 %
 * of fresh connects on this machine; still present on JeroMQ master. Any later handle change on
 * that I/O thread re-runs the pass after the stale key is gone, and the connection recovers.
 *
 * <p>A kick is such a change with no side effect: bind a throwaway listener on an ephemeral
 * loopback port and unbind it at once, on the same context (whose single I/O thread is the
 * affected one). {@link #connected(long)} asks for kicks every 20 ms during the next 2 s (a fresh
 * connect); {@link #maybeKick(long)} also kicks once a second so a stall on a <em>re</em>connect
 * (after a peer restart) heals within about a second.
 *
 * <p>Owned by one thread, like the sockets it protects.
 */
final class StallKicker implements AutoCloseable {

    private static final long DENSE_PERIOD_NS = 20_000_000L;
    private static final long DENSE_WINDOW_NS = 2_000_000_000L;
    private static final long BASE_PERIOD_NS = 1_000_000_000L;

    private final ZMQ.Socket socket;
    private long denseUntilNs;
    private long lastKickNs;
    private long kicks;

    StallKicker(ZMQ.Context ctx) {
        this.socket = ctx.socket(SocketType.DEALER);
        this.socket.setLinger(0);
    }

    /** A socket of this context just connected: kick densely for a while. */
    void connected(long nowNs) {
        denseUntilNs = nowNs + DENSE_WINDOW_NS;
    }

    /** How long until the next kick is due, for the owner's wait. */
    long nanosToNextKick(long nowNs) {
        long period = nowNs < denseUntilNs ? DENSE_PERIOD_NS : BASE_PERIOD_NS;
        return Math.max(0, lastKickNs + period - nowNs);
    }

    /** Kicks if one is due. Never throws (a failed kick is retried on the next call). */
    void maybeKick(long nowNs) {
        if (nanosToNextKick(nowNs) > 0) {
            return;
        }
        lastKickNs = nowNs;
        kick();
    }

    void kick() {
        try {
            socket.bind("tcp://127.0.0.1:*");
            socket.unbind(socket.getLastEndpoint());
            kicks++;
        } catch (RuntimeException e) {
            // no loopback port free, or the context is terminating: the next kick retries
        }
    }

    long kicks() {
        return kicks;
    }

    @Override
    public void close() {
        ZmqRuntime.closeQuietly(socket);
    }
}
