package io.kvledger.core.node.properties;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The shrunk counterexamples the reducer properties found, kept as fixed scenarios so each
 * deviation has its own named test (a property shows only its first failure).
 */
class PropertyFindingsTest {

    /** The toy proxy's prefill-leg params (protocol 4.2). */
    private static KvParams prefillLeg(String tid) {
        return KvParams.of("remote_dp_size", 1L, "remote_tp_size", 1L, "transfer_id", tid, "do_remote_decode", true,
                "do_remote_prefill", false, "remote_engine_id", null, "remote_block_ids", null);
    }

    private static String violations(ReducerFixtures.Run run, List<String> v) {
        return String.join("\n", v) + "\n" + run.trace(ReducerFixtures.eventNumbers(v));
    }

    /**
     * (a) The reducer is total (NodeReducer javadoc: "Total: it never throws"; ARCHITECTURE: the
     * reducer is total, a fuzzer proves it). Seed READ recv with remote_block_ids of floats: the
     * flat-shape check accepts any Number but the parser rejects floats, and the null result is
     * dereferenced. Python stages the recv here (seed lines 462-488: with 0 external tokens the
     * local list is [] and nothing indexes the floats).
     */
    @Test
    void read_recv_with_float_remote_block_ids_does_not_throw() {
        NodeConfig c = NodeConfig.builder(Role.CONSUMER, TransferMode.READ).behaviour(Behaviour.seed()).build();
        ReducerFixtures.Run run = new ReducerFixtures.Run(c);
        run.apply(new NodeEvent.RequestAdmitted(0, "r0", 8, 8, KvParams.of("do_remote_prefill", true,
                "remote_block_ids", List.of(1.5, 2.5), "remote_engine_id", "10.0.0.1:6301", "transfer_id", "t0")));
        assertThatCode(() -> run.apply(new NodeEvent.BlocksAllocated(1, "r0", BlockGroups.NONE, 0)))
                .doesNotThrowAnyException();
    }

