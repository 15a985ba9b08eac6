package io.kvledger.core.node;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.model.RequestPhase;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The phase table against the bounded LinkedHashMap it replaced: the same puts (through the
 * map interface and through a request's own entry) give the same entries in the same order and
 * the same text, evictions included.
 */
class PhaseTableTest {

    private static final RequestPhase[] PHASES = RequestPhase.values();

    @Test
    void behaves_as_the_bounded_linked_hash_map() {
        int memory = 8;
        Random rnd = new Random(3);
        for (int round = 0; round < 500; round++) {
            PhaseTable t = new PhaseTable(memory);
            LinkedHashMap<String, RequestPhase> m = new LinkedHashMap<>(64, 0.75f, false) {
                @Override
                protected boolean removeEldestEntry(Map.Entry<String, RequestPhase> eldest) {
                    return size() > memory && eldest.getValue().terminal();
                }
            };
            Map<String, NodeState.Req> reqs = new java.util.HashMap<>();
            for (int op = 0; op < 300; op++) {
                String rid = "r" + rnd.nextInt(30);
                RequestPhase p = PHASES[rnd.nextInt(PHASES.length)];
                if (rnd.nextInt(12) == 0) {
                    // a rename at finish removes the old id's entry (SchedulerSide.renamedAtFinish)
                    assertThat(t.remove(rid)).isEqualTo(m.remove(rid));
                } else if (rnd.nextInt(3) == 0) {
                    // admission: a new request object, as SchedulerSide.admitted does
                    NodeState.Req r = new NodeState.Req(rid, 1, 1, null, 0);
                    if (rnd.nextBoolean()) {
                        // in one index traversal (PhaseTable.admit)
                        assertThat(t.admit(r, p)).isEqualTo(m.get(rid));
                    } else {
                        PhaseTable.Cell existing = t.cell(rid);
                        assertThat(existing == null ? null : existing.getValue()).isEqualTo(m.get(rid));
                        r.phaseCell = t.put(rid, p, existing);
                    }
                    assertThat(r.phaseCell.attached).isTrue();
                    m.put(rid, p);
                    reqs.put(rid + "#" + op, r);
                } else if (!reqs.isEmpty() && rnd.nextBoolean()) {
                    // a phase change of any request object seen so far (stale ones included)
                    List<NodeState.Req> all = List.copyOf(reqs.values());
                    NodeState.Req r = all.get(rnd.nextInt(all.size()));
                    t.set(r, p);
                    m.put(r.requestId, p);
                } else {
                    assertThat(t.put(rid, p)).isEqualTo(m.put(rid, p));
                }
                assertThat(t.toString()).isEqualTo(m.toString());
                assertThat(t.size()).isEqualTo(m.size());
                assertThat(t.get(rid)).isEqualTo(m.get(rid));
                assertThat(t).isEqualTo(m);
            }
        }
    }
}
