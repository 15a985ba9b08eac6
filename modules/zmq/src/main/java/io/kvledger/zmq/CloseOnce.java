package io.kvledger.zmq;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * An adapter's close, run once: the first caller marks the close begun (what the adapter's
 * threads poll to end) and runs the adapter's stop sequence; a later caller waits until it is
 * done. {@link #closeAsync} runs the close on a short-lived thread and never blocks.
 */
final class CloseOnce {

    private final AtomicBoolean started = new AtomicBoolean();
    private final CompletableFuture<Void> closed = new CompletableFuture<>();
    private volatile boolean closing;

    /** Whether a close has begun. */
    boolean closing() {
        return closing;
    }

    /** Runs {@code stop} once, after marking the close begun; blocks until the close is done. */
    void close(Runnable stop) {
        if (!started.compareAndSet(false, true)) {
            closed.join();
            return;
        }
        try {
            closing = true;
            stop.run();
        } finally {
            closed.complete(null);
        }
    }

    /** Runs {@code close} on a thread named {@code threadName} unless a close began; never blocks. */
    CompletableFuture<Void> closeAsync(String threadName, Runnable close) {
        return ZmqRuntime.closeAsync(started, closed, threadName, close);
    }
}
