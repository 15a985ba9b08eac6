package io.kvledger.cli;

import io.kvledger.ledger.replay.Replayer;
import java.io.PrintWriter;
import java.util.Locale;
import java.util.function.LongSupplier;

/**
 * A one-line progress counter on standard error for replays that take more than a second; shown
 * only when standard error is a terminal ({@link Progress#stderrIsTerminal()}: never in pipes,
 * logs or tests), with the same timing as {@link Progress}, and erased by {@link #done()}.
 */
final class ProgressLine implements Replayer.Progress {

    private final PrintWriter err;
    private final String label;
    private final boolean enabled;
    private final LongSupplier clock;
    private final long startNs;
    private long lastNs;
    private boolean shown;

    ProgressLine(PrintWriter err, String label, boolean enabled, LongSupplier clock) {
        this.err = err;
        this.label = label;
        this.enabled = enabled;
        this.clock = clock;
        this.startNs = clock.getAsLong();
    }

    static ProgressLine forTerminal(PrintWriter err, String label) {
        return new ProgressLine(err, label, Progress.stderrIsTerminal(), System::nanoTime);
    }

    @Override
    public void inputsApplied(long total) {
        if (!enabled) {
            return;
        }
        long now = clock.getAsLong();
        if (now - startNs < Progress.SHOW_AFTER_NS || (shown && now - lastNs < Progress.REDRAW_NS)) {
            return;
        }
        lastNs = now;
        shown = true;
        double s = (now - startNs) / 1e9;
        err.printf(Locale.ROOT, "\r%s: %,d events replayed (%s, %.2f M events/s) ", label, total,
                io.kvledger.ledger.text.Seconds.duration(now - startNs), total / s / 1e6);
        err.flush();
    }

    /** Erases the line if it was shown. */
    void done() {
        if (shown) {
            err.print("\r" + " ".repeat(78) + "\r");
            err.flush();
            shown = false;
        }
    }
}
