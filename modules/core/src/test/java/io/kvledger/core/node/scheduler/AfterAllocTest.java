package io.kvledger.core.node.scheduler;

import static io.kvledger.core.node.scheduler.SchedulerFixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.KvGroupSpec;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.ReqMeta;
import io.kvledger.core.model.RequestPhase;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code update_state_after_alloc} outside the WRITE decode notify: transfer-id synthesis (C.1),
 * mapping scope (C.2), save staging (5.3 step 1, A15, A16), READ receive staging and alignment
 * (5.5 step 2, A17 to A20, C.4, C.5).
 */
class AfterAllocTest {

    private static KvParams readDecodeParams(Object remoteBlockIds) {
        return params("do_remote_decode", false, "do_remote_prefill", true, "remote_engine_id", "10.0.0.1:6301",
                "remote_block_ids", remoteBlockIds, "transfer_id", "tx-read");
    }

    // ------------------------------------------------------------------ transfer ids

    @Test
    void absent_transfer_id_is_synthesized_mapped_and_written_back() {
        Node p = new Node(producer(TransferMode.READ));
        p.admit("req-1", 32, params("do_remote_decode", true));

        List<Effect> fx = p.alloc("req-1", one(1, 2), 0);

        assertThat(anomalies(fx)).contains(AnomalyKind.TRANSFER_ID_SYNTHESIZED);
        assertThat(p.state.transferIdMap()).containsExactly(java.util.Map.entry("sidecar-req-1", "req-1"));
        assertThat(p.state.liveParams("req-1").get("transfer_id")).isEqualTo("sidecar-req-1");
    }

    @Test
    void present_but_empty_transfer_id_maps_the_synthesized_id_and_keeps_the_empty_value() {
        Node p = new Node(producer(TransferMode.READ));
        p.admit("req-2", 32, params("do_remote_decode", true, "transfer_id", ""));

        p.alloc("req-2", one(1, 2), 0);

        assertThat(p.state.transferIdMap()).containsExactly(java.util.Map.entry("sidecar-req-2", "req-2"));
        assertThat(p.state.liveParams("req-2").get("transfer_id")).isEqualTo("");
    }

    @Test
    void every_request_with_non_empty_params_is_mapped_even_without_flags() {
        Node p = new Node(producer(TransferMode.WRITE));
        p.admit("plain", 32, params("transfer_id", "tx-plain"));
        p.admit("no-params", 32, null);
        p.admit("empty-params", 32, KvParams.empty());

        p.alloc("plain", one(1, 2), 0);
        p.alloc("no-params", one(3, 4), 0);
        List<Effect> fx = p.alloc("empty-params", one(5, 6), 0);

        assertThat(p.state.transferIdMap()).containsExactly(java.util.Map.entry("tx-plain", "plain"));
        assertThat(p.state.stagedSaves()).isEmpty();
        assertThat(anomalies(fx)).doesNotContain(AnomalyKind.TRANSFER_ID_SYNTHESIZED);
    }

    // ------------------------------------------------------------------ save staging

    @Test
    void write_producer_stages_save_with_a_params_snapshot() {
        Node p = new Node(producer(TransferMode.WRITE));
        KvParams kv = params("do_remote_decode", true, "transfer_id", "tx-s", "remote_dp_size", 2);
        p.admit("req-s", 32, kv);

        p.alloc("req-s", one(7, 8), 0);

        assertThat(p.state.stagedSaves()).containsOnlyKeys("req-s");
        assertThat(p.state.stagedSaves().get("req-s")).isEqualTo(one(7, 8));
        assertThat(p.state.paramSnapshots().get("req-s")).isEqualTo(kv);
        assertThat(p.state.phaseOf("req-s")).isEqualTo(RequestPhase.PREFILLING);
    }

    @Test
    void newest_read_producer_maps_but_does_not_stage_a_save() {
        Node p = new Node(producer(TransferMode.READ));
        p.admit("req-r", 32, params("do_remote_decode", true, "transfer_id", "tx-r"));

        p.alloc("req-r", one(7, 8), 0);

        assertThat(p.state.stagedSaves()).isEmpty();
        assertThat(p.state.paramSnapshots()).isEmpty();
        assertThat(p.state.transferIdMap()).containsEntry("tx-r", "req-r");
        assertThat(p.meta().reqsToSave()).isEmpty();
    }

