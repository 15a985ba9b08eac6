package io.kvledger.rdma.adapter;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.event.NodeEventSink;
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
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Sinks;
import reactor.util.concurrent.Queues;

/**
 * Executes the reducer's transfer posts ({@link Effect.Post}: {@link Effect.PostWrite} and {@link Effect.PostRead}) on a transfer
 * engine and hands their outcomes back as {@link NodeEvent.TransferCompleted} with the effect's
 * status id, offered to a node's {@link NodeEventSink} (or, for the constructors without one,
 * through {@link #events()}).
 *
 * <p>Each {@code (sessionKey, layerName)} an effect can name is first {@link #bind bound} to a
 * session and the layer's {@link KvGeometry} and offsets inside the two regions. Publishing
 * computes the entries from the block ids (protocol section 6, contiguous runs merged) and posts
 * them under a fresh engine transfer id. Anything that stops a post (no binding, unequal block
 * lists, an id out of range, a batch outside a region) becomes a failed
 * {@code TransferCompleted} at once, with the refusal's code: the reducer always hears back.
 *
 * <p>Thread-safe; {@link #publish} never blocks. When the sink refuses a completion, the
 * engine's completion thread retries with a bounded backoff (pressure travels back to the engine)
 * for up to a bound (default 1 s), then drops the event and counts it in {@link #refused()} (and
 * logs the first and every 1024th). An immediate refusal found on the caller's thread by
 * {@link #publish} (the caller may be the loop that drains the sink) is offered once. A dropped
 * completion is not lost to the reducer's bookkeeping: its transfer timeout still fires.
 *
 * <p>Without a sink of the caller's, {@link #events()} is a unicast flux (one subscriber, the
 * node's event loop) over a bounded buffer of {@link #DEFAULT_EVENTS_CAPACITY} events, fed
 * through the same bounded policy.
 */
public final class TransferEffectPublisher implements AutoCloseable {

    /** Engine transfer ids, unique in the JVM so that publishers can share an engine. */
    private static final AtomicLong UIDS = new AtomicLong(1);
    private static final System.Logger LOG = System.getLogger(TransferEffectPublisher.class.getName());

    /** How long the completion thread retries a refused event before it drops and counts it. */
    static final Duration DEFAULT_REFUSE_AFTER = Duration.ofSeconds(1);
    /** The buffer of {@link #events()} when no sink is given. */
    static final int DEFAULT_EVENTS_CAPACITY = 1 << 16;

    private final TransferEngine engine;
    private final LongSupplier clock;
    private final Map<String, Binding> bindings = new ConcurrentHashMap<>();
    private final Map<Long, Long> statusByUid = new ConcurrentHashMap<>();
    /** Only for the constructors without a sink: the flux {@link #events()} adapts. */
    private final Sinks.Many<NodeEvent.TransferCompleted> flux;
    private final NodeEventSink sink;
    private final long refuseAfterNs;
    private final AtomicLong refused = new AtomicLong();
    private volatile boolean closing;
    private final Disposable subscription;

    /**
     * Completions go to {@code sink}; a refused one is retried for up to {@code refuseAfter}
     * (zero: offered once), then dropped and counted in {@link #refused()}.
     *
     * @param clock stamps the events ({@code atNs}) in the node's time base
     */
    public TransferEffectPublisher(TransferEngine engine, LongSupplier clock, NodeEventSink sink, Duration refuseAfter) {
        this(engine, clock, Objects.requireNonNull(sink, "sink"), refuseAfter, null);
    }

    /** Completions go to {@code sink}, refusals retried for up to {@link #DEFAULT_REFUSE_AFTER}. */
    TransferEffectPublisher(TransferEngine engine, LongSupplier clock, NodeEventSink sink) {
        this(engine, clock, sink, DEFAULT_REFUSE_AFTER);
    }

    /**
     * Completions go to {@link #events()} (bounded to {@link #DEFAULT_EVENTS_CAPACITY} undrained events).
     *
     * @param clock stamps the events ({@code atNs}) in the node's time base
     */
    TransferEffectPublisher(TransferEngine engine, LongSupplier clock) {
        this(engine, clock, null, DEFAULT_REFUSE_AFTER,
                Sinks.many().unicast().onBackpressureBuffer(Queues.<NodeEvent.TransferCompleted>get(DEFAULT_EVENTS_CAPACITY).get()));
    }

