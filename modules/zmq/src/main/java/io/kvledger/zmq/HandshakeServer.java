package io.kvledger.zmq;

import io.kvledger.core.moriio.PortMath;
import io.kvledger.wire.AgentMetadata;
import io.kvledger.wire.DecodeResult;
import io.kvledger.wire.HandshakeCodec;
import io.kvledger.wire.HandshakeRequest;
import io.kvledger.wire.LayerMap;
import io.kvledger.wire.Rejection;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.zeromq.SocketType;
import org.zeromq.ZMQ;

/**
 * A MoRIIO handshake ROUTER (protocol spec 3.2), bound where the Python worker binds its own
 * ({@code handshake_port + get_port_offset(dp_local, tp_rank)}, the two-argument form). It
 * answers {@code get_meta_msg} with two 2-frame replies, {@code [b"", metadata]} then
 * {@code [b"", layer map]}; it ignores {@code pop_done_recv} (the Python server then also
 * swallows the next message, whatever it is; this one does not, so a peer's next
 * {@code get_meta_msg} is still answered). Anything else is reported as
 * {@link AdapterEvent.HandshakeRequestRejected} (where the Python server raises and its
 * handshake thread ends) and the server keeps serving.
 *
 * <p>One thread ({@code kvledger-handshake-server-<port>}) owns the socket. The metadata and
 * layer map are encoded once; every reply sends a private copy (JeroMQ does not copy).
 */
public final class HandshakeServer implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(HandshakeServer.class.getName());

    private final String bindEndpoint;
    private final byte[] metadata;
    private final byte[] layerMap;
    private final EventSink<? super AdapterEvent> events;
    private final LongSupplier clock;
    private final ZMQ.Context ctx;
    private final SocketThread socketThread;
    private final AtomicLong served = new AtomicLong();
    private final AtomicLong refused = new AtomicLong();
    private volatile String endpoint;

    private HandshakeServer(String bindEndpoint, AgentMetadata metadata, LayerMap layers, EventSink<? super AdapterEvent> events,
                            LongSupplier clock) {
        HandshakeCodec codec = new HandshakeCodec();
        this.bindEndpoint = bindEndpoint;
        this.metadata = codec.encodeMetadata(metadata);
        this.layerMap = codec.encodeLayerMap(layers);
        this.events = events;
        this.clock = clock;
        this.ctx = ZmqRuntime.context("handshake-server");
        this.socketThread = new SocketThread("kvledger-handshake-server", this::run);
    }

    /**
     * Binds {@code bindEndpoint} (port {@code *} or 0 for an ephemeral port) and starts serving.
     *
     * @throws IllegalStateException when the endpoint cannot be bound
     */
    public static HandshakeServer open(String bindEndpoint, AgentMetadata metadata, LayerMap layers,
                                       EventSink<? super AdapterEvent> events, LongSupplier clock) {
        HandshakeServer s = new HandshakeServer(bindEndpoint, metadata, layers, events, clock);
        s.socketThread.start(s::close, "handshake server", bindEndpoint, "kvledger-handshake-server-");
        return s;
    }

    /** The handshake endpoint of one rank: {@code tcp://{host}:{base + dp_local + tp_rank}}. */
    public static String rankEndpoint(String bindHost, int handshakePortBase, int dpLocal, int tpRank) {
        return "tcp://" + bindHost + ":" + (handshakePortBase + PortMath.portOffset(dpLocal, tpRank));
    }

    public String endpoint() {
        return endpoint;
    }

    int port() {
        String e = endpoint;
        return ZmqRuntime.portOf(e);
    }

    /** Requests answered or ignored as the protocol says. */
    long served() {
        return served.get();
    }

    /** Requests refused (each reported as {@code HandshakeRequestRejected}). */
    long refused() {
        return refused.get();
    }

    boolean isRunning() {
        return socketThread.isRunning();
    }

    private void run() {
        ZMQ.Socket router = null;
        try {
            router = ctx.socket(SocketType.ROUTER);
            router.setLinger(0);
            router.setMaxMsgSize(64 * 1024);
            router.setIPv6(ZmqRuntime.ipv6(bindEndpoint));
            router.bind(bindEndpoint);
            endpoint = router.getLastEndpoint();
            socketThread.bound().complete(endpoint);
        } catch (RuntimeException e) {
            ZmqRuntime.closeQuietly(router);
            socketThread.bound().completeExceptionally(e);
            return;
        }
        try {
            while (!socketThread.closing()) {
                try {
                    byte[] identity = router.recv(0);
                    if (identity == null) {
                        continue;
                    }
                    List<byte[]> frames = new ArrayList<>(1);
                    while (router.hasReceiveMore()) {
                        byte[] f = router.recv(0);
                        if (frames.size() < 8) {
                            frames.add(f == null ? new byte[0] : f);
                        }
                    }
                    handle(router, identity, frames);
                } catch (RuntimeException e) {
                    if (socketThread.ends(e)) {
                        break;
                    }
                    LOG.log(System.Logger.Level.WARNING, "handshake server " + endpoint + ": " + ZmqRuntime.describe(e), e);
                }
            }
        } finally {
            ZmqRuntime.closeQuietly(router);
        }
    }

    private void handle(ZMQ.Socket router, byte[] identity, List<byte[]> frames) {
        long atNs = clock.getAsLong();
        if (frames.size() != 1) {
            refuse(atNs, identity, "BAD_FRAMING: " + frames.size() + " frames after the identity; a handshake DEALER sends one",
                    frames.isEmpty() ? new byte[0] : frames.get(frames.size() - 1));
            return;
        }
        byte[] request = frames.get(0);
        switch (HandshakeRequest.decode(request)) {
            case DecodeResult.Ok<HandshakeRequest> ok -> {
                if (ok.value() == HandshakeRequest.GET_META_MSG) {
                    // ROUTER (identity, b"", payload) twice: the DEALER sees two 2-frame messages
                    router.sendMore(identity.clone());
                    router.sendMore(new byte[0]);
                    router.send(metadata.clone(), 0);
                    router.sendMore(identity.clone());
                    router.sendMore(new byte[0]);
                    router.send(layerMap.clone(), 0);
                }
                served.incrementAndGet();
                emit(new AdapterEvent.HandshakeServed(atNs, endpoint, identity, ok.value()));
            }
            case DecodeResult.Rejected<HandshakeRequest> r -> {
                Rejection rej = r.rejection();
                refuse(atNs, identity, rej.text(), request);
            }
        }
    }

    private void refuse(long atNs, byte[] identity, String reason, byte[] frame) {
        refused.incrementAndGet();
        emit(new AdapterEvent.HandshakeRequestRejected(atNs, endpoint, identity, reason, frame, true));
    }

    private void emit(AdapterEvent e) {
        try {
            Backoff.offer(events, e, socketThread::closing);
        } catch (RuntimeException ex) {
            LOG.log(System.Logger.Level.WARNING, "handshake server event sink threw: " + ZmqRuntime.describe(ex), ex);
        }
    }

    @Override
    public void close() {
        socketThread.close(() -> {
            ctx.term();
            NotifyListenerAdapter.joinQuietly(socketThread.thread());
        });
    }

    CompletableFuture<Void> closeAsync() {
        return socketThread.closeAsync("kvledger-handshake-server-closer", this::close);
    }
}
