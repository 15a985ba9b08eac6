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

    private final String[] keys;
    private final String[] values;
    private Set<Map.Entry<String, String>> entries;

    private MappingSnapshot(String[] keys, String[] values) {
        this.keys = keys;
        this.values = values;
    }

    /** An immutable copy of {@code m} in its order. */
    static Map<String, String> of(LinkedHashMap<String, String> m) {
        if (m.size() > SMALL) {
            return new LinkedHashMap<>(m);
        }
        String[] k = new String[m.size()];
        String[] v = new String[m.size()];
        int i = 0;
        for (Map.Entry<String, String> e : m.entrySet()) {
            k[i] = e.getKey();
            v[i] = e.getValue();
            i++;
        }
        return new MappingSnapshot(k, v);
    }

    private int indexOf(Object key) {
        for (int i = 0; i < keys.length; i++) {
            if (keys[i] == key) {
                return i;
            }
        }
        for (int i = 0; i < keys.length; i++) {
            if (Objects.equals(keys[i], key)) {
                return i;
            }
        }
        return -1;
    }

    @Override
    public String get(Object key) {
        int i = indexOf(key);
        return i < 0 ? null : values[i];
    }

    @Override
    public boolean containsKey(Object key) {
        return indexOf(key) >= 0;
    }

    @Override
    public int size() {
        return keys.length;
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
                            return next < keys.length;
                        }

                        @Override
                        public Map.Entry<String, String> next() {
                            if (next >= keys.length) {
                                throw new NoSuchElementException();
                            }
                            int i = next++;
                            return new AbstractMap.SimpleImmutableEntry<>(keys[i], values[i]);
                        }
                    };
                }

                @Override
                public int size() {
                    return keys.length;
                }
            };
            entries = es;
        }
        return es;
    }
}
