package io.kvledger.core.node.scheduler;

import io.kvledger.core.model.TransferId;
import static io.kvledger.core.node.scheduler.SchedulerFixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.KvGroupSpec;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.ReqMeta;
import io.kvledger.core.model.RequestPhase;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@code build_connector_meta}: protocol 5.3 step 2, 5.5 step 3, seed-vs-newest A21, A22, C.12, C.13. */
class ConnectorMetadataTest {

    private static KvParams saveParams(String tid) {
        // what the proxy hands a prefill leg: remote_engine_id and remote_block_ids present, None
        return params("do_remote_decode", true, "transfer_id", tid, "remote_host", "10.0.0.2",
                "remote_handshake_port", 7301, "remote_notify_port", 62005, "remote_engine_id", null,
                "remote_block_ids", null);
    }

    @Test
    void pending_save_keeps_its_blocks_and_snapshot_across_chunked_prefill_steps() {
        Node p = new Node(producer(TransferMode.WRITE));
        String rid = proxyRid("pending");
        p.admit(rid, 100, saveParams("tx-p")); // 7 blocks of 16
        p.alloc(rid, one(0, 1, 2), 0);

        p.meta();
        assertThat(p.state.pendingSaves()).containsEntry(rid, one(0, 1, 2));
        assertThat(p.state.paramSnapshots()).containsOnlyKeys(rid);
        assertThat(p.state.phaseOf(rid)).isEqualTo(RequestPhase.PENDING_SAVE);

        Effect.MetadataBuilt second = p.meta(cached(rid, one(3, 4, 5)));
        assertThat(second.reqsToSave()).isEmpty();
        assertThat(p.state.pendingSaves()).containsEntry(rid, one(0, 1, 2, 3, 4, 5));
        assertThat(p.state.paramSnapshots()).containsOnlyKeys(rid);

        Effect.MetadataBuilt last = p.meta(cached(rid, one(6)));
        assertThat(last.reqsToSave()).extracting(ReqMeta::localBlockIds).containsExactly(one(0, 1, 2, 3, 4, 5, 6));
        assertThat(p.state.pendingSaves()).isEmpty();
        assertThat(p.state.paramSnapshots()).isEmpty();
    }

    @Test
    void chunk_is_final_exactly_when_covered_reaches_the_prompt() {
        Node p = new Node(producer(TransferMode.WRITE));
        p.admit("exact", 32, saveParams("tx-e"));
        p.admit("over", 33, saveParams("tx-o"));
        p.alloc("exact", one(1, 2), 0);
        p.alloc("over", one(3, 4), 0);

        Effect.MetadataBuilt m = p.meta();

        assertThat(m.reqsToSave()).extracting(ReqMeta::requestId).containsExactly("exact");
        assertThat(p.state.pendingSaves()).containsOnlyKeys("over");
    }

    @Test
    void pending_save_skips_cached_requests_it_does_not_know() {
        Node p = new Node(producer(TransferMode.WRITE));
        p.admit("disagg", 64, saveParams("tx-d"));
        p.admit("plain", 64, null);
        p.alloc("disagg", one(1, 2), 0);
        p.alloc("plain", one(9), 0);
        p.meta();

        List<Effect> fx = p.step(cached("plain", one(10, 11)), cached("disagg", one(3, 4)));

        Effect.MetadataBuilt m = single(fx, Effect.MetadataBuilt.class);
        assertThat(m.reqsToSave()).extracting(ReqMeta::requestId).containsExactly("disagg");
        assertThat(only(fx, Effect.Anomaly.class)).isEmpty();
    }

    @Test
    void cached_request_without_new_block_ids_does_not_advance_the_pending_save() {
        Node p = new Node(producer(TransferMode.WRITE));
        p.admit("r", 64, saveParams("tx"));
        p.alloc("r", one(1, 2), 0);
        p.meta();

        Effect.MetadataBuilt m = p.meta(cached("r", null));

        assertThat(m.reqsToSave()).isEmpty();
        assertThat(p.state.pendingSaves()).containsEntry("r", one(1, 2));
    }

