package io.kvledger.rdma.spi;

/**
 * A map from {@code long} keys to non-null values with open addressing (linear probing,
 * backward-shift deletion, no tombstones): no boxing and no node per entry, for the in-flight
 * transfer ids of {@link CompletionHub}. Every key is allowed. Not thread-safe: the hub guards it.
 */
final class LongTable<V> {

    private long[] keys;
    private Object[] values;
    private int mask;
    private int size;

    LongTable(int initialCapacity) {
        int cap = Integer.highestOneBit(Math.max(4, initialCapacity - 1) << 1);
        keys = new long[cap];
        values = new Object[cap];
        mask = cap - 1;
    }

    int size() {
        return size;
    }

    private int home(long key) {
        long h = key * 0x9E3779B97F4A7C15L;
        return (int) (h ^ (h >>> 32)) & mask;
    }

    private int find(long key) {
        for (int i = home(key); ; i = (i + 1) & mask) {
            Object v = values[i];
            if (v == null) {
                return -1 - i;
            }
            if (keys[i] == key) {
                return i;
            }
        }
    }

    @SuppressWarnings("unchecked")
    V get(long key) {
        int i = find(key);
        return i < 0 ? null : (V) values[i];
    }

    /** Adds {@code key → value} unless the key is present; true when added. */
    boolean putIfAbsent(long key, V value) {
        if (value == null) {
            throw new NullPointerException("value");
        }
        int i = find(key);
        if (i >= 0) {
            return false;
        }
        if (2 * (size + 1) > keys.length) {
            grow();
            i = find(key);
        }
        i = -1 - i;
        keys[i] = key;
        values[i] = value;
        size++;
        return true;
    }

    /** Removes the key; its value, or null when absent. */
    @SuppressWarnings("unchecked")
    V remove(long key) {
        int i = find(key);
        if (i < 0) {
            return null;
        }
        V old = (V) values[i];
        // backward shift: pull later entries of the run into the gap unless their home lies in (gap, j]
        int gap = i;
        for (int j = (i + 1) & mask; values[j] != null; j = (j + 1) & mask) {
            int h = home(keys[j]);
            boolean stays = gap < j ? (h > gap && h <= j) : (h > gap || h <= j);
            if (!stays) {
                keys[gap] = keys[j];
                values[gap] = values[j];
                gap = j;
            }
        }
        values[gap] = null;
        size--;
        return old;
    }

    private void grow() {
        long[] k = keys;
        Object[] v = values;
        keys = new long[k.length * 2];
        values = new Object[k.length * 2];
        mask = keys.length - 1;
        for (int i = 0; i < k.length; i++) {
            if (v[i] != null) {
                int j = -1 - find(k[i]);
                keys[j] = k[i];
                values[j] = v[i];
            }
        }
    }
}
