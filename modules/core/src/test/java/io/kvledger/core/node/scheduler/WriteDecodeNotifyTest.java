package io.kvledger.core.node.scheduler;

import io.kvledger.core.model.TransferId;
import static io.kvledger.core.node.scheduler.SchedulerFixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.RequestPhase;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The WRITE consumer's {@code remote_blocks} notify from {@code update_state_after_alloc}:
 * protocol 5.4 step 2, 2.1, 3.3.1 and seed-vs-newest C.1, C.4, C.6 to C.8 (identical in seed and
 * newest).
 */
class WriteDecodeNotifyTest {

    private static KvParams decodeLeg(Object... extra) {
        KvParams kv = params("do_remote_decode", false, "do_remote_prefill", true, "remote_engine_id", null,
                "remote_block_ids", null, "transfer_id", "tx-n");
        for (int i = 0; i < extra.length; i += 2) {
            kv.put((String) extra[i], extra[i + 1]);
        }
        return kv;
    }

    private static NodeConfig.Builder d(int dpRank, int dpSize, int dpLocal, int tpSize) {
        return consumer(TransferMode.WRITE).dp(dpRank, dpSize, dpLocal).tp(0, tpSize);
    }

    /** Admit, match, allocate {1, 2, 3} with external tokens; returns the alloc effects. */
    private static List<Effect> allocate(Node n, String rid, KvParams kv, int external) {
        n.admit(rid, 48, kv);
        n.match(rid, 0);
        return n.alloc(rid, one(1, 2, 3), external);
    }

    private static List<Effect.SendRemoteBlocks> sends(List<Effect> fx) {
        return only(fx, Effect.SendRemoteBlocks.class);
    }

    @Test
    void notify_goes_to_every_local_tp_rank_with_the_allocated_blocks() {
        Node n = new Node(d(0, 1, 1, 2));
        String rid = proxyRid("basic");

        List<Effect> fx = allocate(n, rid, decodeLeg(), 48);

        assertThat(sends(fx)).containsExactly(
                new Effect.SendRemoteBlocks("10.0.0.1", 61005, rid, TransferId.of("tx-n"), boxed(1, 2, 3), 0),
                new Effect.SendRemoteBlocks("10.0.0.1", 61006, rid, TransferId.of("tx-n"), boxed(1, 2, 3), 0));
        assertThat(n.state.phaseOf(rid)).isEqualTo(RequestPhase.WAITING_FOR_REMOTE_KVS);
        assertThat(n.state.liveParams(rid).get("do_remote_prefill")).isEqualTo(false);
    }

    @Test
    void is_request_leader_true_wins_over_a_mismatching_override() {
        Node n = new Node(d(1, 2, 2, 1));
        String rid = proxyRid("leader");

        List<Effect> fx = allocate(n, rid, decodeLeg("is_request_leader", true, "remote_dp_rank_override", true,
                "remote_dp_rank", 0), 48);

        assertThat(sends(fx)).hasSize(1);
    }

    @Test
    void is_request_leader_false_suppresses_the_notify_on_a_matching_master_rank() {
        Node n = new Node(d(0, 2, 2, 1));
        String rid = proxyRid("not-leader");

        List<Effect> fx = allocate(n, rid, decodeLeg("is_request_leader", false, "remote_dp_rank_override", true,
                "remote_dp_rank", 0), 48);

        assertThat(sends(fx)).isEmpty();
        // C.4: cleared on ranks that do not own the notify too
        assertThat(n.state.liveParams(rid).get("do_remote_prefill")).isEqualTo(false);
    }

    @Test
    void is_request_leader_none_falls_through_to_the_override() {
        Node n = new Node(d(1, 2, 2, 1));
        String rid = proxyRid("leader-none");

        List<Effect> fx = allocate(n, rid, decodeLeg("is_request_leader", null, "remote_dp_rank_override", true,
                "remote_dp_rank", 1), 48);

        assertThat(sends(fx)).hasSize(1);
    }

    @Test
    void override_notifies_only_on_the_rank_equal_to_remote_dp_rank() {
        Node owner = new Node(d(1, 2, 2, 1));
        Node other = new Node(d(0, 2, 2, 1)); // the kv master, but the override decides
        String rid = proxyRid("override");
        KvParams kv = decodeLeg("remote_dp_rank_override", true, "remote_dp_rank", 1);

        assertThat(sends(allocate(owner, rid, kv, 48))).hasSize(1);
        assertThat(sends(allocate(other, rid, kv, 48))).isEmpty();
    }

