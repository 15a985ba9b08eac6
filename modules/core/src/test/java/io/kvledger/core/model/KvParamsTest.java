package io.kvledger.core.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * KvParams keeps its entries in arrays; this checks it against the insertion-ordered map it
 * replaced, operation by operation (put, setdefault, get, copy on write, equality, hash, text).
 */
class KvParamsTest {

    private static final String[] KEYS = {"transfer_id", "do_remote_decode", "do_remote_prefill", "remote_block_ids",
        "remote_engine_id", "remote_host", "remote_dp_size", "tp_size", "a", "b", "c", "d", "e", "f", "g", "h", "i"};

    @Test
    void behaves_as_a_linked_hash_map() {
        Random rnd = new Random(7);
        for (int round = 0; round < 2_000; round++) {
            KvParams p = KvParams.empty();
            LinkedHashMap<String, Object> m = new LinkedHashMap<>();
            KvParams copy = null;
            LinkedHashMap<String, Object> copyModel = null;
            for (int op = 0; op < 40; op++) {
                String k = rnd.nextInt(10) == 0 ? new String(KEYS[rnd.nextInt(KEYS.length)]) : KEYS[rnd.nextInt(KEYS.length)];
                Object v = switch (rnd.nextInt(5)) {
                    case 0 -> null;
                    case 1 -> (long) rnd.nextInt(3);
                    case 2 -> rnd.nextBoolean();
                    case 3 -> "s" + rnd.nextInt(3);
                    default -> List.of(1L, 2L);
                };
                switch (rnd.nextInt(4)) {
                    case 0 -> {
                        p.put(k, v);
                        m.put(k, v);
                    }
                    case 1 -> {
                        p.setDefault(k, v);
                        if (!m.containsKey(k)) {
                            m.put(k, v);
                        }
                    }
                    case 2 -> {
                        copy = p.copy();
                        copyModel = new LinkedHashMap<>(m);
                    }
                    default -> {
                        if (copy != null) {
                            copy.put(k, v);
                            copyModel.put(k, v);
                        }
                    }
                }
                assertThat(p.get(k)).isEqualTo(m.get(k));
                assertThat(p.has(k)).isEqualTo(m.containsKey(k));
                assertThat(p.getOr(k, "dflt")).isEqualTo(m.containsKey(k) ? m.get(k) : "dflt");
                assertThat(p.size()).isEqualTo(m.size());
                assertThat(p.toString()).isEqualTo(m.toString());
                assertThat(List.copyOf(p.asMap().keySet())).isEqualTo(List.copyOf(m.keySet()));
                assertThat(p.asMap()).isEqualTo(m);
                assertThat(p.hashCode()).isEqualTo(m.hashCode());
                assertThat(p).isEqualTo(KvParams.of(m));
                if (copy != null) {
                    assertThat(copy.toString()).isEqualTo(copyModel.toString());
                    assertThat(copy.asMap()).isEqualTo(copyModel);
                    for (String key : KEYS) {
                        // present and absent keys, after changes on either side of the copy
                        assertThat(copy.has(key)).isEqualTo(copyModel.containsKey(key));
                        assertThat(p.has(new String(key))).isEqualTo(m.containsKey(key));
                    }
                }
            }
        }
    }

    @Test
    void equality_ignores_order_as_maps_do() {
        KvParams a = KvParams.of("x", 1, "y", 2);
        KvParams b = KvParams.of("y", 2, "x", 1);
        assertThat(a).isEqualTo(b).hasSameHashCodeAs(b);
        assertThat(a.toString()).isEqualTo("{x=1, y=2}");
        assertThat(KvParams.of(Map.of()).isEmpty()).isTrue();
    }

    @Test
    void of_distinct_keys_is_the_puts_in_turn_and_never_writes_the_shared_keys() {
        String[] keys = {"do_remote_prefill", "remote_block_ids", "remote_dp_rank", "transfer_id"};
        String[] before = keys.clone();
        Random rnd = new Random(5);
        for (int round = 0; round < 200; round++) {
            Object[] values = {rnd.nextBoolean(), List.of((long) rnd.nextInt(9)), rnd.nextBoolean() ? (Object) rnd.nextInt(4)
                : (Object) (long) rnd.nextInt(4), "tx-" + round};
            KvParams fast = KvParams.ofDistinct(keys, values.clone());
            KvParams slow = KvParams.withCapacity(keys.length);
            LinkedHashMap<String, Object> map = new LinkedHashMap<>();
            for (int i = 0; i < keys.length; i++) {
                slow.put(keys[i], values[i]);
                map.put(keys[i], values[i] instanceof Integer n ? Long.valueOf(n) : values[i]);
            }
            assertThat(fast).isEqualTo(slow).hasSameHashCodeAs(slow);
            assertThat(fast.toString()).isEqualTo(slow.toString()).isEqualTo(map.toString());
            assertThat(fast.get(keys[2])).isInstanceOf(Long.class).isEqualTo(slow.get(keys[2]));
            KvParams other = KvParams.ofDistinct(keys, values.clone());
            KvParams copy = fast.copy();
            // changes of either side, of present and new keys, leave the other and the shared keys alone
            String k = rnd.nextBoolean() ? keys[rnd.nextInt(keys.length)] : "k" + rnd.nextInt(3);
            fast.put(k, "changed");
            map.put(k, "changed");
            fast.setDefault("extra", 1L);
            map.putIfAbsent("extra", 1L);
            assertThat(fast.toString()).isEqualTo(map.toString());
            assertThat(copy).isEqualTo(other).isEqualTo(slow);
            copy.put(keys[0], "copy");
            assertThat(other).isEqualTo(slow);
            assertThat(keys).isEqualTo(before);
        }
    }
}
