package io.kvledger.journal;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What a reader skipped or doubted, for callers to print: entries of type ids this version does
 * not know (one line per type id with a count), and other problems (capped, with a count of the
 * rest). Not thread-safe: owned by the thread that reads.
 */
final class Warnings {

    static final int MAX_MESSAGES = 100;

    private final String journal;
    private final List<String> messages = new ArrayList<>();
    private long dropped;
    private final Map<Integer, long[]> unknownTypes = new TreeMap<>();

    Warnings(String journal) {
        this.journal = journal;
    }

    void add(String message) {
        if (messages.size() < MAX_MESSAGES) {
            messages.add(message);
        } else {
            dropped++;
        }
    }

    void unknownType(int typeId, long seq) {
        long[] c = unknownTypes.computeIfAbsent(typeId, k -> new long[] {0, seq});
        c[0]++;
    }

    void clearEntryWarnings(int keep) {
        while (messages.size() > keep) {
            messages.removeLast();
        }
        dropped = 0;
        unknownTypes.clear();
    }

    int size() {
        return messages.size();
    }

    List<String> list() {
        List<String> out = new ArrayList<>();
        for (Map.Entry<Integer, long[]> e : unknownTypes.entrySet()) {
            out.add(journal + ": type id " + e.getKey() + " is unknown to this version: " + e.getValue()[0]
                    + " entr" + (e.getValue()[0] == 1 ? "y" : "ies") + " skipped (first at seq " + e.getValue()[1] + ")");
        }
        for (String m : messages) {
            out.add(journal + ": " + m);
        }
        if (dropped > 0) {
            out.add(journal + ": " + dropped + " more warnings not shown");
        }
        return out;
    }
}
