package io.kvledger.core.node.worker;

import static io.kvledger.core.node.worker.WorkerFixtures.DECODE;
import static io.kvledger.core.node.worker.WorkerFixtures.LAYER_0;
import static io.kvledger.core.node.worker.WorkerFixtures.LAYER_1;
import static io.kvledger.core.node.worker.WorkerFixtures.S;
import static io.kvledger.core.node.worker.WorkerFixtures.anomalies;
import static io.kvledger.core.node.worker.WorkerFixtures.anomalyKinds;
import static io.kvledger.core.node.worker.WorkerFixtures.only;
import static io.kvledger.core.node.worker.WorkerFixtures.prefillParams;
import static io.kvledger.core.node.worker.WorkerFixtures.producer;
import static io.kvledger.core.node.worker.WorkerFixtures.proxyRid;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Switch;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.node.worker.WorkerFixtures.Node;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The WRITE producer worker (protocol 5.3 steps 3 to 6, 3.3.1, 3.3.2 and bug classes 6, 27, 28):
 * per-(transfer, layer) de-duplicated writes, sealing after the forward, the once-only
 * {@code write_done}, the self-ACK, deferred tasks and their expiry, failures and timeouts.
 */
class WriteProducerTest {

    /** The decode engine id the producer recomputes from the request id's decode address. */
    private static final String DECODE_EID = DECODE.host() + ":" + DECODE.handshakePort();
    private static final String HS_KEY = DECODE_EID + "_dp0";

    private static NodeConfig.Builder writeProducer() {
        return producer(TransferMode.WRITE);
    }

    /** A request staged for save whose decode peer is already handshaken; the worker holds the metadata. */
    private static Node ready(Node n, String rid, String tid) {
        n.producerRequest(rid, tid, 1, 2);
        n.stepAndLoad();
        n.handshakeDone(HS_KEY);
        return n;
    }

    private static List<Effect> remoteBlocks(Node n, String tid, int decodeRank, Integer... blocks) {
        return n.remoteBlocks("cmpl-decode-" + tid, tid, List.of(blocks), decodeRank);
    }

    private static List<Effect> completeAll(Node n, List<Effect.PostWrite> writes, boolean ok) {
        List<Effect> out = new ArrayList<>();
        for (Effect.PostWrite w : writes) {
            out.addAll(n.completed(w.statusId(), ok));
        }
        return out;
    }

    // ------------------------------------------------------------------ writes and write_done

    @Test
    void remote_blocks_then_save_kv_layer_posts_one_write_per_transfer_and_layer() {
        String rid = proxyRid("w1");
        Node n = ready(Node.of(writeProducer()), rid, "tx-w1");
        remoteBlocks(n, "tx-w1", 0, 21, 22);
        List<Effect.PostWrite> l0 = only(n.saveLayer(LAYER_0), Effect.PostWrite.class);
        assertThat(l0).hasSize(1);
        Effect.PostWrite w0 = l0.get(0);
        assertThat(w0.transferId()).isEqualTo("tx-w1");
        assertThat(w0.layerName()).isEqualTo(LAYER_0);
        assertThat(w0.sessionKey()).isEqualTo(HS_KEY);
        assertThat(w0.localBlockIds()).containsExactly(1, 2);
        assertThat(w0.remoteBlockIds()).containsExactly(21, 22);
        assertThat(only(n.saveLayer(LAYER_0), Effect.PostWrite.class)).as("repeated layer").isEmpty();
        List<Effect.PostWrite> l1 = only(n.saveLayer(LAYER_1), Effect.PostWrite.class);
        assertThat(l1).extracting(Effect.PostWrite::layerName).containsExactly(LAYER_1);
        List<Effect> sealed = n.waitForSave();
        assertThat(only(sealed, Effect.PostWrite.class)).as("wait_for_save re-invokes every layer").isEmpty();
        assertThat(only(sealed, Effect.SendWriteDone.class)).as("statuses still pending").isEmpty();
        assertThat(only(n.all, Effect.PostWrite.class)).hasSize(2);
    }

