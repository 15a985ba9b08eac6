package io.kvledger.cli;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A long-running command's stop: it waits for a duration or for SIGINT/SIGTERM, and a signal lets
 * the command close what it runs (flush its journal) before the process ends with 0, a clean stop,
 * not with the signal's 130/143. Used by {@code node} and {@code proxy}.
 */
final class Foreground implements AutoCloseable {

    private final CountDownLatch stop = new CountDownLatch(1);
    private final CountDownLatch stopped = new CountDownLatch(1);
    private final Thread hook;

    private Foreground(String name) {
        this.hook = new Thread(() -> {
            stop.countDown();
            try {
                if (stopped.await(30, TimeUnit.SECONDS)) {
                    System.out.flush();
                    Runtime.getRuntime().halt(0);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, name);
        Runtime.getRuntime().addShutdownHook(hook);
    }

    /** Installs the shutdown hook (a thread called {@code name}). */
    static Foreground install(String name) {
        return new Foreground(name);
    }

    /** Waits {@code durationS} seconds (0: until a signal), or less when a signal comes. */
    void await(double durationS) throws InterruptedException {
        if (durationS > 0) {
            stop.await((long) (durationS * 1e9), TimeUnit.NANOSECONDS);
        } else {
            stop.await();
        }
    }

    /** Ends {@link #await} now, without a signal (what the command runs stopped by itself). */
    void wake() {
        stop.countDown();
    }

    /** The command has closed what it ran: a waiting signal may end the process now. */
    @Override
    public void close() {
        stopped.countDown();
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException shuttingDown) {
            // the hook is running and waits for `stopped`
        }
    }
}