    @Test
    void override_without_remote_dp_rank_means_rank_zero() {
        Node rank0 = new Node(d(0, 2, 2, 1));
        Node rank1 = new Node(d(1, 2, 2, 1));
        String rid = proxyRid("override-default");
        KvParams kv = decodeLeg("remote_dp_rank_override", true);

        assertThat(sends(allocate(rank0, rid, kv, 48))).hasSize(1);
        assertThat(sends(allocate(rank1, rid, kv, 48))).isEmpty();
    }

    @Test
    void a_remote_dp_rank_that_is_no_number_raises_in_the_port_arithmetic_of_a_notifying_rank() {
        for (Object rank : new Object[] {null, "1"}) {
            Node n = new Node(d(0, 1, 1, 1));
            String rid = proxyRid("rank-" + rank);

            List<Effect> fx = allocate(n, rid, decodeLeg("remote_dp_rank", rank), 48);

            // the kv master notifies; fold_local_rank / get_port_offset raise TypeError before any send
            assertThat(sends(fx)).isEmpty();
            assertThat(anomalies(fx)).contains(AnomalyKind.PARAM_NOT_AN_INT);
            assertThat(n.state.liveParams(rid).get("do_remote_prefill")).isEqualTo(true);
        }
    }

    @Test
    void a_remote_dp_rank_that_is_no_number_never_equals_the_own_rank_under_the_override() {
        Node rank0 = new Node(d(0, 2, 2, 1));
        String rid = proxyRid("override-none");

        List<Effect> fx = allocate(rank0, rid, decodeLeg("remote_dp_rank_override", true, "remote_dp_rank", null), 48);

        // 0 == None is False: no notify, nothing raised
        assertThat(sends(fx)).isEmpty();
        assertThat(anomalies(fx)).doesNotContain(AnomalyKind.PARAM_NOT_AN_INT);
        assertThat(rank0.state.liveParams(rid).get("do_remote_prefill")).isEqualTo(false);
    }

    @Test
    void without_leader_or_override_only_the_kv_master_pod_notifies() {
        String rid = proxyRid("master");
        Node pod0 = new Node(d(1, 4, 2, 1));
        Node pod1 = new Node(d(2, 4, 2, 1));
        Node external = new Node(d(3, 4, 0, 1)); // dp_size_local 0 counts as pod 0

        assertThat(sends(allocate(pod0, rid, decodeLeg(), 48))).hasSize(1);
        assertThat(sends(allocate(pod1, rid, decodeLeg(), 48))).isEmpty();
        assertThat(sends(allocate(external, rid, decodeLeg(), 48))).hasSize(1);
    }

