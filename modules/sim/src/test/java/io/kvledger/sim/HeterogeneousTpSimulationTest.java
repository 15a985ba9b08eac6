package io.kvledger.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.TransferMode;
import io.kvledger.ledger.diagnosis.Finding;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Simulated deployments whose prefill and decode run at different TP sizes (prefill:decode 1:2,
 * 2:1, 1:4, 4:1): every TP rank is a node; TP rank 0's engine hands every hook call to the
 * others and aggregates their get_finished. What each ratio may show follows from the code of
 * every MoRIIO version (README, "What hangs detects"): READ with a decode TP that is a multiple
 * of the prefill's is healthy; the other shapes get class 22 findings only, never class 27.
 */
class HeterogeneousTpSimulationTest {

    @ParameterizedTest(name = "{0} P tp{1} D tp{2}")
    @CsvSource({"READ,1,2", "READ,1,4", "READ,2,1", "READ,4,1", "WRITE,2,1", "WRITE,4,1", "WRITE,1,2", "WRITE,1,4"})
    void each_tp_ratio_runs_and_is_diagnosed_as_its_code_behaves(TransferMode mode, int pTp, int dTp) {
        SimulationResult[] r = new SimulationResult[1];
        List<Finding> f = HangDiagnosisTest.diagnose(SimOptions.builder(5, mode).requests(12).tp(pTp, dTp).build(), r);
        String what = mode + " " + pTp + ":" + dTp + " " + f;
        // every TP rank is a node and journals: P0, P0-tp1, ...
        assertThat(r[0].nodes()).as(what).hasSize(pTp + dTp);
        assertThat(r[0].stats().framesSent()).as(what).isPositive();
        if (mode == TransferMode.READ && dTp >= pTp) {
            assertThat(f).as(what).isEmpty();
            assertThat(r[0].hungRequests()).as(what).isEmpty();
            assertThat(r[0].stats().decodeCompleted()).as(what).isEqualTo(12);
            return;
        }
        assertThat(f).as(what).isNotEmpty();
        // (WRITE P_tp > D_tp: the un-notified ranks' self-ACKs at defer_timeout come in the very call
        // that finds the deferral expired, which the engine logs as "Reaped N deferred sends":
        // reaped-warning, no class, not a leak)
        assertThat(f).as(what).allMatch(x -> x.bugClass() == 22 || x.detector().equals("stuck") && x.bugClass() == 7
                || x.detector().equals("reaped-warning") && x.bugClass() == 0);
        assertThat(f).as(what).noneMatch(x -> x.bugClass() == 27);
        if (pTp > dTp) {
            assertThat(r[0].stats().decodeCompleted()).as(what).isEqualTo(12);
        }
    }
}
