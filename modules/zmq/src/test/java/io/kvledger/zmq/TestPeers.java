package io.kvledger.zmq;

import java.io.IOException;
import java.net.ServerSocket;
import org.zeromq.SocketType;
import org.zeromq.ZMQ;

/** Plain JeroMQ peers for tests (owned by the test thread that made them). */
final class TestPeers implements AutoCloseable {

    final ZMQ.Context ctx = ZMQ.context(1);
    private final java.util.List<ZMQ.Socket> sockets = new java.util.ArrayList<>();

    private static final java.util.concurrent.atomic.AtomicInteger MONITORS = new java.util.concurrent.atomic.AtomicInteger();

    /**
     * A DEALER connected to {@code endpoint}, returned once its ZMTP handshake completed (the
     * listener must be bound). Kicks the context meanwhile: see {@link StallKicker}.
     */
    ZMQ.Socket dealer(String endpoint) {
        ZMQ.Socket s = ctx.socket(SocketType.DEALER);
        s.setLinger(1000);
        s.setSndHWM(0);
        sockets.add(s);
        String mon = "inproc://test-monitor-" + MONITORS.incrementAndGet();
        s.monitor(mon, ZMQ.EVENT_HANDSHAKE_PROTOCOL);
        ZMQ.Socket events = ctx.socket(SocketType.PAIR);
        events.setReceiveTimeOut(20);
        events.connect(mon);
        try (StallKicker kicker = new StallKicker(ctx)) {
            s.connect(endpoint);
            long deadline = System.nanoTime() + 120_000_000_000L;
            while (true) {
                org.zeromq.ZEvent e = org.zeromq.ZEvent.recv(events);
                if (e != null && e.getEvent() == org.zeromq.ZMonitor.Event.HANDSHAKE_PROTOCOL) {
                    break;
                }
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("no ZMTP handshake with " + endpoint + " within 120 s");
                }
                kicker.kick();
            }
        } finally {
            s.monitor(null, 0);
            events.setLinger(0);
            events.close();
        }
        return s;
    }

    ZMQ.Socket router(String endpoint) {
        ZMQ.Socket s = ctx.socket(SocketType.ROUTER);
        s.setLinger(0);
        s.setReceiveTimeOut(10_000);
        s.bind(endpoint);
        sockets.add(s);
        return s;
    }

    static int port(ZMQ.Socket bound) {
        String e = bound.getLastEndpoint();
        return Integer.parseInt(e.substring(e.lastIndexOf(':') + 1));
    }

    /** A port that was free a moment ago (for tests of port arithmetic, which need a known port). */
    static int freePort() {
        try (ServerSocket s = new ServerSocket(0)) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        } catch (IOException e) {
            throw new AssertionError("no free port", e);
        }
    }

    @Override
    public void close() {
        // each socket keeps its own linger: a DEALER flushes what it queued (up to 1 s)
        for (ZMQ.Socket s : sockets) {
            s.close();
        }
        ctx.close();
    }
}