    @Test
    void seed_stages_saves_in_read_mode_too() {
        Node p = new Node(producer(TransferMode.READ).behaviour(seed()));
        String rid = proxyRid("seed-read-save");
        p.admit(rid, 32, params("do_remote_decode", true, "transfer_id", "tx-sr", "remote_engine_id", null,
                "remote_block_ids", null));

        p.alloc(rid, one(7, 8), 0);

        assertThat(p.state.stagedSaves()).containsOnlyKeys(rid);
        assertThat(p.state.paramSnapshots()).containsOnlyKeys(rid);
        Effect.MetadataBuilt meta = p.meta();
        assertThat(meta.reqsToSave()).extracting(ReqMeta::requestId).containsExactly(rid);
        assertThat(meta.reqsToSave().get(0).remoteHost()).isEqualTo(DECODE.host());
    }

    @Test
    void newest_saves_every_group_and_seed_saves_group_zero_flat() {
        BlockGroups twoGroups = groups(a(1, 2), a(3, 4));
        Node n = new Node(producer(TransferMode.WRITE));
        Node s = new Node(producer(TransferMode.WRITE).behaviour(seed()));
        n.admit("r", 32, params("do_remote_decode", true, "transfer_id", "t"));
        s.admit("r", 32, params("do_remote_decode", true, "transfer_id", "t"));

        n.alloc("r", twoGroups, 0);
        s.alloc("r", twoGroups, 0);

        assertThat(n.state.stagedSaves().get("r")).isEqualTo(twoGroups);
        assertThat(s.state.stagedSaves().get("r")).isEqualTo(one(1, 2));
    }

    // ------------------------------------------------------------------ READ receive staging

    private static Effect.MetadataBuilt readAlloc(Node d, String rid, Object remote, BlockGroups local, int ext) {
        d.admit(rid, 64, readDecodeParams(remote));
        d.match(rid, 0);
        d.alloc(rid, local, ext);
        return d.meta();
    }

    @Test
    void read_local_shorter_takes_the_remote_tail() {
        Node d = new Node(consumer(TransferMode.READ));
        String rid = proxyRid("shorter");

        Effect.MetadataBuilt meta = readAlloc(d, rid, grouped(a(10, 11, 12, 13)), one(1, 2), 31);

        ReqMeta m = meta.reqsToRecv().get(0);
        assertThat(m.localBlockIds()).isEqualTo(one(1, 2));
        assertThat(m.remoteBlockIds()).isEqualTo(one(12, 13));
        assertThat(d.state.phaseOf(rid)).isEqualTo(RequestPhase.RECV_STAGED);
        assertThat(d.state.liveParams(rid).get("do_remote_prefill")).isEqualTo(false);
    }

    @Test
    void read_local_longer_within_tolerance_cuts_local() {
        Node d = new Node(consumer(TransferMode.READ)); // tolerance ceil(1 / 16) = 1 block
        String rid = proxyRid("longer");

        Effect.MetadataBuilt meta = readAlloc(d, rid, grouped(a(10, 11)), one(1, 2, 3), 31);

        ReqMeta m = meta.reqsToRecv().get(0);
        assertThat(m.localBlockIds()).isEqualTo(one(1, 2));
        assertThat(m.remoteBlockIds()).isEqualTo(one(10, 11));
    }

    @Test
    void read_tolerance_grows_with_lookahead_tokens() {
        Node d = new Node(consumer(TransferMode.READ).lookaheadTokens(16)); // ceil(17 / 16) = 2 blocks
        String rid = proxyRid("lookahead");

        Effect.MetadataBuilt meta = readAlloc(d, rid, grouped(a(10, 11)), one(1, 2, 3, 4), 31);

        assertThat(meta.reqsToRecv()).hasSize(1);
        assertThat(meta.reqsToRecv().get(0).localBlockIds()).isEqualTo(one(1, 2));
    }

    @Test
    void read_local_longer_beyond_tolerance_fails_and_keeps_do_remote_prefill() {
        Node d = new Node(consumer(TransferMode.READ));
        String rid = proxyRid("beyond");
        d.admit(rid, 64, readDecodeParams(grouped(a(10, 11))));

        List<Effect> fx = d.alloc(rid, one(1, 2, 3, 4), 31);

        assertThat(anomalies(fx)).contains(AnomalyKind.READ_ALIGNMENT_FAILED);
        assertThat(d.state.stagedRecvs()).isEmpty();
        assertThat(d.state.paramSnapshots()).isEmpty();
        assertThat(d.state.liveParams(rid).get("do_remote_prefill")).isEqualTo(true);
    }

