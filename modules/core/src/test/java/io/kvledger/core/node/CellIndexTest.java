package io.kvledger.core.node;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.model.RequestPhase;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The phase table's open-addressing index against the LinkedHashMap it replaced: the same
 * inserts, lookups and removals (by key and by cell) give the same cells, including keys whose
 * hashes collide (probe runs, deletion by backward shift across the wrap of the array) and growth.
 */
class CellIndexTest {

    @Test
    void behaves_as_a_linked_hash_map_of_cells() {
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 64; i++) {
            // "Aa" and "BB" have the same String hash: these 64 keys share one hash
            StringBuilder b = new StringBuilder();
            for (int bit = 0; bit < 6; bit++) {
                b.append((i >> bit & 1) == 0 ? "Aa" : "BB");
            }
            keys.add(b.toString());
        }
        for (int i = 0; i < 300; i++) {
            keys.add("req-" + i);
        }
        keys.add(null);
        Random rnd = new Random(21);
        for (int round = 0; round < 20; round++) {
            CellIndex index = new CellIndex(8);
            LinkedHashMap<String, PhaseTable.Cell> map = new LinkedHashMap<>();
            for (int op = 0; op < 4000; op++) {
                String key = keys.get(rnd.nextInt(rnd.nextBoolean() ? 64 : keys.size()));
                switch (rnd.nextInt(4)) {
                    case 0, 1 -> {
                        PhaseTable.Cell fresh = new PhaseTable.Cell(key, RequestPhase.ADMITTED);
                        PhaseTable.Cell before = map.putIfAbsent(key, fresh);
                        assertThat(index.putIfAbsent(fresh)).isSameAs(before);
                    }
                    case 2 -> assertThat(index.remove(key)).isSameAs(map.remove(key));
                    default -> {
                        PhaseTable.Cell c = map.remove(key);
                        if (c != null) {
                            index.remove(c);
                        }
                    }
                }
                assertThat(index.size()).isEqualTo(map.size());
                if (op % 50 == 0) {
                    for (String k : keys) {
                        assertThat(index.get(k)).isSameAs(map.get(k));
                    }
                }
            }
        }
    }
}
