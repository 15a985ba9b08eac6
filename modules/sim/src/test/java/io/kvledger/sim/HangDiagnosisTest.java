package io.kvledger.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.TransferMode;
import io.kvledger.ledger.diagnosis.Bounds;
import io.kvledger.ledger.diagnosis.Finding;
import io.kvledger.ledger.diagnosis.HangDetectors;
import io.kvledger.ledger.diagnosis.Ledger;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The hang detectors over simulated runs: every hung request is explained, clean runs give nothing. */
class HangDiagnosisTest {

    static final class LedgerRecorder implements Recorder {
        final Ledger ledger = new Ledger();

        @Override
        public void nodeStarted(String node, NodeConfig config, List<Effect> startupEffects) {
            ledger.nodeStarted(node, config, startupEffects);
        }

        @Override
        public void applied(String node, long seq, NodeEvent event, List<Effect> effects) {
            ledger.observe(node, event, effects);
        }
    }

    static List<Finding> diagnose(SimOptions options, SimulationResult[] result) {
        LedgerRecorder rec = new LedgerRecorder();
        result[0] = Simulation.run(options, rec);
        return HangDetectors.run(rec.ledger, Bounds.defaults());
    }

    @Test
    void a_fault_free_run_has_no_findings() {
        for (TransferMode mode : TransferMode.values()) {
            SimulationResult[] r = new SimulationResult[1];
            List<Finding> f = diagnose(SimOptions.builder(7, mode).requests(80).build(), r);
            assertThat(f).as("seed 7 " + mode).isEmpty();
        }
    }

    /** Every mode, both presets and several cluster shapes: a fault-free run is no finding. */
    @Test
    void fault_free_runs_of_every_mode_profile_and_shape_have_no_findings() {
        int[][] shapes = {{1, 1}, {2, 1}, {1, 2}, {2, 3}};
        for (TransferMode mode : TransferMode.values()) {
            for (io.kvledger.core.config.Behaviour b : List.of(io.kvledger.core.config.Behaviour.newest(),
                    io.kvledger.core.config.Behaviour.seed())) {
                for (int[] shape : shapes) {
                    SimulationResult[] r = new SimulationResult[1];
                    List<Finding> f = diagnose(SimOptions.builder(11, mode).requests(40).nodes(shape[0], shape[1])
                            .behaviour(b).build(), r);
                    String what = "seed 11 " + mode + " " + b.profile() + " " + shape[0] + "P" + shape[1] + "D";
                    if (mode == TransferMode.READ && b.profile().equals("seed")) {
                        // The seed stages saves in READ too and only finalises them in WRITE
                        // (seed-vs-newest #15): a chunked READ prompt leaks its pending save. That
                        // is the seed's own leak, found in every such run, and the only finding.
                        f = f.stream().filter(x -> !(x.detector().equals("mapping-leak")
                                && x.message().startsWith("PENDING_SAVE_LEAK"))).toList();
                    }
                    assertThat(f).as(what).isEmpty();
                }
            }
        }
    }

    /**
     * Issue 31's false-alarm target: 160 fault-free seeds, READ and WRITE in turn, over the shapes
     * of {@link DetectorEvaluation} (1P1D to 3P2D, TP 2, prefill DP 2 and 3, decode DP 2; WRITE without fewer prefill than decode TP
     * ranks, which hangs by design): no finding at all.
     */
    @Test
    void one_hundred_sixty_fault_free_seeds_have_no_findings() {
        int runs = 0;
        for (long seed = 0; seed < 160; seed++) {
            TransferMode mode = seed % 2 == 0 ? TransferMode.READ : TransferMode.WRITE;
            DetectorEvaluation.Shape s = DetectorEvaluation.SHAPES.get((int) (seed / 2 % DetectorEvaluation.SHAPES.size()));
            if (mode == TransferMode.WRITE && s.prefillTp() < s.decodeTp()) {
                s = DetectorEvaluation.SHAPES.get(0);
            }
            SimulationResult[] r = new SimulationResult[1];
            List<Finding> f = diagnose(SimOptions.builder(seed, mode).requests(16).nodes(s.prefill(), s.decode())
                    .tp(s.prefillTp(), s.decodeTp()).prefillDp(s.prefillDp()).decodeDp(s.decodeDp()).keepLog(false).build(), r);
            assertThat(f).as("seed " + seed + " " + mode + " " + s).isEmpty();
            assertThat(r[0].hungRequests()).as("seed " + seed + " " + mode + " " + s).isEmpty();
            runs++;
        }
        assertThat(runs).isEqualTo(160);
    }

    @Test
    void every_hung_decode_request_is_explained() {
        SimulationResult[] r = new SimulationResult[1];
        List<Finding> f = diagnose(SimOptions.builder(42, TransferMode.WRITE).requests(300)
                .faults("drop=0.01,dup=0.01,delay=0.02,fail=0.005,abort=0.01").build(), r);
        List<String> hung = r[0].hungRequests().stream().map(HungRequest::requestId).toList();
        assertThat(hung).as("seed 42 has hung requests").isNotEmpty();
        for (String rid : hung) {
            assertThat(f).as("finding for hung " + rid).anyMatch(x -> rid.equals(x.requestId()) && x.detector().equals("stuck-waiting"));
        }
    }
}
