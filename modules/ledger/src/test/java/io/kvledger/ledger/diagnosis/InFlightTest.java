package io.kvledger.ledger.diagnosis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.RequestPhase;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * Requests still in flight when the journal ends: a request that keeps being scheduled is making
 * progress, not stuck, however long ago it was admitted; one that nothing has named for longer
 * than the bound is stuck; a young one is neither; and every one of them is accounted for.
 */
class InFlightTest {

    private static final long S = 1_000_000_000L;

    private static void running(CrossNodeDiagnosisTest.Cluster c, String rid, long at, int block) {
        c.on("D0", new NodeEvent.RequestAdmitted(at, rid, 16, 16, null));
        c.on("D0", new NodeEvent.MatchedTokensQueried(at, rid, 0));
        c.on("D0", new NodeEvent.BlocksAllocated(at, rid, BlockGroups.single(block), 0));
    }

    @Test
    void a_decode_scheduled_every_step_is_progressing_and_a_silent_one_is_stuck() {
        CrossNodeDiagnosisTest.Cluster c = new CrossNodeDiagnosisTest.Cluster();
        c.node("D0", NodeConfig.builder(Role.CONSUMER, TransferMode.READ).hostIp("10.0.1.1").build());
        running(c, "generating", 0, 1);
        running(c, "silent", 0, 2);
        // "generating" is scheduled every second until the end; "silent" never again
        for (long t = 1; t <= 100; t++) {
            c.on("D0", new NodeEvent.StepScheduled(t * S, t, List.of(new NodeEvent.CachedRequest("generating", null))));
            if (t == 90) {
                running(c, "young", t * S, 3);
            }
        }
        Bounds bounds = new Bounds(30 * S);

        List<Finding> findings = HangDetectors.run(c.ledger, bounds);
        assertThat(findings).extracting(Finding::requestId).containsExactly("silent");
        assertThat(findings.get(0).detector()).isEqualTo("stuck");
        assertThat(findings.get(0).message()).contains("for 100.000000 s until the journal ends")
                .endsWith("; D0 scheduled 100 steps meanwhile, the last at t+100.000000 s");

        List<InFlight> all = HangDetectors.inFlight(c.ledger, bounds);
        assertThat(all).extracting(InFlight::requestId).containsExactly("generating", "silent", "young");
        assertThat(all).extracting(InFlight::status).containsExactly(InFlight.Status.PROGRESSING,
                InFlight.Status.STUCK, InFlight.Status.YOUNG);
        assertThat(all).extracting(InFlight::phase).doesNotContainNull().noneMatch(RequestPhase::terminal);
        assertThat(all.get(0).sinceNs()).isZero();
        assertThat(all.get(0).lastEventNs()).isEqualTo(100 * S);
        assertThat(all.get(1).lastEventNs()).isZero();
        assertThat(all.get(2).sinceNs()).isEqualTo(90 * S);

        // a bound shorter than the time since its last step makes the generating decode stuck too
        c.on("D0", new NodeEvent.Tick(100 * S + 9 * S / 10));
        List<Finding> tight = HangDetectors.run(c.ledger, new Bounds(S / 2));
        assertThat(tight).extracting(Finding::requestId).containsExactlyInAnyOrder("silent", "young", "generating");
    }

    /**
     * Whether the engine kept stepping while a request sat in its phase tells a transfer that never
     * came (the engine polls on) from an engine stuck inside a call (it stops stepping).
     */
    @Test
    void a_stuck_request_says_whether_its_engine_stepped_on_or_stopped() {
        CrossNodeDiagnosisTest.Cluster c = new CrossNodeDiagnosisTest.Cluster();
        c.node("D0", NodeConfig.builder(Role.CONSUMER, TransferMode.READ).hostIp("10.0.1.1").build());
        running(c, "before", 0, 1);
        for (long t = 1; t <= 10; t++) {
            c.on("D0", new NodeEvent.StepScheduled(t * S, t, List.of()));
        }
        running(c, "after", 11 * S, 2);
        c.on("D0", new NodeEvent.Tick(100 * S));
        List<Finding> findings = HangDetectors.run(c.ledger, new Bounds(30 * S));
        Map<String, String> byRequest = new TreeMap<>();
        findings.forEach(f -> byRequest.put(f.requestId(), f.message()));
        assertThat(byRequest).containsOnlyKeys("before", "after");
        assertThat(byRequest.get("before")).endsWith("; D0 scheduled 10 steps meanwhile, the last at t+10.000000 s");
        assertThat(byRequest.get("after")).endsWith("; D0 scheduled no step meanwhile (its last at t+10.000000 s)");

        // a journal without steps (a node no engine drives) says nothing of them
        CrossNodeDiagnosisTest.Cluster quiet = new CrossNodeDiagnosisTest.Cluster();
        quiet.node("D0", NodeConfig.builder(Role.CONSUMER, TransferMode.READ).hostIp("10.0.1.1").build());
        running(quiet, "r", 0, 1);
        quiet.on("D0", new NodeEvent.Tick(100 * S));
        assertThat(HangDetectors.run(quiet.ledger, new Bounds(30 * S))).singleElement()
                .satisfies(f -> assertThat(f.message()).doesNotContain("step"));
    }

    @Test
    void a_clean_finish_leaves_nothing_in_flight() {
        CrossNodeDiagnosisTest.Cluster c = new CrossNodeDiagnosisTest.Cluster();
        c.node("D0", NodeConfig.builder(Role.CONSUMER, TransferMode.READ).hostIp("10.0.1.1").build());
        running(c, "r", 0, 1);
        c.on("D0", new NodeEvent.RequestFinished(S, "r", io.kvledger.core.model.FinishStatus.FINISHED_STOPPED,
                BlockGroups.single(1)));
        assertThat(HangDetectors.inFlight(c.ledger, Bounds.defaults())).isEmpty();
        assertThat(HangDetectors.run(c.ledger, Bounds.defaults())).isEmpty();
    }
}
