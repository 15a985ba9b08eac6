/**
 * The transfer-engine port: what the rest of kvledger sees of the data plane. A
 * {@link io.kvledger.rdma.TransferEngine} registers {@link io.kvledger.rdma.MemoryRegion}s and
 * hands out their serializable {@link io.kvledger.rdma.RegionDescriptor}s, opens
 * {@link io.kvledger.rdma.Session}s to peers' regions and posts {@link io.kvledger.rdma.OffsetBatch}es
 * of reads or writes under a transfer id; completions come back as a Reactor {@code Flux} of
 * {@link io.kvledger.rdma.TransferEvent}s. Refusals are {@link io.kvledger.rdma.Result}s with a
 * {@link io.kvledger.rdma.FailureCode}, never exceptions.
 *
 * <p>May depend on the JDK and reactor-core only. Implementations live in
 * {@code io.kvledger.rdma.ucx} and {@code io.kvledger.rdma.jvm}, chosen by
 * {@code io.kvledger.rdma.engine}; the block-id arithmetic is in {@code io.kvledger.rdma.layout};
 * the bridge to the core reducer is {@code io.kvledger.rdma.adapter}.
 */
package io.kvledger.rdma;