    @Test
    void write_done_is_sent_once_after_every_write_status_succeeded() {
        String rid = proxyRid("w2");
        Node n = ready(Node.of(writeProducer()), rid, "tx-w2");
        remoteBlocks(n, "tx-w2", 0, 21, 22);
        n.forward(LAYER_0, LAYER_1);
        List<Effect.PostWrite> writes = only(n.all, Effect.PostWrite.class);
        assertThat(only(n.completed(writes.get(0).statusId(), true), Effect.SendWriteDone.class)).isEmpty();
        List<Effect> last = n.completed(writes.get(1).statusId(), true);
        assertThat(only(last, Effect.SendWriteDone.class)).containsExactly(
                new Effect.SendWriteDone(DECODE.host(), DECODE.notifyPort(), "tx-w2"));
        assertThat(n.state.isTerminal("tx-w2")).isTrue();
        assertThat(n.state.hasRemoteAlloc("tx-w2")).isFalse();

        // the self-ACK: get_finished reports done_sending for the request
        assertThat(n.pollReport().doneSending()).containsExactly(rid);
        // nothing is re-sent when the hooks fire again
        n.saveLayer(LAYER_0);
        n.waitForSave();
        assertThat(only(n.all, Effect.SendWriteDone.class)).hasSize(1);
        assertThat(only(n.all, Effect.PostWrite.class)).hasSize(2);
        assertThat(n.pollReport().doneSending()).isEmpty();
    }

    @Test
    void sealing_after_the_forward_sets_the_expected_count() {
        // Without wait_for_save nothing knows how many layers to expect: no write_done yet.
        String rid = proxyRid("w3");
        Node n = ready(Node.of(writeProducer()), rid, "tx-w3");
        remoteBlocks(n, "tx-w3", 0, 21, 22);
        List<Effect.PostWrite> first = only(n.saveLayer(LAYER_0), Effect.PostWrite.class);
        assertThat(only(completeAll(n, first, true), Effect.SendWriteDone.class)).as("not sealed").isEmpty();
        List<Effect> sealed = n.waitForSave();
        List<Effect.PostWrite> second = only(sealed, Effect.PostWrite.class);
        assertThat(second).extracting(Effect.PostWrite::layerName).containsExactly(LAYER_1);
        assertThat(only(sealed, Effect.SendWriteDone.class)).as("layer 1 pending").isEmpty();
        assertThat(only(completeAll(n, second, true), Effect.SendWriteDone.class)).hasSize(1);
    }

    @Test
    void write_done_goes_to_the_decode_rank_notify_port_plus_the_two_argument_offset() {
        // The proxy tells the prefill leg the decode's DP size (2 here): add_new_req folds the
        // decode rank by remote_dp_size_local, which defaults to it.
        String rid = proxyRid("w4");
        Node n = Node.of(writeProducer().tp(1, 2));
        KvParams kv = prefillParams("tx-w4");
        kv.put("remote_dp_size", 2L);
        n.admit(rid, 32, kv);
        n.match(rid, 0);
        n.alloc(rid, BlockGroups.single(1, 2), 0);
        n.stepAndLoad();
        n.handshakeDone(HS_KEY);
        remoteBlocks(n, "tx-w4", 1, 21, 22);
        n.waitForSave();
        List<Effect.PostWrite> writes = only(n.all, Effect.PostWrite.class);
        assertThat(writes).hasSize(2).allSatisfy(w -> assertThat(w.sessionKey()).isEqualTo(DECODE_EID + "_dp1"));
        List<Effect> fx = completeAll(n, writes, true);
        // remote_notify_port + get_port_offset(decode_dp_rank=1, tp_rank=1) = base + 2
        assertThat(only(fx, Effect.SendWriteDone.class)).containsExactly(
                new Effect.SendWriteDone(DECODE.host(), DECODE.notifyPort() + 2, "tx-w4"));
    }

    /** A one-layer-pair write of {@code tid} whose decode rank is {@code decodeRank}; returns its write_done. */
    private static List<Effect.SendWriteDone> writeDoneFor(KvParams kv, String tid, int decodeRank) {
        String rid = proxyRid(tid);
        Node n = Node.of(writeProducer());
        n.admit(rid, 32, kv);
        n.match(rid, 0);
        n.alloc(rid, BlockGroups.single(1, 2), 0);
        n.stepAndLoad();
        n.handshakeDone(HS_KEY);
        remoteBlocks(n, tid, decodeRank, 21, 22);
        n.waitForSave();
        return only(completeAll(n, only(n.all, Effect.PostWrite.class), true), Effect.SendWriteDone.class);
    }

    @Test
    void write_done_to_a_child_pod_uses_remote_hosts_and_the_pod_local_rank() {
        // add_new_req keeps remote_hosts; decode rank 3 of 4, two per pod: pod 1, local rank 1.
        KvParams kv = prefillParams("tx-pod");
        kv.put("remote_dp_size", 4L);
        kv.put("remote_dp_size_local", 2L);
        kv.put("remote_hosts", List.of(DECODE.host(), "10.0.9.9"));

        assertThat(writeDoneFor(kv, "tx-pod", 3)).containsExactly(
                new Effect.SendWriteDone("10.0.9.9", DECODE.notifyPort() + 1, "tx-pod"));
    }

