package io.kvledger.core.node.worker;

import io.kvledger.core.model.TransferId;
import static io.kvledger.core.node.worker.WorkerFixtures.S;
import static io.kvledger.core.node.worker.WorkerFixtures.anomalies;
import static io.kvledger.core.node.worker.WorkerFixtures.anomalyKinds;
import static io.kvledger.core.node.worker.WorkerFixtures.consumer;
import static io.kvledger.core.node.worker.WorkerFixtures.finishedReport;
import static io.kvledger.core.node.worker.WorkerFixtures.groups;
import static io.kvledger.core.node.worker.WorkerFixtures.hybridGroups;
import static io.kvledger.core.node.worker.WorkerFixtures.ids;
import static io.kvledger.core.node.worker.WorkerFixtures.only;
import static io.kvledger.core.node.worker.WorkerFixtures.readDecodeParams;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Switch;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.node.worker.WorkerFixtures.Node;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The READ consumer worker (protocol 5.5 steps 4 and 6, 3.3.3, and the READ-completion cases of
 * 8.4): eager handshakes, one batch read per layer, the batch verdict, load errors, the
 * hybrid fail-closed path and the receive-abort timeout.
 */
class ReadConsumerTest {

    private static final String HOST = "127.0.0.1";
    private static final int HS = 6301;
    private static final int NOTIFY = 7000;
    private static final String EID = HOST + ":" + HS;

    /** A READ consumer (decode) worker at {@code tpRank} of {@code tpSize}. */
    private static NodeConfig.Builder readConsumer(int tpRank, int tpSize) {
        return consumer(TransferMode.READ).tp(tpRank, tpSize);
    }

    /**
     * Admits and allocates a READ decode request whose producer is at 127.0.0.1 (handshake 6301,
     * notify 7000), then hands the step's metadata to the worker. Returns the LoadStarted effects.
     */
    private static List<Effect> stage(Node n, String rid, String tid, BlockGroups local, List<Object> remote,
                                      int remoteTp, int remoteDpRank, int remoteDpSize) {
        n.admit(rid, 32, readDecodeParams(tid, remote, HOST, HS, NOTIFY, remoteTp, remoteDpRank, remoteDpSize));
        n.match(rid, 0);
        n.alloc(rid, local, 31);
        n.schedule();
        return n.load();
    }

    /** Stages a homogeneous, single-DP-rank read and completes the handshake: returns the PostReads. */
    private static List<Effect.PostRead> posted(Node n, String rid, String tid, BlockGroups local, List<Object> remote) {
        int tp = n.config().tpSize();
        stage(n, rid, tid, local, remote, tp, 0, 1);
        return only(n.handshakeDone(EID + "_dp0"), Effect.PostRead.class);
    }

    private static Node nonHybrid() {
        return Node.of(readConsumer(0, 1));
    }

    private static Node hybrid() {
        return Node.of(readConsumer(0, 1).groups(hybridGroups()));
    }

    private static List<Effect.PostRead> postedNonHybrid(Node n) {
        return posted(n, "rid-r", "tx-r", BlockGroups.single(7, 8), groups(ids(17, 18)));
    }

    private static List<Effect.PostRead> postedHybrid(Node n) {
        return posted(n, "rid-h", "tx-h", BlockGroups.of(ids(7, 8), ids(9)), groups(ids(17, 18), ids(19)));
    }

    // ------------------------------------------------------------------ completion and release

    @Test
    void test_read_completion_sends_structured_release_with_consumer_tp_size() {
        Node n = Node.of(readConsumer(0, 8));
        List<Effect.PostRead> reads = posted(n, "rid-release", "tx-release", BlockGroups.single(1, 2),
                groups(ids(11, 12)));
        assertThat(reads).hasSize(2);
        for (Effect.PostRead r : reads) {
            n.completed(r.statusId(), true);
        }
        List<Effect> fx = n.poll();
        assertThat(only(fx, Effect.SendRelease.class)).containsExactly(
                new Effect.SendRelease(Effect.Sender.WORKER, HOST, NOTIFY, TransferId.of("tx-release"), 8));
        Effect.FinishedReported report = finishedReport(fx);
        assertThat(report.doneRecving()).as("READ is synchronous: never done_recving").isEmpty();
        assertThat(report.loadErrorBlocks()).isEmpty();
        assertThat(n.state.recvingTransferCount()).isZero();
        assertThat(n.state.leftovers()).doesNotContainKeys("recving_transfers", "recv_awaiting_handshake");
        assertThat(n.state.phaseOf("rid-release")).isEqualTo(RequestPhase.RUNNING);
        assertThat(only(n.poll(), Effect.SendRelease.class)).as("released once").isEmpty();
    }

