package io.kvledger.proxy;

import io.kvledger.journal.proxy.ProxyEvent;
import io.kvledger.wire.DecodeResult;
import io.kvledger.wire.Registration;
import io.kvledger.wire.RegistrationCodec;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * The proxy's registration socket (protocol 2.2 S1): a ROUTER bound on the ping port that reads
 * what the workers' DEALERs send, exactly {@code (identity, msgpack map)} per message (the toy
 * proxy's {@code recv_multipart()} 2-tuple). A registration goes to {@link Instances}; a frame
 * that is not one (wrong frame count, not msgpack, a missing field, a mode mismatch ...) is
 * journaled as {@link ProxyEvent.RegistrationRejected} and ignored; {@code HELLO} is accepted and
 * ignored. Every 100 ms the thread also expires instances whose heartbeats stopped.
 *
 * <p>One thread ({@code kvledger-proxy-registration}) owns the socket; nothing it reads can end
 * it.
 */
final class RegistrationRouter implements AutoCloseable {

    private static final int POLL_MS = 100;

    private final ZContext ctx = new ZContext(1);
    private final ZMQ.Socket socket;
    private final int port;
    private final Instances instances;
    private final Consumer<ProxyEvent> journal;
    private final LongSupplier clock;
    private final RegistrationCodec codec = new RegistrationCodec();
    private final Thread thread;
    private final CountDownLatch stopped = new CountDownLatch(1);
    private final AtomicLong received = new AtomicLong();
    private final AtomicLong rejected = new AtomicLong();
    private volatile boolean closing;

    private RegistrationRouter(String host, int port, Instances instances, Consumer<ProxyEvent> journal,
                               LongSupplier clock) {
        this.instances = instances;
        this.journal = journal;
        this.clock = clock;
        ctx.setLinger(0);
        this.socket = ctx.createSocket(SocketType.ROUTER);
        socket.setReceiveTimeOut(POLL_MS);
        socket.setLinger(0);
        socket.setIPv6(host.contains(":"));
        String endpoint = "tcp://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + (port == 0 ? "*" : port);
        try {
            socket.bind(endpoint);
        } catch (RuntimeException e) {
            ctx.close();
            throw new IllegalStateException("cannot bind the registration socket " + endpoint + ": "
                    + io.kvledger.ledger.web.HttpHardening.bindFailure(e), e);
        }
        String last = socket.getLastEndpoint();
        this.port = Integer.parseInt(last.substring(last.lastIndexOf(':') + 1));
        this.thread = new Thread(this::run, "kvledger-proxy-registration");
        thread.setDaemon(true);
    }

    /** Binds {@code tcp://host:port} and starts reading. */
    static RegistrationRouter start(String host, int port, Instances instances, Consumer<ProxyEvent> journal,
                                    LongSupplier clock) {
        RegistrationRouter r = new RegistrationRouter(host, port, instances, journal, clock);
        r.thread.start();
        return r;
    }

    int port() {
        return port;
    }

    /** Messages read (registrations, heartbeats and rejected frames). */
    long received() {
        return received.get();
    }

    /** Messages rejected. */
    long rejected() {
        return rejected.get();
    }

    private void run() {
        try {
            while (!closing) {
                List<byte[]> frames = receive();
                if (frames != null) {
                    received.incrementAndGet();
                    handle(frames);
                }
                for (ProxyEvent e : instances.expire(clock.getAsLong())) {
                    journal.accept(e);
                }
            }
        } catch (RuntimeException e) {
            if (!closing) {
                journal.accept(new ProxyEvent.RegistrationRejected(clock.getAsLong(),
                        "registration socket stopped: " + e, new byte[0]));
            }
        } finally {
            socket.close();
            stopped.countDown();
        }
    }

    private List<byte[]> receive() {
        byte[] first = socket.recv(0);
        if (first == null) {
            return null;
        }
        List<byte[]> frames = new ArrayList<>();
        frames.add(first);
        while (socket.hasReceiveMore()) {
            frames.add(socket.recv(0));
        }
        return frames;
    }

    private void handle(List<byte[]> frames) {
        long now = clock.getAsLong();
        if (frames.size() != 2) {
            reject(now, "expected 2 frames (identity, msgpack map), got " + frames.size()
                    + (frames.size() > 2 && frames.get(1).length == 0 ? " (a DEALER that sends an empty delimiter)" : ""),
                    joined(frames.subList(1, frames.size())));
            return;
        }
        byte[] msg = frames.get(1);
        Registration r;
        switch (codec.decode(msg)) {
            case DecodeResult.Ok<Registration> ok -> r = ok.value();
            case DecodeResult.Rejected<Registration> no -> {
                reject(now, no.rejection().text(), msg);
                return;
            }
        }
        if (Registration.HELLO.equals(r.type())) {
            return;
        }
        Instances.Outcome o = instances.register(r, now);
        if (o.rejection() != null) {
            reject(now, o.rejection(), msg);
        } else if (o.event() != null) {
            journal.accept(o.event());
        }
    }

    private void reject(long now, String reason, byte[] frame) {
        rejected.incrementAndGet();
        journal.accept(new ProxyEvent.RegistrationRejected(now, reason, frame));
    }

    private static byte[] joined(List<byte[]> frames) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] f : frames) {
            out.writeBytes(f);
        }
        return out.toByteArray();
    }

    @Override
    public void close() {
        closing = true;
        try {
            stopped.await(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        ctx.close();
    }
}
