package io.kvledger.core.node;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The worker's copy of the transfer-id map against the LinkedHashMap copy it replaced: for maps
 * of every size around the small limit and of hundreds of mappings (the indexed form), the same
 * lookups, entries, order, text, equality and hash, and later changes of the scheduler's map do
 * not reach the copy.
 */
class MappingSnapshotTest {

    @Test
    void behaves_as_a_linked_hash_map_copy() {
        Random rnd = new Random(8);
        for (int round = 0; round < 400; round++) {
            LinkedHashMap<String, String> live = new LinkedHashMap<>();
            boolean big = round >= 200;
            int keys = big ? 600 : 20;
            int n = rnd.nextInt(big ? 400 : MappingSnapshot.SMALL + 4);
            for (int i = 0; i < n; i++) {
                live.put("tx-" + rnd.nextInt(keys), "req-" + rnd.nextInt(20));
            }
            Map<String, String> copy = new LinkedHashMap<>(live);
            Map<String, String> snap = MappingSnapshot.of(live);
            assertThat(snap.toString()).isEqualTo(copy.toString());
            assertThat(snap).isEqualTo(copy).hasSameHashCodeAs(copy);
            assertThat(snap.size()).isEqualTo(copy.size());
            assertThat(List.copyOf(snap.entrySet())).isEqualTo(List.copyOf(copy.entrySet()));
            for (int i = 0; i < keys + 2; i++) {
                String k = "tx-" + i;
                // equal keys that are other String objects too
                String other = new String(k.toCharArray());
                assertThat(snap.get(k)).isEqualTo(copy.get(k));
                assertThat(snap.get(other)).isEqualTo(copy.get(other));
                assertThat(snap.containsKey(other)).isEqualTo(copy.containsKey(other));
            }
            assertThat(snap.get(null)).isNull();
            assertThat(snap.get(7)).isNull();
            live.put("tx-new", "req-new");
            live.remove(live.keySet().iterator().next());
            assertThat(snap).isEqualTo(copy);
        }
    }

    @Test
    void a_null_key_is_kept_as_the_linked_hash_map_copy_kept_it() {
        LinkedHashMap<String, String> live = new LinkedHashMap<>();
        for (int i = 0; i < 20; i++) {
            live.put("tx-" + i, "req-" + i);
        }
        live.put(null, "req-null");
        Map<String, String> snap = MappingSnapshot.of(live);
        assertThat(snap.get(null)).isEqualTo("req-null");
        assertThat(snap).isEqualTo(new LinkedHashMap<>(live));
        assertThat(snap.toString()).isEqualTo(live.toString());
    }
}