    @Test
    void seed_asserts_local_not_longer_than_remote() {
        Node d = new Node(consumer(TransferMode.READ).behaviour(seed()));
        String rid = proxyRid("seed-assert");
        d.admit(rid, 64, readDecodeParams(ids(10, 11)));

        List<Effect> fx = d.alloc(rid, one(1, 2, 3), 31);

        assertThat(anomalies(fx)).contains(AnomalyKind.READ_ALIGNMENT_FAILED);
        assertThat(d.state.stagedRecvs()).isEmpty();
        assertThat(d.state.liveParams(rid).get("do_remote_prefill")).isEqualTo(true);
    }

    @Test
    void seed_local_shorter_replaces_local_with_the_remote_tail() {
        Node d = new Node(consumer(TransferMode.READ).behaviour(seed()));
        String rid = proxyRid("seed-shorter");

        Effect.MetadataBuilt meta = readAlloc(d, rid, ids(10, 11, 12, 13), one(1, 2), 31);

        ReqMeta m = meta.reqsToRecv().get(0);
        assertThat(m.localBlockIds()).isEqualTo(one(12, 13));
        assertThat(m.remoteBlockIds()).isEqualTo(one(10, 11, 12, 13));
    }

    @Test
    void seed_read_recv_counts_the_groups_of_a_newest_producers_grouped_remote_block_ids() {
        // seed-vs-newest #24: the seed takes a newest prefill's [[ids]] as it is, so
        // len(remote_block_ids) is the number of groups: a full prefix hit and a local list of one
        // block pass the assert and the receive is staged with the grouped remote ids
        Node hit = new Node(consumer(TransferMode.READ).behaviour(seed()));
        Effect.MetadataBuilt full = readAlloc(hit, proxyRid("seed-grouped-hit"), grouped(a(10, 11, 12)), one(1, 2, 3), 0);
        assertThat(full.reqsToRecv()).singleElement().satisfies(m -> {
            assertThat(m.localBlockIds().first()).isEmpty();
            assertThat(m.remoteBlockIds()).isEqualTo(groups(a(10, 11, 12)));
        });

        Node one = new Node(consumer(TransferMode.READ).behaviour(seed()));
        Effect.MetadataBuilt single = readAlloc(one, proxyRid("seed-grouped-one"), grouped(a(10, 11, 12)), one(7), 31);
        assertThat(single.reqsToRecv()).singleElement().satisfies(m -> {
            assertThat(m.localBlockIds()).isEqualTo(one(7)); // len(local) == len(remote) == 1: kept
            assertThat(m.remoteBlockIds()).isEqualTo(groups(a(10, 11, 12)));
        });

        Node two = new Node(consumer(TransferMode.READ).behaviour(seed()));
        String rid = proxyRid("seed-grouped-two");
        two.admit(rid, 64, readDecodeParams(grouped(a(10, 11, 12))));
        List<Effect> fx = two.alloc(rid, one(1, 2), 31); // assert 2 <= 1 fails
        assertThat(anomalies(fx)).contains(AnomalyKind.READ_ALIGNMENT_FAILED);
        assertThat(two.state.stagedRecvs()).isEmpty();
        assertThat(two.state.liveParams(rid).get("do_remote_prefill")).isEqualTo(true);
    }

    @Test
    void newest_full_prefix_hit_stages_one_empty_list_per_remote_group() {
        Node d = new Node(consumer(TransferMode.READ).hmaEnabled(true)
                .groups(List.of(KvGroupSpec.fullAttention(16), KvGroupSpec.slidingWindow(16, 64))));
        String rid = proxyRid("full-hit");
        d.admit(rid, 64, readDecodeParams(grouped(a(10, 11), a(12))));

        d.alloc(rid, groups(a(1, 2), a(3)), 0);

        assertThat(d.state.stagedRecvs().get(rid)).isEqualTo(BlockGroups.empty(2));
        assertThat(d.state.liveParams(rid).get("do_remote_prefill")).isEqualTo(false);
    }

    @Test
    void seed_full_prefix_hit_stages_an_empty_flat_list() {
        Node d = new Node(consumer(TransferMode.READ).behaviour(seed()));
        String rid = proxyRid("seed-full-hit");
        d.admit(rid, 64, readDecodeParams(ids(10, 11)));

        d.alloc(rid, one(1, 2), 0);

        BlockGroups staged = d.state.stagedRecvs().get(rid);
        assertThat(staged.size()).isEqualTo(1);
        assertThat(staged.first()).isEmpty();
    }

    @Test
    void read_without_remote_engine_id_warns_computes_locally_and_clears_the_flag() {
        Node d = new Node(consumer(TransferMode.READ));
        String rid = proxyRid("invalid");
        d.admit(rid, 64, params("do_remote_prefill", true, "remote_block_ids", grouped(a(10)), "transfer_id", "t"));

        List<Effect> fx = d.alloc(rid, one(1), 31);

        assertThat(anomalies(fx)).contains(AnomalyKind.READ_INVALID_PARAMS);
        assertThat(d.state.stagedRecvs()).isEmpty();
        assertThat(d.state.liveParams(rid).get("do_remote_prefill")).isEqualTo(false);
    }

