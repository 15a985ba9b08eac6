package io.kvledger.core.node;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.model.RequestPhase;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The phase table against the bounded LinkedHashMap it replaced: the same puts (through the
 * map interface and through a request's own entry), removals and admissions give the same entries
 * in the same order and the same text, evictions included; a request's entry stays its own until
 * it is evicted or removed. The keys include 64 that share one {@code String} hash (probe runs in
 * the index, deletion by backward shift across the wrap of its array), and enough ids and steps
 * to grow the ring and the index, wrap the ring around and leave holes where entries were removed.
 */
class PhaseTableTest {

    private static final RequestPhase[] PHASES = RequestPhase.values();

    private static List<String> keys(int plain) {
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 64; i++) {
            // "Aa" and "BB" have the same String hash: these 64 keys share one hash
            StringBuilder b = new StringBuilder();
            for (int bit = 0; bit < 6; bit++) {
                b.append((i >> bit & 1) == 0 ? "Aa" : "BB");
            }
            keys.add(b.toString());
        }
        for (int i = 0; i < plain; i++) {
            keys.add("r" + i);
        }
        keys.add(null);
        return keys;
    }

    @Test
    void behaves_as_the_bounded_linked_hash_map() {
        Random rnd = new Random(3);
        int[][] shapes = {{8, 30, 300}, {8, 200, 2000}, {40, 300, 3000}, {3, 100, 1000}};
        for (int round = 0; round < 120; round++) {
            int[] shape = shapes[round % shapes.length];
            int memory = shape[0];
            List<String> keys = keys(shape[1]);
            PhaseTable t = new PhaseTable(memory);
            LinkedHashMap<String, RequestPhase> m = new LinkedHashMap<>(64, 0.75f, false) {
                @Override
                protected boolean removeEldestEntry(Map.Entry<String, RequestPhase> eldest) {
                    return size() > memory && eldest.getValue().terminal();
                }
            };
            // every request object seen so far, with the entry it was given (stale ones included)
            List<NodeState.Req> reqs = new ArrayList<>();
            boolean mostlyTerminal = rnd.nextBoolean();
            for (int op = 0; op < shape[2]; op++) {
                String rid = keys.get(rnd.nextInt(rnd.nextInt(4) == 0 ? 64 : keys.size()));
                RequestPhase p = mostlyTerminal && rnd.nextInt(4) != 0
                        ? RequestPhase.FINISHED : PHASES[rnd.nextInt(PHASES.length)];
                int kind = rnd.nextInt(12);
                if (kind == 0) {
                    // a rename at finish removes the old id's entry (SchedulerSide.renamedAtFinish)
                    assertThat(t.remove(rid)).isEqualTo(m.remove(rid));
                } else if (kind <= 4) {
                    // admission: a new request object, as SchedulerSide.admitted does
                    NodeState.Req r = new NodeState.Req(rid, 1, 1, null, 0);
                    if (rnd.nextBoolean()) {
                        assertThat(t.admit(r, p)).isEqualTo(m.get(rid));
                    } else {
                        assertThat(t.get(rid)).isEqualTo(m.get(rid));
                        r.phaseSeq = t.putAndLocate(rid, p);
                    }
                    assertThat(t.attached(r)).isTrue();
                    m.put(rid, p);
                    reqs.add(r);
                } else if (kind <= 8 && !reqs.isEmpty()) {
                    // a phase change of any request object seen so far (stale ones included)
                    NodeState.Req r = reqs.get(rnd.nextInt(reqs.size()));
                    t.set(r, p);
                    m.put(r.requestId, p);
                    assertThat(t.attached(r)).isTrue();
                } else {
                    assertThat(t.put(rid, p)).isEqualTo(m.put(rid, p));
                }
                assertThat(t.size()).isEqualTo(m.size());
                assertThat(t.get(rid)).isEqualTo(m.get(rid));
                assertThat(t.containsKey(rid)).isEqualTo(m.containsKey(rid));
                if (op % 10 == 0) {
                    assertThat(t.toString()).isEqualTo(m.toString());
                    assertThat(t).isEqualTo(m);
                    assertThat(t.hashCode()).isEqualTo(m.hashCode());
                    for (String k : keys) {
                        assertThat(t.get(k)).isEqualTo(m.get(k));
                    }
                }
            }
            assertThat(t.toString()).isEqualTo(m.toString());
            // a request's entry is its own while the id's entry is the one it was given: a phase
            // change through a stale request object must not write into another entry's phase
            for (NodeState.Req r : reqs) {
                if (!t.attached(r)) {
                    continue;
                }
                RequestPhase p = PHASES[rnd.nextInt(PHASES.length)];
                t.set(r, p);
                m.put(r.requestId, p);
                assertThat(t).isEqualTo(m);
            }
        }
    }

    @Test
    void a_long_run_of_admissions_keeps_memory_entries_and_stays_equal() {
        // the shape of a live node: each request admitted, then finished; the eldest evicted
        int memory = 1_000;
        PhaseTable t = new PhaseTable(memory);
        LinkedHashMap<String, RequestPhase> m = new LinkedHashMap<>(64, 0.75f, false) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, RequestPhase> eldest) {
                return size() > memory && eldest.getValue().terminal();
            }
        };
        NodeState.Req stuck = new NodeState.Req("stuck", 1, 1, null, 0);
        for (int i = 0; i < 20_000; i++) {
            NodeState.Req r = new NodeState.Req("req-" + (i % 7_000), 1, 1, null, 0);
            assertThat(t.admit(r, RequestPhase.ADMITTED)).isEqualTo(m.put(r.requestId, RequestPhase.ADMITTED));
            t.set(r, RequestPhase.RUNNING);
            m.put(r.requestId, RequestPhase.RUNNING);
            if (i == 5_000) {
                // a request that stays live at the head: nothing is evicted behind it
                t.admit(stuck, RequestPhase.RUNNING);
                m.put(stuck.requestId, RequestPhase.RUNNING);
            }
            if (i == 9_000) {
                t.set(stuck, RequestPhase.FINISHED);
                m.put(stuck.requestId, RequestPhase.FINISHED);
            }
            t.set(r, RequestPhase.FINISHED);
            m.put(r.requestId, RequestPhase.FINISHED);
            assertThat(t.size()).isEqualTo(m.size());
        }
        assertThat(t.toString()).isEqualTo(m.toString());
        assertThat(t.attached(stuck)).isEqualTo(m.containsKey("stuck"));
    }
}
