package io.kvledger.cli;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * For a command that runs until stopped ({@code listen}, {@code tap}): a JVM shutdown hook
 * (SIGINT, SIGTERM) that asks the command to stop and then waits, up to 5 s, until the command
 * has finished its clean-up (flushed its journals) and closed this; the process then exits 0, a
 * clean stop (as {@code node} and {@code proxy} do, {@link Foreground}), and otherwise with the
 * signal's status.
 */
final class StopOnSignal implements AutoCloseable {

    private final CountDownLatch done = new CountDownLatch(1);
    private final Thread hook;
    private volatile boolean stopping;
    private volatile int status;

    /**
     * Installs the hook, on a thread named {@code threadName}; when the JVM is already shutting
     * down, {@link #stopping()} is true at once.
     */
    StopOnSignal(String threadName) {
        this.hook = new Thread(() -> {
            stopping = true;
            try {
                if (done.await(5, TimeUnit.SECONDS)) {
                    // a clean stop, as `kvledger node` ends on SIGTERM: exit 0, not the signal's 130/143
                    System.out.flush();
                    System.err.flush();
                    Runtime.getRuntime().halt(status);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, threadName);
        try {
            Runtime.getRuntime().addShutdownHook(hook);
        } catch (IllegalStateException shuttingDown) {
            stopping = true;
        }
    }

    /** Whether a signal asked the command to stop. */
    boolean stopping() {
        return stopping;
    }

    /**
     * The exit status of a stop by signal once the command is done, when a clean stop is not all
     * it has to say (default 0).
     */
    void exitStatus(int status) {
        this.status = status;
    }

    /** The command is done: lets a running hook return, or removes the hook. */
    @Override
    public void close() {
        done.countDown();
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException shuttingDown) {
            // the JVM is already stopping: the hook is running and waits for `done`
        }
    }
}
