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
    /** Entries that could not be decoded, by reason: {count, first seq}, in the order first met. */
    private final Map<String, long[]> undecodable = new java.util.LinkedHashMap<>();

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

    /** An entry that could not be decoded and was skipped; one line per reason, with a count. */
    void undecodable(long seq, String why) {
        long[] c = undecodable.get(why);
        if (c == null) {
            if (undecodable.size() >= MAX_MESSAGES) {
                dropped++;
                return;
            }
            undecodable.put(why, c = new long[] {0, seq});
        }
        c[0]++;
    }

    void clearEntryWarnings(int keep) {
        while (messages.size() > keep) {
            messages.removeLast();
        }
        dropped = 0;
        unknownTypes.clear();
        undecodable.clear();
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
        for (Map.Entry<String, long[]> e : undecodable.entrySet()) {
            long n = e.getValue()[0];
            out.add(journal + ": " + (n == 1 ? "seq " + e.getValue()[1] + ": " + e.getKey() + "; skipped"
                    : n + " entries skipped: " + e.getKey() + " (first at seq " + e.getValue()[1] + ")"));
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
