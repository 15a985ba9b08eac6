package io.kvledger.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.ledger.diagnosis.Bounds;
import io.kvledger.ledger.diagnosis.HangDetectors;
import io.kvledger.ledger.diagnosis.Ledger;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * Decode instances at DP above 1 ({@link SimOptions#decodeDp()}): each DP rank is an engine of its
 * own ({@code D<i>-dp<r>}) on the instance's host, listening on {@code base + dp_rank}. Healthy runs
 * in READ and WRITE, with prefill DP 1 and 2, serve every request on every decode rank, give no
 * finding, and (WRITE) each prefill sends its write_done to the port of the decode rank that asked
 * for the write. DP and TP both above 1 are refused (their listener ports would collide, class 23).
 */
class DecodeDpTest {

    static final class Seen implements Recorder {
        final Ledger ledger = new Ledger();
        final Map<String, NodeConfig> configs = new TreeMap<>();
        final Map<String, Integer> admitted = new TreeMap<>();
        /** WRITE: per transfer, the notify port of the decode rank that admitted it, and the ports its write_dones went to. */
        final Map<String, Integer> decodePort = new TreeMap<>();
        final Map<String, Set<Integer>> writeDonePorts = new TreeMap<>();

        @Override
        public void nodeStarted(String node, NodeConfig config, List<Effect> startupEffects) {
            configs.put(node, config);
            ledger.nodeStarted(node, config, startupEffects);
        }

        @Override
        public void applied(String node, long seq, NodeEvent event, List<Effect> effects) {
            ledger.observe(node, event, effects);
            NodeConfig c = configs.get(node);
            if (event instanceof NodeEvent.RequestAdmitted a) {
                admitted.merge(node, 1, Integer::sum);
                if (c.role() == io.kvledger.core.config.Role.CONSUMER && a.params() != null
                        && a.params().get("transfer_id") instanceof String tid) {
                    decodePort.put(tid, c.notifyPortBase() + c.dpRank());
                }
            }
            for (Effect e : effects) {
                if (e instanceof Effect.SendWriteDone w) {
                    writeDonePorts.computeIfAbsent(w.transferId(), k -> new TreeSet<>()).add(w.port());
                }
            }
        }
    }

    record Shape(int prefill, int decode, int prefillDp, int decodeDp) {}

    static final List<Shape> SHAPES = List.of(new Shape(1, 1, 1, 2), new Shape(2, 3, 1, 2), new Shape(1, 2, 2, 2),
            new Shape(2, 1, 1, 3));

    @Test
    void every_decode_rank_serves_its_requests_and_nothing_is_found() {
        int writeDones = 0;
        for (TransferMode mode : TransferMode.values()) {
            for (Shape s : SHAPES) {
                for (long seed = 600; seed < 602; seed++) {
                    Seen seen = new Seen();
                    SimulationResult r = Simulation.run(SimOptions.builder(seed, mode).requests(24).nodes(s.prefill(), s.decode())
                            .prefillDp(s.prefillDp()).decodeDp(s.decodeDp()).keepLog(false).build(), seen);
                    String what = mode + " " + s + " seed " + seed;
                    assertThat(r.hungRequests()).as(what).isEmpty();
                    assertThat(HangDetectors.run(seen.ledger, Bounds.defaults())).as(what).isEmpty();
                    for (int dp = 1; dp < s.decodeDp(); dp++) {
                        assertThat(seen.admitted.getOrDefault("D0-dp" + dp, 0)).as(what + " D0-dp" + dp + " admitted").isPositive();
                        assertThat(seen.configs.get("D0-dp" + dp).dpRank()).isEqualTo(dp);
                    }
                    if (mode == TransferMode.WRITE) {
                        for (Map.Entry<String, Set<Integer>> e : seen.writeDonePorts.entrySet()) {
                            assertThat(e.getValue()).as(what + " write_done of " + e.getKey())
                                    .containsOnly(seen.decodePort.get(e.getKey()));
                            writeDones++;
                        }
                    }
                }
            }
        }
        assertThat(writeDones).as("write_dones checked").isGreaterThan(100);
    }

    @Test
    void decode_dp_with_decode_tp_above_1_is_refused() {
        assertThatThrownBy(() -> SimOptions.builder(1, TransferMode.READ).decodeDp(2).tp(1, 2).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("decode DP 2 with decode TP 2");
        assertThatThrownBy(() -> SimOptions.builder(1, TransferMode.READ).decodeDp(0).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("decodeDp must be positive");
    }
}
