package io.kvledger.zmq;

import io.kvledger.wire.DecodeResult;
import io.kvledger.wire.bridge.BridgeCodec;
import io.kvledger.wire.bridge.BridgeReply;
import io.kvledger.wire.bridge.BridgeRequest;
import io.kvledger.wire.bridge.HookCall;
import java.util.HashMap;
import java.util.Map;
import org.zeromq.SocketType;
import org.zeromq.ZMQ;

/**
 * The engine side of the engine bridge in Java: a DEALER on its own context, connected to one
 * node's {@link EngineBridgeServer}, sending hook calls as the Python connector does (one frame,
 * {@link BridgeCodec#encodeRequest}) and reading the replies by id. Calls may be pipelined:
 * {@link #send} several, then {@link #await} each. The {@link StallKicker} heals a fresh connect
 * that JeroMQ 0.6.0 left stalled.
 *
 * <p>Owned by one thread (the engine's), like its socket.
 */
public final class EngineBridgeClient implements AutoCloseable {

    /** A call that got no usable reply in time, or an error reply. */
    public static final class BridgeCallException extends RuntimeException {
        private final boolean timedOut;

        public BridgeCallException(String message) {
            this(message, false);
        }

        BridgeCallException(String message, boolean timedOut) {
            super(message);
            this.timedOut = timedOut;
        }

        /** Whether no reply came in time (rather than an error reply or an unreadable one). */
        public boolean timedOut() {
            return timedOut;
        }
    }

    private final String endpoint;
    private final ZMQ.Context ctx;
    private final ZMQ.Socket socket;
    private final StallKicker kicker;
    private final Map<Long, BridgeReply> early = new HashMap<>();
    private long nextId = 1;

    public EngineBridgeClient(String endpoint) {
        this.endpoint = endpoint;
        this.ctx = ZmqRuntime.context("engine-bridge-client");
        this.socket = ctx.socket(SocketType.DEALER);
        this.socket.setLinger(0);
        this.socket.setSndHWM(0);
        this.socket.connect(endpoint);
        this.kicker = new StallKicker(ctx);
        this.kicker.connected(System.nanoTime());
    }

    public String endpoint() {
        return endpoint;
    }

    /** Sends a call; the id to {@link #await} its reply with. */
    public long send(HookCall call) {
        long id = nextId++;
        socket.send(BridgeCodec.encodeRequest(new BridgeRequest(id, call)), 0);
        return id;
    }

    /** Sends a call and waits for its reply. */
    BridgeReply call(HookCall call, long timeoutNs) {
        return await(send(call), timeoutNs);
    }

    /**
     * Waits for the reply to call {@code id} (replies to other calls read meanwhile are kept for
     * their own {@code await}).
     *
     * @throws BridgeCallException when no reply came within {@code timeoutNs}, or an error reply
     */
    public BridgeReply await(long id, long timeoutNs) {
        BridgeReply r = early.remove(id);
        long deadline = System.nanoTime() + timeoutNs;
        while (r == null) {
            if (Thread.currentThread().isInterrupted()) {
                throw new BridgeCallException("interrupted while waiting for the node at " + endpoint + " (call " + id + ")");
            }
            long now = System.nanoTime();
            if (now > deadline) {
                throw new BridgeCallException("no reply from the node at " + endpoint + " within "
                        + timeoutNs / 1_000_000 + " ms (call " + id + ")", true);
            }
            socket.setReceiveTimeOut((int) Math.max(1, Math.min(20, (deadline - now) / 1_000_000L)));
            byte[] frame = socket.recv(0);
            if (frame == null) {
                kicker.maybeKick(System.nanoTime());
                continue;
            }
            while (socket.hasReceiveMore()) {
                socket.recv(0);
            }
            DecodeResult<BridgeReply> d = BridgeCodec.decodeReply(frame);
            if (!d.isOk()) {
                throw new BridgeCallException("unreadable reply from " + endpoint + ": " + d.rejectionOrNull());
            }
            BridgeReply got = d.valueOrNull();
            if (got.id() != null && got.id() == id) {
                r = got;
            } else if (got.id() != null) {
                early.put(got.id(), got);
            } else {
                throw new BridgeCallException("the node at " + endpoint + " refused a call: " + got.error());
            }
        }
        if (!r.ok()) {
            throw new BridgeCallException("the node at " + endpoint + " answered an error: " + r.error());
        }
        return r;
    }

    @Override
    public void close() {
        kicker.close();
        ZmqRuntime.closeQuietly(socket);
        ctx.term();
    }
}
