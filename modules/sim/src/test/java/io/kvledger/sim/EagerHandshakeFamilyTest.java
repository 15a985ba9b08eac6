package io.kvledger.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.TransferMode;
import io.kvledger.ledger.diagnosis.Bounds;
import io.kvledger.ledger.diagnosis.Finding;
import io.kvledger.ledger.diagnosis.HangDetectors;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Class 37 (the READ eager handshake is not pod-aware) on simulated families: a multi-pod READ
 * deployment ({@link SimOptions#multiPod()}: each prefill DP rank a pod on a host of its own,
 * {@code remote_dp_size_local} 1 in the decode legs) under the newest profile, whose decode joins
 * its eager handshakes without a deadline ({@link SimOptions#unboundedEagerHandshake()}). The
 * handshake for the first global DP rank on another pod dials the single {@code remote_host} at that
 * rank's global port offset, where nothing listens, so the decode engine stops in the first step
 * that reads. Over 1P1D to 3P2D, prefill DP 2 to 4 on pods of 1 or 2 ranks, decode TP 1 and 2,
 * decode DP 2. The damage is read off the journal, not from the detector: every decode request left
 * in a non-terminal phase and every prefill request reaped; each must be named class 37, and nothing
 * else may be named. The clean family is the same deployment whose instances are one pod each
 * (prefill DP 1 to 3, the decode legs still carrying the pod layout): no finding at all.
 */
class EagerHandshakeFamilyTest {

    /** {@code podRanks}: DP ranks per prefill pod ({@code remote_dp_size_local}). */
    record Shape(int prefill, int decode, int prefillDp, int decodeTp, int decodeDp, int podRanks) {}

    static final List<Shape> DAMAGED = List.of(new Shape(1, 1, 2, 1, 1, 1), new Shape(2, 3, 2, 1, 1, 1),
            new Shape(3, 2, 3, 1, 1, 1), new Shape(2, 2, 2, 2, 1, 1), new Shape(2, 1, 2, 1, 2, 1), new Shape(1, 2, 4, 1, 1, 2),
            new Shape(2, 2, 3, 1, 1, 2));

    /** Every eager handshake dials a rank of the pod remote_host names: one pod per instance. */
    static final List<Shape> CLEAN = List.of(new Shape(1, 1, 1, 1, 1, 1), new Shape(2, 3, 1, 1, 1, 1),
            new Shape(3, 2, 1, 2, 1, 1), new Shape(2, 1, 1, 1, 2, 1), new Shape(1, 2, 2, 1, 1, 2), new Shape(2, 2, 2, 2, 1, 2),
            new Shape(2, 1, 3, 1, 1, 3));

    static PartialCompletionsFamilyTest.Damage run(Shape s, long seed, Behaviour b, SimStats[] stats) {
        PartialCompletionsFamilyTest.Damage d = new PartialCompletionsFamilyTest.Damage();
        SimulationResult r = Simulation.run(SimOptions.builder(seed, TransferMode.READ).requests(30).nodes(s.prefill(), s.decode())
                .tp(1, s.decodeTp()).prefillDp(s.prefillDp()).decodeDp(s.decodeDp()).multiPod(true).prefillPodRanks(s.podRanks())
                .behaviour(b)
                .keepLog(false).build(), d);
        stats[0] = r.stats();
        return d;
    }

    @Test
    void every_request_a_stopped_eager_handshake_damaged_is_named_class_37_and_nothing_else_is() {
        int damagedTotal = 0;
        int reapedTotal = 0;
        List<String> problems = new ArrayList<>();
        SimStats[] stats = new SimStats[1];
        for (Shape s : DAMAGED) {
            for (long seed = 700; seed < 703; seed++) {
                PartialCompletionsFamilyTest.Damage d = run(s, seed, Behaviour.newest(), stats);
                String what = s + " seed " + seed;
                assertThat(stats[0].handshakesFailed()).as(what + ": the join has no deadline").isZero();
                List<Finding> findings = HangDetectors.run(d.ledger, Bounds.defaults());
                Set<String> damaged = d.damaged();
                damagedTotal += damaged.size();
                reapedTotal += d.reaped.size();
                if (damaged.isEmpty()) {
                    problems.add(what + ": no damage (the shape no longer stops the decode)");
                }
                for (String key : damaged) {
                    if (findings.stream().noneMatch(f -> f.bugClass() == 37 && f.detector().equals("eager-handshake-wrong-pod")
                            && key.equals(f.node() + "|" + f.requestId()))) {
                        problems.add(what + ": damaged " + key + " not named class 37: " + findings.stream()
                                .filter(f -> key.equals(f.node() + "|" + f.requestId())).toList());
                    }
                }
                for (Finding f : findings) {
                    if (f.requestId() == null) {
                        problems.add(what + ": a finding without a request: " + f);
                    } else if (!damaged.contains(f.node() + "|" + f.requestId())) {
                        problems.add(what + ": finding on a request the fault did not damage: " + f);
                    } else if (f.bugClass() != 37) {
                        problems.add(what + ": a damaged request named with class " + f.bugClass() + ": " + f);
                    }
                }
            }
        }
        assertThat(problems).isEmpty();
        assertThat(damagedTotal).as("damaged requests").isGreaterThan(100);
        assertThat(reapedTotal).as("prefills reaped").isGreaterThan(50);
    }

    @Test
    void a_multi_pod_read_deployment_of_one_pod_per_instance_gives_no_finding() {
        SimStats[] stats = new SimStats[1];
        for (Shape s : CLEAN) {
            for (long seed = 700; seed < 703; seed++) {
                PartialCompletionsFamilyTest.Damage d = run(s, seed, Behaviour.newest(), stats);
                String what = s + " seed " + seed;
                assertThat(d.damaged()).as(what).isEmpty();
                assertThat(stats[0].decodeCompleted()).as(what).isEqualTo(30);
                assertThat(HangDetectors.run(d.ledger, Bounds.defaults())).as(what).isEmpty();
            }
        }
    }

    @Test
    void under_a_profile_without_the_unbounded_join_the_unanswered_handshake_fails() {
        SimStats[] stats = new SimStats[1];
        run(new Shape(1, 1, 2, 1, 1, 1), 700, Behaviour.seed(), stats);
        assertThat(stats[0].handshakesFailed()).as("failed at transfer_timeout, the step going on").isPositive();
    }
}