    @Test
    void test_aborted_read_without_local_blocks_only_releases_remote_blocks() {
        Node n = Node.of(readConsumer(2, 8));
        n.admit("rid-abort", 32, readDecodeParams("tx-abort", groups(ids(11, 12)), HOST, HS, NOTIFY, 8, 0, 1));
        n.finish("rid-abort", FinishStatus.FINISHED_ABORTED, BlockGroups.empty(1)); // before any alloc
        n.schedule();
        List<Effect> fx = n.load();
        assertThat(only(fx, Effect.SendRelease.class)).containsExactly(
                new Effect.SendRelease(Effect.Sender.WORKER, HOST, 7002, TransferId.of("tx-abort"), 8));
        assertThat(only(fx, Effect.PostRead.class)).isEmpty();
        assertThat(n.state.recvingTransferCount()).isZero();
    }

    @Test
    void full_prefix_hit_releases_at_once_without_reads() {
        Node n = nonHybrid();
        n.admit("rid-hit", 32, readDecodeParams("tx-hit", groups(ids(11, 12)), HOST, HS, NOTIFY, 1, 0, 1));
        n.match("rid-hit", 31);
        n.alloc("rid-hit", BlockGroups.single(1, 2), 0);
        n.schedule();
        List<Effect> fx = n.load();
        assertThat(only(fx, Effect.SendRelease.class)).containsExactly(
                new Effect.SendRelease(Effect.Sender.WORKER, HOST, NOTIFY, TransferId.of("tx-hit"), 1));
        assertThat(only(fx, Effect.PostRead.class)).isEmpty();
        assertThat(anomalyKinds(fx)).contains(AnomalyKind.RECV_WITHOUT_LOCAL_BLOCKS);
    }

    @Test
    void test_read_completion_waits_for_every_posted_read() {
        Node n = nonHybrid();
        List<Effect.PostRead> reads = postedNonHybrid(n);
        n.completed(reads.get(0).statusId(), true);
        List<Effect> fx = n.poll();
        assertThat(only(fx, Effect.SendRelease.class)).isEmpty();
        assertThat(n.state.recvingTransferCount()).isEqualTo(1);
        n.completed(reads.get(1).statusId(), true);
        assertThat(only(n.poll(), Effect.SendRelease.class)).hasSize(1);
        assertThat(n.state.recvingTransferCount()).isZero();
    }

    @Test
    void batch_verdict_waits_when_only_the_last_layer_is_done() {
        Node n = nonHybrid();
        List<Effect.PostRead> reads = postedNonHybrid(n);
        n.completed(reads.get(1).statusId(), true);
        List<Effect> fx = n.poll();
        assertThat(only(fx, Effect.SendRelease.class)).isEmpty();
        assertThat(anomalyKinds(fx)).doesNotContain(AnomalyKind.READ_RELEASED_WHILE_PENDING);
        assertThat(n.state.recvingTransferCount()).isEqualTo(1);
    }

    @Test
    void test_failed_read_reports_blocks_only_without_hma_non_hybrid() {
        Node n = nonHybrid();
        List<Effect.PostRead> reads = postedNonHybrid(n);
        n.completed(reads.get(0).statusId(), false);
        n.completed(reads.get(1).statusId(), true);
        List<Effect> fx = n.poll();
        assertThat(finishedReport(fx).loadErrorBlocks()).containsExactlyInAnyOrder(7, 8);
        assertThat(only(fx, Effect.SendRelease.class)).containsExactly(
                new Effect.SendRelease(Effect.Sender.WORKER, HOST, NOTIFY, TransferId.of("tx-r"), 1));
        assertThat(anomalies(fx, AnomalyKind.READ_FAILED)).hasSize(1);
        assertThat(n.state.recvingTransferCount()).isZero();
        assertThat(n.state.phaseOf("rid-r")).isEqualTo(RequestPhase.LOAD_FAILED);
        assertThat(finishedReport(n.poll()).loadErrorBlocks()).as("load errors reported once").isEmpty();
    }

