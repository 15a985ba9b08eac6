package io.kvledger.rdma.adapter;

import io.kvledger.core.event.NodeEvent;
import io.kvledger.rdma.TransferEvent;
import reactor.core.publisher.Flux;

/**
 * Turns engine completions into the reducer's input event {@link NodeEvent.TransferCompleted}
 * ({@code atNs, statusId, succeeded, code, message}): success has code 0 and message "ok", a
 * failure its {@link io.kvledger.rdma.FailureCode#code()} and the engine's message.
 */
final class TransferCompletionAdapter {

    private TransferCompletionAdapter() {}

    /** The event for {@code e}, with the reducer's status id and the time it is stamped with. */
    static NodeEvent.TransferCompleted toNodeEvent(TransferEvent e, long statusId, long atNs) {
        return new NodeEvent.TransferCompleted(atNs, statusId, e.succeeded(), e.code(), e.message());
    }

    /** The event for a batch that was posted with the status id as its transfer id. */
    static NodeEvent.TransferCompleted toNodeEvent(TransferEvent e) {
        return toNodeEvent(e, e.transferId(), e.atNs());
    }

    /** Every completion of {@code completions} as a node event (transfer id used as status id). */
    static Flux<NodeEvent.TransferCompleted> adapt(Flux<TransferEvent> completions) {
        return completions.map(TransferCompletionAdapter::toNodeEvent);
    }
}
