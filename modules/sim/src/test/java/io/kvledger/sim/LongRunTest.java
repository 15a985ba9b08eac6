package io.kvledger.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.model.RequestPhase;
import org.junit.jupiter.api.Test;

/**
 * Long runs: the simulated engines keep only the requests they still hold (a done request leaves
 * nothing but its counts), and the per-node report counts every request, past the 65,536 finished
 * requests the reducer's own phase table remembers.
 */
class LongRunTest {

    /** A cheap workload: one layer, one-block prompts, one output token, arrivals every 0.5 ms on average. */
    private static SimOptions cheap(long seed, TransferMode mode, int requests) {
        return SimOptions.builder(seed, mode).requests(requests).layers(1).promptTokens(8, 16).decodeTokens(1, 1)
                .meanInterArrivalNs(500_000L).timeLimitNs(NodeConfig.seconds(3_600)).keepLog(false).build();
    }

    @Test
    void a_long_run_retains_a_bounded_number_of_requests_and_counts_all_of_them() {
        long seed = 31;
        int requests = 70_000;
        SimulationResult r = Simulation.run(cheap(seed, TransferMode.READ, requests));
        assertThat(r.stats().stoppedBy()).as("seed %d", seed).isEqualTo(SimStats.StopReason.ALL_TERMINAL);
        for (NodeReport n : r.nodes()) {
            assertThat(n.requests()).as("seed %d %s: requests counted", seed, n.name()).isEqualTo(requests);
            assertThat(n.terminal()).as("seed %d %s: terminal", seed, n.name()).isEqualTo(requests);
            assertThat(n.phaseCounts().values().stream().mapToInt(Integer::intValue).sum())
                    .as("seed %d %s: phase counts", seed, n.name()).isEqualTo(requests);
            assertThat(n.retainedRequests()).as("seed %d %s: requests kept at the end", seed, n.name()).isZero();
            // at most what runs or waits at once, far below the number of requests
            assertThat(n.peakRetained()).as("seed %d %s: most requests kept at once", seed, n.name())
                    .isPositive().isLessThan(500);
        }
        assertThat(r.node("P0").phaseCounts()).as("seed %d", seed)
                .containsExactly(java.util.Map.entry(RequestPhase.FREED_AFTER_ACK, requests));
        assertThat(r.node("D0").phaseCounts()).as("seed %d", seed)
                .containsExactly(java.util.Map.entry(RequestPhase.FINISHED, requests));
    }
}
