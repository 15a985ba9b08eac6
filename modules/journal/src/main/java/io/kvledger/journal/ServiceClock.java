package io.kvledger.journal;

import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * The live node's time base: nanoseconds since the Unix epoch, read from the monotonic clock
 * after one anchor to the wall clock at start. Every journaled event of a node carries a time
 * from here, so the nodes of one machine (or of machines with synchronised clocks) share a time
 * axis that {@code merge}, {@code inspect} and {@code hangs} can order by.
 *
 * <p>Never goes backwards, also across restarts: a node recovered from its journal first calls
 * {@link #notBefore} with the last journaled time. Thread-safe.
 */
public final class ServiceClock implements LongSupplier {

    private final long anchorEpochNs;
    private final long anchorNanoTime;
    private final AtomicLong last = new AtomicLong(Long.MIN_VALUE);

    private ServiceClock(long anchorEpochNs, long anchorNanoTime) {
        this.anchorEpochNs = anchorEpochNs;
        this.anchorNanoTime = anchorNanoTime;
    }

    /** A clock anchored to the wall clock now. */
    public static ServiceClock system() {
        java.time.Instant now = java.time.Instant.now();
        return new ServiceClock(now.getEpochSecond() * 1_000_000_000L + now.getNano(), System.nanoTime());
    }

    /** The current time; never less than an earlier reading or than {@link #notBefore}. */
    @Override
    public long getAsLong() {
        long t = anchorEpochNs + (System.nanoTime() - anchorNanoTime);
        return last.accumulateAndGet(t, Math::max);
    }

    /** Readings from now on are at least {@code ns} (a recovered journal's last time). */
    public void notBefore(long ns) {
        last.accumulateAndGet(ns, Math::max);
    }
}