    @Test
    void write_done_with_the_external_dp_sentinel_keeps_the_global_rank_on_the_single_host() {
        // remote_dp_size_local 0 stays 0 in ReqMeta: no folding, pod 0, multi_pod_hosts = [remote_host].
        KvParams kv = prefillParams("tx-ext");
        kv.put("remote_dp_size", 4L);
        kv.put("remote_dp_size_local", 0L);

        assertThat(writeDoneFor(kv, "tx-ext", 3)).containsExactly(
                new Effect.SendWriteDone(DECODE.host(), DECODE.notifyPort() + 3, "tx-ext"));
    }

    /** Two transfers to two decode pods (each its own remote_hosts), written in one forward; their write_dones. */
    private static List<Effect.SendWriteDone> twoPodWriteDones(Behaviour b) {
        Node n = Node.of(writeProducer().behaviour(b));
        String[] pods = {DECODE.host(), "10.0.9.9"};
        for (int i = 0; i < 2; i++) {
            String tid = "tx-pod" + i;
            KvParams kv = prefillParams(tid);
            kv.put("remote_dp_size_local", 1L);
            kv.put("remote_hosts", List.of(pods[i]));
            n.admit(proxyRid(tid), 32, kv);
            n.match(proxyRid(tid), 0);
            n.alloc(proxyRid(tid), BlockGroups.single(1 + 2 * i, 2 + 2 * i), 0);
        }
        n.stepAndLoad();
        n.handshakeDone(HS_KEY);
        remoteBlocks(n, "tx-pod0", 0, 21, 22);
        remoteBlocks(n, "tx-pod1", 0, 23, 24);
        n.waitForSave();
        return only(completeAll(n, only(n.all, Effect.PostWrite.class), true), Effect.SendWriteDone.class);
    }

    @Test
    void each_write_done_goes_to_its_own_requests_pod() {
        assertThat(twoPodWriteDones(Behaviour.newest())).containsExactlyInAnyOrder(
                new Effect.SendWriteDone(DECODE.host(), DECODE.notifyPort(), "tx-pod0"),
                new Effect.SendWriteDone("10.0.9.9", DECODE.notifyPort(), "tx-pod1"));
    }

    @Test
    void with_worker_pod_hosts_a_write_done_goes_to_the_pod_of_the_last_scheduled_write() {
        // class 32: the worker's stash holds tx-pod1's hosts when tx-pod0's writes complete
        assertThat(twoPodWriteDones(Behaviour.newest().with(Switch.WRITE_DONE_WORKER_POD_HOSTS, true)))
                .containsExactlyInAnyOrder(
                        new Effect.SendWriteDone("10.0.9.9", DECODE.notifyPort(), "tx-pod0"),
                        new Effect.SendWriteDone("10.0.9.9", DECODE.notifyPort(), "tx-pod1"));
    }

    // ------------------------------------------------------------------ class 6: the unsealed writer

    /** Save hooks for {@code layers} (a layer twice is a hook firing twice), wait_for_save, every write completed. */
    private static Node hooks(Behaviour b, String tid, String... layers) {
        Node n = ready(Node.of(writeProducer().behaviour(b)), proxyRid(tid), tid);
        remoteBlocks(n, tid, 0, 21, 22);
        for (String layer : layers) {
            n.saveLayer(layer);
        }
        n.waitForSave();
        completeAll(n, only(n.all, Effect.PostWrite.class), true);
        return n;
    }

    private static final Behaviour UNSEALED = Behaviour.newest().with(Switch.WRITE_UNSEALED_COMPLETION, true);

    @Test
    void the_unsealed_writer_counts_a_repeated_hook_and_sends_write_done_before_every_layer_is_written() {
        Node n = hooks(UNSEALED, "tx-u1", LAYER_0, LAYER_0);
        assertThat(only(n.all, Effect.PostWrite.class)).extracting(Effect.PostWrite::layerName)
                .as("no de-duplication: layer 0 written twice, layer 1 never").containsExactly(LAYER_0, LAYER_0);
        assertThat(only(n.all, Effect.SendWriteDone.class)).as("two writes counted as the two registered layers").hasSize(1);
        assertThat(only(n.saveLayer(LAYER_1), Effect.PostWrite.class)).as("the transfer is terminal").isEmpty();
    }

