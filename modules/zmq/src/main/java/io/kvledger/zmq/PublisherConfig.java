package io.kvledger.zmq;

import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * How a {@link NotifyPublisher} runs.
 *
 * @param queueCapacity   frames waiting for the publisher thread; a send offered to a full
 *                        queue fails at once (a {@code SendFailed} event) instead of blocking
 *                        the caller (the reducer thread)
 * @param maxCachedPeers  DEALERs kept open (one per {@code tcp://host:port}); the least recently
 *                        used is closed beyond this (Python caches without bound)
 * @param reportSentFrames whether every frame handed to ZMQ is also reported as a
 *                        {@code FrameSent} event (for a journal of outgoing traffic)
 * @param clock           monotonic nanoseconds for event stamps
 */
public record PublisherConfig(int queueCapacity, int maxCachedPeers, boolean reportSentFrames, LongSupplier clock) {

    public static final PublisherConfig DEFAULT = new PublisherConfig(65_536, 4096, false, System::nanoTime);

    public PublisherConfig {
        if (queueCapacity < 1 || maxCachedPeers < 1) {
            throw new IllegalArgumentException("queueCapacity and maxCachedPeers must be positive");
        }
        Objects.requireNonNull(clock, "clock");
    }

    PublisherConfig withReportSentFrames(boolean report) {
        return new PublisherConfig(queueCapacity, maxCachedPeers, report, clock);
    }

    PublisherConfig withQueueCapacity(int capacity) {
        return new PublisherConfig(capacity, maxCachedPeers, reportSentFrames, clock);
    }
}
