package io.kvledger.ledger.report;

import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalReader;
import io.kvledger.ledger.replay.TimeMerge;
import java.io.PrintWriter;
import java.util.List;

/**
 * What {@code kvledger dump} prints: the entries of one or more opened journals, one line each
 * ({@link EntryText}), interleaved by event time with the node id in front when there are
 * several, within a seq range and of the types a {@link TypeFilter} selects. Times are relative
 * to the first entry of the journals (whatever the filters select), or absolute.
 */
public final class DumpReport {

    private DumpReport() {}

    /**
     * Prints the entries of {@code readers} with a seq from {@code from} to {@code to} (per
     * journal; no upper bound when null) that {@code filter} accepts, as text or JSON lines, and
     * returns how many it printed. Text times are relative to the earliest entry of {@code readers}
     * that is not a header, or absolute seconds when {@code absolute}. Stops early when {@code out} reports an error (the reader of
     * the output went away, as with {@code dump ... | head}).
     */
    public static long print(PrintWriter out, List<JournalReader> readers, long from, Long to, TypeFilter filter,
                             boolean json, boolean absolute) {
        boolean several = readers.size() > 1;
        TimeMerge merge = new TimeMerge(readers, TimeMerge.nodeIds(readers));
        long printed = 0;
        long origin = EntryText.ABSOLUTE;
        boolean originKnown = absolute;
        while (merge.hasNext()) {
            TimeMerge.Item item = merge.next();
            JournalEntry e = item.entry();
            if (!originKnown && !(e instanceof JournalEntry.Header)) {
                origin = e.atNs();
                originKnown = true;
            }
            if (e.seq() < from || (to != null && e.seq() > to) || !filter.accepts(e)) {
                continue;
            }
            String node = several ? item.node() : null;
            out.println(json ? EntryText.json(e, node) : EntryText.text(e, node, origin));
            if (++printed % 4096 == 0 && out.checkError()) {
                break;
            }
        }
        out.flush();
        return printed;
    }
}
