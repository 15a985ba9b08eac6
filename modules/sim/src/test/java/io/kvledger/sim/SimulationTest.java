package io.kvledger.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.RequestPhase;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Whole-cluster runs. Every assertion names the seed, so a failure can be rerun from it. */
class SimulationTest {

    private static final String DEMO_FAULTS = "drop=0.01,dup=0.01,delay=0.02,reorder=0.01,fail=0.005,stall=0.002,abort=0.01";

    private static SimulationResult run(long seed, TransferMode mode, int requests, String faults) {
        return Simulation.run(SimOptions.builder(seed, mode).requests(requests).faults(faults).build());
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void same_seed_twice_gives_identical_hashes_anomalies_and_logs(TransferMode mode) {
        long seed = 1234;
        SimulationResult a = run(seed, mode, 80, DEMO_FAULTS);
        SimulationResult b = run(seed, mode, 80, DEMO_FAULTS);
        assertThat(b.stateHashes()).as("seed %d %s: state hashes", seed, mode).isEqualTo(a.stateHashes());
        assertThat(b.anomalies()).as("seed %d %s: anomalies", seed, mode).isEqualTo(a.anomalies());
        assertThat(b.stats()).as("seed %d %s: counters", seed, mode).isEqualTo(a.stats());
        for (int i = 0; i < a.nodes().size(); i++) {
            NodeReport x = a.nodes().get(i);
            NodeReport y = b.nodes().get(i);
            assertThat(y.phaseCounts()).as("seed %d %s %s: phases", seed, mode, x.name()).isEqualTo(x.phaseCounts());
            assertThat(y.log()).as("seed %d %s %s: log length", seed, mode, x.name()).hasSameSizeAs(x.log());
            for (int j = 0; j < x.log().size(); j++) {
                assertThat(y.log().get(j).event().toString())
                        .as("seed %d %s %s: event %d", seed, mode, x.name(), j)
                        .isEqualTo(x.log().get(j).event().toString());
            }
        }
    }

    @Test
    void different_seeds_give_different_runs() {
        SimulationResult a = run(1, TransferMode.WRITE, 30, "none");
        SimulationResult b = run(2, TransferMode.WRITE, 30, "none");
        assertThat(b.stateHashes()).as("seeds 1 and 2").isNotEqualTo(a.stateHashes());
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void fault_free_run_ends_with_every_request_terminal_on_both_nodes(TransferMode mode) {
        for (long seed : new long[] {42, 7, 99}) {
            SimulationResult r = run(seed, mode, 50, "none");
            assertThat(r.stats().stoppedBy()).as("seed %d %s", seed, mode).isEqualTo(SimStats.StopReason.ALL_TERMINAL);
            assertThat(r.stats().decodeCompleted()).as("seed %d %s: decodes completed", seed, mode).isEqualTo(50);
            for (NodeReport n : r.nodes()) {
                assertThat(n.requests()).as("seed %d %s %s: requests seen", seed, mode, n.name()).isEqualTo(50);
                assertThat(n.hungRequests()).as("seed %d %s %s: hung", seed, mode, n.name()).isEmpty();
                assertThat(n.blocksInUse()).as("seed %d %s %s: blocks still held", seed, mode, n.name()).isZero();
            }
            assertThat(r.anomalies(AnomalyKind.Severity.HANG_RISK)).as("seed %d %s: HANG_RISK anomalies", seed, mode)
                    .isEmpty();
            assertThat(r.anomalies(AnomalyKind.Severity.WOULD_RAISE)).as("seed %d %s: WOULD_RAISE anomalies", seed, mode)
                    .isEmpty();
            assertThat(r.stats().unexpectedFrees() + r.stats().unexpectedRecvs())
                    .as("seed %d %s: engine saw frees or receives it did not expect", seed, mode).isZero();
            assertThat(r.node("P0").phaseCounts()).as("seed %d %s: P0 phases", seed, mode)
                    .containsOnlyKeys(RequestPhase.FREED_AFTER_ACK);
            assertThat(r.node("D0").phaseCounts()).as("seed %d %s: D0 phases", seed, mode)
                    .containsOnlyKeys(RequestPhase.FINISHED);
        }
    }

    @ParameterizedTest
    @ValueSource(longs = {42, 5, 77})
    void dropped_releases_show_a_reaped_deferral_on_prefill(long seed) {
        SimulationResult r = run(seed, TransferMode.READ, 40, "drop=0.3");
        assertThat(r.stats().framesDropped()).as("seed %d: frames dropped", seed).isPositive();
        List<AnomalyRecord> reaped = r.anomalies(AnomalyKind.DEFERRAL_REAPED);
        assertThat(reaped).as("seed %d: DEFERRAL_REAPED", seed).isNotEmpty()
                .allSatisfy(a -> {
                    assertThat(a.node()).as("seed %d", seed).isEqualTo("P0");
                    assertThat(a.requestId()).as("seed %d", seed).startsWith("cmpl-___prefill_addr_");
                    assertThat(a.atNs()).as("seed %d", seed).isGreaterThanOrEqualTo(r.options().deferTimeoutNs());
                });
        assertThat(r.node("P0").phaseCounts().get(RequestPhase.REAPED)).as("seed %d", seed).isEqualTo(reaped.size());
        assertThat(r.requestsHung()).as("seed %d: hung after reaping", seed).isZero();
    }

    @ParameterizedTest
    @ValueSource(longs = {42, 5, 77})
    void releases_that_never_leave_the_decode_are_anomalies_there_and_reaps_on_prefill(long seed) {
        SimulationResult r = run(seed, TransferMode.READ, 40, "send-fail=0.3");
        assertThat(r.stats().framesSendFailed()).as("seed %d: sends failed", seed).isPositive();
        assertThat(r.stats().framesDropped()).as("seed %d", seed).isZero();
        List<AnomalyRecord> failed = r.anomalies(AnomalyKind.NOTIFY_SEND_FAILED);
        assertThat(failed).as("seed %d: NOTIFY_SEND_FAILED", seed).hasSize((int) r.stats().framesSendFailed())
                .allSatisfy(a -> {
                    assertThat(a.node()).as("seed %d", seed).isEqualTo("D0");
                    assertThat(a.transferId()).as("seed %d", seed).isNotNull();
                    assertThat(a.detail()).as("seed %d", seed).startsWith("release to tcp://");
                });
        assertThat(r.anomalies(AnomalyKind.DEFERRAL_REAPED)).as("seed %d: P0 reaps what it never heard of", seed)
                .hasSize(failed.size());
    }

    @Test
    void a_run_without_the_send_fail_fault_is_the_run_it_was_before() {
        SimulationResult off = run(42, TransferMode.WRITE, 40, "drop=0.1,dup=0.1");
        SimulationResult zero = run(42, TransferMode.WRITE, 40, "drop=0.1,dup=0.1,send-fail=0");
        assertThat(zero.stats()).isEqualTo(off.stats());
        assertThat(zero.anomalies(AnomalyKind.NOTIFY_SEND_FAILED)).isEmpty();
    }

    @Test
    void several_nodes_per_side_route_by_host_and_port() {
        long seed = 11;
        for (TransferMode mode : TransferMode.values()) {
            SimulationResult r = Simulation.run(SimOptions.builder(seed, mode).requests(40).nodes(2, 3).build());
            assertThat(r.nodes()).extracting(NodeReport::name).containsExactly("P0", "P1", "D0", "D1", "D2");
            assertThat(r.stats().framesLost()).as("seed %d %s", seed, mode).isZero();
            assertThat(r.requestsHung()).as("seed %d %s", seed, mode).isZero();
            assertThat(r.node("P0").requests() + r.node("P1").requests()).isEqualTo(40);
            assertThat(r.node("D2").requests()).as("seed %d %s: round robin", seed, mode).isEqualTo(13);
        }
    }

    @Test
    void the_recorder_sees_exactly_the_logged_events_in_order() {
        long seed = 3;
        List<String> seen = new ArrayList<>();
        List<String> started = new ArrayList<>();
        Recorder recorder = new Recorder() {
            @Override
            public void nodeStarted(String node, io.kvledger.core.config.NodeConfig config, List<Effect> effects) {
                started.add(node + ":" + config.role());
            }

            @Override
            public void applied(String node, long seq, NodeEvent event, List<Effect> effects) {
                if (node.equals("D0")) {
                    seen.add(seq + " " + event);
                }
            }
        };
        SimulationResult r = Simulation.run(SimOptions.builder(seed, TransferMode.READ).requests(10).build(), recorder);
        assertThat(started).containsExactly("P0:PRODUCER", "D0:CONSUMER");
        List<String> logged = new ArrayList<>();
        for (AppliedEvent e : r.node("D0").log()) {
            logged.add(e.seq() + " " + e.event());
        }
        assertThat(seen).as("seed %d", seed).isEqualTo(logged);
        assertThat(r.node("D0").eventsApplied()).isEqualTo(logged.size());
    }

    @Test
    void events_reach_each_reducer_in_time_order() {
        long seed = 8;
        SimulationResult r = run(seed, TransferMode.WRITE, 60, DEMO_FAULTS);
        for (NodeReport n : r.nodes()) {
            long last = 0;
            for (AppliedEvent e : n.log()) {
                assertThat(e.event().atNs()).as("seed %d %s event %d", seed, n.name(), e.seq()).isGreaterThanOrEqualTo(last);
                last = e.event().atNs();
            }
        }
    }

    @Test
    void connector_output_first_order_parks_acks_but_still_completes() {
        long seed = 42;
        SimulationResult r = Simulation.run(SimOptions.builder(seed, TransferMode.WRITE).requests(50)
                .connectorOutputFirst(true).build());
        assertThat(r.requestsHung()).as("seed %d", seed).isZero();
        assertThat(r.anomalies(AnomalyKind.EARLY_ACK_PARKED)).as("seed %d", seed).isNotEmpty();
        assertThat(r.anomalies(AnomalyKind.Severity.HANG_RISK)).as("seed %d", seed).isEmpty();
    }

    @Test
    void aborts_hit_both_legs_some_before_allocation() {
        long seed = 21;
        SimulationResult r = Simulation.run(SimOptions.builder(seed, TransferMode.READ).requests(100)
                .faults("abort=0.4").abortWindowNs(0).build());
        assertThat(r.stats().abortsInjected()).as("seed %d", seed).isPositive();
        assertThat(r.stats().decodeNotDispatched()).as("seed %d: aborted prefills stop the proxy", seed).isPositive();
        assertThat(r.node("D0").phaseCounts()).as("seed %d", seed).containsKey(RequestPhase.ABORTED_BEFORE_ALLOC);
        assertThat(r.requestsHung()).as("seed %d", seed).isZero();
    }

    @Test
    void the_time_limit_stops_a_run_with_stranded_requests_after_the_reap_window() {
        long seed = 4;
        // Every handshake fails: WRITE prefill never writes, decode waits for write_done forever.
        SimulationResult r = Simulation.run(SimOptions.builder(seed, TransferMode.WRITE).requests(10)
                .faults("handshake-fail=1").timeLimitNs(5_000_000_000L).deferTimeoutNs(2_000_000_000L).build());
        assertThat(r.stats().stoppedBy()).as("seed %d", seed).isEqualTo(SimStats.StopReason.TIME_LIMIT);
        assertThat(r.stats().endNs()).as("seed %d", seed).isEqualTo(5_000_000_000L + 2_000_000_000L + 1_000_000_000L);
        assertThat(r.anomalies(AnomalyKind.HANDSHAKE_FAILED)).as("seed %d", seed).isNotEmpty();
        assertThat(r.node("D0").hungRequests()).as("seed %d", seed).hasSize(10)
                .allSatisfy(h -> assertThat(h.phase()).isEqualTo(RequestPhase.WAITING_FOR_REMOTE_KVS));
        assertThat(r.node("P0").hung()).as("seed %d: prefill reaped", seed).isZero();
    }
}