    @Test
    void final_chunk_uses_the_snapshot_even_after_the_live_params_changed() {
        Node p = new Node(producer(TransferMode.WRITE));
        p.admit("r", 64, saveParams("tx-snap"));
        p.alloc("r", one(1, 2), 0);
        p.meta();
        // The live params are replaced (re-admission stands in for a params rewrite, #39276 Fix A).
        p.admit("r", 64, params("transfer_id", "tx-other", "remote_host", "10.9.9.9",
                "remote_handshake_port", 1, "remote_notify_port", 2));

        Effect.MetadataBuilt m = p.meta(cached("r", one(3, 4)));

        ReqMeta save = m.reqsToSave().get(0);
        assertThat(save.transferId()).isEqualTo(TransferId.of("tx-snap"));
        assertThat(save.remoteHost()).isEqualTo("10.0.0.2");
        assertThat(save.remoteHandshakePort()).isEqualTo(7301);
        assertThat(save.remoteNotifyPort()).isEqualTo(62005);
    }

    @Test
    void snapshots_are_reclaimed_after_the_step_that_ships_them() {
        Node p = new Node(producer(TransferMode.WRITE));
        p.admit("save", 32, saveParams("tx-s"));
        p.alloc("save", one(1, 2), 0);
        Node d = new Node(consumer(TransferMode.READ));
        String rid = proxyRid("recv");
        d.admit(rid, 32, params("do_remote_prefill", true, "remote_engine_id", "e",
                "remote_block_ids", grouped(a(5, 6)), "transfer_id", "tx-r"));
        d.alloc(rid, one(1, 2), 31);
        assertThat(p.state.paramSnapshots()).isNotEmpty();
        assertThat(d.state.paramSnapshots()).isNotEmpty();

        assertThat(p.meta().reqsToSave()).hasSize(1);
        assertThat(d.meta().reqsToRecv()).hasSize(1);

        assertThat(p.state.paramSnapshots()).isEmpty();
        assertThat(d.state.paramSnapshots()).isEmpty();
        assertThat(p.state.stagedSaves()).isEmpty();
        assertThat(d.state.stagedRecvs()).isEmpty();
        assertThat(p.meta().reqsToSave()).isEmpty();
        assertThat(d.meta().reqsToRecv()).isEmpty();
    }

    @Test
    void reqs_to_send_holds_only_this_steps_deferred_frees() {
        Node p = new Node(producer(TransferMode.READ));
        p.admit("r", 32, params("do_remote_decode", true, "transfer_id", "tx"));
        p.alloc("r", one(1, 2), 0);
        p.finish("r", FinishStatus.FINISHED_LENGTH_CAPPED, one(1, 2));

        assertThat(p.meta().reqsToSend()).containsExactly("r");
        assertThat(p.meta().reqsToSend()).isEmpty();
    }

    @Test
    void metadata_hands_the_worker_the_whole_transfer_id_map() {
        Node p = new Node(producer(TransferMode.READ));
        p.admit("a", 32, params("transfer_id", "ta"));
        p.admit("b", 32, params("do_remote_decode", true, "transfer_id", "tb"));
        p.alloc("a", one(1), 0);
        p.alloc("b", one(2), 0);

        assertThat(p.meta().mappingSize()).isEqualTo(2);
    }

    @Test
    void recv_meta_without_a_resolvable_peer_address_is_a_value_error() {
        Node d = new Node(consumer(TransferMode.READ));
        d.admit("cmpl-plain-0-deadbeef", 32, params("do_remote_prefill", true, "remote_engine_id", "e",
                "remote_block_ids", grouped(a(5, 6)), "transfer_id", "tx"));
        d.alloc("cmpl-plain-0-deadbeef", one(1, 2), 31);

        List<Effect> fx = d.step();

        assertThat(single(fx, Effect.MetadataBuilt.class).reqsToRecv()).isEmpty();
        assertThat(anomalies(fx)).contains(AnomalyKind.META_ADDRESS_UNRESOLVED);
    }

