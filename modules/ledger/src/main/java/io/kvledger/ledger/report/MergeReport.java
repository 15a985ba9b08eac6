package io.kvledger.ledger.report;

import io.kvledger.ledger.text.Seconds;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.json.Json;
import io.kvledger.ledger.replay.JournalMerge;
import io.kvledger.ledger.replay.TransferIndex;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;

/**
 * What {@code kvledger merge} prints of a {@link JournalMerge} done: per node its role, mode,
 * entries and time span, how many transfers both a prefill and a decode node saw, the first of
 * those only one side saw, and the commands to run next; or the merge's summary as one JSON
 * object.
 */
public final class MergeReport {

    /** Transfers seen by one side only that the text lists; the index lists them all. */
    private static final int LISTED = 10;

    private MergeReport() {}

    /**
     * Prints the merge {@code r} into {@code out} as text or JSON; {@code headers} are the merged
     * journals' headers, in the order of {@code r.nodes()}. Times are relative to the first entry of
     * the merged journals ({@code t+0.000000 s}); the commands to run next start with
     * {@code launcher}, the launcher as the user typed it.
     */
    public static void print(PrintWriter o, Path out, List<JournalHeader> headers, JournalMerge.Result r, boolean json,
                             String launcher) {
        if (json) {
            o.println(Json.write(r.summary()));
            return;
        }
        String index = JournalMerge.INDEX;
        List<JournalMerge.Node> nodes = r.nodes();
        TransferIndex transfers = r.index();
        long origin = Long.MAX_VALUE;
        for (JournalMerge.Node c : nodes) {
            if (c.timed()) {
                origin = Math.min(origin, c.firstAtNs());
            }
        }
        long t0 = origin == Long.MAX_VALUE ? 0 : origin;
        o.println("merged " + nodes.size() + (nodes.size() == 1 ? " journal" : " journals") + " into " + out
                + " (one journal per node, ordered by event time; " + index + " correlates them by transfer id)");
        for (int i = 0; i < nodes.size(); i++) {
            JournalMerge.Node c = nodes.get(i);
            JournalHeader h = headers.get(i);
            o.printf(Locale.ROOT, "  %-4s %-11s %-5s %,9d entries%s%n", c.node(), c.producer() ? "kv_producer" : "kv_consumer",
                    h.mode(), c.entries(), c.timed()
                            ? "   " + Seconds.offset(c.firstAtNs() - t0) + " to " + Seconds.offset(c.lastAtNs() - t0) : "");
        }
        List<TransferIndex.Transfer> oneSide = new ArrayList<>();
        for (TransferIndex.Transfer t : transfers.transfers().values()) {
            if (!t.bothSides()) {
                oneSide.add(t);
            }
        }
        int n = transfers.transfers().size();
        o.println("transfers: " + n + ", " + (n - oneSide.size()) + " seen by both a prefill and a decode node"
                + (oneSide.isEmpty() ? "" : ", " + oneSide.size() + " by one side only"));
        oneSide.sort(Comparator.comparingLong(t -> t.firstAtNs()));
        for (int i = 0; i < oneSide.size() && i < LISTED; i++) {
            TransferIndex.Transfer t = oneSide.get(i);
            o.println("  " + t.transferId() + "  only on " + String.join(", ", t.legs().keySet()) + "  from "
                    + Seconds.offset(t.firstAtNs() - t0));
        }
        if (oneSide.size() > LISTED) {
            o.println("  ... and " + (oneSide.size() - LISTED) + " more (" + index + " lists them all)");
        }
        o.println("next: " + launcher + " hangs " + out + "   " + launcher + " dump " + out + "   " + launcher + " inspect " + out
                + " --transfer ID");
    }
}
