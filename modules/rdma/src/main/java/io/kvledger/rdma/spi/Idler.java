package io.kvledger.rdma.spi;

import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * The back-off of an engine thread with nothing to do: for {@link #SPIN_NS} it yields (a busy
 * stream of transfers keeps it hot, and yielding rather than spinning lets the callers' threads
 * run on small machines), then it parks until {@link #wake} or {@link #MAX_PARK_NS}.
 * Not thread-safe except {@link #wake}.
 */
public final class Idler {

    /** How long an idle thread stays runnable before it parks. */
    static final long SPIN_NS = 100_000;
    /** Longest park; the owner re-checks its state at least this often. */
    static final long MAX_PARK_NS = 200_000_000;

    private volatile Thread owner;
    private volatile boolean parked;
    private long idleSince;

    /** Binds the idler to the calling thread, the one that will {@link #idle} and be woken. */
    public void bindToCurrentThread() {
        owner = Thread.currentThread();
    }

    /** The loop did something: stay hot. */
    public void busy() {
        idleSince = 0;
    }

    /**
     * The loop found nothing to do: yield while the idle spell is young, then park.
     *
     * @param nothingQueued re-checked after announcing the park, so that a wake is never lost
     */
    public void idle(BooleanSupplier nothingQueued) {
        long now = System.nanoTime();
        if (idleSince == 0) {
            idleSince = now;
        }
        if (now - idleSince < SPIN_NS) {
            Thread.yield();
            return;
        }
        parked = true;
        if (nothingQueued.getAsBoolean()) {
            LockSupport.parkNanos(MAX_PARK_NS);
        }
        parked = false;
    }

    /** Wakes the owner if it is parked. Any thread. */
    public void wake() {
        Thread t = owner;
        if (parked && t != null) {
            LockSupport.unpark(t);
        }
    }
}
