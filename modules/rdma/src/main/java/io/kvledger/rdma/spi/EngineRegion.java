package io.kvledger.rdma.spi;

import io.kvledger.rdma.MemoryRegion;
import io.kvledger.rdma.RegionDescriptor;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * What every engine keeps of a registered region: its id, name, memory, the arena that owns the
 * memory and the descriptor peers import. Closing it only refuses new posts: the memory stays
 * until the engine closes, since peers may hold its key (and, with shared memory or in one JVM,
 * copy into it directly), so a late copy never meets freed memory.
 */
public abstract class EngineRegion implements MemoryRegion {

    private final long id;
    private final String name;
    private final Arena arena;
    private final MemorySegment segment;
    private final RegionDescriptor descriptor;
    private volatile boolean open = true;

    protected EngineRegion(long id, String name, Arena arena, MemorySegment segment, RegionDescriptor descriptor) {
        this.id = id;
        this.name = name;
        this.arena = arena;
        this.segment = segment;
        this.descriptor = descriptor;
    }

    @Override public final long id() { return id; }
    @Override public final String name() { return name; }
    @Override public final MemorySegment segment() { return segment; }
    @Override public final long length() { return segment.byteSize(); }
    @Override public final RegionDescriptor descriptor() { return descriptor; }
    @Override public final boolean isOpen() { return open; }

    /** The arena that owns the region's memory; the engine closes it when it closes. */
    public final Arena arena() {
        return arena;
    }

    /** Refuses new posts from now on; the memory stays until the engine closes. */
    @Override
    public final void close() {
        open = false;
    }
}
