package io.kvledger.core.node.scheduler;

import static io.kvledger.core.node.scheduler.SchedulerFixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.RequestPhase;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A request admitted (and mapped) as {@code cmpl-abc-0} that reaches {@code request_finished} as
 * {@code cmpl-abc-0-956053a4} (vLLM's input-processor suffix, test_moriio_unmap's mutation). The
 * connector never learns the two are one request: it defers and reaps under the id it is given at
 * finish, while the transfer-id map keeps the admitted id, so the worker's ACK surfaces the
 * admitted id, which matches no deferral. The same in seed and newest (seed-vs-newest B:
 * request_finished's deferral, update_connector_output and unmap are unchanged) and under the
 * open PR's map-first-owner-wins (whose unmap fallback allows exactly this suffix).
 */
class RequestRenamedAtFinishTest {

    private static final String ADMITTED = "cmpl-abc-0";
    private static final String FINISHED = "cmpl-abc-0-956053a4";
    private static final long DEFER = NodeConfig.seconds(60);

    private static List<Behaviour> presets() {
        return List.of(Behaviour.newest(), seed(), firstOwnerWins());
    }

    private static Node producerUpToFinish(Behaviour b) {
        Node p = new Node(producer(TransferMode.READ).behaviour(b).deferTimeoutNs(DEFER));
        p.admit(ADMITTED, 32, params("do_remote_decode", true, "transfer_id", "tid-r"));
        p.alloc(ADMITTED, one(1, 2), 0);
        p.step();
        return p;
    }

    @Test
    void producer_defers_under_the_finish_id_while_the_map_keeps_the_admitted_id() {
        for (Behaviour b : presets()) {
            Node p = producerUpToFinish(b);
            List<Effect> fx = p.finish(FINISHED, FinishStatus.FINISHED_LENGTH_CAPPED, one(1, 2));

            assertThat(fx.get(0)).as(b.profile()).isEqualTo(new Effect.Anomaly(AnomalyKind.REQUEST_RENAMED_AT_FINISH,
                    FINISHED, "tid-r", "admitted as " + ADMITTED));
            assertThat(single(fx, Effect.DeferralStarted.class)).as(b.profile())
                    .isEqualTo(new Effect.DeferralStarted(FINISHED, "tid-r", p.now + DEFER));
            assertThat(single(fx, Effect.FinishDecision.class).delayFree()).as(b.profile()).isTrue();
            assertThat(single(fx, Effect.PhaseChanged.class)).as(b.profile()).isEqualTo(new Effect.PhaseChanged(FINISHED,
                    RequestPhase.PREFILLING, RequestPhase.DEFERRED_FREE,
                    "finished length-capped; free deferred until ACK or defer_timeout"));
            assertThat(anomalies(fx)).as(b.profile()).doesNotContain(AnomalyKind.REQUEST_UNKNOWN);
            assertThat(p.state.transferIdMap()).as(b.profile()).containsExactly(Map.entry("tid-r", ADMITTED));
            assertThat(p.state.phaseOf(FINISHED)).as(b.profile()).isEqualTo(RequestPhase.DEFERRED_FREE);
            assertThat(p.state.phaseOf(ADMITTED)).as(b.profile()).isNull();
        }
    }

    @Test
    void the_ack_under_the_admitted_id_is_parked_and_the_deferral_reaped_under_the_finish_id() {
        for (Behaviour b : presets()) {
            Node p = producerUpToFinish(b);
            p.finish(FINISHED, FinishStatus.FINISHED_LENGTH_CAPPED, one(1, 2));
            long finishedAt = p.now;
            // the worker resolves the release through its map: done_sending = {ADMITTED}
            List<Effect> ack = p.at(finishedAt + NodeConfig.seconds(1)).acks(ADMITTED);
            assertThat(only(ack, Effect.AckParked.class)).as(b.profile()).extracting(Effect.AckParked::requestId)
                    .containsExactly(ADMITTED);
            assertThat(only(ack, Effect.AckSurfaced.class)).as(b.profile()).isEmpty();
            assertThat(single(ack, Effect.FinishedSendingRewritten.class).safe()).as(b.profile()).isEmpty();

            List<Effect> reap = p.at(finishedAt + DEFER).output(null, null);
            assertThat(single(reap, Effect.AckSurfaced.class)).as(b.profile())
                    .isEqualTo(new Effect.AckSurfaced(FINISHED, "tid-r", Effect.SurfaceReason.REAPED));
            assertThat(single(reap, Effect.Unmapped.class)).as(b.profile())
                    .isEqualTo(new Effect.Unmapped(FINISHED, "tid-r", ADMITTED, Effect.UnmapKind.BY_TRANSFER_ID));
            assertThat(single(reap, Effect.FinishedSendingRewritten.class).safe()).as(b.profile()).containsExactly(FINISHED);
            assertThat(p.state.transferIdMap()).as(b.profile()).isEmpty();

            List<Effect> stale = p.at(finishedAt + NodeConfig.seconds(1) + DEFER).output(null, null);
            assertThat(single(stale, Effect.StaleAckDropped.class).requestId()).as(b.profile()).isEqualTo(ADMITTED);
        }
    }

    @Test
    void an_admitted_id_named_by_the_journal_is_followed_whatever_the_new_id_looks_like() {
        Node p = producerUpToFinish(Behaviour.newest());
        List<Effect> fx = p.apply(new NodeEvent.RequestFinished(p.now, "renamed-by-engine", FinishStatus.FINISHED_LENGTH_CAPPED,
                one(1, 2), ADMITTED));
        assertThat(anomalies(fx)).contains(AnomalyKind.REQUEST_RENAMED_AT_FINISH).doesNotContain(AnomalyKind.REQUEST_UNKNOWN);
        assertThat(single(fx, Effect.DeferralStarted.class).requestId()).isEqualTo("renamed-by-engine");
    }

    @Test
    void an_id_that_is_no_admitted_id_plus_the_suffix_stays_unknown() {
        for (String id : List.of("cmpl-abc-0-956053a", "cmpl-abc-0-956053A4", "cmpl-abc-1-956053a4", "cmpl-abc-0956053a4")) {
            Node p = producerUpToFinish(Behaviour.newest());
            List<Effect> fx = p.finish(id, FinishStatus.FINISHED_LENGTH_CAPPED, one(1, 2));
            assertThat(anomalies(fx)).as(id).contains(AnomalyKind.REQUEST_UNKNOWN).doesNotContain(AnomalyKind.REQUEST_RENAMED_AT_FINISH);
            assertThat(single(fx, Effect.FinishDecision.class).delayFree()).as(id).isFalse();
        }
    }

    @Test
    void consumer_unmaps_the_admitted_id_through_the_transfer_id_fallback() {
        for (Behaviour b : presets()) {
            Node d = new Node(consumer(TransferMode.WRITE).behaviour(b));
            d.admit(ADMITTED, 32, params("transfer_id", "tid-d"));
            d.alloc(ADMITTED, one(1, 2), 0);
            List<Effect> fx = d.finish(FINISHED, FinishStatus.FINISHED_STOPPED, one(1, 2));
            assertThat(single(fx, Effect.Unmapped.class)).as(b.profile())
                    .isEqualTo(new Effect.Unmapped(FINISHED, "tid-d", ADMITTED, Effect.UnmapKind.BY_TRANSFER_ID));
            assertThat(d.state.transferIdMap()).as(b.profile()).isEmpty();
            assertThat(d.state.phaseOf(FINISHED)).as(b.profile()).isEqualTo(RequestPhase.FINISHED);
        }
    }
}
