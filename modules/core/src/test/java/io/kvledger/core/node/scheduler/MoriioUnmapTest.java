package io.kvledger.core.node.scheduler;

import static io.kvledger.core.node.scheduler.SchedulerFixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * moriio-protocol.md 8.3 ({@code test_moriio_unmap.py}). The mapping is created the way the
 * connector creates it (update_state_after_alloc maps every request with non-empty params) and
 * removed the way it removes it (a consumer's request_finished unmaps {@code (rid, params tid)}).
 * The first four cases are identical in every version (seed-vs-newest B) and run under newest; the
 * collision cases belong to the open PR #56468 and run under {@code map-first-owner-wins}.
 */
class MoriioUnmapTest {

    private static Node consumerNode(Behaviour b) {
        return new Node(consumer(TransferMode.WRITE).behaviour(b));
    }

    /** Admit and allocate a request whose only param is its transfer id: this maps it. */
    private static List<Effect> mapped(Node n, String rid, String tid) {
        n.admit(rid, 32, params("transfer_id", tid));
        return n.alloc(rid, one(1, 2), 0);
    }

    private static List<Effect> unmapVia(Node n, String rid) {
        return n.finish(rid, FinishStatus.FINISHED_STOPPED, one(1, 2));
    }

    @Test
    void test_exact_match_unmap_clears_both_tables() {
        Node d = consumerNode(Behaviour.newest());
        mapped(d, "rid-a", "tid-a");
        assertThat(d.state.transferIdMap()).containsExactly(java.util.Map.entry("tid-a", "rid-a"));

        List<Effect> fx = unmapVia(d, "rid-a");

        assertThat(single(fx, Effect.Unmapped.class))
                .isEqualTo(new Effect.Unmapped("rid-a", "tid-a", "rid-a", Effect.UnmapKind.EXACT));
        assertThat(d.state.transferIdMap()).isEmpty();
        assertThat(d.state.requestIdMap()).isEmpty();
    }

    @Test
    void test_unmap_via_transfer_id_after_request_id_mutation() {
        for (Behaviour b : List.of(Behaviour.newest(), firstOwnerWins())) {
            Node d = consumerNode(b);
            mapped(d, "cmpl-abc-0", "tid-m");
            // the input processor rewrote the id after mapping: the finishing request is the mutated one
            d.admit("cmpl-abc-0-956053a4", 32, params("transfer_id", "tid-m"));

            List<Effect> fx = unmapVia(d, "cmpl-abc-0-956053a4");

            assertThat(single(fx, Effect.Unmapped.class)).as(b.profile()).isEqualTo(new Effect.Unmapped(
                    "cmpl-abc-0-956053a4", "tid-m", "cmpl-abc-0", Effect.UnmapKind.BY_TRANSFER_ID));
            assertThat(d.state.transferIdMap()).as(b.profile()).isEmpty();
            assertThat(d.state.requestIdMap()).as(b.profile()).isEmpty();
            assertThat(anomalies(fx)).doesNotContain(AnomalyKind.UNMAP_MISS);
        }
    }

    @Test
    void test_unmap_miss_is_noop_and_does_not_raise() {
        Node d = consumerNode(Behaviour.newest());
        mapped(d, "rid-a", "tid-a");
        d.admit("rid-x", 32, params("transfer_id", "tid-unknown"));

        List<Effect> fx = unmapVia(d, "rid-x");

        assertThat(single(fx, Effect.Unmapped.class))
                .isEqualTo(new Effect.Unmapped("rid-x", "tid-unknown", null, Effect.UnmapKind.MISS));
        assertThat(anomalies(fx)).contains(AnomalyKind.UNMAP_MISS);
        assertThat(single(fx, Effect.FinishDecision.class).delayFree()).isFalse();
        assertThat(d.state.transferIdMap()).containsExactly(java.util.Map.entry("tid-a", "rid-a"));
        assertThat(d.state.requestIdMap()).containsExactly(java.util.Map.entry("rid-a", "tid-a"));
    }

    @Test
    void test_exact_match_preferred_over_transfer_id_fallback() {
        Node d = consumerNode(Behaviour.newest());
        mapped(d, "rid-a", "tid-a");
        mapped(d, "rid-b", "tid-b");
        // rid-a's live params now name rid-b's transfer id (re-admission stands in for a params rewrite)
        d.admit("rid-a", 32, params("transfer_id", "tid-b"));

        List<Effect> fx = unmapVia(d, "rid-a");

        assertThat(single(fx, Effect.Unmapped.class))
                .isEqualTo(new Effect.Unmapped("rid-a", "tid-a", "rid-a", Effect.UnmapKind.EXACT));
        assertThat(d.state.transferIdMap()).containsExactly(java.util.Map.entry("tid-b", "rid-b"));
        assertThat(d.state.requestIdMap()).containsExactly(java.util.Map.entry("rid-b", "tid-b"));
    }

    @Test
    void test_duplicate_transfer_id_keeps_first_owner() {
        Node d = consumerNode(firstOwnerWins());
        mapped(d, "rid-a", "tid-shared");

        List<Effect> fx = mapped(d, "rid-b", "tid-shared");

        assertThat(only(fx, Effect.Anomaly.class)).anySatisfy(an -> {
            assertThat(an.kind()).isEqualTo(AnomalyKind.TRANSFER_ID_COLLISION);
            assertThat(an.requestId()).isEqualTo("rid-b");
            assertThat(an.transferId()).isEqualTo("tid-shared");
        });
        assertThat(d.state.transferIdMap()).containsExactly(java.util.Map.entry("tid-shared", "rid-a"));
        assertThat(d.state.requestIdMap()).containsOnlyKeys("rid-a");
    }

    @Test
    void duplicate_transfer_id_is_last_write_wins_under_newest_and_seed() {
        for (Behaviour b : List.of(Behaviour.newest(), seed())) {
            Node d = consumerNode(b);
            mapped(d, "rid-a", "tid-shared");

            List<Effect> fx = mapped(d, "rid-b", "tid-shared");

            assertThat(anomalies(fx)).as(b.profile()).contains(AnomalyKind.TRANSFER_ID_COLLISION);
            assertThat(d.state.transferIdMap()).as(b.profile())
                    .containsExactly(java.util.Map.entry("tid-shared", "rid-b"));
            // the first owner's reverse entry stays behind (map_request_id writes both tables, deletes nothing)
            assertThat(d.state.requestIdMap()).as(b.profile())
                    .containsEntry("rid-a", "tid-shared").containsEntry("rid-b", "tid-shared");
        }
    }

    @Test
    void test_same_request_transfer_id_map_is_idempotent() {
        Node d = consumerNode(firstOwnerWins());
        mapped(d, "rid-a", "tid-a");

        List<Effect> again = d.alloc("rid-a", one(3), 0);

        assertThat(anomalies(again)).doesNotContain(AnomalyKind.TRANSFER_ID_COLLISION);
        assertThat(d.state.transferIdMap()).containsExactly(java.util.Map.entry("tid-a", "rid-a"));
        assertThat(d.state.requestIdMap()).containsExactly(java.util.Map.entry("rid-a", "tid-a"));
    }

    @Test
    void test_transfer_id_can_be_reused_after_owner_unmaps() {
        Node d = consumerNode(firstOwnerWins());
        mapped(d, "rid-a", "tid-reuse");
        unmapVia(d, "rid-a");

        List<Effect> fx = mapped(d, "rid-b", "tid-reuse");

        assertThat(anomalies(fx)).doesNotContain(AnomalyKind.TRANSFER_ID_COLLISION);
        assertThat(d.state.transferIdMap()).containsExactly(java.util.Map.entry("tid-reuse", "rid-b"));
        assertThat(d.state.requestIdMap()).containsExactly(java.util.Map.entry("rid-b", "tid-reuse"));
    }

    @Test
    void test_colliding_unmap_does_not_clear_live_owner() {
        Node d = consumerNode(firstOwnerWins());
        mapped(d, "rid-a", "tid-shared");
        mapped(d, "rid-b", "tid-shared"); // refused

        List<Effect> fx = unmapVia(d, "rid-b");

        assertThat(single(fx, Effect.Unmapped.class).kind()).isEqualTo(Effect.UnmapKind.MISS);
        assertThat(d.state.transferIdMap()).containsExactly(java.util.Map.entry("tid-shared", "rid-a"));
        assertThat(d.state.requestIdMap()).containsExactly(java.util.Map.entry("rid-a", "tid-shared"));
    }

    @Test
    void test_prefixed_colliding_unmap_does_not_clear_live_owner() {
        Node d = consumerNode(firstOwnerWins());
        mapped(d, "cmpl-owner", "tid-shared");
        d.admit("cmpl-owner-attacker-12345678", 32, params("transfer_id", "tid-shared"));

        List<Effect> fx = unmapVia(d, "cmpl-owner-attacker-12345678");

        assertThat(single(fx, Effect.Unmapped.class).kind()).isEqualTo(Effect.UnmapKind.MISS);
        assertThat(d.state.transferIdMap()).containsExactly(java.util.Map.entry("tid-shared", "cmpl-owner"));
        assertThat(d.state.requestIdMap()).containsExactly(java.util.Map.entry("cmpl-owner", "tid-shared"));
    }

    @Test
    void test_colliding_alloc_does_not_stage_producer_save() {
        Node p = new Node(producer(TransferMode.WRITE).behaviour(firstOwnerWins()));
        KvParams kv = params("do_remote_decode", true, "transfer_id", "tid-shared");
        p.admit("rid-a", 32, kv);
        p.admit("rid-b", 32, kv);
        p.alloc("rid-a", one(7, 8), 0);

        List<Effect> fx = p.alloc("rid-b", one(9, 10), 0);

        assertThat(anomalies(fx)).contains(AnomalyKind.TRANSFER_ID_COLLISION);
        assertThat(p.state.stagedSaves()).containsOnlyKeys("rid-a");
        assertThat(p.state.paramSnapshots()).containsOnlyKeys("rid-a");
    }

    @Test
    void test_colliding_alloc_does_not_stage_consumer_recv() {
        Node d = new Node(consumer(TransferMode.READ).behaviour(firstOwnerWins()));
        KvParams kv = params("do_remote_prefill", true, "remote_engine_id", "10.0.0.1:6301",
                "remote_block_ids", grouped(a(20, 21)), "transfer_id", "tid-shared");
        String a = proxyRid("a");
        String b = proxyRid("b");
        d.admit(a, 32, kv);
        d.admit(b, 32, kv);
        d.alloc(a, one(1, 2), 31);

        List<Effect> fx = d.alloc(b, one(3, 4), 31);

        assertThat(anomalies(fx)).contains(AnomalyKind.TRANSFER_ID_COLLISION);
        assertThat(d.state.stagedRecvs()).containsOnlyKeys(a);
        assertThat(d.state.paramSnapshots()).containsOnlyKeys(a);
    }

    @Test
    void test_unique_transfer_id_still_stages_producer_save() {
        Node p = new Node(producer(TransferMode.WRITE).behaviour(firstOwnerWins()));
        p.admit("rid-a", 32, params("do_remote_decode", true, "transfer_id", "tid-a"));

        p.alloc("rid-a", one(7, 8), 0);

        assertThat(p.state.stagedSaves()).containsOnlyKeys("rid-a");
        assertThat(p.state.stagedSaves().get("rid-a").first()).containsExactly(7, 8);
        assertThat(p.state.paramSnapshots().get("rid-a").get("transfer_id")).isEqualTo("tid-a");
    }

    @Test
    void test_producer_completion_stays_on_first_transfer_owner() {
        Node p = new Node(producer(TransferMode.WRITE).behaviour(firstOwnerWins()));
        KvParams kv = params("do_remote_decode", true, "transfer_id", "tid-shared",
                "remote_host", "10.0.0.2", "remote_handshake_port", 7301, "remote_notify_port", 62005,
                "remote_engine_id", null, "remote_block_ids", null);
        p.admit("rid-a", 32, kv);
        p.admit("rid-b", 32, kv);
        p.alloc("rid-a", one(1, 2), 0);
        p.alloc("rid-b", one(3, 4), 0);

        Effect.MetadataBuilt meta = p.meta();
        p.apply(new io.kvledger.core.event.NodeEvent.LoadStarted(p.now));
        p.apply(new io.kvledger.core.event.NodeEvent.RawCompletionReceived(p.now, "tid-shared"));
        List<Effect> fx = p.apply(new io.kvledger.core.event.NodeEvent.FinishedPolled(p.now));

        assertThat(meta.mappingSize()).isEqualTo(1);
        assertThat(meta.reqsToSave()).extracting(m -> m.requestId()).containsExactly("rid-a");
        assertThat(single(fx, Effect.FinishedReported.class).doneSending()).containsExactly("rid-a");
    }

    @Test
    void producer_completion_follows_the_last_writer_without_the_guard() {
        // The hazard #56468 fixes: under last-write-wins the ACK is credited to the second request.
        Node p = new Node(producer(TransferMode.WRITE));
        KvParams kv = params("do_remote_decode", true, "transfer_id", "tid-shared",
                "remote_host", "10.0.0.2", "remote_handshake_port", 7301, "remote_notify_port", 62005,
                "remote_engine_id", null, "remote_block_ids", null);
        p.admit("rid-a", 32, kv);
        p.admit("rid-b", 32, kv);
        p.alloc("rid-a", one(1, 2), 0);
        p.alloc("rid-b", one(3, 4), 0);

        p.meta();
        p.apply(new io.kvledger.core.event.NodeEvent.LoadStarted(p.now));
        p.apply(new io.kvledger.core.event.NodeEvent.RawCompletionReceived(p.now, "tid-shared"));
        List<Effect> fx = p.apply(new io.kvledger.core.event.NodeEvent.FinishedPolled(p.now));

        assertThat(single(fx, Effect.FinishedReported.class).doneSending()).containsExactly("rid-b");
    }
}
