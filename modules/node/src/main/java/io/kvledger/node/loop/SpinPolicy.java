package io.kvledger.node.loop;

/**
 * How long the node loop spins before it parks, from whether its recent spins caught an item:
 * a spin pays only when the next call comes within it (a caller answering at once, as one call
 * at a time over {@code unix://}), and costs its whole length of CPU, on a core the caller may need,
 * when it does not (calls a millisecond apart, a GPU step between a step's calls). So the loop
 * spins while its spins catch items; after {@link #MISSES_TO_STOP} spins in a row that ran out it
 * parks at once, spinning only every {@link #PROBE_EVERY}th idle spell to find out whether
 * spinning pays again (a caught probe resumes it). Reads no clock: the loop tells it what
 * happened. Loop thread only.
 */
final class SpinPolicy {

    /** Spins in a row that ran out before spinning stops. */
    static final int MISSES_TO_STOP = 4;

    /** While stopped, one idle spell in this many spins (a probe). */
    static final int PROBE_EVERY = 8;

    private final long spinNs;
    private final boolean adaptive;
    private int misses;
    private int parked;

    /** Spins up to {@code spinNs}; {@code adaptive} false: always (the fixed spin). */
    SpinPolicy(long spinNs, boolean adaptive) {
        if (spinNs < 0) {
            throw new IllegalArgumentException("a spin must be 0 or more nanoseconds, got " + spinNs);
        }
        this.spinNs = spinNs;
        this.adaptive = adaptive;
    }

    /** The spin for the idle spell beginning now (0: park at once); call {@link #spun} after a spin. */
    long next() {
        if (!adaptive || misses < MISSES_TO_STOP) {
            return spinNs;
        }
        if (++parked >= PROBE_EVERY) {
            parked = 0;
            return spinNs;
        }
        return 0;
    }

    /** After a spin of {@link #next}'s length (more than 0): whether it caught an item. */
    void spun(boolean caught) {
        if (caught) {
            misses = 0;
            parked = 0;
        } else if (misses < MISSES_TO_STOP) {
            misses++;
        }
    }
}
