package io.kvledger.core.node.scheduler;

import static io.kvledger.core.node.scheduler.SchedulerFixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.KvGroupSpec;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The {@code newest} profile where it was re-read from vLLM 3c201bf2's {@code moriio_connector.py}
 * and differed from the model assembled from PR descriptions: a flat {@code remote_block_ids} on a
 * full prefix hit, sliding-window clipping only under the hybrid KV-cache manager, a hybrid (mamba)
 * model's receive (unclipped groups, one extra local block tolerated per mamba group, the allocated
 * blocks staged by a READ abort), the decode tail counted in the cache's block size, and the P-side
 * truncation leaving the params' keys alone.
 */
class Newest3c201bf2SchedulerTest {

    private static final List<KvGroupSpec> SWA = List.of(KvGroupSpec.fullAttention(16), KvGroupSpec.slidingWindow(16, 32));
    private static final List<KvGroupSpec> HYBRID = List.of(KvGroupSpec.fullAttention(16), KvGroupSpec.mamba(16));

    private static KvParams readDecodeParams(Object remoteBlockIds) {
        return params("do_remote_decode", false, "do_remote_prefill", true, "remote_engine_id", "10.0.0.1:6301",
                "remote_block_ids", remoteBlockIds, "transfer_id", "tx-read");
    }

    @Test
    void a_full_prefix_hit_counts_a_flat_remote_list_one_empty_group_per_id() {
        // [[] for _ in remote_block_ids]: nothing raises without external tokens
        Node d = new Node(consumer(TransferMode.READ));
        String rid = proxyRid("flat-full-hit");
        d.admit(rid, 64, readDecodeParams(ids(10, 11, 12)));

        List<Effect> fx = d.alloc(rid, one(1, 2, 3, 4), 0);

        assertThat(anomalies(fx)).doesNotContain(AnomalyKind.READ_ALIGNMENT_FAILED);
        assertThat(d.state.stagedRecvs().get(rid)).isEqualTo(BlockGroups.empty(3));
        assertThat(d.state.liveParams(rid).get("do_remote_prefill")).isEqualTo(false);
    }

    @Test
    void a_flat_remote_list_with_external_tokens_still_raises() {
        Node d = new Node(consumer(TransferMode.READ));
        String rid = proxyRid("flat-ext");
        d.admit(rid, 64, readDecodeParams(ids(10, 11, 12, 13)));

        List<Effect> fx = d.alloc(rid, one(1, 2, 3, 4), 63);

        assertThat(anomalies(fx)).contains(AnomalyKind.READ_ALIGNMENT_FAILED);
        assertThat(d.state.stagedRecvs()).isEmpty();
        assertThat(d.state.liveParams(rid).get("do_remote_prefill")).isEqualTo(true);
    }

    @Test
    void sliding_window_groups_are_clipped_only_under_the_hybrid_kv_cache_manager() {
        // keep ceil(32 / 16) + 1 = 3 blocks of the window group, under HMA only
        Node hma = new Node(consumer(TransferMode.READ).hmaEnabled(true).groups(SWA));
        Node plain = new Node(consumer(TransferMode.READ).groups(SWA));
        String rid = proxyRid("swa");
        Object remote = grouped(a(11, 12, 13, 14, 15), a(16, 17, 18));
        for (Node n : List.of(hma, plain)) {
            n.admit(rid, 80, readDecodeParams(remote));
            n.alloc(rid, groups(a(1, 2, 3, 4, 5), a(6, 7, 8, 9, 10)), 79);
        }

        assertThat(hma.state.stagedRecvs().get(rid)).isEqualTo(groups(a(1, 2, 3, 4, 5), a(8, 9, 10)));
        // unclipped, the window group's five local blocks against three remote ones are two more
        // than the decode tail tolerates (one block): _align_read_blocks raises ValueError
        assertThat(plain.state.stagedRecvs()).isEmpty();
    }

    @Test
    void a_mamba_group_tolerates_one_extra_local_block_whatever_the_lookahead() {
        // lookahead 16: the attention group tolerates ceil(17 / 16) = 2 extra blocks, a mamba group 1
        Node ok = new Node(consumer(TransferMode.READ).hmaEnabled(true).groups(HYBRID).lookaheadTokens(16));
        Node tooMany = new Node(consumer(TransferMode.READ).hmaEnabled(true).groups(HYBRID).lookaheadTokens(16));
        String rid = proxyRid("mamba-tail");
        Object remote = grouped(a(11, 12), a(20));
        ok.admit(rid, 32, readDecodeParams(remote));
        tooMany.admit(rid, 32, readDecodeParams(remote));

        List<Effect> fine = ok.alloc(rid, groups(a(1, 2, 3, 4), a(5, 6)), 31);
        List<Effect> raised = tooMany.alloc(rid, groups(a(1, 2, 3, 4), a(5, 6, 7)), 31);

        assertThat(anomalies(fine)).doesNotContain(AnomalyKind.READ_ALIGNMENT_FAILED);
        assertThat(ok.state.stagedRecvs().get(rid)).isEqualTo(groups(a(1, 2), a(5)));
        assertThat(anomalies(raised)).contains(AnomalyKind.READ_ALIGNMENT_FAILED);
        assertThat(tooMany.state.stagedRecvs()).isEmpty();
    }

    @Test
    void the_decode_tail_of_a_model_without_mamba_is_counted_in_the_cache_block_size() {
        // cache blocks of 16 tokens, an attention group of 32: tolerance ceil(17 / 16) = 2, not ceil(17 / 32) = 1
        Node d = new Node(consumer(TransferMode.READ).cacheBlockSize(16).lookaheadTokens(16)
                .groups(List.of(KvGroupSpec.fullAttention(32))));
        String rid = proxyRid("tail");
        d.admit(rid, 64, readDecodeParams(grouped(a(10, 11))));

        List<Effect> fx = d.alloc(rid, one(1, 2, 3, 4), 63);

        assertThat(anomalies(fx)).doesNotContain(AnomalyKind.READ_ALIGNMENT_FAILED);
        assertThat(d.state.stagedRecvs().get(rid)).isEqualTo(one(1, 2));
    }

    @Test
    void a_hybrid_read_finished_before_allocation_stages_its_allocated_blocks() {
        Node d = new Node(consumer(TransferMode.READ).hmaEnabled(true).groups(HYBRID));
        String rid = proxyRid("hybrid-abort");
        d.admit(rid, 32, params("do_remote_prefill", true, "transfer_id", "tx-ha"));

        d.finish(rid, FinishStatus.FINISHED_ABORTED, groups(a(1, 2), a(3)));

        assertThat(d.state.stagedRecvs().get(rid)).isEqualTo(groups(a(1, 2), a(3)));
    }

    @Test
    void the_hybrid_prefill_truncation_marks_the_params_and_adds_no_other_key() {
        Node p = new Node(producer(TransferMode.READ).hmaEnabled(true).groups(HYBRID));
        String rid = proxyRid("truncate");

        p.admit(rid, 32, params("do_remote_decode", true, "transfer_id", "tx-t"));

        KvParams live = p.state.liveParams(rid);
        assertThat(live.get("_p_side_truncated")).isEqualTo(true);
        assertThat(live.has("max_tokens")).isFalse();
    }
}
