/**
 * The bridge between the core reducer and an engine, named by direction:
 * {@link io.kvledger.rdma.adapter.TransferEffectPublisher} turns {@code PostWrite}/{@code PostRead}
 * effects into posts and offers their outcomes as {@code NodeEvent.TransferCompleted} to a node's
 * {@link io.kvledger.core.event.NodeEventSink} (bounded retry on the completion thread, then
 * dropped and counted in {@code refused()}), or to a bounded {@code events()} flux;
 * {@link io.kvledger.rdma.adapter.TransferCompletionAdapter} turns completions into
 * {@code NodeEvent.TransferCompleted}. May depend on {@code io.kvledger.core} (events, effects and
 * the sink), {@code io.kvledger.rdma}, {@code io.kvledger.rdma.layout} and reactor-core.
 */
package io.kvledger.rdma.adapter;
