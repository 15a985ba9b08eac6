package io.kvledger.rdma.adapter;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.rdma.FailureCode;
import io.kvledger.rdma.OffsetBatch;
import io.kvledger.rdma.Result;
import io.kvledger.rdma.Session;
import io.kvledger.rdma.TransferEngine;
import io.kvledger.rdma.TransferError;
import io.kvledger.rdma.TransferEvent;
import io.kvledger.rdma.TransferOp;
import io.kvledger.rdma.layout.KvGeometry;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Sinks;

/**
 * Executes the reducer's {@link Effect.PostWrite} and {@link Effect.PostRead} on a transfer
 * engine and hands their outcomes back as {@link NodeEvent.TransferCompleted} with the effect's
 * status id, through {@link #events()}.
 *
 * <p>Each {@code (sessionKey, layerName)} an effect can name is first {@link #bind bound} to a
 * session and the layer's {@link KvGeometry} and offsets inside the two regions. Publishing
 * computes the entries from the block ids (protocol section 6, contiguous runs merged) and posts
 * them under a fresh engine transfer id. Anything that stops a post (no binding, unequal block
 * lists, an id out of range, a batch outside a region) becomes a failed
 * {@code TransferCompleted} at once, with the refusal's code: the reducer always hears back.
 *
 * <p>Thread-safe; {@link #publish} never blocks. {@link #events()} is a unicast flux (one
 * subscriber, the node's event loop) that buffers without bound until it is drained.
 */
public final class TransferEffectPublisher implements AutoCloseable {

    /** Engine transfer ids, unique in the JVM so that publishers can share an engine. */
    private static final AtomicLong UIDS = new AtomicLong(1);

    private final TransferEngine engine;
    private final LongSupplier clock;
    private final Map<String, Binding> bindings = new ConcurrentHashMap<>();
    private final Map<Long, Long> statusByUid = new ConcurrentHashMap<>();
    private final Sinks.Many<NodeEvent.TransferCompleted> sink = Sinks.many().unicast().onBackpressureBuffer();
    private final Disposable subscription;

    /**
     * @param clock stamps the events ({@code atNs}) in the node's time base
     */
    public TransferEffectPublisher(TransferEngine engine, LongSupplier clock) {
        this.engine = engine;
        this.clock = clock;
        this.subscription = engine.completions().subscribe(this::onCompletion);
    }

    public TransferEffectPublisher(TransferEngine engine) {
        this(engine, System::nanoTime);
    }

    /** One layer of one peer session. */
    private record Binding(Session session, KvGeometry geometry, long localOffset, long remoteOffset) {}

    private static String key(String sessionKey, String layerName) {
        return sessionKey + "\u0000" + layerName;
    }

    /**
     * Binds a layer of a peer session: the layer's blocks live at {@code localLayerOffset} of
     * the session's local region and at {@code remoteLayerOffset} of the remote one (the shared-MR
     * offsets of protocol section 6).
     *
     * @return ok, or {@link FailureCode#WRONG_REGION} when the remote region is too small for the
     *         layer (a descriptor for another region), {@link FailureCode#LOCAL_OUT_OF_BOUNDS}
     *         when the local one is
     */
    public Result<Void> bind(String sessionKey, String layerName, Session session, KvGeometry geometry,
                             long localLayerOffset, long remoteLayerOffset) {
        if (sessionKey == null || layerName == null || session == null || geometry == null
                || localLayerOffset < 0 || remoteLayerOffset < 0) {
            return Result.err(FailureCode.INVALID_ARGUMENT, "bind needs a session key, layer, session, geometry and "
                    + "non-negative offsets");
        }
        long localNeed = localLayerOffset + geometry.localExtentBytes();
        if (localNeed > session.local().length()) {
            return Result.err(FailureCode.LOCAL_OUT_OF_BOUNDS, "layer " + layerName + " needs " + localNeed
                    + " bytes of local region '" + session.local().name() + "', which has " + session.local().length());
        }
        long remoteNeed = remoteLayerOffset + geometry.remoteExtentBytes();
        if (remoteNeed > session.remote().length()) {
            return Result.err(FailureCode.WRONG_REGION, "layer " + layerName + " of " + sessionKey + " needs "
                    + remoteNeed + " bytes of the peer's region, but the descriptor is for region '"
                    + session.remote().name() + "' of " + session.remote().length() + " bytes");
        }
        bindings.put(key(sessionKey, layerName), new Binding(session, geometry, localLayerOffset, remoteLayerOffset));
        return Result.ok(null);
    }

    public void unbind(String sessionKey, String layerName) {
        bindings.remove(key(sessionKey, layerName));
    }

    /**
     * Posts a {@link Effect.PostWrite} or {@link Effect.PostRead}; ignores every other effect.
     *
     * @return whether the effect was one of the two
     */
    public boolean publish(Effect effect) {
        return switch (effect) {
            case Effect.PostWrite w -> {
                post(w.statusId(), TransferOp.WRITE, w.sessionKey(), w.layerName(), w.localBlockIds(), w.remoteBlockIds());
                yield true;
            }
            case Effect.PostRead r -> {
                post(r.statusId(), TransferOp.READ, r.sessionKey(), r.layerName(), r.localBlockIds(), r.remoteBlockIds());
                yield true;
            }
            case Effect.HookReply _, Effect.SendRemoteBlocks _, Effect.SendRelease _, Effect.SendWriteDone _,
                    Effect.SendWriteFailed _, Effect.StartHandshake _, Effect.Decision _ -> false;
        };
    }

    private void post(long statusId, TransferOp op, String sessionKey, String layer, int[] local, int[] remote) {
        Binding b = bindings.get(key(sessionKey, layer));
        if (b == null) {
            refuse(statusId, new TransferError(FailureCode.NO_SESSION, "no session bound for " + sessionKey + " layer "
                    + layer));
            return;
        }
        Result<OffsetBatch> planned = b.geometry.plan(local, remote);
        if (planned.errorOrNull() != null) {
            refuse(statusId, planned.errorOrNull());
            return;
        }
        OffsetBatch batch = planned.valueOrNull().shifted(b.localOffset, b.remoteOffset);
        long uid = UIDS.getAndIncrement();
        statusByUid.put(uid, statusId);
        Result<?> posted = b.session.post(uid, op, batch);
        if (posted.errorOrNull() != null) {
            statusByUid.remove(uid);
            refuse(statusId, posted.errorOrNull());
        }
    }

    private void refuse(long statusId, TransferError why) {
        emit(new NodeEvent.TransferCompleted(clock.getAsLong(), statusId, false, why.code().code(), why.message()));
    }

    private void onCompletion(TransferEvent e) {
        Long statusId = statusByUid.remove(e.transferId());
        if (statusId != null) {
            emit(TransferCompletionAdapter.toNodeEvent(e, statusId, clock.getAsLong()));
        }
    }

    private void emit(NodeEvent.TransferCompleted event) {
        sink.emitNext(event, Sinks.EmitFailureHandler.busyLooping(Duration.ofSeconds(1)));
    }

    /** Transfer outcomes for the reducer, in completion order. */
    public Flux<NodeEvent.TransferCompleted> events() {
        return sink.asFlux();
    }

    /** Posted effects whose completion has not come back yet. */
    public int pending() {
        return statusByUid.size();
    }

    /** Stops listening to the engine (the engine stays open) and completes {@link #events()}. */
    @Override
    public void close() {
        subscription.dispose();
        sink.emitComplete(Sinks.EmitFailureHandler.busyLooping(Duration.ofSeconds(1)));
    }
}