    @Test
    void port_uses_the_folded_remote_rank_and_host_comes_from_remote_hosts() {
        Node n = new Node(d(5, 8, 4, 2));
        String rid = proxyRid("multipod");

        List<Effect> fx = allocate(n, rid, decodeLeg("remote_dp_rank_override", true, "remote_dp_rank", 5,
                "remote_dp_size", 8, "remote_dp_size_local", 4, "remote_hosts", List.of("10.1.0.1", "10.1.0.2")), 48);

        assertThat(sends(fx)).extracting(Effect.SendRemoteBlocks::host, Effect.SendRemoteBlocks::port)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("10.1.0.2", 61006),
                        org.assertj.core.groups.Tuple.tuple("10.1.0.2", 61007));
    }

    @Test
    void without_remote_dp_size_local_the_rank_is_not_folded_and_remote_hosts_is_ignored() {
        Node n = new Node(d(5, 8, 8, 1));
        String rid = proxyRid("unfolded");

        List<Effect> fx = allocate(n, rid, decodeLeg("remote_dp_rank_override", true, "remote_dp_rank", 5,
                "remote_dp_size", 8, "remote_hosts", List.of("10.1.0.1", "10.1.0.2")), 48);

        assertThat(sends(fx)).extracting(Effect.SendRemoteBlocks::host, Effect.SendRemoteBlocks::port)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("10.0.0.1", 61010));
    }

    @Test
    void remote_hosts_index_out_of_range_keeps_the_request_id_host() {
        Node n = new Node(d(5, 8, 8, 1));
        String rid = proxyRid("out-of-range");

        List<Effect> fx = allocate(n, rid, decodeLeg("remote_dp_rank_override", true, "remote_dp_rank", 5,
                "remote_dp_size", 8, "remote_dp_size_local", 2, "remote_hosts", List.of("10.1.0.1", "10.1.0.2")), 48);

        assertThat(sends(fx)).extracting(Effect.SendRemoteBlocks::host, Effect.SendRemoteBlocks::port)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("10.0.0.1", 61006));
    }

    @Test
    void no_external_tokens_sends_an_empty_block_notify_list() {
        Node n = new Node(d(0, 1, 1, 1));
        String rid = proxyRid("no-external");

        List<Effect> fx = allocate(n, rid, decodeLeg(), 0);

        assertThat(single(fx, Effect.SendRemoteBlocks.class).blockNotifyList()).isEmpty();
    }

    @Test
    void decode_rank_is_the_own_global_rank_not_the_folded_one() {
        Node n = new Node(d(6, 8, 4, 1));
        String rid = proxyRid("global-rank");

        List<Effect> fx = allocate(n, rid, decodeLeg("remote_dp_rank_override", true, "remote_dp_rank", 6,
                "remote_dp_size", 8, "remote_dp_size_local", 4), 48);

        Effect.SendRemoteBlocks s = single(fx, Effect.SendRemoteBlocks.class);
        assertThat(s.decodeRank()).isEqualTo(6);
        assertThat(s.port()).isEqualTo(61005 + 2);
    }

    @Test
    void request_id_address_wins_over_explicit_params() {
        Node n = new Node(d(0, 1, 1, 1));
        String rid = proxyRid("rid-first");

        List<Effect> fx = allocate(n, rid, decodeLeg("remote_host", "10.9.9.9", "remote_notify_port", 7000), 48);

        Effect.SendRemoteBlocks s = single(fx, Effect.SendRemoteBlocks.class);
        assertThat(s.host()).isEqualTo("10.0.0.1");
        assertThat(s.port()).isEqualTo(61005);
    }

    @Test
    void explicit_params_are_the_fallback_address() {
        Node n = new Node(d(0, 1, 1, 1));

        List<Effect> fx = allocate(n, "cmpl-plain-0-deadbeef",
                decodeLeg("remote_host", "10.9.9.9", "remote_notify_port", "7000"), 48);

        Effect.SendRemoteBlocks s = single(fx, Effect.SendRemoteBlocks.class);
        assertThat(s.host()).isEqualTo("10.9.9.9");
        assertThat(s.port()).isEqualTo(7000);
    }

    @Test
    void no_address_anywhere_is_a_value_error_and_keeps_do_remote_prefill() {
        Node n = new Node(d(0, 1, 1, 1));

        List<Effect> fx = allocate(n, "cmpl-plain-0-deadbeef", decodeLeg("remote_notify_port", 7000), 48);

        assertThat(sends(fx)).isEmpty();
        assertThat(anomalies(fx)).contains(AnomalyKind.NOTIFY_ADDRESS_UNRESOLVED);
        assertThat(n.state.liveParams("cmpl-plain-0-deadbeef").get("do_remote_prefill")).isEqualTo(true);
    }

    @Test
    void unpinned_rank_with_remote_dp_size_above_one_warns_and_uses_rank_zero() {
        Node n = new Node(d(0, 1, 1, 1));
        String rid = proxyRid("unpinned");

        List<Effect> fx = allocate(n, rid, decodeLeg("remote_dp_size", 4), 48);

        assertThat(anomalies(fx)).contains(AnomalyKind.UNPINNED_DP_RANK);
        assertThat(single(fx, Effect.SendRemoteBlocks.class).port()).isEqualTo(61005);
    }

    @Test
    void remote_dp_size_capped_by_the_local_size_does_not_warn() {
        Node n = new Node(d(0, 1, 1, 1));
        String rid = proxyRid("capped");

        List<Effect> fx = allocate(n, rid, decodeLeg("remote_dp_size", 4, "remote_dp_size_local", 1), 48);

        assertThat(anomalies(fx)).doesNotContain(AnomalyKind.UNPINNED_DP_RANK);
        assertThat(sends(fx)).hasSize(1);
    }

    @Test
    void pinned_by_is_request_leader_does_not_warn() {
        Node n = new Node(d(0, 1, 1, 1));
        String rid = proxyRid("leader-pinned");

        List<Effect> fx = allocate(n, rid, decodeLeg("remote_dp_size", 4, "is_request_leader", true), 48);

        assertThat(anomalies(fx)).doesNotContain(AnomalyKind.UNPINNED_DP_RANK);
    }

    @Test
    void notify_carries_the_raw_none_transfer_id_while_the_map_uses_the_synthesized_one() {
        Node n = new Node(d(0, 1, 1, 1));
        String rid = proxyRid("tid-none");

        List<Effect> fx = allocate(n, rid, decodeLeg("transfer_id", null), 48);

        assertThat(single(fx, Effect.SendRemoteBlocks.class).transferId()).isEqualTo(TransferId.NONE);
        assertThat(n.state.transferIdMap()).containsEntry("sidecar-" + rid, rid);
    }
}