    private TransferEffectPublisher(TransferEngine engine, LongSupplier clock, NodeEventSink sink, Duration refuseAfter,
                                    Sinks.Many<NodeEvent.TransferCompleted> flux) {
        if (refuseAfter == null || refuseAfter.isNegative()) {
            throw new IllegalArgumentException("the refusal bound must be zero or positive, got " + refuseAfter);
        }
        this.engine = engine;
        this.clock = clock;
        this.flux = flux;
        this.sink = sink != null ? sink : fluxSink(flux);
        this.refuseAfterNs = refuseAfter.toNanos();
        this.subscription = engine.completions().subscribe(this::onCompletion);
    }

    public TransferEffectPublisher(TransferEngine engine) {
        this(engine, System::nanoTime);
    }

    /**
     * The sink {@link #events()} adapts: full (or completed) refuses; concurrent emission from the
     * caller's and the engine's threads is a transient contention and is retried at once.
     */
    private static NodeEventSink fluxSink(Sinks.Many<NodeEvent.TransferCompleted> flux) {
        return e -> {
            if (!(e instanceof NodeEvent.TransferCompleted t)) {
                return false;
            }
            while (true) {
                Sinks.EmitResult r = flux.tryEmitNext(t);
                if (r == Sinks.EmitResult.OK) {
                    return true;
                }
                if (r != Sinks.EmitResult.FAIL_NON_SERIALIZED) {
                    return false;
                }
                Thread.onSpinWait();
            }
        };
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

    void unbind(String sessionKey, String layerName) {
        bindings.remove(key(sessionKey, layerName));
    }

    /** Posts a {@link Effect.PostWrite} or {@link Effect.PostRead} (the transfer posts, {@link Effect.Post}). */
    public void publish(Effect.Post effect) {
        switch (effect) {
            case Effect.PostWrite w ->
                post(w.statusId(), TransferOp.WRITE, w.sessionKey(), w.layerName(), w.localBlockIds(), w.remoteBlockIds());
            case Effect.PostRead r ->
                post(r.statusId(), TransferOp.READ, r.sessionKey(), r.layerName(), r.localBlockIds(), r.remoteBlockIds());
        }
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

    /** A post refused at once, on the caller's thread: offered once. */
    private void refuse(long statusId, TransferError why) {
        emit(new NodeEvent.TransferCompleted(clock.getAsLong(), statusId, false, why.code().code(), why.message()), 0);
    }

    /** A completion, on the engine's completion thread: retried up to the bound. */
    private void onCompletion(TransferEvent e) {
        Long statusId = statusByUid.remove(e.transferId());
        if (statusId != null) {
            emit(TransferCompletionAdapter.toNodeEvent(e, statusId, clock.getAsLong()), refuseAfterNs);
        }
    }

    private void emit(NodeEvent.TransferCompleted event, long boundNs) {
        long deadline = 0;
        for (int attempt = 0; ; attempt++) {
            if (sink.offer(event)) {
                return;
            }
            long now = System.nanoTime();
            if (attempt == 0) {
                deadline = now + boundNs;
            }
            long left = deadline - now;
            if (left <= 0 || closing) {
                long n = refused.incrementAndGet();
                if (n == 1 || (n & 1023) == 0) {
                    LOG.log(System.Logger.Level.WARNING, "transfer publisher: the node's inbox refused the completion of "
                            + "status " + event.statusId() + " for " + boundNs / 1_000_000 + " ms; dropped (" + n
                            + " refused so far)");
                }
                return;
            }
            if (attempt < 64) {
                Thread.onSpinWait();
            } else {
                LockSupport.parkNanos(Math.min(left, attempt < 1024 ? 20_000 : 1_000_000));
            }
        }
    }

    /**
     * Transfer outcomes for the reducer, in completion order.
     *
     * @throws IllegalStateException when the publisher was built with a {@link NodeEventSink}
     */
    public Flux<NodeEvent.TransferCompleted> events() {
        if (flux == null) {
            throw new IllegalStateException("this publisher offers its events to a NodeEventSink");
        }
        return flux.asFlux();
    }

    /** Completions the sink refused for longer than the bound (or at once, for a refused post), dropped. */
    public long refused() {
        return refused.get();
    }

    /** Posted effects whose completion has not come back yet. */
    public int pending() {
        return statusByUid.size();
    }

    /** Stops listening to the engine (the engine stays open) and completes {@link #events()}. */
    @Override
    public void close() {
        closing = true;
        subscription.dispose();
        if (flux != null) {
            flux.emitComplete(Sinks.EmitFailureHandler.busyLooping(Duration.ofSeconds(1)));
        }
    }
}