    @Test
    void the_unsealed_writer_never_sends_write_done_when_a_layer_has_no_hook() {
        Node n = hooks(UNSEALED, "tx-u2", LAYER_0);
        assertThat(only(n.all, Effect.PostWrite.class)).extracting(Effect.PostWrite::layerName).containsExactly(LAYER_0);
        assertThat(only(n.all, Effect.SendWriteDone.class)).as("1 of 2 expected writes, no seal").isEmpty();
        n.advance(5 * S);
        assertThat(only(n.tick(), Effect.SendWriteDone.class)).isEmpty();
        assertThat(n.pollReport().doneSending()).as("no self-ACK either").isEmpty();
    }

    @Test
    void the_sealed_writer_writes_every_layer_once_whatever_hooks_fire() {
        for (String[] layers : List.of(new String[] {LAYER_0, LAYER_0}, new String[] {LAYER_0}, new String[] {})) {
            Node n = hooks(Behaviour.newest(), "tx-s" + layers.length, layers);
            assertThat(only(n.all, Effect.PostWrite.class)).extracting(Effect.PostWrite::layerName)
                    .containsExactlyInAnyOrder(LAYER_0, LAYER_1);
            assertThat(only(n.all, Effect.SendWriteDone.class)).hasSize(1);
        }
    }

    @Test
    void tasks_are_deferred_until_remote_blocks_arrive() {
        String rid = proxyRid("w5");
        Node n = ready(Node.of(writeProducer()), rid, "tx-w5");
        n.forward(LAYER_0, LAYER_1);
        assertThat(only(n.all, Effect.PostWrite.class)).as("no remote_blocks yet").isEmpty();
        n.advance(5 * S);
        assertThat(only(n.tick(), Effect.PostWrite.class)).isEmpty();
        List<Effect.PostWrite> writes = only(remoteBlocks(n, "tx-w5", 0, 21, 22), Effect.PostWrite.class);
        assertThat(writes).extracting(Effect.PostWrite::layerName).containsExactly(LAYER_0, LAYER_1);
        assertThat(writes).allSatisfy(w -> assertThat(w.remoteBlockIds()).containsExactly(21, 22));
        assertThat(only(completeAll(n, writes, true), Effect.SendWriteDone.class)).hasSize(1);
        assertThat(n.pollReport().doneSending()).containsExactly(rid);
    }

    @Test
    void two_transfers_in_one_step_each_get_their_own_writes() {
        Node n = Node.of(writeProducer());
        String a = proxyRid("wa");
        String b = proxyRid("wb");
        n.producerRequest(a, "tx-a", 1, 2);
        n.producerRequest(b, "tx-b", 3, 4);
        n.stepAndLoad();
        n.handshakeDone(HS_KEY);
        remoteBlocks(n, "tx-a", 0, 21, 22);
        remoteBlocks(n, "tx-b", 0, 23, 24);
        n.forward(LAYER_0, LAYER_1);
        List<Effect.PostWrite> writes = only(n.all, Effect.PostWrite.class);
        assertThat(writes).extracting(w -> w.transferId() + "/" + w.layerName()).containsExactlyInAnyOrder(
                "tx-a/" + LAYER_0, "tx-a/" + LAYER_1, "tx-b/" + LAYER_0, "tx-b/" + LAYER_1);
        List<Effect> fx = completeAll(n, writes, true);
        assertThat(only(fx, Effect.SendWriteDone.class)).extracting(Effect.SendWriteDone::transferId)
                .containsExactlyInAnyOrder("tx-a", "tx-b");
        assertThat(n.pollReport().doneSending()).containsExactlyInAnyOrder(a, b);
    }

    // ------------------------------------------------------------------ expiry, failure, timeout

    @Test
    void deferred_task_expires_after_defer_timeout_with_a_self_ack_and_no_write_done() {
        String rid = proxyRid("w6");
        Node n = ready(Node.of(writeProducer()), rid, "tx-w6");
        n.saveLayer(LAYER_0);
        n.waitForSave();
        n.advance(60 * S);
        assertThat(anomalyKinds(n.tick())).as("not older than defer_timeout yet").isEmpty();
        n.advance(1 * S);
        List<Effect> fx = n.tick();
        assertThat(anomalies(fx, AnomalyKind.WRITE_TASK_EXPIRED)).hasSize(1)
                .first().extracting(Effect.Anomaly::transferId).isEqualTo("tx-w6");
        assertThat(only(fx, Effect.SendWriteFailed.class)).as("decode is not told").isEmpty();
        assertThat(n.state.isTerminal("tx-w6")).isTrue();
        assertThat(n.pollReport().doneSending()).containsExactly(rid);
        // a late remote_blocks finds a terminal transfer: nothing is written from freed blocks
        List<Effect> late = remoteBlocks(n, "tx-w6", 0, 21, 22);
        assertThat(anomalyKinds(late)).containsExactly(AnomalyKind.REMOTE_BLOCKS_FOR_TERMINAL);
        assertThat(only(n.all, Effect.PostWrite.class)).isEmpty();
        assertThat(only(n.all, Effect.SendWriteDone.class)).isEmpty();
        assertThat(n.state.hasRemoteAlloc("tx-w6")).isFalse();
    }

