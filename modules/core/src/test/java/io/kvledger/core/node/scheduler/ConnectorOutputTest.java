package io.kvledger.core.node.scheduler;

import static io.kvledger.core.node.scheduler.SchedulerFixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.Switch;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.RequestPhase;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code update_connector_output}: protocol 5.2 step 6, 5.6 and seed-vs-newest C.16 (identical in
 * seed and newest), plus the open {@code hold-until-real-ack} switch (#56465).
 */
class ConnectorOutputTest {

    private static final long T0 = 10 * S;

    private static Node producerNode(Behaviour b) {
        return new Node(producer(TransferMode.READ).behaviour(b));
    }

    /** Admit and allocate (maps the tid). */
    private static void allocated(Node p, String rid, String tid) {
        p.admit(rid, 32, params("do_remote_decode", true, "transfer_id", tid));
        p.alloc(rid, one(1, 2), 0);
    }

    /** Finish length-capped with blocks at {@code at}: a deferral with deadline at + 60 s. */
    private static void deferred(Node p, String rid, long at) {
        p.at(at).finish(rid, FinishStatus.FINISHED_LENGTH_CAPPED, one(1, 2));
    }

    private static Effect.FinishedSendingRewritten rewritten(List<Effect> fx) {
        return single(fx, Effect.FinishedSendingRewritten.class);
    }

    @Test
    void ack_for_a_deferred_request_is_surfaced_and_unmapped() {
        Node p = producerNode(Behaviour.newest());
        allocated(p, "r", "tx-ack");
        deferred(p, "r", T0);

        List<Effect> fx = p.at(T0 + S).acks("r");

        assertThat(single(fx, Effect.AckSurfaced.class))
                .isEqualTo(new Effect.AckSurfaced("r", "tx-ack", Effect.SurfaceReason.ACKED));
        assertThat(single(fx, Effect.Unmapped.class)).isEqualTo(new Effect.Unmapped("r", "tx-ack", "r", Effect.UnmapKind.EXACT));
        assertThat(rewritten(fx).safe()).containsExactly("r");
        assertThat(p.state.phaseOf("r")).isEqualTo(RequestPhase.FREED_AFTER_ACK);
        assertThat(p.state.deferredDeadlines()).isEmpty();
        assertThat(p.state.transferIdMap()).isEmpty();
        assertThat(p.state.requestIdMap()).isEmpty();
        assertThat(p.state.liveRequests()).isZero();
    }

    @Test
    void early_ack_is_parked_and_released_on_the_step_after_request_finished() {
        Node p = producerNode(Behaviour.newest());
        allocated(p, "r", "tx-early");

        List<Effect> early = p.at(T0).acks("r");
        assertThat(single(early, Effect.AckParked.class)).isEqualTo(new Effect.AckParked("r", T0 + DEFER_NS));
        assertThat(anomalies(early)).contains(AnomalyKind.EARLY_ACK_PARKED);
        assertThat(rewritten(early).safe()).isEmpty();
        assertThat(p.state.parkedAcks()).containsExactly(java.util.Map.entry("r", T0 + DEFER_NS));
        assertThat(p.state.phaseOf("r")).isEqualTo(RequestPhase.PREFILLING);

        deferred(p, "r", T0 + S);
        List<Effect> next = p.at(T0 + 2 * S).output(null, null);

        assertThat(single(next, Effect.AckSurfaced.class))
                .isEqualTo(new Effect.AckSurfaced("r", "tx-early", Effect.SurfaceReason.PARKED_ACK_RELEASED));
        assertThat(rewritten(next).safe()).containsExactly("r");
        assertThat(p.state.parkedAcks()).isEmpty();
        assertThat(p.state.transferIdMap()).isEmpty();
        assertThat(p.state.phaseOf("r")).isEqualTo(RequestPhase.FREED_AFTER_ACK);
    }

    @Test
    void repeated_early_ack_keeps_the_first_park_deadline() {
        Node p = producerNode(Behaviour.newest());
        allocated(p, "r", "tx");
        p.at(T0).acks("r");

        List<Effect> again = p.at(T0 + 5 * S).acks("r");

        assertThat(only(again, Effect.AckParked.class)).isEmpty();
        assertThat(p.state.parkedAcks()).containsExactly(java.util.Map.entry("r", T0 + DEFER_NS));
    }

    @Test
    void deferral_is_reaped_at_its_deadline_inclusive() {
        Node p = producerNode(Behaviour.newest());
        allocated(p, "r", "tx-reap");
        deferred(p, "r", T0);

        List<Effect> before = p.at(T0 + DEFER_NS - 1).output(null, null);
        assertThat(rewritten(before).safe()).isEmpty();
        assertThat(p.state.deferredDeadlines()).containsOnlyKeys("r");

        List<Effect> at = p.at(T0 + DEFER_NS).output(null, null);

        assertThat(single(at, Effect.AckSurfaced.class))
                .isEqualTo(new Effect.AckSurfaced("r", "tx-reap", Effect.SurfaceReason.REAPED));
        assertThat(anomalies(at)).contains(AnomalyKind.DEFERRAL_REAPED);
        assertThat(rewritten(at).safe()).containsExactly("r");
        assertThat(p.state.phaseOf("r")).isEqualTo(RequestPhase.REAPED);
        assertThat(p.state.deferredDeadlines()).isEmpty();
        assertThat(p.state.transferIdMap()).isEmpty();
    }

    @Test
    void reaped_warning_counts_every_expired_deferral_including_one_acked_in_the_same_call() {
        // upstream: expired = every deferral with now >= deadline, SAFE already or not, and the
        // warning says "Reaped len(expired) deferred sends"; identical in seed and newest.
        for (Behaviour b : List.of(Behaviour.seed(), Behaviour.newest())) {
            Node p = producerNode(b);
            allocated(p, "acked", "tx-a");
            allocated(p, "lost", "tx-l");
            allocated(p, "parked", "tx-p");
            deferred(p, "acked", T0);
            deferred(p, "lost", T0);
            p.at(T0 + S).acks("parked"); // early ACK: parked until its request finishes
            deferred(p, "parked", T0);

            List<Effect> fx = p.at(T0 + DEFER_NS).acks("acked");

            List<Effect.Anomaly> reaps = only(fx, Effect.Anomaly.class).stream()
                    .filter(a -> a.kind() == AnomalyKind.DEFERRAL_REAPED || a.kind() == AnomalyKind.DEFERRAL_EXPIRED_AT_ACK)
                    .toList();
            assertThat(reaps).extracting(Effect.Anomaly::requestId).containsExactly("acked", "lost", "parked");
            assertThat(reaps).extracting(Effect.Anomaly::kind).containsExactly(AnomalyKind.DEFERRAL_EXPIRED_AT_ACK,
                    AnomalyKind.DEFERRAL_REAPED, AnomalyKind.DEFERRAL_EXPIRED_AT_ACK);
            assertThat(reaps).allSatisfy(a -> assertThat(a.detail()).endsWith("(3 reaped this step)"));
            assertThat(AnomalyKind.DEFERRAL_EXPIRED_AT_ACK.severity()).isEqualTo(AnomalyKind.Severity.WARNING);
            // the ACKs still free their own requests; only the lost one is reaped
            assertThat(only(fx, Effect.AckSurfaced.class)).extracting(Effect.AckSurfaced::reason).containsExactly(
                    Effect.SurfaceReason.ACKED, Effect.SurfaceReason.PARKED_ACK_RELEASED, Effect.SurfaceReason.REAPED);
            assertThat(p.state.phaseOf("acked")).isEqualTo(RequestPhase.FREED_AFTER_ACK);
            assertThat(p.state.phaseOf("lost")).isEqualTo(RequestPhase.REAPED);
        }
    }

    @Test
    void no_reaped_warning_when_no_deferral_expired() {
        Node p = producerNode(Behaviour.newest());
        allocated(p, "r", "tx-r");
        deferred(p, "r", T0);

        List<Effect> fx = p.at(T0 + DEFER_NS - 1).acks("r");

        assertThat(anomalies(fx)).doesNotContain(AnomalyKind.DEFERRAL_REAPED, AnomalyKind.DEFERRAL_EXPIRED_AT_ACK);
    }

    @Test
    void stale_parked_ack_is_dropped_at_its_deadline() {
        Node p = producerNode(Behaviour.newest());
        p.at(T0).acks("ghost");

        List<Effect> before = p.at(T0 + DEFER_NS - 1).output(null, null);
        assertThat(only(before, Effect.StaleAckDropped.class)).isEmpty();

        List<Effect> at = p.at(T0 + DEFER_NS).output(null, null);

        assertThat(single(at, Effect.StaleAckDropped.class)).isEqualTo(new Effect.StaleAckDropped("ghost"));
        assertThat(anomalies(at)).contains(AnomalyKind.STALE_ACK_DROPPED);
        assertThat(rewritten(at).safe()).isEmpty();
        assertThat(p.state.parkedAcks()).isEmpty();
    }

    @Test
    void late_ack_after_a_reap_is_parked_and_flagged() {
        Node p = producerNode(Behaviour.newest());
        allocated(p, "r", "tx-late");
        deferred(p, "r", T0);
        p.at(T0 + DEFER_NS).output(null, null);

        List<Effect> late = p.at(T0 + DEFER_NS + S).acks("r");

        assertThat(anomalies(late)).contains(AnomalyKind.REAP_THEN_LATE_ACK);
        assertThat(rewritten(late).safe()).isEmpty();
        assertThat(p.state.parkedAcks()).containsOnlyKeys("r");
    }

    @Test
    void safe_entries_are_unmapped_with_the_deferrals_transfer_id() {
        // The producer's id was mutated after mapping: the mutated request owns the deferral.
        Node p = producerNode(Behaviour.newest());
        allocated(p, "cmpl-abc-0", "tx-mut");
        p.admit("cmpl-abc-0-956053a4", 32, params("do_remote_decode", true, "transfer_id", "tx-mut"));
        deferred(p, "cmpl-abc-0-956053a4", T0);

        List<Effect> fx = p.at(T0 + S).acks("cmpl-abc-0-956053a4");

        assertThat(single(fx, Effect.Unmapped.class)).isEqualTo(new Effect.Unmapped("cmpl-abc-0-956053a4", "tx-mut",
                "cmpl-abc-0", Effect.UnmapKind.BY_TRANSFER_ID));
        assertThat(p.state.transferIdMap()).isEmpty();
        assertThat(p.state.requestIdMap()).isEmpty();
    }

    @Test
    void finished_sending_is_rewritten_to_exactly_the_safe_requests() {
        Node p = producerNode(Behaviour.newest());
        allocated(p, "deferred", "tx-d");
        allocated(p, "running", "tx-r");
        deferred(p, "deferred", T0);

        List<Effect> fx = p.at(T0 + S).acks("running", "deferred");

        assertThat(rewritten(fx).safe()).containsExactly("deferred");
        assertThat(p.state.parkedAcks()).containsOnlyKeys("running");
        assertThat(p.state.phaseOf("running")).isEqualTo(RequestPhase.PREFILLING);
    }

    @Test
    void empty_output_rewrites_finished_sending_to_none() {
        Node p = producerNode(Behaviour.newest());
        allocated(p, "r", "tx");
        deferred(p, "r", T0);

        List<Effect> fx = p.at(T0 + S).output(List.of(), List.of());

        assertThat(rewritten(fx).safe()).isEmpty();
        assertThat(p.state.deferredDeadlines()).containsOnlyKeys("r");
    }

    @Test
    void hold_until_real_ack_never_reaps() {
        Node p = producerNode(Behaviour.newest().with(Switch.HOLD_UNTIL_REAL_ACK, true));
        allocated(p, "r", "tx-hold");
        deferred(p, "r", T0);

        List<Effect> late = p.at(T0 + 10 * DEFER_NS).output(null, null);

        assertThat(rewritten(late).safe()).isEmpty();
        assertThat(anomalies(late)).doesNotContain(AnomalyKind.DEFERRAL_REAPED);
        assertThat(p.state.deferredDeadlines()).containsOnlyKeys("r");
        assertThat(p.state.phaseOf("r")).isEqualTo(RequestPhase.DEFERRED_FREE);

        List<Effect> acked = p.at(T0 + 11 * DEFER_NS).acks("r");
        assertThat(single(acked, Effect.AckSurfaced.class).reason()).isEqualTo(Effect.SurfaceReason.ACKED);
    }

    @Test
    void consumer_output_only_records_finished_recving() {
        Node d = new Node(consumer(TransferMode.WRITE));
        String rid = proxyRid("recv-done");
        d.admit(rid, 32, params("do_remote_prefill", true, "transfer_id", "tx-c"));
        d.match(rid, 0);
        d.alloc(rid, one(1, 2), 32);
        assertThat(d.state.phaseOf(rid)).isEqualTo(RequestPhase.WAITING_FOR_REMOTE_KVS);

        List<Effect> fx = d.output(List.of(rid), List.of(rid));

        assertThat(only(fx, Effect.FinishedSendingRewritten.class)).isEmpty();
        assertThat(only(fx, Effect.AckParked.class)).isEmpty();
        assertThat(only(fx, Effect.Unmapped.class)).isEmpty();
        assertThat(d.state.parkedAcks()).isEmpty();
        assertThat(d.state.transferIdMap()).containsEntry("tx-c", rid);
        assertThat(d.state.phaseOf(rid)).isEqualTo(RequestPhase.KV_RECEIVED);
    }
}