    @Test
    void test_failed_read_reports_blocks_only_without_hma_hybrid() {
        Node n = hybrid();
        List<Effect.PostRead> reads = postedHybrid(n);
        assertThat(reads).isNotEmpty();
        n.completed(reads.get(0).statusId(), false);
        n.completed(reads.get(1).statusId(), true);
        List<Effect> fx = n.poll();
        assertThat(finishedReport(fx).loadErrorBlocks()).isEmpty();
        assertThat(only(fx, Effect.SendRelease.class)).isEmpty();
        assertThat(anomalies(fx, AnomalyKind.HYBRID_READ_RAISES)).hasSize(1);
        assertThat(n.state.recvingTransferCount()).isEqualTo(1);
    }

    // ------------------------------------------------------------------ the hybrid fail-closed matrix

    enum Outcome { RAISES_FAILED, RAISES_TIMED_OUT, RELEASED, NOTHING, RELEASED_WITH_LOAD_ERRORS }

    /** 0 pending, 1 done, 2 failed, per posted layer read. */
    static Stream<Arguments> hybridErrorCases() {
        return Stream.of(
                Arguments.of("hybrid failed+pending", true, new int[] {2, 0}, 0L, Outcome.RAISES_FAILED),
                Arguments.of("hybrid pending+failed", true, new int[] {0, 2}, 0L, Outcome.RAISES_FAILED),
                Arguments.of("hybrid pending at 121 s", true, new int[] {0, 0}, 121L, Outcome.RAISES_TIMED_OUT),
                Arguments.of("hybrid done+done at 121 s", true, new int[] {1, 1}, 121L, Outcome.RELEASED),
                Arguments.of("hybrid pending at exactly 120 s", true, new int[] {0, 0}, 120L, Outcome.NOTHING),
                Arguments.of("non-hybrid failed+pending", false, new int[] {2, 0}, 0L,
                        Outcome.RELEASED_WITH_LOAD_ERRORS));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("hybridErrorCases")
    void test_read_completion_preserves_hybrid_blocks_on_error(String name, boolean isHybrid, int[] states,
                                                               long ageSeconds, Outcome expected) {
        Node n = isHybrid ? hybrid() : nonHybrid();
        assertThat(n.config().recvAbortTimeoutNs()).isEqualTo(120 * S);
        List<Effect.PostRead> reads = isHybrid ? postedHybrid(n) : postedNonHybrid(n);
        assertThat(reads).hasSize(states.length);
        for (int i = 0; i < states.length; i++) {
            if (states[i] != 0) {
                n.completed(reads.get(i).statusId(), states[i] == 1);
            }
        }
        n.advance(ageSeconds * S);
        List<Effect> fx = n.poll();
        List<Effect.SendRelease> releases = only(fx, Effect.SendRelease.class);
        List<Effect.Anomaly> raised = anomalies(fx, AnomalyKind.HYBRID_READ_RAISES);
        Effect.FinishedReported report = finishedReport(fx);
        switch (expected) {
            case RAISES_FAILED, RAISES_TIMED_OUT -> {
                assertThat(raised).hasSize(1);
                assertThat(raised.get(0).detail()).contains(expected == Outcome.RAISES_FAILED ? "failed" : "timed out");
                assertThat(releases).as("no notify").isEmpty();
                assertThat(report.loadErrorBlocks()).isEmpty();
                assertThat(n.state.recvingTransferCount()).as("all state kept").isEqualTo(1);
            }
            case RELEASED -> {
                assertThat(raised).isEmpty();
                assertThat(releases).hasSize(1);
                assertThat(report.loadErrorBlocks()).isEmpty();
                assertThat(n.state.recvingTransferCount()).isZero();
            }
            case NOTHING -> {
                assertThat(raised).isEmpty();
                assertThat(releases).isEmpty();
                assertThat(anomalyKinds(fx)).isEmpty();
                assertThat(n.state.recvingTransferCount()).isEqualTo(1);
            }
            case RELEASED_WITH_LOAD_ERRORS -> {
                assertThat(raised).isEmpty();
                assertThat(releases).hasSize(1);
                assertThat(report.loadErrorBlocks()).containsExactlyInAnyOrder(7, 8);
                assertThat(n.state.recvingTransferCount()).isZero();
            }
        }
    }

    // ------------------------------------------------------------------ receive abort

    @Test
    void read_pending_past_recv_abort_timeout_is_a_load_error_without_release() {
        Node n = nonHybrid();
        postedNonHybrid(n);
        n.advance(120 * S);
        assertThat(anomalyKinds(n.poll())).as("strictly greater than the timeout").isEmpty();
        n.advance(1 * S);
        List<Effect> fx = n.poll();
        assertThat(anomalies(fx, AnomalyKind.READ_RECV_TIMEOUT)).hasSize(1);
        assertThat(only(fx, Effect.SendRelease.class)).as("N sends no release on a receive abort").isEmpty();
        assertThat(finishedReport(fx).loadErrorBlocks()).containsExactlyInAnyOrder(7, 8);
        assertThat(n.state.recvingTransferCount()).isZero();
        assertThat(n.state.phaseOf("rid-r")).isEqualTo(RequestPhase.LOAD_FAILED);
    }

    @Test
    void with_release_on_recv_timeout_the_abort_also_releases() {
        Node n = Node.of(readConsumer(0, 1).behaviour(Behaviour.newest().with(Switch.RELEASE_ON_RECV_TIMEOUT, true)));
        postedNonHybrid(n);
        n.advance(121 * S);
        List<Effect> fx = n.poll();
        assertThat(anomalies(fx, AnomalyKind.READ_RECV_TIMEOUT)).hasSize(1);
        assertThat(only(fx, Effect.SendRelease.class)).containsExactly(
                new Effect.SendRelease(Effect.Sender.WORKER, HOST, NOTIFY, TransferId.of("tx-r"), 1));
        assertThat(finishedReport(fx).loadErrorBlocks()).containsExactlyInAnyOrder(7, 8);
    }

    @Test
    void recv_abort_timeout_is_measured_from_the_first_read() {
        Node n = Node.of(readConsumer(0, 1).recvAbortTimeoutNs(10 * S));
        postedNonHybrid(n);
        n.advance(11 * S);
        assertThat(anomalies(n.poll(), AnomalyKind.READ_RECV_TIMEOUT)).hasSize(1);
    }

    // ------------------------------------------------------------------ older connector: last status only

    @Test
    void without_batch_verdict_a_done_last_layer_releases_while_an_earlier_one_is_pending() {
        Node n = Node.of(readConsumer(0, 1).behaviour(Behaviour.newest().with(Switch.READ_BATCH_VERDICT, false)));
        List<Effect.PostRead> reads = postedNonHybrid(n);
        n.completed(reads.get(1).statusId(), true);
        List<Effect> fx = n.poll();
        assertThat(anomalies(fx, AnomalyKind.READ_RELEASED_WHILE_PENDING)).hasSize(1);
        assertThat(only(fx, Effect.SendRelease.class)).hasSize(1);
        assertThat(n.state.recvingTransferCount()).isZero();
    }

    @Test
    void without_batch_verdict_a_failed_earlier_layer_is_released_as_success() {
        Node n = Node.of(readConsumer(0, 1).behaviour(Behaviour.newest().with(Switch.READ_BATCH_VERDICT, false)));
        List<Effect.PostRead> reads = postedNonHybrid(n);
        n.completed(reads.get(0).statusId(), false);
        n.completed(reads.get(1).statusId(), true);
        List<Effect> fx = n.poll();
        assertThat(anomalies(fx, AnomalyKind.READ_RELEASED_WHILE_PENDING)).hasSize(1);
        assertThat(finishedReport(fx).loadErrorBlocks()).as("the failure goes unreported").isEmpty();
        assertThat(anomalies(fx, AnomalyKind.READ_FAILED)).isEmpty();
    }

    @Test
    void without_batch_verdict_a_failed_last_layer_is_never_released_before_the_abort() {
        // bug class 2: only Succeeded() of the last status was tested.
        Node n = Node.of(readConsumer(0, 1).behaviour(Behaviour.newest().with(Switch.READ_BATCH_VERDICT, false)));
        List<Effect.PostRead> reads = postedNonHybrid(n);
        n.completed(reads.get(0).statusId(), true);
        n.completed(reads.get(1).statusId(), false);
        List<Effect> fx = n.poll();
        assertThat(only(fx, Effect.SendRelease.class)).isEmpty();
        assertThat(anomalies(fx, AnomalyKind.READ_FAILED)).isEmpty();
        assertThat(n.state.recvingTransferCount()).isEqualTo(1);
    }

    // ------------------------------------------------------------------ handshakes and read posting

    @Test
    void eager_handshake_dials_every_remote_dp_rank_before_reading() {
        Node n = Node.of(readConsumer(1, 2));
        List<Effect> load = stage(n, "rid-eager", "tx-eager", BlockGroups.single(1, 2), groups(ids(11, 12)), 2, 1, 2);
        assertThat(only(load, Effect.StartHandshake.class)).containsExactly(
                new Effect.StartHandshake(EID + "_dp0", HOST, HS + 0 * 2 + 1, EID, 0),
                new Effect.StartHandshake(EID + "_dp1", HOST, HS + 1 * 2 + 1, EID, 1));
        assertThat(only(load, Effect.PostRead.class)).as("no reads before the handshakes").isEmpty();
        assertThat(only(n.handshakeDone(EID + "_dp0"), Effect.PostRead.class)).as("dp1 still unknown").isEmpty();
        List<Effect.PostRead> reads = only(n.handshakeDone(EID + "_dp1"), Effect.PostRead.class);
        assertThat(reads).hasSize(2);
        assertThat(reads).allSatisfy(r -> assertThat(r.sessionKey()).isEqualTo(EID + "_dp1"));
    }

    @Test
    void eager_handshake_runs_once_per_engine() {
        Node n = nonHybrid();
        postedNonHybrid(n);
        n.admit("rid-second", 32, readDecodeParams("tx-second", groups(ids(21, 22)), HOST, HS, NOTIFY, 1, 0, 1));
        n.match("rid-second", 0);
        n.alloc("rid-second", BlockGroups.single(3, 4), 31);
        n.schedule();
        List<Effect> fx = n.load();
        assertThat(only(fx, Effect.StartHandshake.class)).as("engine already known").isEmpty();
        assertThat(only(fx, Effect.PostRead.class)).as("reads posted at once").hasSize(2)
                .allSatisfy(r -> assertThat(r.requestId()).isEqualTo("rid-second"));
    }

    @Test
    void heterogeneous_tp_dials_and_releases_the_owning_remote_tp_rank() {
        // D TP 8, P TP 4: D rank 3 reads from P rank 3 / (8 / 4) = 1.
        Node n = Node.of(readConsumer(3, 8));
        List<Effect> load = stage(n, "rid-het", "tx-het", BlockGroups.single(1), groups(ids(11)), 4, 0, 1);
        assertThat(only(load, Effect.StartHandshake.class)).extracting(Effect.StartHandshake::port)
                .containsExactly(HS + 1);
        List<Effect.PostRead> reads = only(n.handshakeDone(EID + "_dp0"), Effect.PostRead.class);
        reads.forEach(r -> n.completed(r.statusId(), true));
        assertThat(only(n.poll(), Effect.SendRelease.class)).containsExactly(
                new Effect.SendRelease(Effect.Sender.WORKER, HOST, NOTIFY + 1, TransferId.of("tx-het"), 8));
    }

    @Test
    void one_post_read_per_configured_layer_on_the_owning_dp_rank_session() {
        List<String> layers = List.of("model.layers.0.attn", "model.layers.1.attn", "model.layers.2.attn");
        Node n = Node.of(readConsumer(0, 2).layerNames(layers));
        stage(n, "rid-layers", "tx-layers", BlockGroups.single(1, 2), groups(ids(11, 12)), 2, 1, 2);
        n.handshakeDone(EID + "_dp0");
        List<Effect.PostRead> reads = only(n.handshakeDone(EID + "_dp1"), Effect.PostRead.class);
        List<String> posted = new ArrayList<>();
        for (Effect.PostRead r : reads) {
            posted.add(r.layerName());
            assertThat(r.sessionKey()).isEqualTo(EID + "_dp1");
            assertThat(r.transferId()).isEqualTo("tx-layers");
            assertThat(r.localBlockIds()).containsExactly(1, 2);
            assertThat(r.remoteBlockIds()).containsExactly(11, 12);
        }
        assertThat(posted).containsExactlyElementsOf(layers);
        assertThat(reads).extracting(Effect.PostRead::statusId).doesNotHaveDuplicates();
        assertThat(n.state.phaseOf("rid-layers")).isEqualTo(RequestPhase.READS_IN_FLIGHT);
        // release goes to the owning DP rank: 7000 + 1 * 2 + 0
        reads.forEach(r -> n.completed(r.statusId(), true));
        assertThat(only(n.poll(), Effect.SendRelease.class)).extracting(Effect.SendRelease::port)
                .containsExactly(NOTIFY + 2);
    }

    @Test
    void eager_handshake_is_not_pod_aware() {
        // bug class 37: the eager path dials the single remote_host with the global DP rank in
        // the offset, even when remote_dp_size_local folds the ranks into pods.
        Node n = Node.of(readConsumer(0, 1));
        var p = readDecodeParams("tx-pods", groups(ids(11)), HOST, HS, NOTIFY, 1, 3, 4);
        p.put("remote_dp_size_local", 2L);
        n.admit("rid-pods", 32, p);
        n.match("rid-pods", 0);
        n.alloc("rid-pods", BlockGroups.single(1), 31);
        n.schedule();
        List<Effect.StartHandshake> hs = only(n.load(), Effect.StartHandshake.class);
        assertThat(hs).extracting(Effect.StartHandshake::host).containsOnly(HOST);
        assertThat(hs).extracting(Effect.StartHandshake::port).containsExactly(HS, HS + 1, HS + 2, HS + 3);
    }

    @Test
    void failed_handshake_is_reported_and_posts_no_reads() {
        Node n = nonHybrid();
        stage(n, "rid-hsfail", "tx-hsfail", BlockGroups.single(1, 2), groups(ids(11, 12)), 1, 0, 1);
        List<Effect> fx = n.on(new io.kvledger.core.event.NodeEvent.HandshakeFailed(n.nowNs, EID + "_dp0", "timeout"));
        // one anomaly for the key, one naming each request whose read waits for it
        assertThat(anomalies(fx, AnomalyKind.HANDSHAKE_FAILED)).extracting(Effect.Anomaly::requestId)
                .containsExactly(null, "rid-hsfail");
        assertThat(only(n.all, Effect.PostRead.class)).isEmpty();
        assertThat(only(n.poll(), Effect.SendRelease.class)).isEmpty();
    }

    @Test
    void completion_for_an_unknown_status_is_reported() {
        Node n = nonHybrid();
        assertThat(anomalyKinds(n.completed(4242, true))).containsExactly(AnomalyKind.UNKNOWN_STATUS);
    }

    @Test
    void release_received_by_a_consumer_is_a_role_mismatch() {
        Node n = nonHybrid();
        List<Effect> fx = n.release("tx-x", 1);
        assertThat(anomalyKinds(fx)).contains(AnomalyKind.NOTIFY_ROLE_MISMATCH, AnomalyKind.LISTENER_WOULD_DIE_IN_PYTHON);
        assertThat(n.state.pythonListenerDead()).isTrue();
    }
}
