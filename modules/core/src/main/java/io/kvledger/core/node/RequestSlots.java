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
 * One record ({@link Slot}) per request id for every table the scheduler side keys by request id
 * ({@code requests}, {@code _reqs_need_recv}, {@code _reqs_need_save},
 * {@code _reqs_need_pending_save}, {@code _req_kv_params}, {@code _reqs_need_send},
 * {@code _deferred_send_deadlines}, {@code _pending_sent_acks}, {@code request_id_to_transfer_id}):
 * a hook looks its request up once and reaches each table's entry through the slot, where the
 * {@code LinkedHashMap}s it replaces took one hash lookup each.
 *
 * <p>Each table ({@link Table}) is an insertion-ordered map that behaves exactly as the
 * {@code LinkedHashMap} it replaces: its entries ({@link Link}, one per slot and table) form an
 * intrusive doubly linked list in insertion order; a {@code put} of a present key keeps its
 * position, a removed key put again goes to the end; it iterates, compares and renders
 * ({@link AbstractMap#toString()}) the same. The one hash index (request id to slot) is only looked
 * up, never iterated: the lists keep every order. A slot leaves the index when it is in no table.
 */
final class RequestSlots {

    /** Tables, by index into {@link Slot#links}. */
    static final int REQUESTS = 0;
    static final int NEED_RECV = 1;
    static final int NEED_SAVE = 2;
    static final int NEED_PENDING_SAVE = 3;
    static final int KV_PARAMS = 4;
    static final int NEED_SEND = 5;
    static final int DEFERRED = 6;
    static final int PARKED_ACKS = 7;
    static final int RID_TO_TID = 8;
    static final int TABLES = 9;

    // Only looked up, never iterated (the tables' lists keep the orders); a LinkedHashMap as everywhere in core.
    private final LinkedHashMap<String, Slot> index = new LinkedHashMap<>(64);

    /** The slot of {@code rid}, or {@code null} when no table holds it. */
    Slot get(Object rid) {
        return index.get(rid);
    }

    /** The slot of {@code rid}, created (in no table yet) when there is none. */
    Slot obtain(String rid) {
        Slot s = index.get(rid);
        if (s == null) {
            s = new Slot(rid);
            index.put(rid, s);
        }
        return s;
    }

    /** Slots in the index (for tests: a slot in no table is dropped). */
    int slotCount() {
        return index.size();
    }

    private void releaseIfIdle(Slot s) {
        for (Link<?> l : s.links) {
            if (l != null && l.in) {
                return;
            }
        }
        if (!s.released) {
            s.released = true;
            index.remove(s.rid);
        }
    }

    /** A new table over these slots. */
    <V> Table<V> table(int id) {
        return new Table<>(this, id);
    }

    /** Everything kept for one request id: its entry in each table, present or not. */
    static final class Slot {
        final String rid;
        final Link<?>[] links = new Link<?>[TABLES];
        /** True once dropped from the index: a later put of the id makes a new slot. */
        boolean released;

        Slot(String rid) {
            this.rid = rid;
        }
    }

    /** A slot's entry in one table. Detached entries ({@code in == false}) hold no value. */
    static final class Link<V> implements Map.Entry<String, V> {
        final Slot slot;
        V value;
        Link<V> before;
        Link<V> after;
        boolean in;

        Link(Slot slot) {
            this.slot = slot;
        }

        /** The next entry of the table in insertion order, or {@code null}. */
        Link<V> next() {
            return after;
        }

        @Override
        public String getKey() {
            return slot.rid;
        }

        @Override
        public V getValue() {
            return value;
        }

        @Override
        public V setValue(V v) {
            V old = value;
            value = v;
            return old;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Map.Entry<?, ?> e && Objects.equals(slot.rid, e.getKey()) && Objects.equals(value, e.getValue());
        }

        @Override
        public int hashCode() {
            return Objects.hashCode(slot.rid) ^ Objects.hashCode(value);
        }

        @Override
        public String toString() {
            return slot.rid + "=" + value;
        }
    }

    /**
     * One request-id keyed table: a {@code LinkedHashMap<String, V>} in behaviour, whose entries
     * live in the slots. The slot-taking methods skip the index lookup.
     */
    static final class Table<V> extends AbstractMap<String, V> {
        private final RequestSlots slots;
        private final int id;
        private Link<V> head;
        private Link<V> tail;
        private int size;
        private Set<Map.Entry<String, V>> entries;

        private Table(RequestSlots slots, int id) {
            this.slots = slots;
            this.id = id;
        }

        /** A slot dropped from the index stands for its id's slot now, if any. */
        private Slot current(Slot s) {
            return s != null && s.released ? slots.get(s.rid) : s;
        }

        @SuppressWarnings("unchecked")
        private Link<V> link(Slot s) {
            return (Link<V>) s.links[id];
        }

        /** The first entry in insertion order, or {@code null}. */
        Link<V> first() {
            return head;
        }

        /** The value of the slot's entry, or {@code null}. */
        V get(Slot s) {
            s = current(s);
            if (s == null) {
                return null;
            }
            Link<V> l = link(s);
            return l == null ? null : l.value;
        }

        boolean has(Slot s) {
            s = current(s);
            if (s == null) {
                return false;
            }
            Link<V> l = link(s);
            return l != null && l.in;
        }

        /** {@code put(slot.rid, v)}: a present entry keeps its place, a new one goes last. */
        V put(Slot s, V v) {
            if (s.released) {
                s = slots.obtain(s.rid);
            }
            Link<V> l = link(s);
            if (l == null) {
                l = new Link<>(s);
                s.links[id] = l;
            }
            if (l.in) {
                V old = l.value;
                l.value = v;
                return old;
            }
            l.in = true;
            l.value = v;
            if (tail == null) {
                head = l;
            } else {
                l.before = tail;
                tail.after = l;
            }
            tail = l;
            size++;
            return null;
        }

        /** Removes the slot's entry; returns its value or {@code null}. */
        V remove(Slot s) {
            s = current(s);
            if (s == null) {
                return null;
            }
            Link<V> l = link(s);
            if (l == null || !l.in) {
                return null;
            }
            V old = l.value;
            unlink(l);
            slots.releaseIfIdle(s);
            return old;
        }

        private void unlink(Link<V> l) {
            Link<V> b = l.before;
            Link<V> a = l.after;
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
            l.before = null;
            l.after = null;
            l.in = false;
            l.value = null;
            size--;
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
                Link<V> l = head;
                unlink(l);
                slots.releaseIfIdle(l.slot);
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
                            private Link<V> next = head;
                            private Link<V> last;

                            @Override
                            public boolean hasNext() {
                                return next != null;
                            }

                            @Override
                            public Map.Entry<String, V> next() {
                                Link<V> l = next;
                                if (l == null) {
                                    throw new NoSuchElementException();
                                }
                                next = l.after;
                                last = l;
                                return l;
                            }

                            @Override
                            public void remove() {
                                if (last == null || !last.in) {
                                    throw new IllegalStateException();
                                }
                                Table.this.remove(last.slot);
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
