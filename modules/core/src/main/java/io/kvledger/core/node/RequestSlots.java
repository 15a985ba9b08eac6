package io.kvledger.core.node;

import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.Iterator;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Set;

/**
 * One record ({@link Slot}) per request id for every table the scheduler side keys by request id
 * ({@code requests}, {@code _reqs_need_recv}, {@code _reqs_need_save},
 * {@code _reqs_need_pending_save}, {@code _req_kv_params}, {@code _reqs_need_send},
 * {@code _deferred_send_deadlines}, {@code _pending_sent_acks}, {@code request_id_to_transfer_id}):
 * a hook looks its request up once and reaches each table's entry through the slot, where the
 * {@code LinkedHashMap}s it replaces took one hash lookup each.
 *
 * <p>Each table ({@link Table}) is an insertion-ordered map that behaves exactly as the
 * {@code LinkedHashMap} it replaces: its entries are the slots themselves, linked into an intrusive
 * doubly linked list per table in insertion order (each slot keeps, per table, its value and its
 * two neighbours in one array, so a request allocates one slot and one array whatever tables it
 * enters); a {@code put} of a present key keeps its position, a removed key put again goes to the
 * end; it iterates, compares and renders ({@link AbstractMap#toString()}) the same. The one hash
 * index (request id to slot) is only looked up, never iterated: the lists keep every order. A slot
 * leaves the index when it is in no table.
 */
final class RequestSlots {

    /**
     * Tables, by index into {@link Slot#cells}: the ones every request with params enters first,
     * so that a slot's array only reaches as far as the tables its requests use.
     */
    static final int REQUESTS = 0;
    static final int RID_TO_TID = 1;
    static final int KV_PARAMS = 2;
    static final int NEED_RECV = 3;
    static final int NEED_SAVE = 4;
    static final int NEED_SEND = 5;
    static final int DEFERRED = 6;
    static final int PARKED_ACKS = 7;
    static final int NEED_PENDING_SAVE = 8;
    static final int TABLES = 9;

    /**
     * The index from request id to slot: open addressing (linear probing, deletion by backward
     * shift) over the slots themselves, which keep their id's hash. Only looked up, never
     * iterated (the tables' lists keep the orders). It holds the live requests only, so it stays
     * small and in the cache; unlike a map it allocates nothing per request.
     */
    private Slot[] index = new Slot[64];
    private int indexed;
    /**
     * The length new slots' arrays start with: the widest any slot has needed so far (three cells
     * per table up to the last table it entered), so that in a steady workload no array grows.
     */
    private int width = 3;
    /**
     * Slots in at least one table, counted as memberships come and go (a slot's first entry, its
     * last one's removal), apart from the index: {@link #idleSlots()} compares the two.
     */
    private int occupied;

    // ------------------------------------------------------------------ change tracking

    /**
     * Whether changes are recorded in {@link #touched}: off until the first incremental invariant
     * check ({@code Invariants.checkSinceLast}) turns it on, so that a state nobody checks that
     * way records nothing (a live node's), and costs one test of this flag per change.
     */
    boolean tracking;
    /** The slots whose tables' entries, or whose request's phase, changed since the last drain. */
    Slot[] touched = new Slot[16];
    int touchedCount;

    /** Records that {@code s}'s entries or its request changed (while tracking). */
    void touch(Slot s) {
        if (tracking && !s.touched) {
            if (touchedCount == touched.length) {
                touched = java.util.Arrays.copyOf(touched, 2 * touchedCount);
            }
            s.touched = true;
            touched[touchedCount++] = s;
        }
    }

    /** Forgets the touched slots. */
    void drainTouched() {
        for (int i = 0; i < touchedCount; i++) {
            touched[i].touched = false;
            touched[i] = null;
        }
        touchedCount = 0;
    }

    /** The slot of {@code rid}, or {@code null} when no table holds it. */
    Slot get(Object rid) {
        int h = hash(rid);
        Slot[] t = index;
        int mask = t.length - 1;
        for (int i = h & mask; ; i = (i + 1) & mask) {
            Slot s = t[i];
            if (s == null) {
                return null;
            }
            if (s.hash == h && (s.rid == rid || Objects.equals(s.rid, rid))) {
                return s;
            }
        }
    }

