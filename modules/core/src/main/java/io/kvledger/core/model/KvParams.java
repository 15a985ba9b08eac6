package io.kvledger.core.model;

import io.kvledger.core.moriio.ExtraConfig;
import java.util.Map;

/**
 * A request's {@code kv_transfer_params}: an insertion-ordered map of Python values (null, Boolean,
 * Long, Double, String, List, Map), read with Python semantics (truthiness, {@code get} with a
 * default, {@code setdefault}).
 *
 * <p>The connector mutates the live params of a request (it sets {@code transfer_id} and clears
 * {@code do_remote_prefill}); the reducer reads them through {@link KvTransferParams}, which
 * {@link #copy()}s an event's instance before its first write, so the event's params stay as
 * recorded. Whoever hands params to the reducer in an event does not change them afterwards.
 */
public final class KvParams {

    // Insertion-ordered parallel arrays, searched linearly: params hold a dozen keys or so, and
    // a scan of interned keys beats hashing (and a LinkedHashMap's entries and resizes) there.
    private String[] keys;
    private Object[] vals;
    private int size;
    /**
     * Copy on write, per array: set when another KvParams may share {@link #keys} (or
     * {@link #vals}). A change of a present key's value copies the values only.
     */
    private boolean keysShared;
    private boolean valsShared;
    /**
     * Bit {@code hashCode & 63} of every key ({@link #bit}); all bits when not kept. A lookup of a
     * key whose bit is clear ends without scanning: most lookups of an absent key (the connector
     * asks for a dozen optional keys per request) read one cached hash instead of every key.
     */
    private long keyBits;
    private Map<String, Object> view;

    private KvParams(String[] keys, Object[] vals, int size, boolean keysShared, boolean valsShared, long keyBits) {
        this.keys = keys;
        this.vals = vals;
        this.size = size;
        this.keysShared = keysShared;
        this.valsShared = valsShared;
        this.keyBits = keyBits;
    }

    /** The key's bit in {@link #keyBits}: a {@code String}'s hash is cached in it. */
    private static long bit(String key) {
        return key == null ? 1L : 1L << key.hashCode();
    }

    private int indexOf(Object key) {
        if ((key == null || key instanceof String) && (keyBits & bit((String) key)) == 0) {
            return -1;
        }
        String[] k = keys;
        for (int i = 0; i < size; i++) {
            if (k[i] == key) {
                return i;
            }
        }
        if (key instanceof String s) {
            // keys are mostly the same literals (found above); an absent key compares its cached
            // hash with each key's before comparing characters
            int h = s.hashCode();
            for (int i = 0; i < size; i++) {
                String ki = k[i];
                if (ki != null && ki.hashCode() == h && s.equals(ki)) {
                    return i;
                }
            }
        } else if (key != null) {
            for (int i = 0; i < size; i++) {
                if (key.equals(k[i])) {
                    return i;
                }
            }
        }
        return -1;
    }

    /** Sets the value of {@code key} in place, or appends the key, copying shared arrays first. */
    private void set(String key, Object value) {
        int i = indexOf(key);
        if (i >= 0) {
            if (valsShared) {
                vals = vals.clone();
                valsShared = false;
            }
            vals[i] = value;
            return;
        }
        if (size == keys.length) {
            int n = Math.max(4, size * 2);
            keys = java.util.Arrays.copyOf(keys, n);
            vals = java.util.Arrays.copyOf(vals, n);
            keysShared = false;
            valsShared = false;
        } else {
            if (keysShared) {
                keys = keys.clone();
                keysShared = false;
            }
            if (valsShared) {
                vals = vals.clone();
                valsShared = false;
            }
        }
        keys[size] = key;
        vals[size] = value;
        keyBits |= bit(key);
        size++;
    }

    public static KvParams empty() {
        return new KvParams(new String[8], new Object[8], 0, false, false, 0L);
    }

    /** Empty params with room for {@code n} keys. */
    static KvParams withCapacity(int n) {
        return new KvParams(new String[Math.max(n, 1)], new Object[Math.max(n, 1)], 0, false, false, 0L);
    }

    public static KvParams of(Map<String, ?> m) {
        KvParams p = withCapacity(m.size());
        for (Map.Entry<String, ?> e : m.entrySet()) {
            p.set(e.getKey(), e.getValue());
        }
        return p;
    }

    /** Builds params from alternating keys and values. */
    public static KvParams of(Object... kv) {
        if (kv.length % 2 != 0) {
            throw new IllegalArgumentException("keys and values must alternate");
        }
        KvParams p = withCapacity(kv.length / 2);
        for (int i = 0; i < kv.length; i += 2) {
            Object v = kv[i + 1];
            p.set((String) kv[i], v instanceof Integer n ? Long.valueOf(n) : v);
        }
        return p;
    }

