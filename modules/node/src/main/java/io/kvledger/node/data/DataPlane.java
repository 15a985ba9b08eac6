package io.kvledger.node.data;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.event.NodeEventSink;
import io.kvledger.rdma.EngineOptions;
import io.kvledger.rdma.MemoryRegion;
import io.kvledger.rdma.RegionDescriptor;
import io.kvledger.rdma.Result;
import io.kvledger.rdma.Session;
import io.kvledger.rdma.TransferEngine;
import io.kvledger.rdma.adapter.TransferEffectPublisher;
import io.kvledger.rdma.engine.TransferEngines;
import io.kvledger.wire.AgentMetadata;
import io.kvledger.wire.LayerMap;
import io.kvledger.wire.OpaqueBytes;
import io.kvledger.zmq.EventSink;
import io.kvledger.zmq.HandshakeClient;
import io.kvledger.zmq.HandshakeResult;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * A node's data plane: its transfer engine (UCX when it loads, else the in-JVM engine), the one
 * region holding its KV cache ({@link KvLayout}), the publisher that executes the reducer's
 * {@code PostWrite}/{@code PostRead}, and the handshake initiator that turns a
 * {@code StartHandshake} into a bound session.
 *
 * <p>What a handshake carries between two kvledger nodes: the agent metadata's opaque
 * {@code agent_metadata} is this node's {@link RegionDescriptor} (what mori's packed
 * {@code EngineDesc} is to MoRIIO), and the layer map names, for each layer, its offset in the
 * region (8 bytes, big-endian). A handshake completes for the reducer only after every layer of
 * the peer session is bound, so no post can find its session missing; any failure on the way
 * (unreachable peer, a descriptor that does not decode, a session the engine refuses, a layer the
 * peer does not have) is a {@code HandshakeFailed} with the reason.
 *
 * <p>Threading: {@link #startHandshake} and {@link #post} are called on the loop thread and never
 * block; completions and handshake results reach the loop through the {@code events} predicate
 * (the node's bounded delivery).
 */
public final class DataPlane implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger("io.kvledger.node");

    private final String engineId;
    private final KvLayout layout;
    private final TransferEngine engine;
    private final String engineReason;
    private final MemoryRegion region;
    private final TransferEffectPublisher transfers;
    private final HandshakeClient handshakes;
    private final NodeEventSink events;
    private final LongSupplier clock;
    private final AtomicLong sessionsBound = new AtomicLong();
    private final AtomicLong handshakesFailed = new AtomicLong();
    private volatile java.util.function.LongConsumer postTimed;

    private DataPlane(String engineId, KvLayout layout, TransferEngines.Opened opened, MemoryRegion region,
                      Duration handshakeTimeout, NodeEventSink completions, NodeEventSink events, Duration refuseAfter,
                      LongSupplier clock) {
        this.engineId = engineId;
        this.layout = layout;
        this.engine = opened.engine();
        this.engineReason = opened.reason();
        this.region = region;
        this.events = events;
        this.clock = clock;
        this.transfers = new TransferEffectPublisher(engine, clock, completions, refuseAfter);
        this.handshakes = HandshakeClient.open(handshakeTimeout, 4, EventSink.discarding(), clock);
    }

    /**
     * Opens the engine and registers the KV region.
     *
     * @param completions the loop's inbox, for transfer completions (the engine's threads retry a
     *                    full inbox for {@code refuseAfter}, then count the loss: {@link #refused()})
     * @param events      where handshake outcomes go (a bounded delivery: they come from the
     *                    handshake threads)
     */
    public static Result<DataPlane> open(String engineId, KvLayout layout, TransferEngines.Choice choice,
                                         Duration transferTimeout, Duration handshakeTimeout,
                                         NodeEventSink completions, NodeEventSink events, Duration refuseAfter,
                                         LongSupplier clock) {
        EngineOptions options = EngineOptions.defaults().withTransferTimeout(transferTimeout).withName(engineId);
        Result<TransferEngines.Opened> opened = TransferEngines.open(choice, options);
        if (opened.errorOrNull() != null) {
            return Result.err(opened.errorOrNull());
        }
        TransferEngines.Opened o = opened.valueOrNull();
        Result<MemoryRegion> region = o.engine().register("kv-" + engineId, layout.regionBytes());
        if (region.errorOrNull() != null) {
            o.engine().close();
            return Result.err(region.errorOrNull());
        }
        return Result.ok(new DataPlane(engineId, layout, o, region.valueOrNull(), handshakeTimeout, completions, events,
                refuseAfter, clock));
    }

    /** The first handshake reply this node's handshake server gives. */
    public AgentMetadata agentMetadata() {
        return new AgentMetadata(engineId, OpaqueBytes.of(region.descriptor().encode()), new long[] {0L},
                layout.numBlocks(), layout.blockLenBytes(), "kvledger");
    }

    /** The second handshake reply: each layer's offset in the region. */
    public LayerMap layerMap() {
        LayerMap.Builder b = LayerMap.builder();
        for (int i = 0; i < layout.layers().size(); i++) {
            b.layer(layout.layers().get(i), OpaqueBytes.of(ByteBuffer.allocate(8).putLong(layout.layerOffset(i)).array()));
        }
        return b.build();
    }

    /** Executes a {@code PostWrite} or {@code PostRead}; a refusal comes back as a failed completion. */
    public void post(Effect.Post effect) {
        java.util.function.LongConsumer timed = postTimed;
        if (timed == null) {
            transfers.publish(effect);
            return;
        }
        long t0 = System.nanoTime();
        transfers.publish(effect);
        timed.accept(System.nanoTime() - t0);
    }

    /** Receives the wall time of each {@link #post} (the metrics' post time); called on the loop thread. */
    public void onPostTimed(java.util.function.LongConsumer observer) {
        this.postTimed = observer;
    }

    /**
     * Starts the handshake a {@code StartHandshake} asks for; its outcome reaches the loop as an
     * event. The returned future completes (never exceptionally) once the outcome was handed on.
     */
    public java.util.concurrent.CompletableFuture<Void> startHandshake(Effect.StartHandshake e) {
        return handshakes.start(e).handle((result, error) -> {
            String failure = error != null ? reason(error) : bind(e.key(), result);
            NodeEvent outcome = failure == null
                    ? new NodeEvent.HandshakeCompleted(clock.getAsLong(), e.key())
                    : new NodeEvent.HandshakeFailed(clock.getAsLong(), e.key(), failure);
            if (failure != null) {
                handshakesFailed.incrementAndGet();
            }
            events.offer(outcome);
            return null;
        });
    }

    private static String reason(Throwable t) {
        Throwable c = t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
        return c.getMessage() == null ? c.toString() : c.getMessage();
    }

    /** Binds every layer of the peer's region under {@code key}; the failure reason, or null. */
    private String bind(String key, HandshakeResult r) {
        try {
            Result<RegionDescriptor> desc = RegionDescriptor.decode(r.metadata().agentMetadata().toByteArray());
            if (desc.errorOrNull() != null) {
                return "the peer's agent metadata is not a kvledger region descriptor: " + desc.errorOrNull().message();
            }
            Result<Session> session = engine.openSession(region, desc.valueOrNull());
            if (session.errorOrNull() != null) {
                return "cannot open a session to " + r.endpoint() + ": " + session.errorOrNull().message();
            }
            int remoteBlocks = (int) r.metadata().numBlocks();
            for (int i = 0; i < layout.layers().size(); i++) {
                String layer = layout.layers().get(i);
                List<OpaqueBytes> descs = r.layers().layers().get(layer);
                if (descs == null || descs.isEmpty() || descs.get(0).length() != 8) {
                    return "the peer at " + r.endpoint() + " has no layer " + layer;
                }
                long remoteOffset = ByteBuffer.wrap(descs.get(0).toByteArray()).getLong();
                Result<Void> bound = transfers.bind(key, layer, session.valueOrNull(), layout.geometry(remoteBlocks),
                        layout.layerOffset(i), remoteOffset);
                if (bound.errorOrNull() != null) {
                    return "cannot bind layer " + layer + " of " + key + ": " + bound.errorOrNull().message();
                }
            }
            sessionsBound.incrementAndGet();
            return null;
        } catch (RuntimeException ex) {
            LOG.log(System.Logger.Level.WARNING, "handshake " + key + ": " + ex, ex);
            return "binding the session failed: " + ex;
        }
    }

    /** The KV region's memory (the simulated engine fills and checks blocks here). */
    public MemorySegment memory() {
        return region.segment();
    }

    public KvLayout layout() {
        return layout;
    }

    /** {@code ucx} or {@code in-jvm}. */
    public String engineKind() {
        return engine.kind();
    }

    /** The log line saying which engine runs and why. */
    public String engineReason() {
        return engineReason;
    }

    public long sessionsBound() {
        return sessionsBound.get();
    }

    public long handshakesFailed() {
        return handshakesFailed.get();
    }

    /** Transfer completions lost to a full inbox. */
    public long refused() {
        return transfers.refused();
    }

    /** Posted transfers whose completion has not come back. */
    public int pendingTransfers() {
        return transfers.pending();
    }

    @Override
    public void close() {
        handshakes.close();
        transfers.close();
        engine.close();
    }
}
