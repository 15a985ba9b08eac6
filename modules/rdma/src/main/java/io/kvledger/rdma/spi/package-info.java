/**
 * Pieces the engines share: completion bookkeeping and publication
 * ({@link io.kvledger.rdma.spi.CompletionHub}), the region and session bookkeeping
 * ({@link io.kvledger.rdma.spi.EngineRegion}, {@link io.kvledger.rdma.spi.EngineSession}), the checks made before posting
 * ({@link io.kvledger.rdma.spi.BatchRules}) and the idle back-off of engine threads
 * ({@link io.kvledger.rdma.spi.Idler}). For engine implementations, not for callers.
 * May depend on {@code io.kvledger.rdma}, the JDK and reactor-core.
 */
package io.kvledger.rdma.spi;
