package io.kvledger.cli;

import java.io.PrintWriter;
import java.util.Locale;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * A one-line progress bar on standard error for work that takes more than a second, drawn only
 * when standard error is a terminal ({@link #stderrIsTerminal()}): then nothing is printed before
 * the first second has passed, the line is redrawn at most four times a second ({@code \r}) and
 * ended with a newline by {@link #done}. Otherwise nothing at all is printed, so pipes, logs and
 * tests see no progress frames. Standard output stays clean for scripts either way. Every command
 * that can take more than a second shows one (see also {@link ProgressLine} for replays).
 */
final class Progress {

    /** Set by the launcher to whether its standard error is a terminal ({@code [ -t 2 ]}). */
    static final String TTY_PROPERTY = "kvledger.stderr.tty";

    static final long SHOW_AFTER_NS = 1_000_000_000L;
    static final long REDRAW_NS = 250_000_000L;
    private static final int WIDTH = 30;

    private final PrintWriter err;
    private final String label;
    private final boolean enabled;
    private final LongSupplier clock;
    private final long startNs;
    private long lastDrawNs;
    private boolean shown;

    /** A bar on {@code err}, drawn when standard error is a terminal. */
    Progress(PrintWriter err, String label) {
        this(err, label, stderrIsTerminal(), System::nanoTime);
    }

    Progress(PrintWriter err, String label, boolean enabled, LongSupplier clock) {
        this.err = err;
        this.label = label;
        this.enabled = enabled;
        this.clock = clock;
        this.startNs = clock.getAsLong();
    }

    /**
     * Whether standard error is a terminal: what the launcher found ({@value #TTY_PROPERTY}), else
     * whether the JVM has an interactive console.
     */
    static boolean stderrIsTerminal() {
        String p = System.getProperty(TTY_PROPERTY);
        if (p != null) {
            return Boolean.parseBoolean(p);
        }
        java.io.Console c = System.console();
        return c != null && c.isTerminal();
    }

    /**
     * Reports progress.
     *
     * @param fraction done so far, 0 to 1 (negative when unknown: no bar, only the detail)
     * @param detail   a short text after the bar
     */
    void update(double fraction, String detail) {
        if (!due()) {
            return;
        }
        draw(fraction, detail);
        lastDrawNs = clock.getAsLong();
    }

    /** Whether {@link #update} would draw now (lets a caller skip building the detail text). */
    boolean due() {
        if (!enabled) {
            return false;
        }
        long now = clock.getAsLong();
        return now - startNs >= SHOW_AFTER_NS && (!shown || now - lastDrawNs >= REDRAW_NS);
    }

    /** Seconds since the start. */
    String elapsed() {
        return io.kvledger.ledger.text.Seconds.duration(clock.getAsLong() - startNs);
    }

    private synchronized void draw(double fraction, String detail) {
        StringBuilder b = new StringBuilder("\r").append(label).append(' ');
        if (fraction >= 0) {
            double f = Math.min(1, fraction);
            int n = (int) Math.round(f * WIDTH);
            b.append('[').append("#".repeat(n)).append(" ".repeat(WIDTH - n)).append("] ")
                    .append(String.format(Locale.ROOT, "%3d%% ", Math.round(f * 100)));
        }
        b.append(detail).append("   ");
        err.print(b);
        err.flush();
        shown = true;
    }

    /** Ends the line if anything was drawn, with the final detail. */
    synchronized void done(String detail) {
        if (shown) {
            draw(1, detail);
            err.println();
            err.flush();
            shown = false;
        }
    }

    /**
     * Redraws the line from a daemon thread four times a second while work the caller cannot
     * observe runs (a library call with no progress callback); closing it stops the thread. The
     * caller still ends the line with {@link #done}.
     */
    AutoCloseable ticking(Supplier<String> detail) {
        if (!enabled) {
            return () -> { };
        }
        Thread t = Thread.ofPlatform().daemon().name("kvledger-progress").start(() -> {
            try {
                while (!Thread.currentThread().isInterrupted()) {
                    synchronized (this) {
                        update(-1, detail.get());
                    }
                    Thread.sleep(REDRAW_NS / 1_000_000);
                }
            } catch (InterruptedException e) {
                // closed
            }
        });
        return () -> {
            t.interrupt();
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        };
    }
}
