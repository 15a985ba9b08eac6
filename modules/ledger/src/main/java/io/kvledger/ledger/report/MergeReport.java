package io.kvledger.ledger.report;

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
     * journals' headers, in the order of {@code r.nodes()}.
     */
    public static void print(PrintWriter o, Path out, List<JournalHeader> headers, JournalMerge.Result r, boolean json) {
        if (json) {
            o.println(Json.write(r.summary()));
            return;
        }
        String index = JournalMerge.INDEX;
        List<JournalMerge.Node> nodes = r.nodes();
        TransferIndex transfers = r.index();
        o.println("merged " + nodes.size() + (nodes.size() == 1 ? " journal" : " journals") + " into " + out
                + " (one journal per node, ordered by event time; " + index + " correlates them by transfer id)");
        for (int i = 0; i < nodes.size(); i++) {
            JournalMerge.Node c = nodes.get(i);
            JournalHeader h = headers.get(i);
            o.printf(Locale.ROOT, "  %-4s %-11s %-5s %,9d entries%s%n", c.node(), c.producer() ? "kv_producer" : "kv_consumer",
                    h.mode(), c.entries(), c.timed()
                            ? "   t " + ReportText.time(c.firstAtNs()) + ".." + ReportText.time(c.lastAtNs()) + " s" : "");
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
            o.println("  " + t.transferId() + "  only on " + String.join(", ", t.legs().keySet()) + "  from t="
                    + ReportText.time(t.firstAtNs()) + " s");
        }
        if (oneSide.size() > LISTED) {
            o.println("  ... and " + (oneSide.size() - LISTED) + " more (" + index + " lists them all)");
        }
        o.println("next: kvledger hangs " + out + "   kvledger dump " + out + "   kvledger inspect " + out + " --transfer ID");
    }
}
