package io.kvledger.zmq;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.Pipe;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.zeromq.SocketType;
import org.zeromq.ZMQ;

/**
 * The engine bridge over a ZMQ ROUTER on loopback TCP: DEALER and REQ callers, replies with
 * {@code ROUTER_MANDATORY} and without blocking; woken through a pipe a selector watches next to
 * the ROUTER's signalling channel ({@code ZMQ_FD}).
 *
 * <p>The wait does not use JeroMQ's poller: each of its polls registers its channels into a
 * selector anew and builds maps of them (the node loop's profile over tcp: most of its samples
 * in {@code ZMQ.poll}). Here one selector has both channels registered once; a wait first asks the
 * socket whether a message is readable ({@code ZMQ_EVENTS}, which also takes the socket's pending
 * commands, as ZMQ's rules for {@code ZMQ_FD} ask) and selects only when none is, and a look
 * without waiting does not touch the selector at all ({@link #receive} reads without blocking).
 */
final class ZmqBridgeTransport implements BridgeTransport {

    /** Yields to the signal's writer before parking, when {@code ZMQ_FD} is readable ahead of its count. */
    private static final int STALE_YIELDS = 4;
    private static final long STALE_PARK_NS = 20_000;

    private final EngineBridgeConfig config;
    private final ZMQ.Context ctx;
    private final Pipe pipe;
    private final ByteBuffer drain = ByteBuffer.allocate(64);
    private final ByteBuffer one = ByteBuffer.allocate(1);
    private ZMQ.Socket router;
    private Selector selector;
    /** The selection keys of the ROUTER's signalling channel ({@code ZMQ_FD}) and of the wake-up pipe. */
    private SelectionKey routerKey;
    private SelectionKey wakeKey;

    ZmqBridgeTransport(EngineBridgeConfig config) throws IOException {
        this.config = config;
        this.pipe = Pipe.open();
        this.pipe.source().configureBlocking(false);
        this.pipe.sink().configureBlocking(false);
        this.ctx = ZmqRuntime.context("engine-bridge", true);
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
            selector = Selector.open();
            routerKey = router.getFD().register(selector, SelectionKey.OP_READ);
            wakeKey = pipe.source().register(selector, SelectionKey.OP_READ);
            return endpoint;
        } catch (IOException e) {
            StreamBridgeTransport.closeQuietly(selector);
            ZmqRuntime.closeQuietly(router);
            throw new IllegalStateException("cannot watch the engine bridge's socket: " + e, e);
        } catch (RuntimeException | Error e) {
            StreamBridgeTransport.closeQuietly(selector);
            ZmqRuntime.closeQuietly(router);
            throw e;
        }
    }

    @Override
    public void await(long waitMs) {
        if (waitMs <= 0 || hasMessage()) {
            // a look without waiting, or a message is there: receive() reads it (a wake-up's
            // byte left in the pipe ends the next wait at once, which drains it)
            return;
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(waitMs);
        int stale = 0;
        try {
            while (true) {
                long leftMs = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime() + 999_999);
                if (leftMs <= 0) {
                    return;
                }
                selector.select(leftMs);
                java.util.Set<SelectionKey> ready = selector.selectedKeys();
                boolean woken = ready.contains(wakeKey);
                boolean signalled = ready.contains(routerKey);
                ready.clear();
                if (woken) {
                    drainWakeUps();
                    return;
                }
                if (!signalled || hasMessage()) {
                    return;
                }
                // ZMQ_FD readable, and no message once the socket took its commands: JeroMQ 0.6.0's
                // mailbox writes its signal byte first and counts it after, and takes the byte
                // only once counted; this wake-up made the writer (the I/O thread) wait for a core
                // between the two. Selecting again returns at once, so without giving way the
                // loop spun here until the scheduler's next tick (the 3-4 ms tail over tcp).
                if (++stale <= STALE_YIELDS) {
                    Thread.yield();
                } else {
                    LockSupport.parkNanos(STALE_PARK_NS);
                }
            }
        } catch (IOException | ClosedSelectorException e) {
            // closed under a serving thread (the server closing): nothing more to read
        }
    }

    /** Whether a message may be read now ({@code ZMQ_EVENTS}, which first takes the socket's pending commands). */
    private boolean hasMessage() {
        return (router.getEvents() & ZMQ.Poller.POLLIN) != 0;
    }

    private void drainWakeUps() {
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
        StreamBridgeTransport.closeQuietly(selector);
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

    /** No: a ZMQ socket belongs to one thread, and the wait reads its state while the socket thread waits. */
    @Override
    public boolean answersDirectly() {
        return false;
    }

    @Override
    public boolean wakeUpOpen() {
        return pipe.sink().isOpen() && pipe.source().isOpen();
    }
}
