package io.kvledger.core.node.worker;

import io.kvledger.core.model.TransferId;
import static io.kvledger.core.node.worker.WorkerFixtures.PREFILL;
import static io.kvledger.core.node.worker.WorkerFixtures.S;
import static io.kvledger.core.node.worker.WorkerFixtures.anomalies;
import static io.kvledger.core.node.worker.WorkerFixtures.anomalyKinds;
import static io.kvledger.core.node.worker.WorkerFixtures.consumer;
import static io.kvledger.core.node.worker.WorkerFixtures.finishedReport;
import static io.kvledger.core.node.worker.WorkerFixtures.only;
import static io.kvledger.core.node.worker.WorkerFixtures.proxyRid;
import static io.kvledger.core.node.worker.WorkerFixtures.writeDecodeParams;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Switch;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.node.worker.WorkerFixtures.Node;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The WRITE consumer worker (protocol 5.4 step 3, 3.3.2, 3.3.4, and bug class 27a): write_done
 * completions mapped to the decode scheduler's request id, retried while unmapped, and the
 * re-park after finished_recving.
 */
class WriteConsumerTest {

    private static NodeConfig.Builder writeConsumer() {
        return consumer(TransferMode.WRITE);
    }

    /** A decode request allocated and waiting for the producer's write_done; the worker may not know it yet. */
    private static Node waiting(Node n, String rid, String tid) {
        n.admit(rid, 32, writeDecodeParams(tid));
        n.match(rid, 0);
        n.alloc(rid, BlockGroups.single(5, 6), 32);
        return n;
    }

    @Test
    void allocation_notifies_the_producer_and_waits_for_remote_kvs() {
        String rid = proxyRid("d0");
        Node n = Node.of(writeConsumer());
        n.admit(rid, 32, writeDecodeParams("tx-d0"));
        assertThat(only(n.match(rid, 0), Effect.MatchedTokens.class))
                .containsExactly(new Effect.MatchedTokens(rid, 32, true));
        List<Effect> fx = n.alloc(rid, BlockGroups.single(5, 6), 32);
        assertThat(only(fx, Effect.SendRemoteBlocks.class)).containsExactly(new Effect.SendRemoteBlocks(
                PREFILL.host(), PREFILL.notifyPort(), rid, TransferId.of("tx-d0"), List.of(5, 6), 0));
        assertThat(n.state.phaseOf(rid)).isEqualTo(RequestPhase.WAITING_FOR_REMOTE_KVS);
    }

    @Test
    void write_done_reports_done_recving_with_the_scheduler_request_id() {
        String rid = proxyRid("d1");
        Node n = waiting(Node.of(writeConsumer()), rid, "tx-d1");
        n.stepAndLoad();
        n.writeDone("tx-d1");
        Effect.FinishedReported r = n.pollReport();
        assertThat(r.doneRecving()).containsExactly(rid);
        assertThat(r.doneSending()).isEmpty();
        assertThat(n.pollReport().doneRecving()).as("reported once").isEmpty();
    }

    @Test
    void raw_completion_string_counts_as_write_done() {
        String rid = proxyRid("d2");
        Node n = waiting(Node.of(writeConsumer()), rid, "tx-d2");
        n.stepAndLoad();
        n.raw("tx-d2");
        assertThat(n.pollReport().doneRecving()).containsExactly(rid);
    }

    @Test
    void duplicate_write_done_in_one_get_finished_reports_the_request_once() {
        String rid = proxyRid("d3");
        Node n = waiting(Node.of(writeConsumer()), rid, "tx-d3");
        n.stepAndLoad();
        n.writeDone("tx-d3");
        n.writeDone("tx-d3");
        assertThat(n.pollReport().doneRecving()).containsExactly(rid);
    }

