package io.kvledger.core.node;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.effect.Effect;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@code SAFE} of update_connector_output ({@link SchedulerSide.Surfacing}) against the
 * {@code LinkedHashMap} it replaced: the same putIfAbsent calls give the same ids, reasons and
 * order, below and above the size where the array search hands over to a map.
 */
class SurfacingTest {

    @Test
    void behaves_as_a_linked_hash_map_with_put_if_absent() {
        Random rnd = new Random(11);
        Effect.SurfaceReason[] reasons = Effect.SurfaceReason.values();
        for (int round = 0; round < 400; round++) {
            SchedulerSide.Surfacing s = new SchedulerSide.Surfacing();
            LinkedHashMap<String, Effect.SurfaceReason> m = new LinkedHashMap<>();
            int ids = 1 + rnd.nextInt(round % 2 == 0 ? 6 : 40);
            int ops = rnd.nextInt(60);
            for (int op = 0; op < ops; op++) {
                String rid = rnd.nextInt(20) == 0 ? null : new String("req-" + rnd.nextInt(ids));
                Effect.SurfaceReason reason = reasons[rnd.nextInt(reasons.length)];
                s.putIfAbsent(rid, reason);
                m.putIfAbsent(rid, reason);
                assertThat(s.size()).isEqualTo(m.size());
                String probe = "req-" + rnd.nextInt(ids + 2);
                assertThat(s.get(probe)).isEqualTo(m.get(probe));
            }
            List<String> order = new ArrayList<>();
            for (int k = 0; k < s.size(); k++) {
                order.add(s.rid(k));
                assertThat(s.reason(k)).isEqualTo(m.get(s.rid(k)));
            }
            assertThat(order).isEqualTo(new ArrayList<>(m.keySet()));
            for (Map.Entry<String, Effect.SurfaceReason> e : m.entrySet()) {
                assertThat(s.get(e.getKey())).isEqualTo(e.getValue());
            }
        }
    }
}
