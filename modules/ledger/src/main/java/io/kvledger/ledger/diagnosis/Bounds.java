package io.kvledger.ledger.diagnosis;

/**
 * The time bounds the detectors judge against.
 *
 * @param stuckAfterNs a non-terminal request older than this in its phase at the end of the
 *                     journals, and without a lifecycle event within this of the end, is reported
 *                     as stuck
 */
public record Bounds(long stuckAfterNs) {

    /** 30 seconds: half the default defer_timeout, far beyond any healthy transfer. */
    public static Bounds defaults() {
        return new Bounds(30_000_000_000L);
    }
}
