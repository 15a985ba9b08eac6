package io.kvledger.journal;

import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * The live node's time base: nanoseconds since the Unix epoch, read from the monotonic clock
 * after one anchor to the wall clock. Every journaled event of a node carries a time from here, so
 * the nodes of one machine (or of machines with synchronised clocks) share a time axis that
 * {@code merge}, {@code inspect} and {@code hangs} can order by.
 *
 * <p>The anchor is taken once per process and shared by every clock of it, so the nodes of one
 * JVM (a {@code LiveCluster}, a proxy beside its nodes) stamp on exactly one axis. It is tight:
 * the wall clock is read between two monotonic reads, a few times, and the narrowest bracket's
 * midpoint is kept, so a preemption between the reads (a loaded machine) cannot put the anchor
 * off by the time the thread waited.
 *
 * <p>Never goes backwards, also across restarts: a node recovered from its journal first calls
 * {@link #notBefore} with the last journaled time. Thread-safe.
 */
public final class ServiceClock implements LongSupplier {

    /** Brackets tried for the anchor; the narrowest is kept. */
    static final int ANCHOR_TRIES = 16;

    /** Where an anchor reads the two clocks (the system's, or a test's). */
    interface Readings {
        long nanoTime();

        long epochNs();
    }

    /**
     * The wall clock at one monotonic time.
     *
     * @param epochNs the wall clock's reading, ns since the epoch
     * @param nanoTime the monotonic time it was read at (the bracket's midpoint)
     * @param widthNs the bracket's width: the anchor's error is at most half of it
     */
    record Anchor(long epochNs, long nanoTime, long widthNs) {}

    private static final Readings SYSTEM = new Readings() {
        @Override
        public long nanoTime() {
            return System.nanoTime();
        }

        @Override
        public long epochNs() {
            java.time.Instant now = java.time.Instant.now();
            return now.getEpochSecond() * 1_000_000_000L + now.getNano();
        }
    };

    /** The process's one anchor, taken when the first clock is made. */
    private static final class Process {
        static final Anchor ANCHOR = anchor(SYSTEM, ANCHOR_TRIES);
    }

    private final Anchor anchor;
    private final LongSupplier nanoTime;
    private final AtomicLong last = new AtomicLong(Long.MIN_VALUE);

    ServiceClock(Anchor anchor, LongSupplier nanoTime) {
        this.anchor = anchor;
        this.nanoTime = nanoTime;
    }

    /** A clock on the process's shared anchor to the wall clock. */
    public static ServiceClock system() {
        return new ServiceClock(Process.ANCHOR, System::nanoTime);
    }

    /**
     * The anchor from {@code tries} brackets (monotonic, wall, monotonic) read from {@code r}: the
     * narrowest one's wall reading at its midpoint; the first of equally narrow ones.
     */
    static Anchor anchor(Readings r, int tries) {
        Anchor best = null;
        for (int i = 0; i < Math.max(1, tries); i++) {
            long before = r.nanoTime();
            long wall = r.epochNs();
            long after = r.nanoTime();
            long width = after - before;
            if (best == null || width < best.widthNs()) {
                best = new Anchor(wall, before + width / 2, width);
            }
        }
        return best;
    }

    /** The anchor this clock reads on. */
    Anchor anchor() {
        return anchor;
    }

    /** The current time; never less than an earlier reading or than {@link #notBefore}. */
    @Override
    public long getAsLong() {
        long t = anchor.epochNs() + (nanoTime.getAsLong() - anchor.nanoTime());
        return last.accumulateAndGet(t, Math::max);
    }

    /** Readings from now on are at least {@code ns} (a recovered journal's last time). */
    public void notBefore(long ns) {
        last.accumulateAndGet(ns, Math::max);
    }
}
