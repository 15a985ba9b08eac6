package io.kvledger.rdma.spi;

import io.kvledger.rdma.FailureCode;
import io.kvledger.rdma.PendingTransfer;
import io.kvledger.rdma.Result;
import io.kvledger.rdma.TransferEvent;
import io.kvledger.rdma.TransferOp;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Sinks;

/**
 * The completion side shared by the engines: admits transfer ids (refusing one already in
 * flight), completes each admitted batch exactly once, and publishes the events on a hot
 * multicast {@link Flux} that buffers until its first subscriber.
 *
 * <p>Thread-safe. {@link #complete} is called from an engine's own thread; emission retries
 * briefly when another thread is emitting at the same moment, so events are never dropped for
 * concurrency. An event that cannot be buffered because no subscriber drains the flux (more than
 * {@link #BUFFER} undelivered events) is still delivered to its {@link PendingTransfer}, and the
 * overflow is logged once.
 *
 * <p>The ids in flight and the posted / succeeded / failed counts sit in one primitive table under
 * one spin lock, taken once to admit a batch and once to complete it (instead of a
 * boxing concurrent map and two atomic counters per batch, see benchmarks/README.md, issue 14
 * item 5). A batch its engine copies and completes on the posting thread skips the future's
 * pending state: {@link #reserve} then {@link #completeReserved}.
 */
public final class CompletionHub {

    /** Events kept for a slow or absent subscriber. */
    static final int BUFFER = 1 << 16;
    private static final System.Logger LOG = System.getLogger("io.kvledger.rdma");
    private static final long EMIT_RETRY_NS = Duration.ofSeconds(1).toNanos();
    /** The table's value for an id reserved by {@link #reserve}: no future waits on it. */
    private static final Object RESERVED = new Object();

    private final Sinks.Many<TransferEvent> sink = Sinks.many().multicast().onBackpressureBuffer(BUFFER, false);
    /** 1 while a thread holds the hub's spin lock, which guards {@link #pending} and the three counters below it. */
    @SuppressWarnings("unused") // through LOCK
    private volatile int locked;
    private static final java.lang.invoke.VarHandle LOCK;

