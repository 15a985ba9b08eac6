package io.kvledger.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.ledger.diagnosis.Bounds;
import io.kvledger.ledger.diagnosis.Finding;
import io.kvledger.ledger.diagnosis.HangDetectors;
import io.kvledger.ledger.diagnosis.Ledger;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * Class 29 (n > 1 siblings share a transfer id) on simulated families: the {@code siblings} fault
 * runs a few prefill legs as two children {@code <index>_<request id>} with the leg's one
 * {@code kv_transfer_params}, among healthy traffic, over prefill and decode instances, TP 1 and
 * 2, prefill DP 1 and 2, READ and WRITE. Every child the run damaged (reaped, or left in a
 * non-terminal phase) is named class 29, and no finding names a request of a transfer no
 * siblings shared. The clean family is the same shapes without the fault: no finding.
 */
class SiblingsFamilyTest {

    /** Feeds the ledger and notes the transfers siblings shared and the requests reaped. */
    static final class Children implements Recorder {
        final Ledger ledger = new Ledger();
        final Set<String> sharedTransfers = new TreeSet<>();
        final Set<String> reaped = new TreeSet<>();
        final java.util.Map<String, String> tidOf = new java.util.TreeMap<>();

        @Override
        public void nodeStarted(String node, NodeConfig config, List<Effect> startupEffects) {
            ledger.nodeStarted(node, config, startupEffects);
        }

        @Override
        public void applied(String node, long seq, NodeEvent event, List<Effect> effects) {
            ledger.observe(node, event, effects);
            if (event instanceof NodeEvent.RequestAdmitted a && a.params() != null
                    && a.params().get("transfer_id") instanceof String tid) {
                tidOf.put(node + "|" + a.requestId(), tid);
                if (a.requestId().matches("\\d+_.+")) {
                    sharedTransfers.add(tid);
                }
            }
            for (Effect e : effects) {
                if (e instanceof Effect.AckSurfaced s && s.reason() == Effect.SurfaceReason.REAPED) {
                    reaped.add(node + "|" + s.requestId());
                }
            }
        }
    }

    record Shape(int prefill, int decode, int prefillTp, int decodeTp, int prefillDp) {}

    static final List<Shape> SHAPES = List.of(new Shape(1, 1, 1, 1, 1), new Shape(2, 3, 1, 1, 1),
            new Shape(1, 2, 2, 2, 1), new Shape(2, 2, 1, 1, 2));

    static Children run(TransferMode mode, Shape s, long seed, String faults, SimulationResult[] result) {
        Children c = new Children();
        result[0] = Simulation.run(SimOptions.builder(seed, mode).requests(30).nodes(s.prefill(), s.decode())
                .tp(s.prefillTp(), s.decodeTp()).prefillDp(s.prefillDp()).faults(faults).keepLog(false).build(), c);
        return c;
    }

    @Test
    void every_damaged_child_is_named_class_29_and_no_other_transfer_is_named() {
        int damagedChildren = 0;
        List<String> problems = new ArrayList<>();
        for (TransferMode mode : TransferMode.values()) {
            for (Shape s : SHAPES) {
                for (long seed = 500; seed < 503; seed++) {
                    SimulationResult[] r = new SimulationResult[1];
                    Children c = run(mode, s, seed, "siblings=0.15", r);
                    List<Finding> findings = HangDetectors.run(c.ledger, Bounds.defaults());
                    String what = mode + " " + s + " seed " + seed;
                    Set<String> damaged = new TreeSet<>(c.reaped);
                    r[0].hungRequests().forEach(h -> damaged.add(h.node() + "|" + h.requestId()));
                    for (String key : damaged) {
                        String rid = key.substring(key.indexOf('|') + 1);
                        if (!rid.matches("\\d+_.+")) {
                            continue;
                        }
                        damagedChildren++;
                        boolean named = findings.stream().anyMatch(f -> f.bugClass() == 29
                                && key.equals(f.node() + "|" + f.requestId()));
                        if (!named) {
                            problems.add(what + ": damaged child " + key + " not named class 29");
                        }
                    }
                    for (Finding f : findings) {
                        if (f.requestId() == null || f.detector().equals("reaped-warning")) {
                            continue;
                        }
                        String tid = f.transferId() != null ? f.transferId() : c.tidOf.get(f.node() + "|" + f.requestId());
                        if (tid == null || !c.sharedTransfers.contains(tid)) {
                            problems.add(what + ": finding on a transfer no siblings shared: " + f);
                        }
                    }
                }
            }
        }
        assertThat(problems).isEmpty();
        assertThat(damagedChildren).as("the fault damaged some children").isGreaterThan(10);
    }

    @Test
    void the_same_shapes_without_the_fault_give_no_finding() {
        for (TransferMode mode : TransferMode.values()) {
            for (Shape s : SHAPES) {
                if (mode == TransferMode.WRITE && s.prefillTp() < s.decodeTp()) {
                    continue;
                }
                SimulationResult[] r = new SimulationResult[1];
                Children c = run(mode, s, 500, "none", r);
                assertThat(c.sharedTransfers).isEmpty();
                assertThat(HangDetectors.run(c.ledger, Bounds.defaults())).as(mode + " " + s).isEmpty();
            }
        }
    }
}
