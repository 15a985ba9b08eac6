package io.kvledger.core.node.worker;

import static io.kvledger.core.node.worker.WorkerFixtures.S;
import static io.kvledger.core.node.worker.WorkerFixtures.anomalies;
import static io.kvledger.core.node.worker.WorkerFixtures.anomalyKinds;
import static io.kvledger.core.node.worker.WorkerFixtures.finishedReport;
import static io.kvledger.core.node.worker.WorkerFixtures.producer;
import static io.kvledger.core.node.worker.WorkerFixtures.proxyRid;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.Switch;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.node.worker.WorkerFixtures.Node;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The producer worker's ACK handling (protocol 5.2 step 5, 5.7, 3.3.3, 3.3.4 and the N+t cases
 * of 8.4): fan-in counting for heterogeneous TP, duplicates, and ACKs that arrive before the
 * worker's copy of the transfer-id map holds their transfer id.
 */
class ProducerAckTest {

    /** A READ producer at TP rank 0 of {@code tpSize}, newest preset unless given. */
    private static Node readProducer(int tpSize) {
        return Node.of(producer(TransferMode.READ).tp(0, tpSize));
    }

    /** A producer whose worker already holds the mapping of {@code rid -> tid}. */
    private static Node mapped(Node n, String rid, String tid) {
        n.producerRequest(rid, tid, 1, 2);
        n.stepAndLoad();
        return n;
    }

    // ---------------------------------------------------------------- AckCounting

    @Test
    void test_plain_string_ack_is_backward_compatible_single_ack() {
        Node n = mapped(readProducer(1), "rid-plain", "tx-plain");
        n.raw("tx-plain");
        Effect.FinishedReported r = n.pollReport();
        assertThat(r.doneSending()).containsExactly("rid-plain");
        assertThat(r.doneRecving()).isEmpty();
    }

    @Test
    void plain_string_ack_counts_as_consumer_tp_size_1_even_at_producer_tp_4() {
        // A raw completion is MoRIIOTransferAck(id, 1): expected(4, 1) = 1, resolved at once.
        Node n = mapped(readProducer(4), "rid-plain4", "tx-plain4");
        n.raw("tx-plain4");
        assertThat(n.pollReport().doneSending()).containsExactly("rid-plain4");
    }

    @Test
    void test_structured_release_ack_waits_for_all_expected_acks() {
        Node n = mapped(readProducer(4), "rid-wait", "tx-wait");
        n.release("tx-wait", 8);
        assertThat(n.pollReport().doneSending()).as("first of 2 expected ACKs").isEmpty();
        n.release("tx-wait", 8);
        assertThat(n.pollReport().doneSending()).as("second ACK resolves").containsExactly("rid-wait");
    }

    @Test
    void test_worker_get_finished_counts_structured_release_fan_in() {
        Node n = mapped(readProducer(4), "req-fanin", "tx-fanin");
        n.release("tx-fanin", 8);
        Effect.FinishedReported first = n.pollReport();
        assertThat(first.doneSending()).isEmpty();
        assertThat(first.doneRecving()).isEmpty();
        n.release("tx-fanin", 8);
        Effect.FinishedReported second = n.pollReport();
        assertThat(second.doneSending()).containsExactly("req-fanin");
        assertThat(second.doneRecving()).isEmpty();
    }

    @Test
    void two_fan_in_acks_buffered_before_one_get_finished_resolve_once() {
        Node n = mapped(readProducer(4), "rid-both", "tx-both");
        n.release("tx-both", 8);
        n.release("tx-both", 8);
        List<Effect> fx = n.poll();
        assertThat(finishedReport(fx).doneSending()).containsExactly("rid-both");
        assertThat(anomalyKinds(fx)).doesNotContain(AnomalyKind.DUPLICATE_ACK);
    }

    @Test
    void fan_in_of_four_resolves_on_the_fourth_ack_only() {
        Node n = mapped(readProducer(2), "rid-four", "tx-four");
        for (int i = 1; i <= 3; i++) {
            n.release("tx-four", 8);
            assertThat(n.pollReport().doneSending()).as("after ACK %d of 4", i).isEmpty();
        }
        n.release("tx-four", 8);
        assertThat(n.pollReport().doneSending()).containsExactly("rid-four");
    }

    @Test
    void smaller_consumer_tp_needs_a_single_ack() {
        // expected(8, 4) = 1: P8/D4 resolves on one release.
        Node n = mapped(readProducer(8), "rid-small", "tx-small");
        n.release("tx-small", 4);
        assertThat(n.pollReport().doneSending()).containsExactly("rid-small");
    }