    /**
     * Params holding {@code keys[i] = values[i]} in that order, as {@link #put} of each in turn
     * would give when the keys are distinct (the caller's promise), without searching for each
     * key first. The keys array may be shared by many params and is never written (copy on write:
     * it is copied on the first added key); the values array is taken over, its
     * {@link Integer}s made {@link Long}s as {@link #put} makes them.
     */
    public static KvParams ofDistinct(String[] keys, Object[] values) {
        if (keys.length != values.length) {
            throw new IllegalArgumentException("as many values as keys");
        }
        for (int i = 0; i < values.length; i++) {
            if (values[i] instanceof Integer n) {
                values[i] = Long.valueOf(n); // as put does
            }
        }
        return new KvParams(keys, values, keys.length, true, false, -1L); // no key bits: every lookup scans
    }

    /** An independent copy (copy on write: the entries are copied when either side next changes). */
    public KvParams copy() {
        keysShared = true;
        valsShared = true;
        return new KvParams(keys, vals, size, true, true, keyBits);
    }

    public boolean has(String key) {
        return indexOf(key) >= 0;
    }

    /**
     * The position of {@code key}, or -1 when absent: with {@link #valueAt}, a test for a key and
     * a read of its value in one search. A position holds until the params next change.
     */
    public int position(String key) {
        return indexOf(key);
    }

    /** The key at a position (0 to {@link #size()} - 1, in insertion order). */
    String keyAt(int position) {
        return keys[position];
    }

    /** The value at a position {@link #position} gave (or 0 to {@link #size()} - 1). */
    Object valueAt(int position) {
        return vals[position];
    }

    /** {@code params.get(key)}: {@code null} when absent or None. */
    public Object get(String key) {
        int i = indexOf(key);
        return i < 0 ? null : vals[i];
    }

    /** {@code params.get(key, default)}: the default only when the key is absent. */
    Object getOr(String key, Object fallback) {
        int i = indexOf(key);
        return i < 0 ? fallback : vals[i];
    }

    /** {@code bool(params.get(key))}. */
    public boolean truthy(String key) {
        return ExtraConfig.pythonTruthy(get(key));
    }

    /** The value as a string, or {@code null} when absent, None or not a string. */
    public String string(String key) {
        return get(key) instanceof String s ? s : null;
    }

    /**
     * {@code int(params.get(key, default))} for integral values (Long, Integer, integral strings,
     * booleans). Returns {@code null} when the value cannot be read as an int (Python would raise).
     */
    public Long integer(String key, long fallback) {
        int i = indexOf(key);
        if (i < 0) {
            return fallback;
        }
        return asLong(vals[i]);
    }

    /** Python {@code int(v)} for the value kinds params carry; {@code null} when it would raise. */
    public static Long asLong(Object v) {
        if (v instanceof Long l) {
            return l; // the value itself: no new box for a port or an id beyond the small-int cache
        }
        if (v instanceof Boolean b) {
            return b ? 1L : 0L;
        }
        if (v instanceof Double d) {
            return d.isNaN() || d.isInfinite() ? null : (long) d.doubleValue();
        }
        if (v instanceof Number n) {
            return n.longValue();
        }
        if (v instanceof String s) {
            try {
                return Long.parseLong(s.strip());
            } catch (NumberFormatException e) {
                return null;
            }
        }
        return null;
    }

    public void put(String key, Object value) {
        set(key, value instanceof Integer n ? Long.valueOf(n) : value);
    }

    /** {@code params.setdefault(key, value)}: sets only when the key is absent. */
    void setDefault(String key, Object value) {
        if (indexOf(key) < 0) {
            set(key, value);
        }
    }

    public boolean isEmpty() {
        return size == 0;
    }

    public int size() {
        return size;
    }

    /** An unmodifiable view in insertion order. */
    public Map<String, Object> asMap() {
        Map<String, Object> v = view;
        if (v == null) {
            v = new View();
            view = v;
        }
        return v;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof KvParams p && p.asMap().equals(asMap());
    }

    @Override
    public int hashCode() {
        return asMap().hashCode();
    }

    @Override
    public String toString() {
        return asMap().toString();
    }

    /** The unmodifiable insertion-ordered view {@link #asMap()} returns (it follows later changes). */
    private final class View extends java.util.AbstractMap<String, Object> {
        private java.util.Set<Map.Entry<String, Object>> entries;

        @Override
        public int size() {
            return size;
        }

        @Override
        public boolean containsKey(Object key) {
            return indexOf(key) >= 0;
        }

        @Override
        public Object get(Object key) {
            int i = indexOf(key);
            return i < 0 ? null : vals[i];
        }

        @Override
        public java.util.Set<Map.Entry<String, Object>> entrySet() {
            java.util.Set<Map.Entry<String, Object>> es = entries;
            if (es == null) {
                es = new java.util.AbstractSet<>() {
                    @Override
                    public java.util.Iterator<Map.Entry<String, Object>> iterator() {
                        return new java.util.Iterator<>() {
                            private int next;

                            @Override
                            public boolean hasNext() {
                                return next < size;
                            }

                            @Override
                            public Map.Entry<String, Object> next() {
                                if (next >= size) {
                                    throw new java.util.NoSuchElementException();
                                }
                                int i = next++;
                                return new java.util.AbstractMap.SimpleImmutableEntry<>(keys[i], vals[i]);
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
}