    @Test
    void write_done_for_an_unmapped_transfer_is_kept_and_resolves_after_the_mapping_arrives() {
        String rid = proxyRid("d4");
        Node n = waiting(Node.of(writeConsumer()), rid, "tx-d4");
        n.writeDone("tx-d4"); // before the worker's first LoadStarted with this mapping
        List<Effect> first = n.poll();
        assertThat(finishedReport(first).doneRecving()).isEmpty();
        assertThat(anomalies(first, AnomalyKind.WRITE_DONE_UNMATCHED)).hasSize(1)
                .first().extracting(Effect.Anomaly::transferId).isEqualTo("tx-d4");
        List<Effect> second = n.poll();
        assertThat(finishedReport(second).doneRecving()).isEmpty();
        assertThat(anomalies(second, AnomalyKind.WRITE_DONE_UNMATCHED)).as("reported once").isEmpty();
        assertThat(n.state.leftovers()).containsEntry("unmatched_write_completions", 1);

        n.stepAndLoad();
        assertThat(n.pollReport().doneRecving()).containsExactly(rid);
        assertThat(n.state.leftovers()).doesNotContainKey("unmatched_write_completions");
        assertThat(n.pollReport().doneRecving()).isEmpty();
    }

    @Test
    void finished_recving_moves_the_request_to_kv_received() {
        String rid = proxyRid("d5");
        Node n = waiting(Node.of(writeConsumer()), rid, "tx-d5");
        n.stepAndLoad();
        n.writeDone("tx-d5");
        List<String> recving = n.pollReport().doneRecving();
        n.output(null, recving);
        assertThat(n.state.phaseOf(rid)).isEqualTo(RequestPhase.KV_RECEIVED);
    }

    @Test
    void matched_tokens_asked_again_after_the_load_finished_re_parks_the_request() {
        // bug class 27a (#57705): (N - computed, True) parks the request again.
        String rid = proxyRid("d6");
        Node n = waiting(Node.of(writeConsumer()), rid, "tx-d6");
        n.stepAndLoad();
        n.writeDone("tx-d6");
        n.output(null, n.pollReport().doneRecving());
        List<Effect> fx = n.match(rid, 31);
        assertThat(only(fx, Effect.MatchedTokens.class)).containsExactly(new Effect.MatchedTokens(rid, 1, true));
        assertThat(anomalies(fx, AnomalyKind.WRITE_RECV_REPARKED)).hasSize(1);
    }

    @Test
    void with_write_match_after_recv_done_the_second_ask_matches_nothing() {
        String rid = proxyRid("d7");
        Node n = waiting(Node.of(writeConsumer().behaviour(
                Behaviour.newest().with(Switch.WRITE_MATCH_AFTER_RECV_DONE, true))), rid, "tx-d7");
        n.stepAndLoad();
        n.writeDone("tx-d7");
        n.output(null, n.pollReport().doneRecving());
        List<Effect> fx = n.match(rid, 31);
        assertThat(only(fx, Effect.MatchedTokens.class)).containsExactly(new Effect.MatchedTokens(rid, 0, false));
        assertThat(anomalies(fx, AnomalyKind.WRITE_RECV_REPARKED)).isEmpty();
    }

    @Test
    void a_lost_write_done_has_no_decode_side_timeout() {
        // 5.4 step 3: there is no D-side timeout in WRITE; the request stays parked.
        String rid = proxyRid("d8");
        Node n = waiting(Node.of(writeConsumer()), rid, "tx-d8");
        n.stepAndLoad();
        n.advance(3600 * S);
        n.tick();
        List<Effect> fx = n.poll();
        assertThat(finishedReport(fx).doneRecving()).isEmpty();
        assertThat(anomalyKinds(fx)).isEmpty();
        assertThat(n.state.phaseOf(rid)).isEqualTo(RequestPhase.WAITING_FOR_REMOTE_KVS);
    }

    @Test
    void remote_blocks_received_by_a_consumer_is_a_role_mismatch() {
        Node n = Node.of(writeConsumer());
        List<Effect> fx = n.remoteBlocks("cmpl-x", "tx-x", List.of(1), 0);
        assertThat(anomalyKinds(fx)).containsExactly(AnomalyKind.NOTIFY_ROLE_MISMATCH,
                AnomalyKind.LISTENER_WOULD_DIE_IN_PYTHON);
        assertThat(n.state.pythonListenerDead()).isTrue();
    }

    @Test
    void write_consumer_ignores_save_hooks() {
        String rid = proxyRid("d9");
        Node n = waiting(Node.of(writeConsumer()), rid, "tx-d9");
        n.stepAndLoad();
        List<Effect> fx = new java.util.ArrayList<>(n.saveLayer(WorkerFixtures.LAYER_0));
        fx.addAll(n.waitForSave());
        assertThat(only(fx, Effect.PostWrite.class)).isEmpty();
        assertThat(only(fx, Effect.StartHandshake.class)).isEmpty();
    }
}