    @Test
    void test_duplicate_ack_after_completion_does_not_resolve_twice() {
        Node n = mapped(readProducer(1), "rid-dup", "tx-dup");
        n.release("tx-dup", 1);
        assertThat(n.pollReport().doneSending()).containsExactly("rid-dup");
        n.release("tx-dup", 1);
        List<Effect> fx = n.poll();
        assertThat(finishedReport(fx).doneSending()).isEmpty();
        assertThat(anomalies(fx, AnomalyKind.DUPLICATE_ACK)).hasSize(1)
                .first().extracting(Effect.Anomaly::transferId).isEqualTo("tx-dup");
    }

    @Test
    void duplicate_ack_in_the_same_get_finished_reports_the_request_once() {
        Node n = mapped(readProducer(1), "rid-dup2", "tx-dup2");
        n.release("tx-dup2", 1);
        n.release("tx-dup2", 1);
        List<Effect> fx = n.poll();
        assertThat(finishedReport(fx).doneSending()).containsExactly("rid-dup2");
        assertThat(anomalies(fx, AnomalyKind.DUPLICATE_ACK)).hasSize(1);
    }

    @Test
    void test_ack_for_non_live_transfer_is_ignored() {
        Node n = mapped(readProducer(1), "rid-live", "tx-live");
        n.release("tx-not-live", 1);
        n.release("tx-live", 1);
        Effect.FinishedReported r = n.pollReport();
        assertThat(r.doneSending()).containsExactly("rid-live");
        // The non-live ACK never surfaces, however often get_finished runs.
        for (int i = 0; i < 3; i++) {
            assertThat(n.pollReport().doneSending()).isEmpty();
        }
    }

    @Test
    void release_with_non_multiple_fan_in_reports_ack_fanin_invalid() {
        // get_moriio_expected_ack_count(4, 6) raises ValueError.
        Node n = mapped(readProducer(4), "rid-46", "tx-46");
        n.release("tx-46", 6);
        List<Effect> fx = n.poll();
        assertThat(finishedReport(fx).doneSending()).isEmpty();
        assertThat(anomalies(fx, AnomalyKind.ACK_FANIN_INVALID)).hasSize(1)
                .first().extracting(Effect.Anomaly::transferId).isEqualTo("tx-46");
    }

    @Test
    void release_with_consumer_tp_size_zero_would_kill_the_python_listener() {
        Node n = mapped(readProducer(1), "rid-zero", "tx-zero");
        List<Effect> fx = n.release("tx-zero", 0);
        assertThat(anomalyKinds(fx)).containsExactly(AnomalyKind.RELEASE_INVALID_TP_SIZE,
                AnomalyKind.LISTENER_WOULD_DIE_IN_PYTHON);
        assertThat(n.state.pythonListenerDead()).isTrue();
        assertThat(n.pollReport().doneSending()).as("the invalid release is not counted").isEmpty();
    }

    @Test
    void release_with_negative_consumer_tp_size_is_invalid() {
        Node n = mapped(readProducer(1), "rid-neg", "tx-neg");
        assertThat(anomalyKinds(n.release("tx-neg", -2))).contains(AnomalyKind.RELEASE_INVALID_TP_SIZE);
        assertThat(n.pollReport().doneSending()).isEmpty();
    }

    @Test
    void release_without_consumer_tp_size_counts_as_one() {
        // Absent consumer_tp_size means 1 (3.3.3): expected(2, 1) = 1.
        Node n = mapped(readProducer(2), "rid-none", "tx-none");
        n.release("tx-none", null);
        assertThat(n.pollReport().doneSending()).containsExactly("rid-none");
    }

    @Test
    void release_marks_the_transfer_terminal() {
        Node n = mapped(readProducer(1), "rid-term", "tx-term");
        assertThat(n.state.isTerminal("tx-term")).isFalse();
        n.release("tx-term", 1);
        assertThat(n.state.isTerminal("tx-term")).isTrue();
    }

    // ---------------------------------------------------------------- UnmappedAcks

    @Test
    void ack_before_worker_mapping_is_kept_and_resolved_at_the_next_load_started() {
        Node n = readProducer(1);
        n.producerRequest("rid-early", "tx-early", 1, 2);
        n.release("tx-early", 1);
        List<Effect> first = n.poll();
        assertThat(finishedReport(first).doneSending()).isEmpty();
        assertThat(anomalies(first, AnomalyKind.ACK_BEFORE_WORKER_MAPPING)).hasSize(1);
        assertThat(n.state.pendingUnmappedAckCount()).isEqualTo(1);

        List<Effect> second = n.poll();
        assertThat(finishedReport(second).doneSending()).isEmpty();
        assertThat(anomalies(second, AnomalyKind.ACK_BEFORE_WORKER_MAPPING)).as("reported once").isEmpty();
        assertThat(n.state.pendingUnmappedAckCount()).isEqualTo(1);

        // build_connector_meta alone does not reach the worker: its copy lags one step.
        n.schedule();
        assertThat(n.pollReport().doneSending()).isEmpty();

        n.load();
        assertThat(n.pollReport().doneSending()).containsExactly("rid-early");
        assertThat(n.state.pendingUnmappedAckCount()).isZero();
        assertThat(n.seen(AnomalyKind.ACK_BEFORE_WORKER_MAPPING)).hasSize(1);
    }

