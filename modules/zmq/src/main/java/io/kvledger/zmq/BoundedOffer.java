package io.kvledger.zmq;

import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.event.NodeEventSink;
import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * Offers a node event to a {@link NodeEventSink} with a bounded backoff: spin briefly, then park
 * in short slices, until the sink takes it, the owner is closing, or {@code bound} has passed
 * since the first refusal. A bound of zero offers once.
 */
final class BoundedOffer {

    /** How long an adapter thread retries a refused event before it drops and counts it. */
    static final Duration DEFAULT_BOUND = Duration.ofSeconds(1);

    enum Outcome { TAKEN, REFUSED, CLOSING }

    private BoundedOffer() {}

    static Duration checked(Duration bound) {
        if (bound == null || bound.isNegative()) {
            throw new IllegalArgumentException("the refusal bound must be zero or positive, got " + bound);
        }
        return bound;
    }

    static Outcome offer(NodeEventSink sink, NodeEvent event, long boundNs, BooleanSupplier closing) {
        long deadline = 0;
        for (int attempt = 0; ; attempt++) {
            if (sink.offer(event)) {
                return Outcome.TAKEN;
            }
            if (closing.getAsBoolean()) {
                return Outcome.CLOSING;
            }
            long now = System.nanoTime();
            if (attempt == 0) {
                deadline = now + boundNs;
            }
            long left = deadline - now;
            if (left <= 0) {
                return Outcome.REFUSED;
            }
            if (attempt < 64) {
                Thread.onSpinWait();
            } else {
                LockSupport.parkNanos(Math.min(left, attempt < 1024 ? 20_000 : 1_000_000));
            }
        }
    }

    /** Logs the first refusal and then every 1024th, so a full inbox is seen without flooding the log. */
    static void logRefused(System.Logger log, String who, long refusedSoFar, NodeEvent e, long boundNs) {
        if (refusedSoFar == 1 || (refusedSoFar & 1023) == 0) {
            log.log(System.Logger.Level.WARNING, who + ": the node's inbox refused a " + e.getClass().getSimpleName()
                    + " for " + (boundNs / 1_000_000) + " ms; dropped (" + refusedSoFar + " refused so far)");
        }
    }
}
