package io.kvledger.zmq;

import java.util.concurrent.CompletableFuture;

/**
 * The skeleton every adapter with a socket of its own shares: one daemon thread that binds the
 * socket (reporting the bound endpoint, or why it could not bind, through {@link #bound()}) and
 * loops until a close begins, and a {@link CloseOnce} that runs the adapter's own stop sequence.
 * The adapter keeps its socket, its loop body and the order in which it ends the thread and the
 * context.
 */
final class SocketThread {

    private final Thread thread;
    private final CompletableFuture<String> bound = new CompletableFuture<>();
    private final CloseOnce closeOnce = new CloseOnce();

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
        return closeOnce.closing();
    }

    /** The thread is alive and no close has begun. */
    boolean isRunning() {
        return thread.isAlive() && !closeOnce.closing();
    }

    /** Whether a fault the loop caught ends it: the context was terminated, or a close began. */
    boolean ends(RuntimeException e) {
        return ZmqRuntime.isTerm(e) || closeOnce.closing();
    }

    /**
     * Runs {@code stop} (the adapter's way of ending its thread and context) once, after marking
     * the close begun; a second caller waits until the first is done. Blocks until done.
     */
    void close(Runnable stop) {
        closeOnce.close(stop);
    }

    /** Runs {@code close} on a thread named {@code threadName} unless a close began; never blocks. */
    CompletableFuture<Void> closeAsync(String threadName, Runnable close) {
        return closeOnce.closeAsync(threadName, close);
    }
}
