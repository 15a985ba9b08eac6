package io.kvledger.zmq;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The skeleton every adapter with a socket of its own shares: one daemon thread that binds the
 * socket (reporting the bound endpoint, or why it could not bind, through {@link #bound()}) and
 * loops until a close begins; a close that runs once (later callers wait for it) with the
 * adapter's own stop sequence; and a close that runs on a short-lived thread. The adapter keeps
 * its socket, its loop body and the order in which it ends the thread and the context.
 */
final class SocketThread {

    private final Thread thread;
    private final CompletableFuture<String> bound = new CompletableFuture<>();
    private final AtomicBoolean closeStarted = new AtomicBoolean();
    private final CompletableFuture<Void> closed = new CompletableFuture<>();
    private volatile boolean closing;

    /** A thread named {@code name} (not started) that will run {@code body}. */
    SocketThread(String name, Runnable body) {
        this.thread = ZmqRuntime.thread(name, body);
    }

    /**
     * Starts the thread and waits until it has bound its socket; see
     * {@link ZmqRuntime#startBound}.
     *
     * @return the bound endpoint
     */
    String start(Runnable closeOnFailure, String what, Object where, String namePrefix) {
        return ZmqRuntime.startBound(thread, bound, closeOnFailure, what, where, namePrefix);
    }

    /** Completed by the thread with the bound endpoint, or exceptionally when binding failed. */
    CompletableFuture<String> bound() {
        return bound;
    }

    Thread thread() {
        return thread;
    }

    /** Whether a close has begun: the loop ends at its next turn. */
    boolean closing() {
        return closing;
    }

    /** The thread is alive and no close has begun. */
    boolean isRunning() {
        return thread.isAlive() && !closing;
    }

    /** Whether a fault the loop caught ends it: the context was terminated, or a close began. */
    boolean ends(RuntimeException e) {
        return ZmqRuntime.isTerm(e) || closing;
    }

    /**
     * Runs {@code stop} (the adapter's way of ending its thread and context) once, after marking
     * the close begun; a second caller waits until the first is done. Blocks until done.
     */
    void close(Runnable stop) {
        if (!closeStarted.compareAndSet(false, true)) {
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
        return ZmqRuntime.closeAsync(closeStarted, closed, threadName, close);
    }
}
