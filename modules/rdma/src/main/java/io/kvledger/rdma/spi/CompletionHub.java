package io.kvledger.rdma.spi;

import io.kvledger.rdma.FailureCode;
import io.kvledger.rdma.PendingTransfer;
import io.kvledger.rdma.Result;
import io.kvledger.rdma.TransferEvent;
import io.kvledger.rdma.TransferOp;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
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
 */
public final class CompletionHub {

    /** Events kept for a slow or absent subscriber. */
    public static final int BUFFER = 1 << 16;
    private static final System.Logger LOG = System.getLogger("io.kvledger.rdma");

    private final Sinks.Many<TransferEvent> sink = Sinks.many().multicast().onBackpressureBuffer(BUFFER, false);
    private final ConcurrentHashMap<Long, CompletableFuture<TransferEvent>> pending = new ConcurrentHashMap<>();
    private final AtomicLong posted = new AtomicLong();
    private final AtomicLong succeeded = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicLong rejected = new AtomicLong();
    private final AtomicBoolean overflowLogged = new AtomicBoolean();
    private final String engineName;

    public CompletionHub(String engineName) {
        this.engineName = engineName;
    }

    /** Reserves {@code transferId}; refuses one already in flight. */
    public Result<PendingTransfer> admit(long transferId, TransferOp op) {
        CompletableFuture<TransferEvent> f = new CompletableFuture<>();
        if (pending.putIfAbsent(transferId, f) != null) {
            rejected.incrementAndGet();
            return Result.err(FailureCode.DUPLICATE_TRANSFER_ID, "transfer id " + transferId
                    + " is already in flight on " + engineName);
        }
        posted.incrementAndGet();
        return Result.ok(new PendingTransfer(transferId, op, f));
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
    public void complete(TransferEvent event, Runnable afterEmit) {
        CompletableFuture<TransferEvent> f = pending.remove(event.transferId());
        if (f == null) {
            if (afterEmit != null) {
                afterEmit.run();
            }
            return;
        }
        (event.succeeded() ? succeeded : failed).incrementAndGet();
        Sinks.EmitResult r = emit(event);
        if (r.isFailure() && overflowLogged.compareAndSet(false, true)) {
            LOG.log(System.Logger.Level.WARNING, engineName + ": completion flux not drained (" + r + ", "
                    + BUFFER + " events buffered without a subscriber?); events from now on reach only their "
                    + "PendingTransfer until a subscriber drains the flux");
        }
        if (afterEmit != null) {
            afterEmit.run();
        }
        f.complete(event);
    }

    private Sinks.EmitResult emit(TransferEvent event) {
        long deadline = System.nanoTime() + Duration.ofSeconds(1).toNanos();
        while (true) {
            Sinks.EmitResult r = sink.tryEmitNext(event);
            if (r != Sinks.EmitResult.FAIL_NON_SERIALIZED || System.nanoTime() > deadline) {
                return r;
            }
            Thread.onSpinWait();
        }
    }

    public int inFlight() {
        return pending.size();
    }

    public boolean isPending(long transferId) {
        return pending.containsKey(transferId);
    }

    public long posted() {
        return posted.get();
    }

    public long succeeded() {
        return succeeded.get();
    }

    public long failed() {
        return failed.get();
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
