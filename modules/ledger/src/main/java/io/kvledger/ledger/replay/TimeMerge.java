package io.kvledger.ledger.replay;

import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalReader;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.PriorityQueue;

/**
 * The entries of several node journals in one order: by event time, each journal's own order kept
 * (only the head of each journal competes, so a journal's entries never pass each other), ties
 * broken by the order the journals were given. Streaming: it holds one entry per journal.
 *
 * <p>Event times of different nodes are compared as they are: the simulator's nodes share one
 * virtual clock; live nodes must stamp with clocks that agree closely enough for the order to
 * mean something.
 */
public final class TimeMerge implements Iterator<TimeMerge.Item> {

    /** One entry and the journal it came from. */
    public record Item(int source, String node, JournalEntry entry) {}

    private record Head(Item item, Iterator<JournalEntry> rest) {}

    private final PriorityQueue<Head> heads = new PriorityQueue<>((a, b) -> {
        int c = Long.compare(a.item.entry().atNs(), b.item.entry().atNs());
        return c != 0 ? c : Integer.compare(a.item.source(), b.item.source());
    });

    /**
     * @param readers the journals, open
     * @param nodes   the name printed for each (usually its header's node id)
     */
    public TimeMerge(List<JournalReader> readers, List<String> nodes) {
        for (int i = 0; i < readers.size(); i++) {
            Iterator<JournalEntry> it = readers.get(i).iterator();
            if (it.hasNext()) {
                heads.add(new Head(new Item(i, nodes.get(i), it.next()), it));
            }
        }
    }

    /** The node ids of the readers' headers. */
    public static List<String> nodeIds(List<JournalReader> readers) {
        List<String> out = new ArrayList<>();
        for (JournalReader r : readers) {
            out.add(r.header().nodeId());
        }
        return out;
    }

    @Override
    public boolean hasNext() {
        return !heads.isEmpty();
    }

    @Override
    public Item next() {
        Head h = heads.poll();
        if (h == null) {
            throw new java.util.NoSuchElementException();
        }
        if (h.rest.hasNext()) {
            heads.add(new Head(new Item(h.item.source(), h.item.node(), h.rest.next()), h.rest));
        }
        return h.item;
    }
}
