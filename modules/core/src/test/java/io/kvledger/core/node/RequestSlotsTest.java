package io.kvledger.core.node;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The request slots' tables against the LinkedHashMaps they replaced: the same operations, by key
 * and through slots (fresh ones and ones held since their id left every table), give the same
 * values, entries, order, text and equality in every table, and the index holds exactly the ids
 * some table holds; a table of deadlines knows its smallest one whatever came and went.
 */
class RequestSlotsTest {

    /** 64 ids with one String hash ("Aa" and "BB" hash alike). */
    private static final List<String> COLLIDING = colliding();

    private static List<String> colliding() {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 64; i++) {
            StringBuilder b = new StringBuilder();
            for (int bit = 0; bit < 6; bit++) {
                b.append((i >> bit & 1) == 0 ? "Aa" : "BB");
            }
            ids.add(b.toString());
        }
        return ids;
    }

    @Test
    void every_table_behaves_as_a_linked_hash_map() {
        Random rnd = new Random(14);
        for (int round = 0; round < 120; round++) {
            RequestSlots slots = new RequestSlots();
            List<RequestSlots.Table<Integer>> tables = new ArrayList<>();
            List<LinkedHashMap<String, Integer>> maps = new ArrayList<>();
            for (int t = 0; t < RequestSlots.TABLES; t++) {
                RequestSlots.Table<Integer> table = slots.table(t);
                if (t % 2 == 0) {
                    table.trackDeadlines(Integer::longValue); // values as deadlines: earliestDeadline() is their min
                }
                tables.add(table);
                maps.add(new LinkedHashMap<>());
            }
            List<RequestSlots.Slot> held = new ArrayList<>();
            for (int op = 0; op < 400; op++) {
                int t = rnd.nextInt(RequestSlots.TABLES);
                RequestSlots.Table<Integer> table = tables.get(t);
                LinkedHashMap<String, Integer> map = maps.get(t);
                // few ids, ids sharing one String hash (probe runs and backward shifts in the
                // index), or many (the index grows)
                String rid = switch (round % 3) {
                    case 0 -> "r" + rnd.nextInt(12);
                    case 1 -> COLLIDING.get(rnd.nextInt(COLLIDING.size()));
                    default -> "r" + rnd.nextInt(300);
                };
                Integer v = rnd.nextInt(100);
                // a slot: the id's present one, or one held from earlier (perhaps dropped since)
                RequestSlots.Slot slot = !held.isEmpty() && rnd.nextInt(3) == 0
                        ? held.get(rnd.nextInt(held.size())) : slots.get(rid);
                if (slot != null) {
                    rid = slot.rid;
                }
                switch (rnd.nextInt(11)) {
                    case 0 -> assertThat(table.put(rid, v)).isEqualTo(map.put(rid, v));
                    case 1 -> {
                        RequestSlots.Slot s = slot != null ? slot : slots.obtain(rid);
                        held.add(s);
                        assertThat(table.put(s, v)).isEqualTo(map.put(rid, v));
                    }
                    case 2 -> assertThat(table.remove(rid)).isEqualTo(map.remove(rid));
                    case 3 -> assertThat(table.remove(slot)).isEqualTo(slot == null ? null : map.remove(rid));
                    case 4 -> {
                        assertThat(table.get(slot)).isEqualTo(slot == null ? null : map.get(rid));
                        assertThat(table.has(slot)).isEqualTo(slot != null && map.containsKey(rid));
                    }
                    case 5 -> assertThat(table.putIfAbsent(rid, v)).isEqualTo(map.putIfAbsent(rid, v));
                    case 6 -> {
                        if (rnd.nextInt(8) == 0) {
                            table.clear();
                            map.clear();
                        }
                    }
                    case 7 -> {
                        // removal through the iterator, every other entry
                        Iterator<String> a = table.keySet().iterator();
                        Iterator<String> b = map.keySet().iterator();
                        boolean drop = rnd.nextBoolean();
                        while (b.hasNext()) {
                            assertThat(a.next()).isEqualTo(b.next());
                            if (drop) {
                                a.remove();
                                b.remove();
                            }
                            drop = !drop;
                        }
                        assertThat(a.hasNext()).isFalse();
                    }
                    case 8 -> {
                        // the slot walk the reducer uses, removing the current entry from another table
                        List<String> walked = new ArrayList<>();
                        int other = (t + 1) % RequestSlots.TABLES;
                        for (RequestSlots.Slot l = table.first(); l != null; l = table.next(l)) {
                            walked.add(l.rid + "=" + table.get(l));
                            assertThat(tables.get(other).remove(l)).isEqualTo(maps.get(other).remove(l.rid));
                        }
                        List<String> expected = new ArrayList<>();
                        map.forEach((k, x) -> expected.add(k + "=" + x));
                        assertThat(walked).isEqualTo(expected);
                    }
                    case 9 -> {
                        // put after removal goes last, put of a present key keeps its place
                        assertThat(table.remove(rid)).isEqualTo(map.remove(rid));
                        assertThat(table.put(slots.obtain(rid), v)).isEqualTo(map.put(rid, v));
                    }
                    default -> {
                        assertThat(table.get(rid)).isEqualTo(map.get(rid));
                        assertThat(table.containsKey(rid)).isEqualTo(map.containsKey(rid));
                    }
                }
                LinkedHashSet<String> ids = new LinkedHashSet<>();
                for (int i = 0; i < RequestSlots.TABLES; i++) {
                    RequestSlots.Table<Integer> ti = tables.get(i);
                    LinkedHashMap<String, Integer> mi = maps.get(i);
                    assertThat(ti.toString()).isEqualTo(mi.toString());
                    assertThat(ti.size()).isEqualTo(mi.size());
                    assertThat(ti.isEmpty()).isEqualTo(mi.isEmpty());
                    assertThat(ti).isEqualTo(mi);
                    assertThat(ti.hashCode()).isEqualTo(mi.hashCode());
                    assertThat(List.copyOf(ti.entrySet())).isEqualTo(List.copyOf(mi.entrySet()));
                    if (i % 2 == 0) {
                        long min = mi.values().stream().mapToLong(Integer::longValue).min().orElse(Long.MAX_VALUE);
                        assertThat(ti.earliestDeadline()).as("table %d's earliest deadline", i).isEqualTo(min);
                    }
                    ids.addAll(mi.keySet());
                }
                // a slot in no table leaves the index
                assertThat(slots.slotCount()).isEqualTo(ids.size());
                for (String id : ids) {
                    assertThat(slots.get(id)).isNotNull();
                    assertThat(slots.get(id).released).isFalse();
                    assertThat(slots.get(id).rid).isEqualTo(id);
                }
                if (op % 20 == 0) {
                    for (String id : COLLIDING) {
                        assertThat(slots.get(id) != null).isEqualTo(ids.contains(id));
                    }
                }
            }
        }
    }

    @Test
    void the_reducer_tables_render_as_before() {
        RequestSlots slots = new RequestSlots();
        RequestSlots.Table<Long> parked = slots.table(RequestSlots.PARKED_ACKS);
        RequestSlots.Table<String> rid2tid = slots.table(RequestSlots.RID_TO_TID);
        Map<String, Long> m = new LinkedHashMap<>();
        parked.put("b", 2L);
        m.put("b", 2L);
        parked.put("a", 1L);
        m.put("a", 1L);
        rid2tid.put("a", "tx-a");
        assertThat(parked).hasToString(m.toString()).hasToString("{b=2, a=1}");
        assertThat(java.util.Collections.unmodifiableMap(parked)).isEqualTo(m);
        parked.remove("a");
        assertThat(slots.get("a")).isNotNull(); // still in rid2tid
        rid2tid.remove(slots.get("a"));
        assertThat(slots.get("a")).isNull();
        assertThat(slots.slotCount()).isEqualTo(1);
    }
}