    @Test
    void read_without_remote_block_ids_is_silent_upstream_and_kvledgers_own_info_record() {
        // `if remote_block_ids := params.get(...)` fails quietly: no warning in seed or newest.
        for (var b : List.of(seed(), io.kvledger.core.config.Behaviour.newest())) {
            for (KvParams kv : List.of(
                    params("do_remote_prefill", true, "remote_engine_id", "e", "remote_block_ids", List.of(), "transfer_id", "t"),
                    params("do_remote_prefill", true, "remote_engine_id", "e", "remote_block_ids", null, "transfer_id", "t"),
                    params("do_remote_prefill", true, "remote_engine_id", "e", "transfer_id", "t"))) {
                Node d = new Node(consumer(TransferMode.READ).behaviour(b));
                String rid = proxyRid("no-blocks");
                d.admit(rid, 64, kv);

                List<Effect> fx = d.alloc(rid, one(1), 31);

                Effect.Anomaly a = single(fx, Effect.Anomaly.class);
                assertThat(a.kind()).isEqualTo(AnomalyKind.READ_RECV_WITHOUT_REMOTE_BLOCKS);
                assertThat(a.kind().severity()).isEqualTo(AnomalyKind.Severity.INFO);
                assertThat(a.kind().upstreamSilent()).isTrue();
                assertThat(a.kind().label()).isEqualTo("INFO, kvledger's own");
                assertThat(d.state.stagedRecvs()).isEmpty();
                assertThat(d.state.liveParams(rid).get("do_remote_prefill")).isEqualTo(false);
            }
        }
    }

    @Test
    void read_with_remote_block_ids_but_no_remote_engine_id_warns_invalid_params() {
        Node d = new Node(consumer(TransferMode.READ));
        String rid = proxyRid("no-eid");
        d.admit(rid, 64, params("do_remote_prefill", true, "remote_block_ids", grouped(a(10, 11)), "transfer_id", "t"));

        List<Effect> fx = d.alloc(rid, one(1, 2), 31);

        assertThat(anomalies(fx)).containsExactly(AnomalyKind.READ_INVALID_PARAMS);
        assertThat(AnomalyKind.READ_INVALID_PARAMS.upstreamSilent()).isFalse();
        assertThat(AnomalyKind.READ_INVALID_PARAMS.severity()).isEqualTo(AnomalyKind.Severity.WARNING);
        assertThat(d.state.stagedRecvs()).isEmpty();
    }

    @Test
    void read_needs_only_the_presence_of_remote_engine_id() {
        // C.5: a null remote_engine_id passes the gate.
        Node d = new Node(consumer(TransferMode.READ));
        String rid = proxyRid("null-eid");
        d.admit(rid, 64, params("do_remote_prefill", true, "remote_engine_id", null,
                "remote_block_ids", grouped(a(10, 11)), "transfer_id", "t"));

        List<Effect> fx = d.alloc(rid, one(1, 2), 31);

        assertThat(anomalies(fx)).doesNotContain(AnomalyKind.READ_INVALID_PARAMS);
        assertThat(d.state.stagedRecvs()).containsOnlyKeys(rid);
    }

    @Test
    void newest_read_snapshot_carries_the_aligned_remote_groups() {
        Node d = new Node(consumer(TransferMode.READ));
        String rid = proxyRid("snap");
        d.admit(rid, 64, readDecodeParams(grouped(a(10, 11, 12))));

        d.alloc(rid, one(1), 31);

        assertThat(d.state.paramSnapshots().get(rid).get("remote_block_ids")).isEqualTo(grouped(a(12)));
        // the live params keep P's whole list
        assertThat(d.state.liveParams(rid).get("remote_block_ids")).isEqualTo(grouped(a(10, 11, 12)));
    }

    @Test
    void newest_read_consumer_refuses_a_seed_producers_flat_block_list() {
        // A24: wire-incompatible across versions.
        Node d = new Node(consumer(TransferMode.READ));
        String rid = proxyRid("flat-from-seed");
        d.admit(rid, 64, readDecodeParams(ids(10, 11)));

        List<Effect> fx = d.alloc(rid, one(1, 2), 31);

        assertThat(anomalies(fx)).contains(AnomalyKind.READ_ALIGNMENT_FAILED);
        assertThat(d.state.stagedRecvs()).isEmpty();
    }
}