    @Test
    void deferred_task_expiry_is_also_noticed_by_get_finished() {
        String rid = proxyRid("w6b");
        Node n = ready(Node.of(writeProducer()), rid, "tx-w6b");
        n.saveLayer(LAYER_0);
        n.advance(61 * S);
        List<Effect> fx = n.poll();
        assertThat(anomalies(fx, AnomalyKind.WRITE_TASK_EXPIRED)).hasSize(1);
        assertThat(WorkerFixtures.finishedReport(fx).doneSending()).containsExactly(rid);
    }

    @Test
    void with_write_failed_notify_an_expired_task_tells_the_decode_side() {
        String rid = proxyRid("w7");
        Node n = ready(Node.of(writeProducer().behaviour(Behaviour.newest().with(Switch.WRITE_FAILED_NOTIFY, true))),
                rid, "tx-w7");
        n.saveLayer(LAYER_0);
        n.waitForSave();
        n.advance(61 * S);
        List<Effect> fx = n.tick();
        assertThat(anomalies(fx, AnomalyKind.WRITE_TASK_EXPIRED)).hasSize(1);
        List<Effect.SendWriteFailed> failed = only(fx, Effect.SendWriteFailed.class);
        assertThat(failed).hasSize(1);
        assertThat(failed.get(0).host()).isEqualTo(DECODE.host());
        assertThat(failed.get(0).port()).isEqualTo(DECODE.notifyPort());
        assertThat(failed.get(0).transferId()).isEqualTo("tx-w7");
        assertThat(only(fx, Effect.SendWriteDone.class)).isEmpty();
    }

    @Test
    void failed_layer_write_self_acks_without_write_done() {
        String rid = proxyRid("w8");
        Node n = ready(Node.of(writeProducer()), rid, "tx-w8");
        remoteBlocks(n, "tx-w8", 0, 21, 22);
        n.waitForSave();
        List<Effect.PostWrite> writes = only(n.all, Effect.PostWrite.class);
        assertThat(writes).hasSize(2);
        List<Effect> fx = new ArrayList<>(n.completed(writes.get(0).statusId(), false));
        fx.addAll(n.completed(writes.get(1).statusId(), true));
        assertThat(anomalies(fx, AnomalyKind.WRITE_FAILED)).hasSize(1);
        assertThat(only(n.all, Effect.SendWriteDone.class)).isEmpty();
        assertThat(only(fx, Effect.SendWriteFailed.class)).isEmpty();
        assertThat(n.pollReport().doneSending()).containsExactly(rid);
    }

    @Test
    void completions_of_a_failed_writes_other_layers_are_not_unknown_statuses() {
        // simulate --seed 1002 --mode write with fail=0.05: one layer's write fails, the write is
        // given up (self-ACK) and its status records dropped; the other layers' completions come
        // after. They were posted, so they are no UNKNOWN_STATUS ("never posted").
        String rid = proxyRid("w8c");
        Node n = ready(Node.of(writeProducer()), rid, "tx-w8c");
        remoteBlocks(n, "tx-w8c", 0, 21, 22);
        n.waitForSave();
        List<Effect.PostWrite> writes = only(n.all, Effect.PostWrite.class);
        assertThat(writes).hasSize(2);
        assertThat(anomalyKinds(n.completed(writes.get(0).statusId(), false))).containsExactly(AnomalyKind.WRITE_FAILED);
        assertThat(n.completed(writes.get(1).statusId(), true)).as("late completion of an abandoned write").isEmpty();
        assertThat(n.completed(writes.get(1).statusId(), false)).as("and a second one").isEmpty();
        long never = writes.get(1).statusId() + 1;
        assertThat(anomalyKinds(n.completed(never, true))).as("an id never handed out")
                .containsExactly(AnomalyKind.UNKNOWN_STATUS);
        assertThat(anomalyKinds(n.completed(0, true))).as("id 0 is never handed out").containsExactly(AnomalyKind.UNKNOWN_STATUS);
        assertThat(n.pollReport().doneSending()).containsExactly(rid);
    }

