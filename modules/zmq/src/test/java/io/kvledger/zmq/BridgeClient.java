package io.kvledger.zmq;

import io.kvledger.wire.DecodeResult;
import io.kvledger.wire.bridge.BridgeCodec;
import io.kvledger.wire.bridge.BridgeReply;
import io.kvledger.wire.bridge.BridgeRequest;
import io.kvledger.wire.bridge.HookCall;
import java.util.ArrayList;
import java.util.List;
import org.zeromq.SocketType;
import org.zeromq.ZMQ;

/**
 * A Java engine for the bridge tests: a JeroMQ DEALER (or REQ) on its own context, with the
 * {@link StallKicker} a fresh JeroMQ connect needs. Used from the test thread only.
 */
final class BridgeClient implements AutoCloseable {

    private final ZMQ.Context ctx = ZmqRuntime.context("bridge-test-client");
    private final ZMQ.Socket socket;
    private final StallKicker kicker;
    private final boolean req;
    private long nextId = 1;

    BridgeClient(String endpoint, boolean req) {
        this(endpoint, req, 0);
    }

    /**
     * {@code receiveQueue}: when positive, the DEALER takes at most that many replies before the
     * test reads them, and the kernel buffers that many bytes per reply at most (SO_RCVBUF, which
     * also stops the kernel growing it), so that replies back up to the server after a few
     * thousand unread calls whatever the machine's TCP autotuning allows.
     */
    private BridgeClient(String endpoint, boolean req, int receiveQueue) {
        this.req = req;
        this.socket = ctx.socket(req ? SocketType.REQ : SocketType.DEALER);
        this.socket.setLinger(0);
        if (receiveQueue > 0) {
            this.socket.setRcvHWM(receiveQueue);
            this.socket.setReceiveBufferSize(receiveQueue * 64);
        }
        this.socket.connect(endpoint);
        this.kicker = new StallKicker(ctx);
        this.kicker.connected(System.nanoTime());
    }

    BridgeClient(String endpoint) {
        this(endpoint, false);
    }

    /** A DEALER that queues few replies unread (see the constructor): for back-pressure tests. */
    static BridgeClient slowReader(String endpoint) {
        return new BridgeClient(endpoint, false, 64);
    }

    /** Sends {@code call} with the next id and waits for its reply. */
    BridgeReply call(HookCall call) {
        long id = nextId++;
        send(BridgeCodec.encodeRequest(new BridgeRequest(id, call)));
        BridgeReply r = reply(10_000);
        if (r.id() == null || r.id() != id) {
            throw new AssertionError("reply for id " + r.id() + ", expected " + id + ": " + r);
        }
        return r;
    }

    void send(byte[] frame) {
        socket.send(frame, 0);
    }

    /**
     * Lets the stall kicker redo a fresh connect whose ZMTP handshake stalled (JeroMQ 0.6.0): a
     * test that waits for the server to see a frame, rather than for a reply, calls this while it
     * waits.
     */
    void keepConnecting() {
        kicker.maybeKick(System.nanoTime());
    }

    /** Sends a multi-part message as given (for framing tests). */
    void sendParts(List<byte[]> parts) {
        for (int i = 0; i < parts.size(); i++) {
            socket.send(parts.get(i), i < parts.size() - 1 ? ZMQ.SNDMORE : 0);
        }
    }

    /** The next reply's frames (one for a DEALER, the payload alone for a REQ). */
    List<byte[]> frames(long timeoutMs) {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        while (true) {
            long now = System.nanoTime();
            if (now > deadline) {
                throw new NoReply("no reply within " + timeoutMs + " ms");
            }
            socket.setReceiveTimeOut((int) Math.max(1, Math.min(20, (deadline - now) / 1_000_000L)));
            byte[] first = socket.recv(0);
            if (first == null) {
                kicker.maybeKick(System.nanoTime());
                continue;
            }
            List<byte[]> out = new ArrayList<>();
            out.add(first);
            while (socket.hasReceiveMore()) {
                out.add(socket.recv(0));
            }
            return out;
        }
    }

    /** The next reply, or null when none came within {@code timeoutMs}. */
    BridgeReply poll(long timeoutMs) {
        try {
            return reply(timeoutMs);
        } catch (NoReply e) {
            return null;
        }
    }

    /** No reply came in time. */
    static final class NoReply extends AssertionError {
        private static final long serialVersionUID = 1L;

        NoReply(String message) {
            super(message);
        }
    }

    BridgeReply reply(long timeoutMs) {
        List<byte[]> f = frames(timeoutMs);
        if (f.size() != 1) {
            throw new AssertionError("a reply is one frame, got " + f.size());
        }
        DecodeResult<BridgeReply> d = BridgeCodec.decodeReply(f.get(0));
        if (!d.isOk()) {
            throw new AssertionError("unreadable reply: " + d.rejectionOrNull());
        }
        return d.valueOrNull();
    }

    boolean isReq() {
        return req;
    }

    @Override
    public void close() {
        kicker.close();
        ZmqRuntime.closeQuietly(socket);
        ctx.term();
    }
}