    @Test
    void early_fan_in_acks_are_counted_once_the_mapping_arrives() {
        Node n = readProducer(4);
        n.producerRequest("rid-early8", "tx-early8", 1);
        n.release("tx-early8", 8);
        n.poll();
        n.release("tx-early8", 8);
        n.poll();
        assertThat(n.state.pendingUnmappedAckCount()).isEqualTo(2);
        n.stepAndLoad();
        assertThat(n.pollReport().doneSending()).containsExactly("rid-early8");
        assertThat(n.state.pendingUnmappedAckCount()).isZero();
    }

    @Test
    void with_retry_unmapped_acks_off_an_early_ack_is_dropped() {
        Node n = Node.of(producer(TransferMode.READ).behaviour(
                Behaviour.newest().with(Switch.RETRY_UNMAPPED_ACKS, false)));
        n.producerRequest("rid-drop", "tx-drop", 1);
        n.release("tx-drop", 1);
        List<Effect> fx = n.poll();
        assertThat(anomalies(fx, AnomalyKind.ACK_UNMAPPED_DROPPED)).hasSize(1);
        assertThat(anomalies(fx, AnomalyKind.ACK_BEFORE_WORKER_MAPPING)).isEmpty();
        assertThat(n.state.pendingUnmappedAckCount()).isZero();
        n.stepAndLoad();
        assertThat(n.pollReport().doneSending()).as("the ACK is lost").isEmpty();
    }

    @Test
    void with_unmapped_ack_bounds_an_ack_expires_after_the_ttl() {
        Node n = Node.of(producer(TransferMode.READ).unmappedAckBounds(30 * S, 1024)
                .behaviour(Behaviour.newest().with(Switch.UNMAPPED_ACK_BOUNDS, true)));
        n.release("tx-ttl", 1);
        n.poll();
        n.advance(29 * S);
        List<Effect> within = n.poll();
        assertThat(anomalies(within, AnomalyKind.ACK_UNMAPPED_DROPPED)).isEmpty();
        assertThat(n.state.pendingUnmappedAckCount()).isEqualTo(1);
        n.advance(2 * S);
        List<Effect> expired = n.poll();
        assertThat(anomalies(expired, AnomalyKind.ACK_UNMAPPED_DROPPED)).hasSize(1)
                .first().extracting(Effect.Anomaly::transferId).isEqualTo("tx-ttl");
        assertThat(anomalies(expired, AnomalyKind.ACK_UNMAPPED_STUCK)).isEmpty();
        assertThat(n.state.pendingUnmappedAckCount()).isZero();
    }

    @Test
    void with_unmapped_ack_bounds_the_buffer_respects_its_cap() {
        Node n = Node.of(producer(TransferMode.READ).unmappedAckBounds(30 * S, 2)
                .behaviour(Behaviour.newest().with(Switch.UNMAPPED_ACK_BOUNDS, true)));
        n.release("tx-a", 1);
        n.release("tx-b", 1);
        n.release("tx-c", 1);
        List<Effect> fx = n.poll();
        assertThat(n.state.pendingUnmappedAckCount()).isEqualTo(2);
        assertThat(anomalies(fx, AnomalyKind.ACK_UNMAPPED_DROPPED)).hasSize(1)
                .first().extracting(Effect.Anomaly::transferId).isEqualTo("tx-c");
    }

    @Test
    void bounded_early_ack_still_resolves_when_the_mapping_arrives_within_the_ttl() {
        Node n = Node.of(producer(TransferMode.READ).unmappedAckBounds(30 * S, 1024)
                .behaviour(Behaviour.newest().with(Switch.UNMAPPED_ACK_BOUNDS, true)));
        n.producerRequest("rid-bounded", "tx-bounded", 1);
        n.release("tx-bounded", 1);
        n.poll();
        n.advance(10 * S);
        n.stepAndLoad();
        assertThat(n.pollReport().doneSending()).containsExactly("rid-bounded");
    }

