package io.kvledger.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.diagnosis.Bounds;
import io.kvledger.core.diagnosis.Finding;
import io.kvledger.core.diagnosis.HangDetectors;
import io.kvledger.core.diagnosis.Ledger;
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