    @Test
    void with_write_failed_notify_a_failed_write_tells_the_decode_side() {
        String rid = proxyRid("w8b");
        Node n = ready(Node.of(writeProducer().behaviour(Behaviour.newest().with(Switch.WRITE_FAILED_NOTIFY, true))),
                rid, "tx-w8b");
        remoteBlocks(n, "tx-w8b", 0, 21, 22);
        n.waitForSave();
        List<Effect.PostWrite> writes = only(n.all, Effect.PostWrite.class);
        List<Effect> fx = n.completed(writes.get(0).statusId(), false);
        assertThat(only(fx, Effect.SendWriteFailed.class)).extracting(Effect.SendWriteFailed::transferId)
                .containsExactly("tx-w8b");
        assertThat(only(n.all, Effect.SendWriteDone.class)).isEmpty();
    }

    @Test
    void remote_block_count_mismatch_fails_the_write() {
        // compute_block_transfer_offsets requires equal lengths (ValueError), caught as a self-ACK.
        String rid = proxyRid("w9");
        Node n = ready(Node.of(writeProducer()), rid, "tx-w9");
        remoteBlocks(n, "tx-w9", 0, 21);
        List<Effect> fx = n.saveLayer(LAYER_0);
        assertThat(anomalies(fx, AnomalyKind.WRITE_FAILED)).hasSize(1);
        assertThat(only(n.all, Effect.PostWrite.class)).isEmpty();
        assertThat(n.pollReport().doneSending()).containsExactly(rid);
    }

    @Test
    void write_statuses_pending_past_transfer_timeout_time_out() {
        String rid = proxyRid("w10");
        Node n = ready(Node.of(writeProducer()), rid, "tx-w10");
        remoteBlocks(n, "tx-w10", 0, 21, 22);
        n.waitForSave();
        List<Effect.PostWrite> writes = only(n.all, Effect.PostWrite.class);
        n.completed(writes.get(0).statusId(), true);
        n.advance(30 * S);
        assertThat(anomalyKinds(n.tick())).as("within transfer_timeout").isEmpty();
        n.advance(1 * S);
        List<Effect> fx = n.tick();
        assertThat(anomalies(fx, AnomalyKind.WRITE_TIMEOUT)).hasSize(1);
        assertThat(n.pollReport().doneSending()).containsExactly(rid);
        // the late completion finds nothing to finish
        List<Effect> late = n.completed(writes.get(1).statusId(), true);
        assertThat(only(late, Effect.SendWriteDone.class)).isEmpty();
        assertThat(anomalyKinds(late)).as("the status was posted: no UNKNOWN_STATUS").isEmpty();
        assertThat(only(n.all, Effect.SendWriteDone.class)).isEmpty();
    }

    // ------------------------------------------------------------------ handshake

    @Test
    void unknown_decode_engine_starts_a_handshake_and_holds_writes_until_it_completes() {
        String rid = proxyRid("w11");
        Node n = Node.of(writeProducer());
        n.producerRequest(rid, "tx-w11", 1, 2);
        n.stepAndLoad();
        remoteBlocks(n, "tx-w11", 0, 21, 22);
        List<Effect> first = n.saveLayer(LAYER_0);
        assertThat(only(first, Effect.StartHandshake.class)).containsExactly(
                new Effect.StartHandshake(HS_KEY, DECODE.host(), DECODE.handshakePort(), DECODE_EID, 0));
        assertThat(only(first, Effect.PostWrite.class)).isEmpty();
        List<Effect> second = n.saveLayer(LAYER_1);
        assertThat(only(second, Effect.StartHandshake.class)).as("handshake started once").isEmpty();
        assertThat(only(second, Effect.PostWrite.class)).isEmpty();
        assertThat(only(n.all, Effect.PostWrite.class)).isEmpty();

        n.handshakeDone(HS_KEY);
        n.waitForSave();
        List<Effect.PostWrite> writes = only(n.all, Effect.PostWrite.class);
        assertThat(writes).extracting(Effect.PostWrite::layerName).containsExactlyInAnyOrder(LAYER_0, LAYER_1);
        assertThat(only(completeAll(n, writes, true), Effect.SendWriteDone.class)).hasSize(1);
    }