    @Test
    void newest_appends_pending_blocks_per_group_and_seed_appends_group_zero() {
        KvParams kv = saveParams("tx-g");
        Node n = new Node(producer(TransferMode.WRITE));
        Node s = new Node(producer(TransferMode.WRITE).behaviour(seed()));
        for (Node x : List.of(n, s)) {
            x.admit("r", 64, kv);
            x.alloc("r", groups(a(1, 2), a(11)), 0);
            x.meta();
        }

        ReqMeta newest = n.meta(cached("r", groups(a(3, 4), a(12)))).reqsToSave().get(0);
        ReqMeta seedMeta = s.meta(cached("r", groups(a(3, 4), a(12)))).reqsToSave().get(0);

        assertThat(newest.localBlockIds()).isEqualTo(groups(a(1, 2, 3, 4), a(11, 12)));
        assertThat(seedMeta.localBlockIds()).isEqualTo(one(1, 2, 3, 4));
    }

    @Test
    void newest_coverage_uses_the_full_attention_groups_own_block_size() {
        // A22: cache block size 16, the full-attention group uses 32-token blocks.
        List<KvGroupSpec> g = List.of(KvGroupSpec.fullAttention(32));
        Node n = new Node(producer(TransferMode.WRITE).cacheBlockSize(16).groups(g));
        Node s = new Node(producer(TransferMode.WRITE).cacheBlockSize(16).groups(g).behaviour(seed()));
        for (Node x : List.of(n, s)) {
            x.admit("r", 64, saveParams("tx"));
            x.alloc("r", one(1, 2), 0);
        }

        assertThat(n.meta().reqsToSave()).hasSize(1); // 2 x 32 >= 64
        assertThat(s.meta().reqsToSave()).isEmpty(); // 2 x 16 < 64
        assertThat(s.state.pendingSaves()).containsOnlyKeys("r");
    }

    @Test
    void seed_read_producer_chunked_save_stays_pending_and_leaks() {
        Node s = new Node(producer(TransferMode.READ).behaviour(seed()));
        String rid = proxyRid("leak");
        s.admit(rid, 64, params("do_remote_decode", true, "transfer_id", "tx-l"));
        s.alloc(rid, one(1, 2), 0);
        s.meta();
        s.meta(cached(rid, one(3, 4))); // the finaliser runs only in WRITE

        List<Effect> fx = s.finish(rid, FinishStatus.FINISHED_LENGTH_CAPPED, one(1, 2, 3, 4));

        assertThat(s.state.pendingSaves()).containsOnlyKeys(rid);
        assertThat(s.state.paramSnapshots()).containsOnlyKeys(rid);
        assertThat(anomalies(fx)).contains(AnomalyKind.PENDING_SAVE_LEAK);
    }

    private static List<String> leakDetails(List<Effect> fx) {
        return fx.stream().filter(e -> e instanceof Effect.Anomaly a && a.kind() == AnomalyKind.PENDING_SAVE_LEAK)
                .map(e -> ((Effect.Anomaly) e).detail()).toList();
    }

    @Test
    void seed_read_chunked_prompt_pending_save_leak_is_the_seed_connectors_own() {
        // seed-vs-newest #15: the seed's READ producer stages the save and never finalizes it; the
        // anomaly (and the mapping-leak finding built from it) says the leak is the seed's, not kvledger's
        Node s = new Node(producer(TransferMode.READ).behaviour(seed()));
        String rid = proxyRid("leak15");
        s.admit(rid, 64, params("do_remote_decode", true, "transfer_id", "tx-15"));
        s.alloc(rid, one(1, 2), 0);
        s.meta();

        List<Effect> fx = s.finish(rid, FinishStatus.FINISHED_LENGTH_CAPPED, one(1, 2));

        assertThat(leakDetails(fx)).singleElement().asString()
                .contains("a real leak of the seed connector, which kvledger reproduces", "seed-vs-newest #15");
    }

    @Test
    void write_pending_save_of_a_request_finished_mid_prefill_is_the_connectors_own_leak() {
        // MoRIIO finalizes a pending save only for a request scheduled again; an aborted one is not
        Node p = new Node(producer(TransferMode.WRITE));
        String rid = proxyRid("abortmid");
        p.admit(rid, 100, saveParams("tx-a"));
        p.alloc(rid, one(0, 1, 2), 0);
        p.meta();

        List<Effect> fx = p.finish(rid, FinishStatus.FINISHED_ABORTED, one(0, 1, 2));

        assertThat(leakDetails(fx)).singleElement().asString()
                .contains("a real leak of the connector, which kvledger reproduces").doesNotContain("#15");
    }
}