    /** The spread hash of an id, as its slot keeps it. */
    private static int hash(Object rid) {
        return OpenAddressing.spread(rid);
    }

    /** Puts a new slot (its id absent) into the index. */
    private void insert(Slot s) {
        Slot[] t = index;
        int mask = t.length - 1;
        int i = s.hash & mask;
        while (t[i] != null) {
            i = (i + 1) & mask;
        }
        t[i] = s;
        if (++indexed * 2 > t.length) {
            Slot[] g = new Slot[t.length * 2];
            int m = g.length - 1;
            for (Slot o : t) {
                if (o != null) {
                    int k = o.hash & m;
                    while (g[k] != null) {
                        k = (k + 1) & m;
                    }
                    g[k] = o;
                }
            }
            index = g;
        }
    }

    /** Takes a slot (in the index) out of it. */
    private void unindex(Slot s) {
        Slot[] t = index;
        int mask = t.length - 1;
        int i = s.hash & mask;
        while (t[i] != s) {
            if (t[i] == null) {
                return; // not indexed (cannot happen: an unreleased slot is its id's indexed one)
            }
            i = (i + 1) & mask;
        }
        // backward shift: move later slots of the probe run into the hole when their home allows
        for (int j = (i + 1) & mask; t[j] != null; j = (j + 1) & mask) {
            int home = t[j].hash & mask;
            if (OpenAddressing.movable(home, i, j)) {
                t[i] = t[j];
                i = j;
            }
        }
        t[i] = null;
        indexed--;
    }

    /** The slot of {@code rid}, created (in no table yet) when there is none. */
    Slot obtain(String rid) {
        Slot s = get(rid);
        if (s == null) {
            s = new Slot(rid, width);
            insert(s);
        }
        return s;
    }

    /** A new slot for {@code rid}, which has none ({@link #get} gave {@code null}). */
    Slot add(String rid) {
        Slot s = new Slot(rid, width);
        insert(s);
        return s;
    }

    /** Slots in the index (for tests: a slot in no table is dropped). */
    int slotCount() {
        return indexed;
    }

    private void releaseIfIdle(Slot s) {
        if (s.members == 0 && !s.released) {
            s.released = true;
            unindex(s);
        }
    }

    /** A new table over these slots. */
    <V> Table<V> table(int id) {
        return new Table<>(this, id);
    }

    /**
     * The slots in the index that no table holds: zero in a sound state, where a slot leaves the
     * index with its last entry (see {@code Invariants}). Constant time.
     */
    int idleSlots() {
        return indexed - occupied;
    }

    /**
     * Everything kept for one request id: per table, whether it is in it, its value and its
     * neighbours ({@code cells[3 * table]}, {@code [3 * table + 1]} and {@code [3 * table + 2]}).
     */
    static final class Slot {
        final String rid;
        /** {@code rid}'s spread hash ({@link RequestSlots#hash}). */
        final int hash;
        /** Three cells per table up to the last table the slot entered (grown on demand). */
        Object[] cells;
        /** Bit {@code table} set while the slot is in that table. */
        int members;
        /** True once dropped from the index: a later put of the id makes a new slot. */
        boolean released;
        /** In {@link RequestSlots#touched} (only while {@link RequestSlots#tracking}). */
        boolean touched;

        Slot(String rid, int width) {
            this.rid = rid;
            this.hash = RequestSlots.hash(rid);
            this.cells = new Object[width];
        }
    }

    /**
     * Read access to a {@link Table}: what a side hands its readers (the state's renderings, the
     * invariants, the other side), so that the compiler keeps them from writing. No method
     * allocates; {@link #asMap()} is one unmodifiable view per table.
     */
    interface View<V> {
        /** The first slot in insertion order, or {@code null}. */
        Slot first();

        /** The slot after {@code s} (which is in this table) in insertion order, or {@code null}. */
        Slot next(Slot s);

        /** The value of the slot's entry, or {@code null}. */
        V get(Slot s);

        boolean has(Slot s);

        V get(Object requestId);

        boolean containsKey(Object requestId);

        int size();