    static {
        try {
            LOCK = java.lang.invoke.MethodHandles.lookup().findVarHandle(CompletionHub.class, "locked", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
    /** Id in flight → its CompletableFuture, or {@link #RESERVED}. */
    private final LongTable<Object> pending = new LongTable<>(64);
    private long posted;
    private long succeeded;
    private long failed;
    private final AtomicLong rejected = new AtomicLong();
    private final AtomicBoolean overflowLogged = new AtomicBoolean();
    private final String engineName;

    public CompletionHub(String engineName) {
        this.engineName = engineName;
    }

    /** Reserves {@code transferId}; refuses one already in flight. */
    public Result<PendingTransfer> admit(long transferId, TransferOp op) {
        CompletableFuture<TransferEvent> f = new CompletableFuture<>();
        boolean added;
        lock();
        try {
            added = pending.putIfAbsent(transferId, f);
            if (added) {
                posted++;
            }
        } finally {
            unlock();
        }
        if (!added) {
            rejected.incrementAndGet();
            return duplicate(transferId);
        }
        return Result.ok(new PendingTransfer(transferId, op, f));
    }

    /**
     * Reserves {@code transferId} for a batch the caller completes itself on this thread with
     * {@link #completeReserved} (an inline copy); false, counted as a refusal, when the id is in
     * flight already ({@link #duplicate} is the refusal to return). {@link #complete} ignores a
     * reserved id.
     */
    public boolean reserve(long transferId) {
        lock();
        try {
            if (pending.putIfAbsent(transferId, RESERVED)) {
                posted++;
                return true;
            }
        } finally {
            unlock();
        }
        rejected.incrementAndGet();
        return false;
    }

    /** The refusal of a transfer id already in flight (already counted by {@link #reserve}). */
    public <T> Result<T> duplicate(long transferId) {
        return Result.err(FailureCode.DUPLICATE_TRANSFER_ID, "transfer id " + transferId
                + " is already in flight on " + engineName);
    }

    /**
     * Delivers the event of a batch {@link #reserve reserved} by this thread: frees the id, counts
     * and emits the event, and returns the batch's handle, already completed with it.
     *
     * @throws IllegalStateException when the event's id is not reserved
     */
    public PendingTransfer completeReserved(TransferOp op, TransferEvent event) {
        long id = event.transferId();
        lock();
        try {
            if (pending.get(id) != RESERVED) {
                throw new IllegalStateException("transfer id " + id + " was not reserved");
            }
            pending.remove(id);
            count(event);
        } finally {
            unlock();
        }
        publish(event);
        return new PendingTransfer(id, op, CompletableFuture.completedFuture(event));
    }

    /** Counts a refusal made before admission. */
    public <T> Result<T> reject(Result<T> refusal) {
        rejected.incrementAndGet();
        return refusal;
    }

    /** Delivers the one event of an admitted batch; later events for the same id are ignored. */
    public void complete(TransferEvent event) {
        complete(event, null);
    }

    /**
     * As {@link #complete(TransferEvent)}, running {@code afterEmit} (when not null, and also when
     * the event is ignored) once the event is on the flux but before the batch's future completes:
     * an engine releases per-session state there, so that a caller woken by the future already
     * sees it released, while nothing it posts next can reach the flux before this event.
     */
    @SuppressWarnings("unchecked")
    public void complete(TransferEvent event, Runnable afterEmit) {
        long id = event.transferId();
        Object v;
        lock();
        try {
            v = pending.get(id);
            if (v != null && v != RESERVED) {
                pending.remove(id);
                count(event);
            }
        } finally {
            unlock();
        }
        if (v == null || v == RESERVED) {
            if (afterEmit != null) {
                afterEmit.run();
            }
            return;
        }
        publish(event);
        if (afterEmit != null) {
            afterEmit.run();
        }
        ((CompletableFuture<TransferEvent>) v).complete(event);
    }

    /**
     * Takes the spin lock: one compare-and-set when free (the usual case: a critical section here
     * is a table probe and a counter), yielding the core when the holder seems preempted.
     */
    private void lock() {
        for (int spins = 0; !LOCK.compareAndSet(this, 0, 1); spins++) {
            if (spins < 100) {
                Thread.onSpinWait();
            } else {
                Thread.yield();
            }
        }
    }

    private void unlock() {
        LOCK.setRelease(this, 0);
    }

    /** Under the lock. */
    private void count(TransferEvent event) {
        if (event.succeeded()) {
            succeeded++;
        } else {
            failed++;
        }
    }

    private void publish(TransferEvent event) {
        Sinks.EmitResult r = emit(event);
        if (r.isFailure() && overflowLogged.compareAndSet(false, true)) {
            LOG.log(System.Logger.Level.WARNING, engineName + ": completion flux not drained (" + r + ", "
                    + BUFFER + " events buffered without a subscriber?); events from now on reach only their "
                    + "PendingTransfer until a subscriber drains the flux");
        }
    }

    private Sinks.EmitResult emit(TransferEvent event) {
        Sinks.EmitResult r = sink.tryEmitNext(event);
        if (r != Sinks.EmitResult.FAIL_NON_SERIALIZED) {
            return r; // the usual case: no clock read
        }
        long deadline = System.nanoTime() + EMIT_RETRY_NS;
        while (true) {
            Thread.onSpinWait();
            r = sink.tryEmitNext(event);
            if (r != Sinks.EmitResult.FAIL_NON_SERIALIZED || System.nanoTime() > deadline) {
                return r;
            }
        }
    }

    public int inFlight() {
        return (int) underLock(() -> pending.size());
    }

    boolean isPending(long transferId) {
        return underLock(() -> pending.get(transferId) != null ? 1 : 0) != 0;
    }

    public long posted() {
        return underLock(() -> posted);
    }

    public long succeeded() {
        return underLock(() -> succeeded);
    }

    public long failed() {
        return underLock(() -> failed);
    }

    /** A read of the table or the counters under the lock (these readers are not on a hot path). */
    private long underLock(java.util.function.LongSupplier read) {
        lock();
        try {
            return read.getAsLong();
        } finally {
            unlock();
        }
    }

    public long rejected() {
        return rejected.get();
    }

    public Flux<TransferEvent> flux() {
        return sink.asFlux();
    }

    /** Completes the flux; call after the last {@link #complete}. */
    public void close() {
        while (sink.tryEmitComplete() == Sinks.EmitResult.FAIL_NON_SERIALIZED) {
            Thread.onSpinWait();
        }
    }
}