    @Test
    void write_handshake_dials_every_decode_dp_rank() {
        Node n = Node.of(writeProducer());
        String rid = proxyRid("w12");
        KvParams p = prefillParams("tx-w12");
        p.put("remote_dp_size", 2L);
        p.put("remote_tp_size", 1L);
        n.admit(rid, 32, p);
        n.alloc(rid, BlockGroups.single(1, 2), 0);
        n.stepAndLoad();
        List<Effect.StartHandshake> hs = only(n.saveLayer(LAYER_0), Effect.StartHandshake.class);
        assertThat(hs).extracting(Effect.StartHandshake::key, Effect.StartHandshake::port).containsExactly(
                org.assertj.core.groups.Tuple.tuple(DECODE_EID + "_dp0", DECODE.handshakePort()),
                org.assertj.core.groups.Tuple.tuple(DECODE_EID + "_dp1", DECODE.handshakePort() + 1));
    }

    @Test
    void a_request_waiting_for_its_handshake_is_written_only_once_every_decode_dp_rank_handshook() {
        // request_ready runs when wait_all_dp is done: released on rank 0 alone, the write for a
        // decode on rank 1 would go to a session still handshaking, fail with no session, self-ACK
        // (WRITE_FAILED) and leave the decode in WAITING_FOR_REMOTE_KVS for good.
        Node n = Node.of(writeProducer());
        String rid = proxyRid("w12r");
        KvParams p = prefillParams("tx-w12r");
        p.put("remote_dp_size", 2L);
        p.put("remote_tp_size", 1L);
        n.admit(rid, 32, p);
        n.alloc(rid, BlockGroups.single(1, 2), 0);
        n.stepAndLoad();
        assertThat(only(n.saveLayer(LAYER_0), Effect.StartHandshake.class)).hasSize(2);
        n.waitForSave();
        n.stepAndLoad(); // the next step stages no save: the request now waits in _ready_requests only
        remoteBlocks(n, "tx-w12r", 1, 21, 22);
        n.handshakeDone(HS_KEY);
        assertThat(only(n.saveLayer(LAYER_0), Effect.PostWrite.class)).as("decode rank 1 still handshaking").isEmpty();

        n.handshakeDone(DECODE_EID + "_dp1");
        List<Effect.PostWrite> writes = only(n.saveLayer(LAYER_1), Effect.PostWrite.class);
        assertThat(writes).hasSize(1).allSatisfy(w -> assertThat(w.sessionKey()).isEqualTo(DECODE_EID + "_dp1"));
        assertThat(anomalyKinds(n.all)).doesNotContain(AnomalyKind.WRITE_FAILED);
    }

    // ------------------------------------------------------------------ remote_blocks edge cases

    @Test
    void remote_blocks_with_an_empty_list_would_kill_the_python_listener() {
        Node n = ready(Node.of(writeProducer()), proxyRid("w13"), "tx-w13");
        List<Effect> fx = remoteBlocks(n, "tx-w13", 0);
        assertThat(anomalyKinds(fx)).containsExactly(AnomalyKind.EMPTY_REMOTE_BLOCKS,
                AnomalyKind.LISTENER_WOULD_DIE_IN_PYTHON);
        assertThat(n.state.hasRemoteAlloc("tx-w13")).isFalse();
        assertThat(n.state.pythonListenerDead()).isTrue();
    }

    @Test
    void remote_blocks_for_a_terminal_transfer_is_ignored() {
        String rid = proxyRid("w14");
        Node n = ready(Node.of(writeProducer()), rid, "tx-w14");
        remoteBlocks(n, "tx-w14", 0, 21, 22);
        n.waitForSave();
        completeAll(n, only(n.all, Effect.PostWrite.class), true);
        assertThat(n.state.isTerminal("tx-w14")).isTrue();
        List<Effect> fx = remoteBlocks(n, "tx-w14", 0, 21, 22);
        assertThat(anomalyKinds(fx)).containsExactly(AnomalyKind.REMOTE_BLOCKS_FOR_TERMINAL);
        assertThat(n.state.hasRemoteAlloc("tx-w14")).isFalse();
        assertThat(n.state.pythonListenerDead()).isFalse();
    }

    @Test
    void remote_blocks_after_a_release_is_ignored() {
        Node n = ready(Node.of(writeProducer()), proxyRid("w15"), "tx-w15");
        n.release("tx-w15", 1); // the decode side aborted before its alloc
        assertThat(anomalyKinds(remoteBlocks(n, "tx-w15", 0, 21, 22)))
                .containsExactly(AnomalyKind.REMOTE_BLOCKS_FOR_TERMINAL);
    }