        boolean isEmpty();

        /** The table as an unmodifiable map in insertion order (the same instance each time). */
        Map<String, V> asMap();

        /**
         * For a table of deadlines ({@link Table#trackDeadlines}): the smallest deadline of its
         * entries, {@link Long#MAX_VALUE} when it is empty, {@link Long#MIN_VALUE} when an entry's
         * value is {@code null}. Kept as entries come and go; a scan only after the entry holding
         * it left or changed, so the loop's wait ({@code NodeState.nextDeadlineAfter}) costs no
         * walk over every deferred free per call. Allocates nothing.
         */
        long earliestDeadline();
    }

    /**
     * One request-id keyed table: a {@code LinkedHashMap<String, V>} in behaviour, whose entries
     * live in the slots. The slot-taking methods skip the index lookup; {@link #first()} and
     * {@link #next(Slot)} walk it in insertion order without allocating.
     */
    static final class Table<V> extends AbstractMap<String, V> implements View<V> {
        private final RequestSlots slots;
        private final int bit;
        private final int v;
        private final int b;
        private final int a;
        private Slot head;
        private Slot tail;
        private int size;
        private Set<Map.Entry<String, V>> entries;
        private Map<String, V> readOnly;
        /** A value's deadline, for a table of deadlines; {@code null} for the others. */
        private java.util.function.ToLongFunction<? super V> deadlineOf;
        /** The smallest deadline of the entries while {@link #earliestKnown}. */
        private long earliest = Long.MAX_VALUE;
        private boolean earliestKnown;

        private Table(RequestSlots slots, int id) {
            this.slots = slots;
            this.bit = 1 << id;
            this.v = 3 * id;
            this.b = 3 * id + 1;
            this.a = 3 * id + 2;
        }

        /** Makes this a table of deadlines, {@code deadlineOf} reading a (non-null) value's: see {@link View#earliestDeadline()}. */
        void trackDeadlines(java.util.function.ToLongFunction<? super V> deadlineOf) {
            this.deadlineOf = Objects.requireNonNull(deadlineOf, "deadlineOf");
            earliestKnown = false;
        }

        private long deadline(Object value) {
            @SuppressWarnings("unchecked")
            V v = (V) value;
            return v == null ? Long.MIN_VALUE : deadlineOf.applyAsLong(v);
        }

        @Override
        public long earliestDeadline() {
            if (deadlineOf == null) {
                throw new IllegalStateException("not a table of deadlines");
            }
            if (!earliestKnown) {
                long e = Long.MAX_VALUE;
                for (Slot s = head; s != null; s = (Slot) s.cells[a]) {
                    e = Math.min(e, deadline(s.cells[v]));
                }
                earliest = e;
                earliestKnown = true;
            }
            return earliest;
        }

        /** The entry holding {@code old} (a deadline) now holds {@code value}, or ({@code replaced} false) a new entry {@code value}. */
        private void deadlineChanged(boolean replaced, Object old, Object value) {
            if (!earliestKnown) {
                return;
            }
            long d = deadline(value);
            if (replaced && deadline(old) == earliest && d > earliest) {
                earliestKnown = false;
            } else if (d < earliest) {
                earliest = d;
            }
        }

        /** A slot dropped from the index stands for its id's slot now, if any. */
        private Slot current(Slot s) {
            return s != null && s.released ? slots.get(s.rid) : s;
        }

        @Override
        public Map<String, V> asMap() {
            Map<String, V> m = readOnly;
            if (m == null) {
                m = java.util.Collections.unmodifiableMap(this);
                readOnly = m;
            }
            return m;
        }

        /** The first slot in insertion order, or {@code null}. */
        @Override
        public Slot first() {
            return head;
        }

        /** The slot after {@code s} (which is in this table) in insertion order, or {@code null}. */
        @Override
        public Slot next(Slot s) {
            return (Slot) s.cells[a];
        }

        /** The value of the slot's entry, or {@code null}. */
        @SuppressWarnings("unchecked")
        @Override
        public V get(Slot s) {
            s = current(s);
            return s == null || (s.members & bit) == 0 ? null : (V) s.cells[v];
        }