    @Test
    void decode_ack_with_its_own_request_id_never_maps_and_is_reported_stuck_once() {
        // seed 002: the decode side acknowledged with its own scheduler request id, which the
        // producer's transfer-id map cannot know.
        Node n = readProducer(1);
        String prefillRid = proxyRid("seed-002") ;
        n.producerRequest(prefillRid, "tx-002", 1, 2);
        n.stepAndLoad();
        String decodeRid = "cmpl-decode-side-0-deadbeef";
        n.raw(decodeRid);
        List<Effect> first = n.poll();
        assertThat(finishedReport(first).doneSending()).isEmpty();
        assertThat(anomalies(first, AnomalyKind.ACK_BEFORE_WORKER_MAPPING)).hasSize(1);

        n.advance(31 * S);
        List<Effect> stuck = n.poll();
        assertThat(anomalies(stuck, AnomalyKind.ACK_UNMAPPED_STUCK)).hasSize(1)
                .first().extracting(Effect.Anomaly::transferId).isEqualTo(decodeRid);
        assertThat(finishedReport(stuck).doneSending()).isEmpty();

        n.advance(31 * S);
        n.stepAndLoad();
        List<Effect> later = n.poll();
        assertThat(anomalies(later, AnomalyKind.ACK_UNMAPPED_STUCK)).as("reported once").isEmpty();
        assertThat(finishedReport(later).doneSending()).doesNotContain(prefillRid);
        assertThat(n.state.pendingUnmappedAckCount()).as("still retried").isEqualTo(1);
        assertThat(n.seen(AnomalyKind.ACK_UNMAPPED_DROPPED)).isEmpty();
    }

    @Test
    void unmapped_ack_within_the_ttl_is_not_reported_stuck() {
        Node n = readProducer(1);
        n.release("tx-young", 1);
        n.poll();
        n.advance(29 * S);
        assertThat(anomalies(n.poll(), AnomalyKind.ACK_UNMAPPED_STUCK)).isEmpty();
    }

    // ---------------------------------------------------------------- Pruning

    @Test
    void load_started_prunes_the_completed_set_to_live_transfer_ids() {
        Node n = mapped(readProducer(1), "rid-a", "tx-reuse");
        n.release("tx-reuse", 1);
        assertThat(n.pollReport().doneSending()).containsExactly("rid-a");
        n.finish("rid-a", FinishStatus.FINISHED_LENGTH_CAPPED, BlockGroups.single(1, 2));
        n.output(List.of("rid-a"), null); // the scheduler frees rid-a and unmaps tx-reuse
        assertThat(n.state.transferIdMap()).doesNotContainKey("tx-reuse");
        n.stepAndLoad(); // the worker's mapping no longer holds tx-reuse: completed entry pruned

        n.producerRequest("rid-b", "tx-reuse", 3, 4);
        n.stepAndLoad();
        n.release("tx-reuse", 1);
        List<Effect> fx = n.poll();
        assertThat(finishedReport(fx).doneSending()).containsExactly("rid-b");
        assertThat(anomalies(fx, AnomalyKind.DUPLICATE_ACK)).isEmpty();
    }

    @Test
    void completed_set_survives_while_the_transfer_id_stays_live() {
        // Pruning keeps live tids: a tid re-mapped before any LoadStarted saw it unmapped
        // still counts as completed, so its next ACK is a duplicate.
        Node n = mapped(readProducer(1), "rid-a", "tx-keep");
        n.release("tx-keep", 1);
        n.pollReport();
        n.finish("rid-a", FinishStatus.FINISHED_LENGTH_CAPPED, BlockGroups.single(1, 2));
        n.output(List.of("rid-a"), null);
        n.producerRequest("rid-b", "tx-keep", 3, 4);
        n.stepAndLoad();
        n.release("tx-keep", 1);
        List<Effect> fx = n.poll();
        assertThat(finishedReport(fx).doneSending()).isEmpty();
        assertThat(anomalies(fx, AnomalyKind.DUPLICATE_ACK)).hasSize(1);
    }

    @Test
    void load_started_prunes_fan_in_counters_to_live_transfer_ids() {
        Node n = mapped(readProducer(4), "rid-a", "tx-count");
        n.release("tx-count", 8);
        assertThat(n.pollReport().doneSending()).isEmpty(); // counter at 1 of 2
        n.finish("rid-a", FinishStatus.FINISHED_LENGTH_CAPPED, BlockGroups.single(1, 2));
        n.advance(61 * S);
        n.output(null, null); // reaped: rid-a unmapped without its second ACK
        assertThat(n.state.transferIdMap()).doesNotContainKey("tx-count");
        n.stepAndLoad(); // counter pruned

        n.producerRequest("rid-b", "tx-count", 3, 4);
        n.stepAndLoad();
        n.release("tx-count", 8);
        assertThat(n.pollReport().doneSending()).as("count restarted at 1 of 2").isEmpty();
        n.release("tx-count", 8);
        assertThat(n.pollReport().doneSending()).containsExactly("rid-b");
    }
}
