/**
 * The UCX engine: hand-written Panama FFM bindings to libucp/libucs ({@link io.kvledger.rdma.ucx.Ucx},
 * with struct layouts in {@link io.kvledger.rdma.ucx.UcxAbi} guarded by the C ABI probe in
 * {@code native/}) and {@link io.kvledger.rdma.ucx.UcxTransferEngine}, one worker driven by its
 * own progress thread. The one rule that matters most: {@code UCX_ERROR_SIGNALS} is cleared with
 * libc {@code setenv} before libucs loads, or UCX's SIGSEGV handler kills the JVM at its next
 * implicit null check. May depend on {@code io.kvledger.rdma}, {@code io.kvledger.rdma.spi}, the
 * JDK and reactor-core.
 */
package io.kvledger.rdma.ucx;