        @Override
        public boolean has(Slot s) {
            s = current(s);
            return s != null && (s.members & bit) != 0;
        }

        /** {@code put(slot.rid, value)}: a present entry keeps its place, a new one goes last. */
        @SuppressWarnings("unchecked")
        V put(Slot s, V value) {
            if (s.released) {
                s = slots.obtain(s.rid);
            }
            Object[] c = s.cells;
            slots.touch(s);
            if ((s.members & bit) != 0) {
                V old = (V) c[v];
                c[v] = value;
                if (deadlineOf != null) {
                    deadlineChanged(true, old, value);
                }
                return old;
            }
            if (c.length <= a) {
                c = java.util.Arrays.copyOf(c, a + 1);
                s.cells = c;
                if (slots.width <= a) {
                    slots.width = a + 1;
                }
            }
            if (s.members == 0) {
                slots.occupied++;
            }
            s.members |= bit;
            c[v] = value;
            if (deadlineOf != null) {
                deadlineChanged(false, null, value);
            }
            if (tail == null) {
                head = s;
            } else {
                c[b] = tail;
                tail.cells[a] = s;
            }
            tail = s;
            size++;
            return null;
        }

        /** Removes the slot's entry; returns its value or {@code null}. */
        @SuppressWarnings("unchecked")
        V remove(Slot s) {
            s = current(s);
            if (s == null || (s.members & bit) == 0) {
                return null;
            }
            V old = (V) s.cells[v];
            unlink(s);
            slots.releaseIfIdle(s);
            return old;
        }

        private void unlink(Slot s) {
            slots.touch(s);
            Object[] c = s.cells;
            if (deadlineOf != null && earliestKnown && deadline(c[v]) <= earliest) {
                earliestKnown = false;
            }
            Slot before = (Slot) c[b];
            Slot after = (Slot) c[a];
            if (before == null) {
                head = after;
            } else {
                before.cells[a] = after;
            }
            if (after == null) {
                tail = before;
            } else {
                after.cells[b] = before;
            }
            c[v] = null;
            c[b] = null;
            c[a] = null;
            s.members &= ~bit;
            if (s.members == 0) {
                slots.occupied--;
            }
            size--;
            if (size == 0 && deadlineOf != null) {
                earliest = Long.MAX_VALUE;
                earliestKnown = true;
            }
        }

        @Override
        public V get(Object key) {
            return get(slots.get(key));
        }

        @Override
        public boolean containsKey(Object key) {
            return has(slots.get(key));
        }

        @Override
        public V put(String key, V value) {
            return put(slots.obtain(key), value);
        }

        @Override
        public V remove(Object key) {
            return remove(slots.get(key));
        }

        @Override
        public void clear() {
            while (head != null) {
                Slot s = head;
                unlink(s);
                slots.releaseIfIdle(s);
            }
        }

        @Override
        public int size() {
            return size;
        }

        @Override
        public boolean isEmpty() {
            return size == 0;
        }

        @Override
        public Set<Map.Entry<String, V>> entrySet() {
            Set<Map.Entry<String, V>> es = entries;
            if (es == null) {
                es = new AbstractSet<>() {
                    @Override
                    public Iterator<Map.Entry<String, V>> iterator() {
                        return new Iterator<>() {
                            private Slot next = head;
                            private Slot last;

                            @Override
                            public boolean hasNext() {
                                return next != null;
                            }

                            @Override
                            @SuppressWarnings("unchecked")
                            public Map.Entry<String, V> next() {
                                Slot s = next;
                                if (s == null) {
                                    throw new NoSuchElementException();
                                }
                                next = (Slot) s.cells[a];
                                last = s;
                                return new AbstractMap.SimpleImmutableEntry<>(s.rid, (V) s.cells[v]);
                            }

                            @Override
                            public void remove() {
                                if (last == null || (last.members & bit) == 0) {
                                    throw new IllegalStateException();
                                }
                                Table.this.remove(last);
                                last = null;
                            }
                        };
                    }

                    @Override
                    public int size() {
                        return size;
                    }

                    @Override
                    public void clear() {
                        Table.this.clear();
                    }
                };
                entries = es;
            }
            return es;
        }
    }
}
