package io.kvledger.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.KvParams;
import io.kvledger.ledger.diagnosis.Bounds;
import io.kvledger.ledger.diagnosis.Finding;
import io.kvledger.ledger.diagnosis.HangDetectors;
import io.kvledger.ledger.diagnosis.Ledger;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * Class 30 (toy-proxy DP aliasing) on simulated families: prefill DP 2 to 4, one or two prefill
 * instances, one to three decode instances, READ and WRITE, healthy traffic around the aliased
 * requests (the {@code dp-alias} fault tells a few decode legs another prefill DP rank than the one
 * their prefill leg ran on). Which transfers were aliased is read off the admissions (the decode's
 * {@code remote_dp_rank} against the DP rank of the prefill node that admitted the transfer), not
 * from the detector. The clean family is the same shapes without the fault: no finding at all.
 */
class DpAliasFamilyTest {

    /** Feeds the ledger and notes, per transfer, the prefill's DP rank and the rank the decode was told. */
    static final class Admissions implements Recorder {
        final Ledger ledger = new Ledger();
        final Map<String, NodeConfig> configs = new TreeMap<>();
        final Map<String, Integer> servedBy = new TreeMap<>();
        final Map<String, Integer> told = new TreeMap<>();
        final Map<String, String> prefillRequest = new TreeMap<>();
        final Map<String, String> prefillNode = new TreeMap<>();

        @Override
        public void nodeStarted(String node, NodeConfig config, List<Effect> startupEffects) {
            configs.put(node, config);
            ledger.nodeStarted(node, config, startupEffects);
        }

        @Override
        public void applied(String node, long seq, NodeEvent event, List<Effect> effects) {
            ledger.observe(node, event, effects);
            if (event instanceof NodeEvent.RequestAdmitted a && a.params() != null
                    && a.params().get("transfer_id") instanceof String tid) {
                NodeConfig c = configs.get(node);
                if (c.role() == io.kvledger.core.config.Role.PRODUCER) {
                    if (c.tpRank() == 0) {
                        servedBy.put(tid, c.dpRank());
                        prefillRequest.put(tid, a.requestId());
                        prefillNode.put(tid, node);
                    }
                } else if (KvParams.asLong(a.params().get("remote_dp_rank")) instanceof Long r) {
                    told.put(tid, r.intValue());
                }
            }
        }

        Set<String> aliased() {
            Set<String> out = new TreeSet<>();
            told.forEach((tid, r) -> {
                Integer s = servedBy.get(tid);
                if (s != null && s.intValue() != r.intValue()) {
                    out.add(tid);
                }
            });
            return out;
        }
    }

    record Shape(int prefill, int decode, int dp) {}

    static final List<Shape> SHAPES = List.of(new Shape(1, 1, 2), new Shape(1, 3, 2), new Shape(2, 2, 3), new Shape(2, 3, 4));

    static Admissions run(TransferMode mode, Shape s, long seed, String faults) {
        Admissions a = new Admissions();
        Simulation.run(SimOptions.builder(seed, mode).requests(30).nodes(s.prefill(), s.decode()).prefillDp(s.dp())
                .faults(faults).keepLog(false).build(), a);
        return a;
    }

    @Test
    void every_aliased_transfer_is_named_class_30_on_its_prefill_and_decode_and_nothing_else_is() {
        int aliasedTotal = 0;
        List<String> problems = new ArrayList<>();
        for (TransferMode mode : TransferMode.values()) {
            for (Shape s : SHAPES) {
                for (long seed = 300; seed < 303; seed++) {
                    Admissions a = run(mode, s, seed, "dp-alias=0.15");
                    List<Finding> findings = HangDetectors.run(a.ledger, Bounds.defaults());
                    Set<String> aliased = a.aliased();
                    aliasedTotal += aliased.size();
                    String what = mode + " " + s + " seed " + seed;
                    TransferFamilyCheck.check(what, 30, "aliased", aliased, a.prefillRequest, a.prefillNode, findings, problems);
                }
            }
        }
        assertThat(problems).isEmpty();
        assertThat(aliasedTotal).as("the fault aliased some transfers").isGreaterThan(20);
    }

    @Test
    void the_same_shapes_without_the_fault_give_no_finding() {
        for (TransferMode mode : TransferMode.values()) {
            for (Shape s : SHAPES) {
                for (long seed = 300; seed < 303; seed++) {
                    Admissions a = run(mode, s, seed, "none");
                    assertThat(a.aliased()).isEmpty();
                    assertThat(HangDetectors.run(a.ledger, Bounds.defaults())).as(mode + " " + s + " seed " + seed).isEmpty();
                }
            }
        }
    }
}
