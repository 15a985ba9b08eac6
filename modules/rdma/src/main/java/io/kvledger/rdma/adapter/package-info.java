/**
 * The bridge between the core reducer and an engine, named by direction:
 * {@link io.kvledger.rdma.adapter.TransferEffectPublisher} turns {@code PostWrite}/{@code PostRead}
 * effects into posts, {@link io.kvledger.rdma.adapter.TransferCompletionAdapter} turns completions
 * into {@code NodeEvent.TransferCompleted}. May depend on {@code io.kvledger.core} (events and
 * effects), {@code io.kvledger.rdma}, {@code io.kvledger.rdma.layout} and reactor-core.
 */
package io.kvledger.rdma.adapter;
