package io.kvledger.core.node.scheduler;

import io.kvledger.core.model.TransferId;
import static io.kvledger.core.node.scheduler.SchedulerFixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.KvGroupSpec;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.RequestPhase;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code request_finished}: protocol 4.3, 5.2 step 4, 5.4 step 4, 5.5 step 7 and seed-vs-newest
 * A6 (#23, #25, #27), C.2, C.3, C.9, C.10, C.14.
 */
class RequestFinishedTest {

    private static KvParams prefill(String tid) {
        return params("do_remote_decode", true, "do_remote_prefill", false, "transfer_id", tid);
    }

    // ------------------------------------------------------------------ consumer

    @Test
    void consumer_unmaps_before_anything_else() {
        Node d = new Node(consumer(TransferMode.READ));
        String rid = proxyRid("unmap-first");
        d.admit(rid, 32, params("do_remote_prefill", true, "remote_engine_id", "e",
                "remote_block_ids", grouped(a(5, 6)), "transfer_id", "tx-u"));
        d.alloc(rid, one(1, 2), 31);
        d.meta();

        List<Effect> fx = d.finish(rid, FinishStatus.FINISHED_STOPPED, one(1, 2));

        assertThat(indexOf(fx, Effect.Unmapped.class)).isZero();
        assertThat(single(fx, Effect.Unmapped.class)).isEqualTo(new Effect.Unmapped(rid, "tx-u", rid, Effect.UnmapKind.EXACT));
        assertThat(single(fx, Effect.FinishDecision.class)).isEqualTo(new Effect.FinishDecision(rid, false, null));
        assertThat(d.state.transferIdMap()).isEmpty();
    }

    @Test
    void consumer_without_params_still_tries_to_unmap_and_misses() {
        // C.3: the unmap runs before the params check, with transfer_id None.
        Node d = new Node(consumer(TransferMode.WRITE));
        d.admit("plain", 32, null);

        List<Effect> fx = d.finish("plain", FinishStatus.FINISHED_STOPPED, one(1));

        assertThat(single(fx, Effect.Unmapped.class)).isEqualTo(new Effect.Unmapped("plain", null, null, Effect.UnmapKind.MISS));
        assertThat(single(fx, Effect.FinishDecision.class)).isEqualTo(new Effect.FinishDecision("plain", false, null));
    }

    // ------------------------------------------------------------------ producer

    @Test
    void producer_not_length_capped_returns_nothing_and_leaks_its_mapping() {
        Node p = new Node(producer(TransferMode.READ));
        p.admit("r", 32, prefill("tx-stop"));
        p.alloc("r", one(1, 2), 0);

        List<Effect> fx = p.finish("r", FinishStatus.FINISHED_STOPPED, one(1, 2));

        assertThat(single(fx, Effect.FinishDecision.class)).isEqualTo(new Effect.FinishDecision("r", false, null));
        assertThat(only(fx, Effect.Unmapped.class)).isEmpty();
        assertThat(anomalies(fx)).contains(AnomalyKind.MAPPING_LEAK);
        assertThat(p.state.transferIdMap()).containsEntry("tx-stop", "r");
        assertThat(p.state.deferredDeadlines()).isEmpty();
        assertThat(p.state.phaseOf("r")).isEqualTo(RequestPhase.FINISHED);
        assertThat(p.state.liveRequests()).isZero();
    }

    @Test
    void producer_without_do_remote_decode_returns_nothing() {
        Node p = new Node(producer(TransferMode.READ));
        p.admit("r", 32, params("transfer_id", "tx"));

        assertThat(p.decision("r", FinishStatus.FINISHED_LENGTH_CAPPED, one(1, 2)))
                .isEqualTo(new Effect.FinishDecision("r", false, null));
        assertThat(p.state.deferredDeadlines()).isEmpty();
    }

    @Test
    void producer_capped_with_no_blocks_returns_params_and_frees_now() {
        Node p = new Node(producer(TransferMode.READ));
        p.admit("r", 8, prefill("tx-empty"));
        p.alloc("r", one(), 0);

        List<Effect> fx = p.finish("r", FinishStatus.FINISHED_LENGTH_CAPPED, one());

        Effect.FinishDecision d = single(fx, Effect.FinishDecision.class);
        assertThat(d.delayFree()).isFalse();
        assertThat(d.params()).isNotNull();
        assertThat(d.params().get("transfer_id")).isEqualTo("tx-empty");
        assertThat(only(fx, Effect.DeferralStarted.class)).isEmpty();
        assertThat(anomalies(fx)).contains(AnomalyKind.MAPPING_LEAK);
        assertThat(p.state.phaseOf("r")).isEqualTo(RequestPhase.FINISHED);
        assertThat(p.state.liveRequests()).isZero();
    }

    @Test
    void producer_capped_with_blocks_defers_the_free_until_now_plus_defer_timeout() {
        Node p = new Node(producer(TransferMode.READ).deferTimeoutNs(5 * S));
        p.admit("r", 32, prefill("tx-def"));
        p.alloc("r", one(1, 2), 0);
        p.at(7 * S);

        List<Effect> fx = p.finish("r", FinishStatus.FINISHED_LENGTH_CAPPED, one(1, 2));

        assertThat(single(fx, Effect.DeferralStarted.class)).isEqualTo(new Effect.DeferralStarted("r", "tx-def", 12 * S));
        assertThat(single(fx, Effect.FinishDecision.class).delayFree()).isTrue();
        assertThat(p.state.deferredDeadlines()).containsExactly(java.util.Map.entry("r", 12 * S));
        assertThat(p.state.phaseOf("r")).isEqualTo(RequestPhase.DEFERRED_FREE);
        assertThat(p.state.liveRequests()).isEqualTo(1);
        assertThat(p.state.transferIdMap()).containsEntry("tx-def", "r");
    }

    @Test
    void newest_delays_when_any_group_is_non_empty_and_clips_sliding_window_groups() {
        // A25, A27: HMA on; the SWA group keeps ceil(32 / 16) + 1 = 3 blocks.
        Node p = new Node(producer(TransferMode.READ).hmaEnabled(true)
                .groups(List.of(KvGroupSpec.fullAttention(16), KvGroupSpec.slidingWindow(16, 32))));
        p.admit("r", 32, prefill("tx-swa"));

        Effect.FinishDecision d = p.decision("r", FinishStatus.FINISHED_LENGTH_CAPPED, groups(a(), a(5, 6, 7, 8, 9)));

        assertThat(d.delayFree()).isTrue();
        assertThat(d.params().get("remote_block_ids")).isEqualTo(grouped(a(), a(7, 8, 9)));
    }

    @Test
    void seed_delays_only_when_the_flat_list_is_non_empty() {
        Node p = new Node(producer(TransferMode.READ).behaviour(seed()));
        p.admit("r", 32, prefill("tx-flat"));

        List<Effect> fx = p.finish("r", FinishStatus.FINISHED_LENGTH_CAPPED, groups(a(), a(5, 6)));

        assertThat(anomalies(fx)).contains(AnomalyKind.HMA_MULTI_GROUP_ASSERT);
        Effect.FinishDecision d = single(fx, Effect.FinishDecision.class);
        assertThat(d.delayFree()).isFalse();
        assertThat(d.params().get("remote_block_ids")).isEqualTo(List.of());
    }

    // ------------------------------------------------------------------ abort before alloc, READ

    @Test
    void read_abort_before_alloc_stages_an_empty_recv_whose_next_step_releases() {
        Node d = new Node(consumer(TransferMode.READ));
        String rid = proxyRid("read-abort");
        d.admit(rid, 32, params("do_remote_prefill", true, "remote_engine_id", "10.0.0.1:6301",
                "remote_block_ids", grouped(a(5, 6)), "transfer_id", "tx-ra"));

        List<Effect> fx = d.finish(rid, FinishStatus.FINISHED_ABORTED, BlockGroups.NONE);

        assertThat(single(fx, Effect.FinishDecision.class)).isEqualTo(new Effect.FinishDecision(rid, false, null));
        assertThat(d.state.stagedRecvs()).containsEntry(rid, BlockGroups.empty(1));
        assertThat(d.state.phaseOf(rid)).isEqualTo(RequestPhase.ABORTED_BEFORE_ALLOC);

        Effect.MetadataBuilt meta = d.meta();
        assertThat(meta.reqsToRecv()).hasSize(1);
        assertThat(meta.reqsToRecv().get(0).localBlockIds().allEmpty()).isTrue();

        List<Effect> load = d.apply(new NodeEvent.LoadStarted(d.now));
        assertThat(only(load, Effect.SendRelease.class)).containsExactly(
                new Effect.SendRelease(Effect.Sender.WORKER, "10.0.0.1", 61005, TransferId.of("tx-ra"), 1));
        assertThat(only(load, Effect.PostRead.class)).isEmpty();
    }

    @Test
    void newest_read_abort_stages_one_empty_list_per_transfer_group_and_seed_one_flat_list() {
        List<KvGroupSpec> g = List.of(KvGroupSpec.fullAttention(16), KvGroupSpec.slidingWindow(16, 64));
        Node n = new Node(consumer(TransferMode.READ).hmaEnabled(true).groups(g));
        Node s = new Node(consumer(TransferMode.READ).groups(g).behaviour(seed()));
        String rid = proxyRid("abort-shape");
        for (Node x : List.of(n, s)) {
            x.admit(rid, 32, params("do_remote_prefill", true, "transfer_id", "tx"));
            x.finish(rid, FinishStatus.FINISHED_ABORTED, BlockGroups.NONE);
        }

        assertThat(n.state.stagedRecvs().get(rid)).isEqualTo(BlockGroups.empty(2));
        assertThat(s.state.stagedRecvs().get(rid)).isEqualTo(BlockGroups.empty(1));
    }

    // ------------------------------------------------------------------ abort before alloc, WRITE

    @Test
    void write_abort_before_alloc_sends_release_from_the_scheduler_with_explicit_params_first() {
        Node d = new Node(consumer(TransferMode.WRITE).tp(0, 2).dp(0, 1, 1));
        String rid = proxyRid("write-abort"); // embeds 10.0.0.1:61005, which must lose to the params
        d.admit(rid, 32, params("do_remote_prefill", true, "transfer_id", "tx-wa", "remote_dp_rank", 3,
                "remote_dp_size_local", 2, "remote_hosts", List.of("10.5.5.5", "10.6.6.6"),
                "remote_host", "10.1.1.1", "remote_notify_port", 7000));

        List<Effect> fx = d.finish(rid, FinishStatus.FINISHED_ABORTED, BlockGroups.NONE);

        // port = base + remote_dp_rank (unfolded) + tp_index; remote_hosts ignored
        assertThat(only(fx, Effect.SendRelease.class)).containsExactly(
                new Effect.SendRelease(Effect.Sender.SCHEDULER, "10.1.1.1", 7003, TransferId.of("tx-wa"), 2),
                new Effect.SendRelease(Effect.Sender.SCHEDULER, "10.1.1.1", 7004, TransferId.of("tx-wa"), 2));
        assertThat(single(fx, Effect.FinishDecision.class)).isEqualTo(new Effect.FinishDecision(rid, false, null));
        assertThat(d.state.stagedRecvs()).isEmpty();
        assertThat(d.state.phaseOf(rid)).isEqualTo(RequestPhase.ABORTED_BEFORE_ALLOC);
    }

    @Test
    void write_abort_with_a_remote_dp_rank_that_is_no_number_raises_before_any_release() {
        Node d = new Node(consumer(TransferMode.WRITE));
        String rid = proxyRid("write-abort-none");
        d.admit(rid, 32, params("do_remote_prefill", true, "transfer_id", "tx-wn", "remote_dp_rank", null,
                "remote_host", "10.1.1.1", "remote_notify_port", 7000));

        List<Effect> fx = d.finish(rid, FinishStatus.FINISHED_ABORTED, BlockGroups.NONE);

        // get_port_offset(None, 0) raises TypeError out of request_finished: no release is sent
        assertThat(only(fx, Effect.SendRelease.class)).isEmpty();
        assertThat(anomalies(fx)).contains(AnomalyKind.PARAM_NOT_AN_INT);
        assertThat(d.state.phaseOf(rid)).isEqualTo(RequestPhase.ABORTED_BEFORE_ALLOC);
    }

    @Test
    void write_abort_falls_back_to_the_request_id_address() {
        Node d = new Node(consumer(TransferMode.WRITE));
        String rid = proxyRid("write-abort-rid");
        // remote_host without remote_notify_port is not enough: both must be present
        d.admit(rid, 32, params("do_remote_prefill", true, "transfer_id", "tx-wr", "remote_dp_rank", 2,
                "remote_host", "10.1.1.1"));

        List<Effect> fx = d.finish(rid, FinishStatus.FINISHED_ABORTED, BlockGroups.NONE);

        assertThat(only(fx, Effect.SendRelease.class)).containsExactly(
                new Effect.SendRelease(Effect.Sender.SCHEDULER, "10.0.0.1", 61007, TransferId.of("tx-wr"), 1));
    }

    @Test
    void write_abort_without_transfer_id_sends_nothing() {
        Node d = new Node(consumer(TransferMode.WRITE));
        String rid = proxyRid("no-tid");
        d.admit(rid, 32, params("do_remote_prefill", true));

        List<Effect> fx = d.finish(rid, FinishStatus.FINISHED_ABORTED, BlockGroups.NONE);

        assertThat(only(fx, Effect.SendRelease.class)).isEmpty();
        assertThat(anomalies(fx)).contains(AnomalyKind.RELEASE_NOT_SENT);
        assertThat(single(fx, Effect.FinishDecision.class).params()).isNull();
    }

    @Test
    void write_abort_without_any_address_sends_nothing() {
        Node d = new Node(consumer(TransferMode.WRITE));
        d.admit("cmpl-plain-0-deadbeef", 32, params("do_remote_prefill", true, "transfer_id", "tx"));

        List<Effect> fx = d.finish("cmpl-plain-0-deadbeef", FinishStatus.FINISHED_ABORTED, BlockGroups.NONE);

        assertThat(only(fx, Effect.SendRelease.class)).isEmpty();
        assertThat(anomalies(fx)).contains(AnomalyKind.RELEASE_NOT_SENT);
    }
}
