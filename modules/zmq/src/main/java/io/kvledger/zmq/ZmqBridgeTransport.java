package io.kvledger.zmq;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.Pipe;
import java.util.ArrayList;
import java.util.List;
import org.zeromq.SocketType;
import org.zeromq.ZMQ;

/**
 * The engine bridge over a ZMQ ROUTER on loopback TCP: DEALER and REQ callers, replies with
 * {@code ROUTER_MANDATORY} and without blocking; woken through a pipe its poller watches next to
 * the ROUTER.
 */
final class ZmqBridgeTransport implements BridgeTransport {

    private final EngineBridgeConfig config;
    private final ZMQ.Context ctx;
    private final Pipe pipe;
    private final ByteBuffer drain = ByteBuffer.allocate(64);
    private final ByteBuffer one = ByteBuffer.allocate(1);
    private ZMQ.Socket router;
    private ZMQ.Poller poller;

    ZmqBridgeTransport(EngineBridgeConfig config) throws IOException {
        this.config = config;
        this.pipe = Pipe.open();
        this.pipe.source().configureBlocking(false);
        this.pipe.sink().configureBlocking(false);
        this.ctx = ZmqRuntime.context("engine-bridge");
    }

    @Override
    public String bind() {
        try {
            router = ctx.socket(SocketType.ROUTER);
            router.setLinger(0);
            router.setRouterMandatory(true);
            router.setMaxMsgSize(config.maxMessageBytes());
            router.setIPv6(ZmqRuntime.ipv6(config.bindEndpoint()));
            router.bind(config.zmqBindEndpoint());
            String endpoint = router.getLastEndpoint();
            poller = ctx.poller(2);
            poller.register(router, ZMQ.Poller.POLLIN);
            poller.register(pipe.source(), ZMQ.Poller.POLLIN);
            return endpoint;
        } catch (RuntimeException | Error e) {
            if (poller != null) {
                poller.close();
            }
            ZmqRuntime.closeQuietly(router);
            throw e;
        }
    }

    @Override
    public void await(long waitMs) {
        poller.poll(waitMs);
        try {
            while (true) {
                drain.clear();
                if (pipe.source().read(drain) <= 0) {
                    return;
                }
            }
        } catch (IOException e) {
            // closed: the server's loop ends on closing
        }
    }

    @Override
    public void wake() {
        // an interrupted caller would close the pipe for good (NIO channels are interruptible):
        // write with the flag cleared and restore it afterwards
        boolean interrupted = Thread.interrupted();
        try {
            synchronized (one) {
                one.clear();
                one.put((byte) 1).flip();
                pipe.sink().write(one);
            }
        } catch (IOException | RuntimeException e) {
            // the pipe is closed: the server is stopping, or its housekeeping tick (100 ms) drains
            // the outbox without being woken
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public Message receive() {
        byte[] identity = router.recv(ZMQ.DONTWAIT);
        if (identity == null) {
            return null;
        }
        List<byte[]> frames = new ArrayList<>(2);
        int parts = 0;
        while (router.hasReceiveMore()) {
            byte[] f = router.recv(0);
            parts++;
            if (frames.size() < 3) {
                frames.add(f == null ? new byte[0] : f);
            }
        }
        return new Message(identity, parts, frames);
    }

    /**
     * SENT, FULL (the caller's queue on the socket is at its high-water mark: JeroMQ's send returns
     * false, EAGAIN), or GONE (no such caller any more: EHOSTUNREACH under {@code ROUTER_MANDATORY},
     * which JeroMQ throws).
     */
    @Override
    public Send send(byte[] identity, boolean reqFraming, byte[] frame) {
        try {
            if (!router.send(identity, ZMQ.SNDMORE | ZMQ.DONTWAIT)) {
                return Send.FULL;
            }
            // the message's first part was taken: the rest of it is (the high-water mark counts messages)
            boolean ok = !reqFraming || router.send(new byte[0], ZMQ.SNDMORE | ZMQ.DONTWAIT);
            ok = ok && router.send(frame, ZMQ.DONTWAIT);
            return ok ? Send.SENT : Send.GONE;
        } catch (RuntimeException e) {
            if (ZmqRuntime.isTerm(e)) {
                throw e;
            }
            return Send.GONE;
        }
    }

    @Override
    public void close() {
        poller.close();
        try {
            // give the last answers up to a second to leave (close waits at most that long)
            router.setLinger(1000);
            router.close();
        } catch (RuntimeException e) {
            ZmqRuntime.closeQuietly(router);
        }
    }

    @Override
    public void release() {
        ctx.term();
        try {
            pipe.sink().close();
            pipe.source().close();
        } catch (IOException e) {
            // nothing left to release
        }
    }

    /** No: a ZMQ socket belongs to one thread, and the poller reads it while the socket thread waits. */
    @Override
    public boolean answersDirectly() {
        return false;
    }

    @Override
    public boolean wakeUpOpen() {
        return pipe.sink().isOpen() && pipe.source().isOpen();
    }
}
