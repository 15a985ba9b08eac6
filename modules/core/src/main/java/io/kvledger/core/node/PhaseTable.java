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
 * <p>Layout. A live node keeps {@code memory} (65,536) finished requests here, so whatever the
 * table touches per admission that is not near its ends comes from memory, not from the cache. So:
 * <ul>
 *   <li>The entries live in a ring of parallel arrays (key, spread hash, phase as a byte) in
 *       insertion order. Each entry has a sequence number; it sits at {@code seq & mask}. New
 *       entries go at the tail, evictions take the head: both ends are read and written in order.
 *       A request keeps its entry's sequence number ({@link NodeState.Req#phaseSeq}), so a phase
 *       change is one byte store near the tail. A removed entry (a request renamed at finish)
 *       leaves a hole ({@link #REMOVED}) that the head skips.</li>
 *   <li>The index from key to ring position is open addressing (linear probing, deletion by
 *       backward shift) over one {@code long} per slot: the spread hash and the position plus one
 *       ({@code 0} is an empty slot). A probe reads one array; the eviction of the eldest entry
 *       finds its slot by hash and position without reading its key.</li>
 * </ul>
 * The {@code LinkedHashMap} took, per admission, a lookup and an insertion in its table, plus the
 * eldest entry, its key, its bucket and its chain for the eviction: cache misses on objects far
 * from each other. The cell-per-request table before this one still read the evicted cell and its
 * neighbour, and probed two arrays.
 */
final class PhaseTable extends AbstractMap<String, RequestPhase> {

    private static final RequestPhase[] PHASES = RequestPhase.values();
    /** The phase byte of a removed entry (a hole in the ring). */
    private static final byte REMOVED = -1;
    /** {@link NodeState.Req#phaseSeq} of a request without an entry. */
    static final long NONE = -1;

    private final int memory;

    // the ring: entry seq (head <= seq < tail) at seq & ringMask; head is a live entry unless empty
    private String[] keys;
    private int[] hashes;
    private byte[] phases;
    private int ringMask;
    private long head;
    private long tail;

    // the index: (spread hash << 32) | (ring position + 1), 0 for an empty slot
    private long[] slots;
    private int count;

    private Set<Map.Entry<String, RequestPhase>> entries;

    PhaseTable(int memory) {
        this.memory = memory;
        keys = new String[16];
        hashes = new int[16];
        phases = new byte[16];
        ringMask = 15;
        slots = new long[32];
    }

    /** The spread hash of a key. */
    static int hash(Object key) {
        return OpenAddressing.spread(key);
    }

    // ------------------------------------------------------------------ index

    /** The ring position of {@code key}'s entry, or -1. */
    private int find(Object key, int h) {
        long[] t = slots;
        int mask = t.length - 1;
        for (int i = h & mask; ; i = (i + 1) & mask) {
            long w = t[i];
            if (w == 0) {
                return -1;
            }
            if ((int) (w >>> 32) == h) {
                int pos = (int) w - 1;
                String k = keys[pos];
                if (k == key || Objects.equals(k, key)) {
                    return pos;
                }
            }
        }
    }

    /** Inserts the entry at ring position {@code pos}, whose key is absent from the index. */
    private void insert(int h, int pos) {
        long[] t = slots;
        int mask = t.length - 1;
        int i = h & mask;
        while (t[i] != 0) {
            i = (i + 1) & mask;
        }
        t[i] = ((long) h << 32) | (pos + 1);
        if (++count * 8 > t.length * 5) {
            rebuildIndex(t.length * 2);
        }
    }

    /** Removes the index slot of the entry at ring position {@code pos} (present) with hash {@code h}. */
    private void unindex(int h, int pos) {
        long[] t = slots;
        int mask = t.length - 1;
        long word = ((long) h << 32) | (pos + 1);
        int i = h & mask;
        while (t[i] != word) {
            i = (i + 1) & mask;
        }
        // backward shift: move later entries of the probe run into the hole when their home allows
        for (int j = (i + 1) & mask; t[j] != 0; j = (j + 1) & mask) {
            int home = (int) (t[j] >>> 32) & mask;
            if (OpenAddressing.movable(home, i, j)) {
                t[i] = t[j];
                i = j;
            }
        }
        t[i] = 0;
        count--;
    }

    /** A new index of {@code length} slots over the live entries (after growth of either array). */
    private void rebuildIndex(int length) {
        long[] t = new long[length];
        int mask = length - 1;
        for (long q = head; q < tail; q++) {
            int pos = (int) q & ringMask;
            if (phases[pos] != REMOVED) {
                int h = hashes[pos];
                int i = h & mask;
                while (t[i] != 0) {
                    i = (i + 1) & mask;
                }
                t[i] = ((long) h << 32) | (pos + 1);
            }
        }
        slots = t;
    }

    // ------------------------------------------------------------------ ring

    /** Appends a new entry (its key absent) and returns its sequence number; evicts as the LinkedHashMap did. */
    private long append(String key, int h, RequestPhase phase) {
        if (tail - head == keys.length) {
            growRing();
        }
        long q = tail++;
        int pos = (int) q & ringMask;
        keys[pos] = key;
        hashes[pos] = h;
        phases[pos] = (byte) phase.ordinal();
        insert(h, pos);
        // removeEldestEntry after the insertion: the eldest is the entry at the head
        if (count > memory) {
            int e = (int) head & ringMask;
            if (PHASES[phases[e]].terminal()) {
                unindex(hashes[e], e);
                drop(e);
                advanceHead();
            }
        }
        return q;
    }

    /** Clears the ring position of a removed entry. */
    private void drop(int pos) {
        keys[pos] = null;
        hashes[pos] = 0;
        phases[pos] = REMOVED;
    }

    /** Moves the head past removed entries. */
    private void advanceHead() {
        do {
            head++;
        } while (head < tail && phases[(int) head & ringMask] == REMOVED);
    }

    private void growRing() {
        int n = keys.length;
        String[] k = new String[2 * n];
        int[] h = new int[2 * n];
        byte[] p = new byte[2 * n];
        int mask = 2 * n - 1;
        for (long q = head; q < tail; q++) {
            int from = (int) q & ringMask;
            int to = (int) q & mask;
            k[to] = keys[from];
            h[to] = hashes[from];
            p[to] = phases[from];
        }
        keys = k;
        hashes = h;
        phases = p;
        ringMask = mask;
        rebuildIndex(slots.length); // positions moved
    }

    /** The position of sequence number {@code q} when it is still a live entry, else -1. */
    private int live(long q) {
        if (q < head || q >= tail) {
            return -1;
        }
        int pos = (int) q & ringMask;
        return phases[pos] == REMOVED ? -1 : pos;
    }

    /** The sequence number of the entry at ring position {@code pos} (a live entry). */
    private long seqAt(int pos) {
        return head + ((pos - (int) head) & ringMask);
    }

    // ------------------------------------------------------------------ the reducer's operations

    /**
     * {@code put(r.requestId, phase)} for a request being admitted, in one index traversal: sets
     * the request's entry and returns the phase the id had before, or {@code null}.
     */
    RequestPhase admit(NodeState.Req r, RequestPhase phase) {
        String key = r.requestId;
        int h = hash(key);
        int pos = find(key, h);
        if (pos >= 0) {
            RequestPhase before = PHASES[phases[pos]];
            phases[pos] = (byte) phase.ordinal();
            r.phaseSeq = seqAt(pos);
            return before;
        }
        r.phaseSeq = append(key, h, phase);
        return null;
    }

    /** The phase change of a request: its own entry when it still has one, else a map put. */
    void set(NodeState.Req r, RequestPhase phase) {
        int pos = live(r.phaseSeq);
        if (pos >= 0) {
            phases[pos] = (byte) phase.ordinal();
        } else {
            r.phaseSeq = putAndLocate(r.requestId, phase);
        }
    }

    /** {@code put(key, phase)}; returns the sequence number of the key's entry. */
    long putAndLocate(String key, RequestPhase phase) {
        int h = hash(key);
        int pos = find(key, h);
        if (pos >= 0) {
            phases[pos] = (byte) phase.ordinal();
            return seqAt(pos);
        }
        return append(key, h, phase);
    }

    /**
     * Whether the request's entry, while it has one, is its id with its phase (see
     * {@code Invariants}): no hashing, the entry is reached by its sequence number.
     */
    boolean mirrors(NodeState.Req r) {
        int pos = live(r.phaseSeq);
        return pos < 0 || (phases[pos] == (byte) r.phase.ordinal() && Objects.equals(keys[pos], r.requestId));
    }

    /** The phase in the request's own entry, or {@code null} when it has none (for messages). */
    RequestPhase phaseOfEntry(NodeState.Req r) {
        int pos = live(r.phaseSeq);
        return pos < 0 ? null : PHASES[phases[pos]];
    }

    /** Whether the request's entry is still in the table (not evicted, not removed). */
    boolean attached(NodeState.Req r) {
        return live(r.phaseSeq) >= 0;
    }

    // ------------------------------------------------------------------ the map

    @Override
    public RequestPhase put(String key, RequestPhase phase) {
        int h = hash(key);
        int pos = find(key, h);
        if (pos >= 0) {
            RequestPhase before = PHASES[phases[pos]];
            phases[pos] = (byte) phase.ordinal();
            return before;
        }
        append(key, h, phase);
        return null;
    }

    /** Removes {@code key}'s entry as the {@code LinkedHashMap} did (a request renamed at finish). */
    @Override
    public RequestPhase remove(Object key) {
        int h = hash(key);
        int pos = find(key, h);
        if (pos < 0) {
            return null;
        }
        RequestPhase before = PHASES[phases[pos]];
        unindex(h, pos);
        drop(pos);
        if (pos == ((int) head & ringMask)) {
            advanceHead();
        }
        return before;
    }

    @Override
    public RequestPhase get(Object key) {
        int pos = find(key, hash(key));
        return pos < 0 ? null : PHASES[phases[pos]];
    }

    @Override
    public boolean containsKey(Object key) {
        return find(key, hash(key)) >= 0;
    }

    @Override
    public int size() {
        return count;
    }

    @Override
    public Set<Map.Entry<String, RequestPhase>> entrySet() {
        Set<Map.Entry<String, RequestPhase>> es = entries;
        if (es == null) {
            es = new AbstractSet<>() {
                @Override
                public Iterator<Map.Entry<String, RequestPhase>> iterator() {
                    return new Iterator<>() {
                        private long next = head;

                        @Override
                        public boolean hasNext() {
                            while (next < tail && phases[(int) next & ringMask] == REMOVED) {
                                next++;
                            }
                            return next < tail;
                        }

                        @Override
                        public Map.Entry<String, RequestPhase> next() {
                            if (!hasNext()) {
                                throw new NoSuchElementException();
                            }
                            int pos = (int) next++ & ringMask;
                            return new AbstractMap.SimpleImmutableEntry<>(keys[pos], PHASES[phases[pos]]);
                        }
                    };
                }

                @Override
                public int size() {
                    return count;
                }
            };
            entries = es;
        }
        return es;
    }
}
