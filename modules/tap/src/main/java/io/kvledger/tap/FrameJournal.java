package io.kvledger.tap;

import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalException;
import io.kvledger.journal.JournalWriter;
import io.kvledger.wire.RejectReason;
import io.kvledger.wire.WireLimits;
import java.io.PrintWriter;
import java.util.Arrays;

/**
 * Journals frames a listener received, decoded or rejected, the way {@code kvledger listen} and
 * {@code kvledger tap} do: a frame the journal cannot take as received is journaled as a
 * {@code FrameRejected} saying so, and the caller goes on.
 *
 * <p>Not thread-safe: one writer thread per journal, as {@link JournalWriter} requires.
 */
public final class FrameJournal {

    /** Bytes of a frame the journal could not take that its substitute rejection keeps. */
    static final int KEPT_WHEN_REFUSED = WireLimits.DEFAULT.keptRejectedBytes();

    private FrameJournal() {}

    /** What {@link #append} did with the frames so far. */
    public static class Tally {
        public long frames;
        public long rejected;
        public long substituted;
        public long lost;
    }

    /**
     * Journals one received frame. When the journal refuses the event (too large, or a value it
     * cannot hold), a {@code FrameRejected} saying so is journaled in its place, with the first
     * {@link #KEPT_WHEN_REFUSED} bytes of a rejected frame. Only when that fails too is the frame
     * lost (counted, and said on {@code err} for the first ten).
     *
     * @param who the command name that prefixes the lines on {@code err}
     */
    static void append(JournalWriter writer, NodeEvent event, Tally tally, PrintWriter err, String who) {
        try {
            writer.appendInput(event);
            tally.frames++;
            if (event instanceof NodeEvent.FrameRejected) {
                tally.rejected++;
            }
            return;
        } catch (JournalException | IllegalArgumentException refused) {
            byte[] bytes = event instanceof NodeEvent.FrameRejected fr ? fr.frame() : new byte[0];
            byte[] kept = Arrays.copyOf(bytes, Math.min(bytes.length, KEPT_WHEN_REFUSED));
            String was = event instanceof NodeEvent.FrameRejected fr ? fr.reason() : event.getClass().getSimpleName();
            String reason = RejectReason.FRAME_TOO_LARGE.name() + ": the journal refused the frame as received ("
                    + clip(String.valueOf(refused.getMessage()), 200) + "); it was: " + clip(was, 300) + "; first "
                    + kept.length + " of " + bytes.length + " bytes kept";
            boolean kills = event instanceof NodeEvent.FrameRejected fr && fr.wouldKillPythonListener();
            try {
                writer.appendInput(new NodeEvent.FrameRejected(event.atNs(), reason, kept, kills));
                tally.frames++;
                tally.rejected++;
                tally.substituted++;
            } catch (JournalException | IllegalArgumentException again) {
                tally.lost++;
                if (tally.lost <= 10) {
                    err.println(who + ": a frame could not be journaled: " + again.getMessage());
                    err.flush();
                }
            }
        }
    }

    private static String clip(String s, int max) {
        return s.length() <= max ? s : s.substring(0, max) + "...";
    }
}
