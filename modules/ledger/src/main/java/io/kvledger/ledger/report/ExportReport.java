package io.kvledger.ledger.report;

import io.kvledger.ledger.otlp.JournalTraces;
import io.kvledger.ledger.replay.Replayer;
import io.kvledger.ledger.text.Seconds;
import java.io.PrintWriter;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * What {@code kvledger export} prints of the journals' lifecycles it sent to an OTLP receiver
 * ({@link JournalTraces#export}): the journals, traces, legs and spans sent and any time shift
 * ({@link #print}), and the note when the journals run on a simulator's clock ({@link #timeNote}).
 */
public final class ExportReport {

    private ExportReport() {}

    /** Journal times before this (2001-09-09) are not wall-clock times: a simulator's virtual clock. */
    private static final long WALL_CLOCK_SINCE_NS = 1_000_000_000L * 1_000_000_000L;

    /**
     * The note for journals whose times start before wall-clock times can (a simulator's clock),
     * unless {@code originGiven} ({@code --time-origin}) moved them; null when none is due.
     */
    public static String timeNote(JournalTraces.Result res, boolean originGiven) {
        if (originGiven || res.legs() == 0 || res.firstAtNs() >= WALL_CLOCK_SINCE_NS) {
            return null;
        }
        return "the journals' times start at " + Instant.ofEpochSecond(0, res.firstAtNs())
                + " (a simulator's clock), where a backend shows them; --time-origin now moves them";
    }

    /** The summary: journals, traces, legs (in flight, with a finding), spans sent to {@code endpoint}, the shift. */
    public static void print(PrintWriter out, JournalTraces.Result res, String endpoint) {
        long shift = res.shiftNs();
        List<String> names = new ArrayList<>();
        for (Replayer.Node n : res.nodes()) {
            names.add(n.name());
        }
        out.println("export: " + names.size() + " journal(s) (" + String.join(", ", names) + "): "
                + res.traces() + " trace(s), " + res.legs() + " leg(s) (" + res.inFlight() + " in flight, "
                + res.withFinding() + " with a finding), " + res.spans() + " span(s) sent to "
                + endpoint + (shift != 0 ? " (times shifted by " + (shift < 0 ? "-" : "+")
                + Seconds.duration(Math.abs(shift)) + ")" : ""));
        if (res.unattached() > 0) {
            out.println("  " + res.unattached() + " finding(s) name no request admitted on their node; not exported "
                    + "(see 'kvledger hangs')");
        }
    }
}
