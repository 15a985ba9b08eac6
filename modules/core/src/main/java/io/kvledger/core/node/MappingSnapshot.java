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
 * insertion-ordered map in two arrays, searched linearly. Most steps carry a handful of mappings
 * (one per request in flight), where a scan beats hashing and the copy is three small objects
 * instead of a {@code LinkedHashMap} with its table and one entry per mapping; larger maps are
 * copied into a {@code LinkedHashMap} as before ({@link #of}). Iterates, compares and renders
 * ({@link AbstractMap#toString()}) as the {@code LinkedHashMap} copy did.
 */
final class MappingSnapshot extends AbstractMap<String, String> {

    /** At most this many entries are kept in arrays; larger maps are copied into a LinkedHashMap. */
    static final int SMALL = 8;

    /** Key {@code i} at {@code 2 * i}, its value at {@code 2 * i + 1}: one array per snapshot. */
    private final String[] cells;
    private final int size;
    private Set<Map.Entry<String, String>> entries;

    private MappingSnapshot(String[] cells) {
        this.cells = cells;
        this.size = cells.length / 2;
    }

    /** An immutable copy of {@code m} in its order. */
    static Map<String, String> of(LinkedHashMap<String, String> m) {
        if (m.size() > SMALL) {
            return new LinkedHashMap<>(m);
        }
        String[] kv = new String[2 * m.size()];
        int i = 0;
        for (Map.Entry<String, String> e : m.entrySet()) {
            kv[i++] = e.getKey();
            kv[i++] = e.getValue();
        }
        return new MappingSnapshot(kv);
    }

    private int indexOf(Object key) {
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
