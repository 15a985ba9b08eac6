package io.kvledger.core.node;

import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Set;

/**
 * The worker's copy of the transfer-id map that each step's metadata carries: an immutable,
 * insertion-ordered map in one array of keys and values. Most steps carry a handful of mappings
 * (one per request in flight), where a linear scan beats hashing and the copy is three small
 * objects instead of a {@code LinkedHashMap} with its table and one entry per mapping. A larger
 * map (over {@link #SMALL} mappings: a busy node has hundreds in flight, and the copy is made
 * again at every step after the map changed) adds an open-addressing index of {@code int}s over
 * the keys' hashes, still two arrays instead of an entry object per mapping. A map with a null
 * key is copied into a {@code LinkedHashMap} as before ({@link #of}). Iterates, compares and
 * renders ({@link AbstractMap#toString()}) as the {@code LinkedHashMap} copy did.
 */
final class MappingSnapshot extends AbstractMap<String, String> {

    /** At most this many entries are kept in arrays; larger maps are copied into a LinkedHashMap. */
    static final int SMALL = 8;

    /** Key {@code i} at {@code 2 * i}, its value at {@code 2 * i + 1}: one array per snapshot. */
    private final String[] cells;
    private final int size;
    /**
     * For more than {@link #SMALL} mappings: slot {@code h & (length - 1)} and the next ones
     * (linear probing) hold {@code i + 1} for key {@code i} of hash {@code h} ({@link OpenAddressing#spread}), 0
     * when free; at most half full. Null for small maps (scanned).
     */
    private final int[] index;
    private Set<Map.Entry<String, String>> entries;

    private MappingSnapshot(String[] cells, int[] index) {
        this.cells = cells;
        this.size = cells.length / 2;
        this.index = index;
    }

    /** An immutable copy of {@code m} in its order. */
    static Map<String, String> of(LinkedHashMap<String, String> m) {
        int n = m.size();
        String[] kv = new String[2 * n];
        int i = 0;
        for (Map.Entry<String, String> e : m.entrySet()) {
            String k = e.getKey();
            if (k == null) {
                return new LinkedHashMap<>(m);
            }
            kv[i++] = k;
            kv[i++] = e.getValue();
        }
        if (n <= SMALL) {
            return new MappingSnapshot(kv, null);
        }
        int[] index = new int[Integer.highestOneBit(n) << 2];
        int mask = index.length - 1;
        for (int k = 0; k < n; k++) {
            int slot = OpenAddressing.spread(kv[2 * k]) & mask;
            while (index[slot] != 0) {
                slot = (slot + 1) & mask;
            }
            index[slot] = k + 1;
        }
        return new MappingSnapshot(kv, index);
    }

    private int indexOf(Object key) {
        int[] idx = index;
        if (idx != null) {
            if (key == null) {
                return -1;
            }
            int mask = idx.length - 1;
            for (int slot = OpenAddressing.spread(key) & mask; idx[slot] != 0; slot = (slot + 1) & mask) {
                int i = idx[slot] - 1;
                String k = cells[2 * i];
                if (k == key || k.equals(key)) {
                    return i;
                }
            }
            return -1;
        }
        for (int i = 0; i < size; i++) {
            if (cells[2 * i] == key) {
                return i;
            }
        }
        for (int i = 0; i < size; i++) {
            if (Objects.equals(cells[2 * i], key)) {
                return i;
            }
        }
        return -1;
    }

    @Override
    public String get(Object key) {
        int i = indexOf(key);
        return i < 0 ? null : cells[2 * i + 1];
    }

    @Override
    public boolean containsKey(Object key) {
        return indexOf(key) >= 0;
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public Set<Map.Entry<String, String>> entrySet() {
        Set<Map.Entry<String, String>> es = entries;
        if (es == null) {
            es = new AbstractSet<>() {
                @Override
                public Iterator<Map.Entry<String, String>> iterator() {
                    return new Iterator<>() {
                        private int next;

                        @Override
                        public boolean hasNext() {
                            return next < size;
                        }

                        @Override
                        public Map.Entry<String, String> next() {
                            if (next >= size) {
                                throw new NoSuchElementException();
                            }
                            int i = next++;
                            return new AbstractMap.SimpleImmutableEntry<>(cells[2 * i], cells[2 * i + 1]);
                        }
                    };
                }

                @Override
                public int size() {
                    return size;
                }
            };
            entries = es;
        }
        return es;
    }
}
