package io.kvledger.core.node;

import io.kvledger.core.model.RequestPhase;
import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.Iterator;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Set;

/**
 * The phase of every live request and of recently finished ones: an insertion-ordered map from
 * request id to phase that behaves exactly as the {@code LinkedHashMap} it replaces (a
 * {@code put} of a present key keeps its position; after inserting a new key, the eldest entry is
 * dropped when the map holds more than {@code memory} entries and that eldest entry's phase is
 * terminal), rendered the same ({@link AbstractMap#toString()}).
 *
 * <p>Why not the {@code LinkedHashMap}: a long-lived node keeps {@code memory} (65,536) finished
 * requests here, so the table and its entries live in the old generation, and every phase change
 * of a request was a hash lookup into it (cache misses) and a reference store into an old entry
 * (a G1 card mark and refinement work). Here each request keeps its own entry ({@link Cell},
 * referenced from {@link NodeState.Req}), a phase change is a byte store into it, and only the
 * admission and the eviction touch the hash index.
 */
final class PhaseTable extends AbstractMap<String, RequestPhase> {

    private static final RequestPhase[] PHASES = RequestPhase.values();

    /** One entry: its key, its phase (as an ordinal: a primitive store needs no GC barrier) and its links. */
    static final class Cell implements Map.Entry<String, RequestPhase> {
        final String key;
        /** The key's hash as {@link CellIndex} spreads it (found again without reading the key). */
        final int hash;
        byte phase;
        Cell before;
        Cell after;
        /** False once evicted: the owner then goes through the index again, as a map put would. */
        boolean attached = true;

        Cell(String key, RequestPhase phase) {
            this.key = key;
            this.hash = CellIndex.hash(key);
            this.phase = (byte) phase.ordinal();
        }

        @Override
        public String getKey() {
            return key;
        }

        @Override
        public RequestPhase getValue() {
            return PHASES[phase];
        }

        @Override
        public RequestPhase setValue(RequestPhase value) {
            throw new UnsupportedOperationException();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Map.Entry<?, ?> e && Objects.equals(key, e.getKey()) && getValue().equals(e.getValue());
        }

        @Override
        public int hashCode() {
            return Objects.hashCode(key) ^ getValue().hashCode();
        }

        @Override
        public String toString() {
            return key + "=" + getValue();
        }
    }

    private final int memory;
    // Only looked up, never iterated (the cells keep the order).
    private final CellIndex index = new CellIndex(64);
    private Cell head;
    private Cell tail;
    private Set<Map.Entry<String, RequestPhase>> entries;

    PhaseTable(int memory) {
        this.memory = memory;
    }

    /** The entry of {@code key}, or {@code null}. */
    Cell cell(String key) {
        return index.get(key);
    }

    /**
     * {@code put(key, phase)} given the key's present entry ({@code existing}, from
     * {@link #cell}): updates it in place, or appends a new entry and evicts as the
     * {@code LinkedHashMap} did. Returns the key's entry.
     */
    Cell put(String key, RequestPhase phase, Cell existing) {
        if (existing != null) {
            existing.phase = (byte) phase.ordinal();
            return existing;
        }
        Cell c = new Cell(key, phase);
        index.putIfAbsent(c);
        linkLast(c);
        return c;
    }

    /** Appends a cell just put into the index, then evicts as the {@code LinkedHashMap} did. */
    private void linkLast(Cell c) {
        if (tail == null) {
            head = c;
        } else {
            c.before = tail;
            tail.after = c;
        }
        tail = c;
        Cell eldest = head;
        if (index.size() > memory && PHASES[eldest.phase].terminal()) {
            unlink(eldest);
            index.remove(eldest);
        }
    }

    /**
     * {@code put(r.requestId, phase)} for a request being admitted, in one index traversal (a
     * {@code putIfAbsent} of a new entry): sets the request's entry and returns the phase the id
     * had before, or {@code null}.
     */
    RequestPhase admit(NodeState.Req r, RequestPhase phase) {
        Cell fresh = new Cell(r.requestId, phase);
        Cell existing = index.putIfAbsent(fresh);
        if (existing != null) {
            RequestPhase before = existing.getValue();
            existing.phase = (byte) phase.ordinal();
            r.phaseCell = existing;
            return before;
        }
        linkLast(fresh);
        r.phaseCell = fresh;
        return null;
    }

    /** The phase change of a request: its own entry when it still has one, else a map put. */
    void set(NodeState.Req r, RequestPhase phase) {
        Cell c = r.phaseCell;
        if (c != null && c.attached) {
            c.phase = (byte) phase.ordinal();
        } else {
            r.phaseCell = put(r.requestId, phase, index.get(r.requestId));
        }
    }

    private void unlink(Cell c) {
        c.attached = false;
        Cell b = c.before;
        Cell a = c.after;
        if (b == null) {
            head = a;
        } else {
            b.after = a;
        }
        if (a == null) {
            tail = b;
        } else {
            a.before = b;
        }
        c.before = null;
        c.after = null;
    }

    @Override
    public RequestPhase put(String key, RequestPhase phase) {
        Cell existing = index.get(key);
        RequestPhase before = existing == null ? null : existing.getValue();
        put(key, phase, existing);
        return before;
    }

    /** Removes {@code key}'s entry as the {@code LinkedHashMap} did (a request renamed at finish). */
    @Override
    public RequestPhase remove(Object key) {
        Cell c = index.remove(key);
        if (c == null) {
            return null;
        }
        unlink(c);
        return c.getValue();
    }

    @Override
    public RequestPhase get(Object key) {
        Cell c = index.get(key);
        return c == null ? null : c.getValue();
    }

    @Override
    public boolean containsKey(Object key) {
        return index.get(key) != null;
    }

    @Override
    public int size() {
        return index.size();
    }

    @Override
    public Set<Map.Entry<String, RequestPhase>> entrySet() {
        Set<Map.Entry<String, RequestPhase>> es = entries;
        if (es == null) {
            es = new AbstractSet<>() {
                @Override
                public Iterator<Map.Entry<String, RequestPhase>> iterator() {
                    return new Iterator<>() {
                        private Cell next = head;

                        @Override
                        public boolean hasNext() {
                            return next != null;
                        }

                        @Override
                        public Map.Entry<String, RequestPhase> next() {
                            Cell c = next;
                            if (c == null) {
                                throw new NoSuchElementException();
                            }
                            next = c.after;
                            return c;
                        }
                    };
                }

                @Override
                public int size() {
                    return index.size();
                }
            };
            entries = es;
        }
        return es;
    }
}
