package io.kvledger.ledger.report;

import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JsonLines;
import io.kvledger.journal.json.Json;
import java.util.Locale;

/**
 * One journal entry as one line of text ({@code kvledger dump}, {@code tail}) or JSON: the
 * sequence number, the event time, the kind (a derived entry shows the seq of its cause), and the
 * journal's own dissector for the content. With several journals in one listing the node id comes
 * first. The time is relative to an origin ({@code dump}: the first entry of the journals) in the
 * form every report prints ({@link ReportText#rel}), or absolute seconds with nanosecond digits
 * ({@code dump --absolute}, {@code tail}).
 *
 * <pre>
 *       12    t+1.204518 s  input       remote_blocks_received req_id=... transfer_id=tx-1 ...
 *       13    t+1.204518 s  derived&lt;-12 post_write status_id=7 ...
 * </pre>
 */
public final class EntryText {

    private EntryText() {}

    /** The entry's kind column: header, input, derived&lt;-CAUSE, or unknown. */
    static String kind(JournalEntry e) {
        return switch (e) {
            case JournalEntry.Header h -> "header";
            case JournalEntry.Input in -> "input";
            case JournalEntry.Derived d -> "derived<-" + d.causeSeq();
            case JournalEntry.Proxy px -> "proxy";
            case JournalEntry.Unknown u -> "unknown";
        };
    }

    /** Marks an absolute time column in {@link #text(JournalEntry, String, long)}. */
    static final long ABSOLUTE = Long.MIN_VALUE;

    /** One text line with the absolute event time (no newline); {@code node} is printed first unless it is null. */
    public static String text(JournalEntry e, String node) {
        return text(e, node, ABSOLUTE);
    }

    /**
     * One text line (no newline) with the event time relative to {@code originNs}, or absolute when
     * that is {@link #ABSOLUTE}; {@code node} is printed first unless it is null.
     */
    public static String text(JournalEntry e, String node, long originNs) {
        String t = e instanceof JournalEntry.Header ? "-"
                : originNs == ABSOLUTE ? ReportText.time(e.atNs()) : ReportText.rel(e.atNs() - originNs);
        String line = String.format(Locale.ROOT, "%8d %15s  %-11s %s", e.seq(), t, kind(e), e.dissect());
        return node == null ? line : String.format(Locale.ROOT, "%-4s %s", node, line);
    }

    /** The entry's JSON line ({@link JsonLines#toJson}), with a leading {@code "node"} key unless null. */
    public static String json(JournalEntry e, String node) {
        String j = JsonLines.toJson(e);
        if (node == null) {
            return j;
        }
        return "{\"node\":" + Json.write(node) + "," + j.substring(1);
    }
}
