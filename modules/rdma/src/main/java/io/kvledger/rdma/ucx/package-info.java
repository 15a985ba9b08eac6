/**
 * The UCX engine: hand-written Panama FFM bindings to libucp/libucs ({@link io.kvledger.rdma.ucx.Ucx},
 * with struct layouts in {@link io.kvledger.rdma.ucx.UcxAbi} guarded by the C ABI probe in
 * {@code native/}) and {@link io.kvledger.rdma.ucx.UcxTransferEngine}, one worker driven by its
 * own progress thread. The one rule that matters most: {@code UCX_ERROR_SIGNALS} is cleared with
 * libc {@code setenv} before libucs loads, or UCX's SIGSEGV handler kills the JVM at its next
 * implicit null check.
 *
 * <p>The second: a process that <em>serves</em> RMA emulated by active messages (tcp, no RDMA
 * device) can be aborted by its peer's death. UCX 1.13.1 (and its master branch) sends the
 * completion of an emulated put, or the data of an emulated get, from inside the handler with
 * {@code ucp_request_send}, which calls {@code ucs_fatal("unexpected error: Endpoint timeout")}
 * on any send error, whatever the error-handling mode or keepalive: an initiator killed with
 * puts still buffered in the target's socket aborts the target at the first reply after the
 * reset (TwoProcessUcxTest's killed-initiator case did so to the surefire JVM about one run in
 * seven). Nothing in the target can intervene: the buffered puts and the reset are handled in the
 * same {@code ucp_worker_progress}. So peers on one host never emulate: the engine exposes the
 * posix transport's peer-failure support and allocates regions in posix shared memory, and an
 * endpoint with peer error handling to this host is a one-sided copy like one without. Still
 * exposed: a node whose regions a peer on <em>another</em> host writes or reads over tcp aborts if
 * that peer dies mid-transfer; only transports with hardware RMA avoid that in UCX 1.13.
 *
 * <p>May depend on {@code io.kvledger.rdma}, {@code io.kvledger.rdma.spi}, the JDK and
 * reactor-core.
 */
package io.kvledger.rdma.ucx;
