/**
 * Chrome trace-event JSON (the format Perfetto and {@code chrome://tracing} open) of one request
 * or transfer's {@link io.kvledger.ledger.replay.Timeline}: {@code kvledger inspect --chrome-trace}
 * and {@code kvledger export --chrome-trace}. One process per node, one thread per side of it
 * (scheduler, worker, notify frames, RDMA transfers), the phases as complete events, a flow arrow
 * per ZMQ frame from the node that sent it to the node that received it, and each hang finding as
 * an instant marker where the missing event should have been.
 */
package io.kvledger.ledger.trace;
