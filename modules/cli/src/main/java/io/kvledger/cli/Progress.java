package io.kvledger.cli;

import java.io.PrintWriter;
import java.util.Locale;

/**
 * A one-line progress bar on standard error for work that takes more than a second: nothing is
 * printed before the first second has passed, then the line is redrawn at most four times a
 * second ({@code \r}) and ended with a newline by {@link #done()}. Standard output stays clean for
 * scripts and tests.
 */
final class Progress {

    private static final long SHOW_AFTER_NS = 1_000_000_000L;
    private static final long REDRAW_NS = 250_000_000L;
    private static final int WIDTH = 30;

    private final PrintWriter err;
    private final String label;
    private final long startNs = System.nanoTime();
    private long lastDrawNs;
    private boolean shown;

    Progress(PrintWriter err, String label) {
        this.err = err;
        this.label = label;
    }

    /**
     * Reports progress.
     *
     * @param fraction done so far, 0 to 1 (negative when unknown: no bar, only the detail)
     * @param detail   a short text after the bar
     */
    void update(double fraction, String detail) {
        long now = System.nanoTime();
        if (now - startNs < SHOW_AFTER_NS || (shown && now - lastDrawNs < REDRAW_NS)) {
            return;
        }
        draw(fraction, detail);
        lastDrawNs = now;
    }

    /** Whether {@link #update} would draw now (lets a caller skip building the detail text). */
    boolean due() {
        long now = System.nanoTime();
        return now - startNs >= SHOW_AFTER_NS && (!shown || now - lastDrawNs >= REDRAW_NS);
    }

    private void draw(double fraction, String detail) {
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
    void done(String detail) {
        if (shown) {
            draw(1, detail);
            err.println();
            err.flush();
        }
    }
}