    /**
     * (f) A request admitted again under a live id: the save staged for the first admission still
     * holds the first request object, and the meta build moves that object PREFILLING ->
     * PENDING_SAVE and writes the rid's phase, while the node's recorded phase for the rid is the
     * new admission's ADMITTED. Expected: every PhaseChanged starts from the phase last recorded
     * for that request id (ARCHITECTURE: "Phase changes go through one transition function that
     * records the reason"; RequestPhase codes are what the journal and CLI show).
     */
    @Test
    void phase_change_after_readmission_starts_from_the_recorded_phase() {
        NodeConfig c = NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).build();
        ReducerFixtures.Run run = new ReducerFixtures.Run(c);
        run.apply(new NodeEvent.RequestAdmitted(0, "r0", 32, 32, prefillLeg("t0")));
        run.apply(new NodeEvent.BlocksAllocated(1, "r0", BlockGroups.single(1), 0));
        run.apply(new NodeEvent.RequestAdmitted(2, "r0", 32, 32, prefillLeg("t0")));
        run.apply(new NodeEvent.StepScheduled(3, 0, List.of()));
        List<String> v = ReducerFixtures.phaseRegressions(run);
        assertThat(v).as(violations(run, v)).isEmpty();
    }

    /**
     * (f) No change after a terminal phase unless re-admitted: a save staged at alloc is still in
     * reqs_need_save when the request finishes (not length-capped: FINISHED, freed); the next
     * meta build moves the freed request FINISHED -> PENDING_SAVE, and phases() keeps showing it
     * pending. (vLLM builds the meta in the same schedule() call as the alloc, so this order needs
     * a finish in between: a hook order the reducer should flag rather than follow.)
     */
    @Test
    void meta_build_does_not_move_a_finished_request_out_of_its_terminal_phase() {
        NodeConfig c = NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).build();
        ReducerFixtures.Run run = new ReducerFixtures.Run(c);
        run.apply(new NodeEvent.RequestAdmitted(0, "r0", 32, 32, prefillLeg("t0")));
        run.apply(new NodeEvent.BlocksAllocated(1, "r0", BlockGroups.single(1), 0));
        run.apply(new NodeEvent.RequestFinished(2, "r0", FinishStatus.FINISHED_STOPPED, BlockGroups.single(1)));
        run.apply(new NodeEvent.StepScheduled(3, 0, List.of()));
        List<String> v = ReducerFixtures.phaseRegressions(run);
        assertThat(v).as(violations(run, v)).isEmpty();
        assertThat(run.state.phaseOf("r0")).isIn(ReducerFixtures.TERMINAL);
    }

    /**
     * (f) A hook after request_finished on a deferred request: an alloc moves DEFERRED_FREE back
     * to PREFILLING with no anomaly (vLLM never schedules a finished request; protocol 5.2 lists
     * DEFERRED_FREE -> {ACKED, REAPED} as the only ways out).
     */
    @Test
    void alloc_after_finish_does_not_move_a_deferred_request_backwards() {
        NodeConfig c = NodeConfig.builder(Role.PRODUCER, TransferMode.READ).build();
        ReducerFixtures.Run run = new ReducerFixtures.Run(c);
        run.apply(new NodeEvent.RequestAdmitted(0, "r0", 16, 16, prefillLeg("t0")));
        run.apply(new NodeEvent.BlocksAllocated(1, "r0", BlockGroups.single(1), 0));
        run.apply(new NodeEvent.RequestFinished(2, "r0", FinishStatus.FINISHED_LENGTH_CAPPED, BlockGroups.single(1)));
        run.apply(new NodeEvent.BlocksAllocated(3, "r0", BlockGroups.single(1), 0));
        List<String> v = ReducerFixtures.phaseRegressions(run);
        assertThat(v).as(violations(run, v)).isEmpty();
    }

    /**
     * (f) A consumer request carrying do_remote_decode (kv_both gives a consumer scheduler, or a
     * misrouted prefill leg): Python stages the save role-agnostically (seed line 454), the reducer
     * moves the RUNNING request back to PENDING_SAVE, a phase the RequestPhase javadoc reserves
     * for "Producer, WRITE", and the finaliser never runs on a consumer, so it stays there.
     */
    @Test
    void consumer_save_staging_does_not_move_a_running_request_backwards() {
        NodeConfig c = NodeConfig.builder(Role.CONSUMER, TransferMode.WRITE).build();
        ReducerFixtures.Run run = new ReducerFixtures.Run(c);
        run.apply(new NodeEvent.RequestAdmitted(0, "r0", 32, 32, prefillLeg("t0")));
        run.apply(new NodeEvent.BlocksAllocated(1, "r0", BlockGroups.single(1), 0));
        run.apply(new NodeEvent.StepScheduled(2, 0, List.of()));
        List<String> v = ReducerFixtures.phaseRegressions(run);
        assertThat(v).as(violations(run, v)).isEmpty();
    }

    /** The decode-leg params a READ consumer gets from the proxy (P's response copied: protocol 4.2). */
    private static KvParams decodeLegRead(String tid, Object remoteBlockIds) {
        return KvParams.of("do_remote_prefill", true, "do_remote_decode", false, "remote_block_ids", remoteBlockIds,
                "remote_engine_id", "10.0.0.1:6301", "remote_host", "10.0.0.1", "remote_handshake_port", "6301",
                "remote_notify_port", "61005", "transfer_id", tid);
    }

    /**
     * (f) Allocation run twice before the receive staged by the first one was read: the second
     * alloc sees do_remote_prefill already cleared and moves the request RECV_STAGED -> RUNNING
     * ("no remote prefill"), and the still-staged receive is then posted, moving it back RUNNING
     * -> READS_IN_FLIGHT on the handshake. Expected: no backward move (the reducer's own contract
     * since 958f241: "phases only move forward"), or an anomaly on the event that makes it.
     */
    @Test
    void staged_receive_posted_after_a_second_alloc_does_not_move_a_running_request_backwards() {
        NodeConfig c = NodeConfig.builder(Role.CONSUMER, TransferMode.READ).build();
        ReducerFixtures.Run run = new ReducerFixtures.Run(c);
        run.apply(new NodeEvent.RequestAdmitted(0, "r0", 40, 40, decodeLegRead("t0", List.of(List.of(1L, 2L, 3L)))));
        run.apply(new NodeEvent.BlocksAllocated(1, "r0", BlockGroups.single(10, 11, 12), 39));
        run.apply(new NodeEvent.BlocksAllocated(2, "r0", BlockGroups.single(10, 11, 12), 39));
        run.apply(new NodeEvent.StepScheduled(3, 0, List.of()));
        run.apply(new NodeEvent.LoadStarted(4));
        run.apply(new NodeEvent.HandshakeCompleted(5, "10.0.0.1:6301_dp0"));
        List<String> v = ReducerFixtures.phaseRegressions(run);
        assertThat(v).as(violations(run, v)).isEmpty();
    }

    /**
     * (f) A producer request carrying both flags (seed READ, which stages saves in both modes:
     * seed-vs-newest #15): the READ recv branch finds no remote_block_ids and puts it RUNNING
     * (READ_INVALID_PARAMS), then the meta build finds the staged save uncovered and moves it
     * back RUNNING -> PENDING_SAVE.
     */
    @Test
    void producer_request_with_both_flags_does_not_move_from_running_back_to_pending_save() {
        NodeConfig c = NodeConfig.builder(Role.PRODUCER, TransferMode.READ).behaviour(Behaviour.seed()).build();
        ReducerFixtures.Run run = new ReducerFixtures.Run(c);
        KvParams both = decodeLegRead("t0", List.of());
        both.put("do_remote_decode", true);
        run.apply(new NodeEvent.RequestAdmitted(0, "r0", 26, 26, both));
        run.apply(new NodeEvent.BlocksAllocated(1, "r0", BlockGroups.single(9), 0));
        run.apply(new NodeEvent.StepScheduled(2, 0, List.of()));
        List<String> v = ReducerFixtures.phaseRegressions(run);
        assertThat(v).as(violations(run, v)).isEmpty();
    }

    /** Keeps the fixture's rendering honest: a run's trace names every event once. */
    @Test
    void trace_renders_every_event() {
        ReducerFixtures.Run run = new ReducerFixtures.Run(NodeConfig.builder(Role.PRODUCER, TransferMode.READ).build());
        run.apply(new NodeEvent.Tick(5));
        run.apply(new NodeEvent.FrameRejected(6, "bad", new byte[] {1, 2}, true));
        assertThat(run.trace(Set.of(1))).contains("#000", "#001", "frame=[1, 2]", "-> ");
    }
}
