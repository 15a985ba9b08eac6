package io.kvledger.rdma.spi;

import io.kvledger.rdma.FailureCode;
import io.kvledger.rdma.MemoryRegion;
import io.kvledger.rdma.RegionDescriptor;
import io.kvledger.rdma.Session;
import io.kvledger.rdma.TransferError;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What every engine keeps of a session: its two ends, its state (CONNECTING, then OPEN or FAILED,
 * CLOSED at the end, never back) with the reason it failed or closed, and how many of its batches
 * wait on the engine's thread. The state changes under the session's lock; an engine adds its
 * own bookkeeping around the {@code mark} methods, which are for the engine alone.
 *
 * @param <R> the engine's region type
 */
public abstract class EngineSession<R extends MemoryRegion> implements Session {

    private final R local;
    private final RegionDescriptor remote;
    private volatile State state = State.CONNECTING;
    private volatile TransferError failure;
    /** Batches of this session handed to the engine's thread and not completed yet. */
    private final AtomicInteger queued = new AtomicInteger();

    protected EngineSession(R local, RegionDescriptor remote) {
        this.local = local;
        this.remote = remote;
    }

    @Override public final R local() { return local; }
    @Override public final RegionDescriptor remote() { return remote; }
    @Override public final State state() { return state; }
    @Override public final TransferError failure() { return failure; }

    /** Batches of this session handed to the engine's thread and not completed yet. */
    public final AtomicInteger queued() {
        return queued;
    }

    /** CONNECTING becomes OPEN; false (and nothing changes) from any other state. */
    public final synchronized boolean markOpen() {
        if (state != State.CONNECTING) {
            return false;
        }
        state = State.OPEN;
        return true;
    }

    /** Any state but CLOSED becomes FAILED for {@code why}; false once closed. */
    public final synchronized boolean markFailed(FailureCode code, String why) {
        if (state == State.CLOSED) {
            return false;
        }
        failure = new TransferError(code, why);
        state = State.FAILED;
        return true;
    }

    /**
     * Becomes CLOSED, with "session closed" as the reason unless it failed before; false (and
     * nothing changes) when it was closed already.
     */
    public final synchronized boolean markClosed() {
        if (state == State.CLOSED) {
            return false;
        }
        if (failure == null) {
            failure = new TransferError(FailureCode.ENDPOINT_CLOSED, "session closed");
        }
        state = State.CLOSED;
        return true;
    }
}
