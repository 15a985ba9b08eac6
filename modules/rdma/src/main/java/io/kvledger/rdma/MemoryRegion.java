package io.kvledger.rdma;

import java.lang.foreign.MemorySegment;

/**
 * A registered local region: off-heap memory owned by the engine that registered it, reachable
 * by peers through {@link #descriptor()} (MoRIIO's {@code register_torch_tensor} and its packed
 * {@code MemoryDesc}).
 *
 * <p>Threading: {@link #segment()} may be read and written by any thread, but not while a
 * transfer that touches the same bytes is in flight.
 */
public interface MemoryRegion extends AutoCloseable {

    /** Engine-unique id, carried in the descriptor. */
    long id();

    String name();

    /** The region's memory; invalid once the engine closes. */
    MemorySegment segment();

    long length();

    /** What a peer imports to reach this region. */
    RegionDescriptor descriptor();

    boolean isOpen();

    /**
     * Unregisters the region: posts that name it are refused from now on with
     * {@link FailureCode#REGION_CLOSED}; the memory is unmapped and released once no transfer
     * uses it, at the latest when the engine closes. Idempotent.
     */
    @Override
    void close();
}
