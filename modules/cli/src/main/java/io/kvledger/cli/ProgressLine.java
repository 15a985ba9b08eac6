package io.kvledger.cli;

import io.kvledger.journal.replay.Replayer;
import java.io.PrintWriter;
import java.util.Locale;

/**
 * A one-line progress counter on standard error for replays that take more than a second; shown
 * only when the console is a terminal (never in tests or pipes, which capture standard output).
 */
final class ProgressLine implements Replayer.Progress {

    private final PrintWriter err;
    private final String label;
    private final boolean enabled;
    private final long startNs = System.nanoTime();
    private long lastNs;
    private boolean shown;

    private ProgressLine(PrintWriter err, String label, boolean enabled) {
        this.err = err;
        this.label = label;
        this.enabled = enabled;
    }

    static ProgressLine forTerminal(PrintWriter err, String label) {
        java.io.Console c = System.console();
        return new ProgressLine(err, label, c != null && c.isTerminal());
    }

    @Override
    public void inputsApplied(long total) {
        if (!enabled) {
            return;
        }
        long now = System.nanoTime();
        if (now - startNs < 1_000_000_000L || now - lastNs < 250_000_000L) {
            return;
        }
        lastNs = now;
        shown = true;
        double s = (now - startNs) / 1e9;
        err.printf(Locale.ROOT, "\r%s: %,d events replayed (%.1f s, %.2f M events/s) ", label, total, s, total / s / 1e6);
        err.flush();
    }

    /** Erases the line if it was shown. */
    void done() {
        if (shown) {
            err.print("\r" + " ".repeat(78) + "\r");
            err.flush();
        }
    }
}