    @Test
    void write_done_received_by_a_producer_is_a_role_mismatch() {
        Node n = Node.of(writeProducer());
        List<Effect> fx = n.writeDone("tx-x");
        assertThat(anomalyKinds(fx)).containsExactly(AnomalyKind.NOTIFY_ROLE_MISMATCH,
                AnomalyKind.LISTENER_WOULD_DIE_IN_PYTHON);
    }

    @Test
    void frame_rejected_that_kills_the_python_listener_is_reported_once() {
        Node n = Node.of(writeProducer());
        List<Effect> first = n.rejected("non-UTF-8 completion", true);
        assertThat(anomalies(first, AnomalyKind.LISTENER_WOULD_DIE_IN_PYTHON)).hasSize(1);
        assertThat(n.state.pythonListenerDead()).isTrue();
        List<Effect> second = n.rejected("unknown type", true);
        assertThat(anomalies(second, AnomalyKind.LISTENER_WOULD_DIE_IN_PYTHON)).isEmpty();
        assertThat(n.state.pythonListenerDead()).isTrue();
    }

    @Test
    void frame_rejected_that_python_survives_leaves_the_listener_alive() {
        Node n = Node.of(writeProducer());
        assertThat(anomalyKinds(n.rejected("dropped by E-ack normaliser", false))).isEmpty();
        assertThat(n.state.pythonListenerDead()).isFalse();
    }

    @Test
    void listener_death_does_not_stop_the_java_listener() {
        // Python would lose every later notify on this rank; the reducer keeps processing them.
        String rid = proxyRid("w16");
        Node n = ready(Node.of(writeProducer()), rid, "tx-w16");
        n.rejected("delimiter frame", true);
        remoteBlocks(n, "tx-w16", 0, 21, 22);
        assertThat(n.state.hasRemoteAlloc("tx-w16")).isTrue();
    }

    // ------------------------------------------------------------------ READ producers never write

    @Test
    void seed_read_producer_ignores_the_write_mode_metadata_it_ships() {
        // seed-vs-newest #15: the seed stages saves in READ too; the READ worker ignores them.
        Node n = Node.of(producer(TransferMode.READ).behaviour(Behaviour.seed()));
        String rid = proxyRid("r1");
        n.producerRequest(rid, "tx-r1", 1, 2);
        List<Effect> step = n.stepAndLoad();
        assertThat(only(step, Effect.MetadataBuilt.class)).singleElement()
                .satisfies(m -> assertThat(m.reqsToSave()).hasSize(1));
        List<Effect> fx = new ArrayList<>(n.saveLayer(LAYER_0));
        fx.addAll(n.waitForSave());
        assertThat(only(fx, Effect.PostWrite.class)).isEmpty();
        assertThat(only(fx, Effect.StartHandshake.class)).isEmpty();
    }

    @Test
    void a_write_done_that_never_left_is_an_anomaly_of_its_request() {
        String rid = proxyRid("w-sendfail");
        Node n = ready(Node.of(writeProducer()), rid, "tx-sf");
        remoteBlocks(n, "tx-sf", 0, 21, 22);
        n.forward(LAYER_0, LAYER_1);
        completeAll(n, only(n.all, Effect.PostWrite.class), true);
        assertThat(only(n.all, Effect.SendWriteDone.class)).hasSize(1);
        List<Effect> fx = n.sendFailed("write_done", "tx-sf", "publisher queue full (4096 frames)");
        List<Effect.Anomaly> a = only(fx, Effect.Anomaly.class);
        assertThat(a).hasSize(1);
        assertThat(a.get(0).kind()).isEqualTo(AnomalyKind.NOTIFY_SEND_FAILED);
        assertThat(a.get(0).kind().bugClass()).isEqualTo(7);
        assertThat(a.get(0).requestId()).isEqualTo(rid);
        assertThat(a.get(0).transferId()).isEqualTo("tx-sf");
        assertThat(a.get(0).detail()).contains("write_done", "tcp://10.0.0.2:62005", "queue full");
        assertThat(only(fx, Effect.SendWriteDone.class)).as("no retry, as in Python").isEmpty();
    }

    @Test
    void a_failed_send_of_an_unknown_transfer_is_still_recorded() {
        Node n = Node.of(writeProducer());
        List<Effect.Anomaly> a = only(n.sendFailed("release", null, "no host"), Effect.Anomaly.class);
        assertThat(a).extracting(Effect.Anomaly::kind).containsExactly(AnomalyKind.NOTIFY_SEND_FAILED);
        assertThat(a.get(0).requestId()).isNull();
        assertThat(a.get(0).transferId()).isNull();
    }
}
