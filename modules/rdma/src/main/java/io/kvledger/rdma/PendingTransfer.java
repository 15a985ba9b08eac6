package io.kvledger.rdma;

import java.util.concurrent.CompletableFuture;
import reactor.core.publisher.Mono;

/**
 * An accepted batch. Its completion also goes to {@link TransferEngine#completions()}; this
 * handle is for callers that want to wait on one batch.
 */
public final class PendingTransfer {

    private final long transferId;
    private final TransferOp op;
    private final CompletableFuture<TransferEvent> future;

    public PendingTransfer(long transferId, TransferOp op, CompletableFuture<TransferEvent> future) {
        this.transferId = transferId;
        this.op = op;
        this.future = future;
    }

    public long transferId() {
        return transferId;
    }

    TransferOp op() {
        return op;
    }

    /** Completes with the batch's event (never exceptionally). */
    public CompletableFuture<TransferEvent> future() {
        return future;
    }

    /** The batch's event as a hot Mono; cancelling it does not cancel the transfer. */
    public Mono<TransferEvent> completion() {
        return Mono.fromFuture(future, true);
    }

    @Override
    public String toString() {
        return "PendingTransfer[" + transferId + " " + op + (future.isDone() ? " done]" : "]");
    }
}
