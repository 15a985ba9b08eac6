package io.kvledger.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/** The engine model alone, with a scripted connector: the hook order of its steps and its block bookkeeping. */
class EngineModelTest {

    /** Records every hook call and answers it with {@code replies}. */
    private static final class Script implements EngineModel.Host {
        final List<NodeEvent> calls = new ArrayList<>();
        final List<String> told = new ArrayList<>();
        Function<NodeEvent, List<Effect>> replies = e -> List.of();

        @Override
        public List<Effect> call(NodeEvent event) {
            calls.add(event);
            return replies.apply(event);
        }

        @Override
        public void admitted(EngineModel.Request r) {
            told.add("admitted " + r.id());
        }

        @Override
        public void rejected(EngineModel.Request r) {
            told.add("rejected " + r.id());
        }

        @Override
        public void released(EngineModel.Request r) {
            told.add("released " + r.id());
        }

        @Override
        public void finished(EngineModel.Request r, FinishStatus status, KvParams returned) {
            told.add("finished " + r.id() + " " + status);
        }

        List<String> names() {
            List<String> out = new ArrayList<>();
            for (NodeEvent e : calls) {
                out.add(e.getClass().getSimpleName());
            }
            calls.clear();
            return out;
        }
    }

    private static EngineModel model(Script host, boolean tick) {
        return new EngineModel(new EngineModel.Rules(16, 8, 512, 4, false, tick), host);
    }

    @Test
    void a_prefill_leg_holds_its_blocks_until_the_rewritten_finished_sending_names_it() {
        Script host = new Script();
        boolean[] sent = {false};
        host.replies = e -> switch (e) {
            case NodeEvent.MatchedTokensQueried q -> List.of(new Effect.MatchedTokens(q.requestId(), 0, false));
            case NodeEvent.RequestFinished f -> List.of(new Effect.FinishDecision(f.requestId(), true, null));
            case NodeEvent.FinishedPolled _ -> sent[0]
                    ? List.of(new Effect.FinishedReported(List.of("r1"), null, null)) : List.of();
            case NodeEvent.ConnectorOutputReceived c -> c.finishedSending() == null
                    ? List.of() : List.of(new Effect.FinishedSendingRewritten(c.finishedSending()));
            default -> List.of();
        };
        EngineModel m = model(host, true);
        m.add(new EngineModel.Request("r1", 40, 1, FinishStatus.FINISHED_LENGTH_CAPPED, null));
        assertThat(m.hasInputs()).isTrue();

        assertThat(m.beginStep(() -> 1L, 1)).as("the prompt is scheduled").isTrue();
        assertThat(host.names()).containsExactly("RequestAdmitted", "MatchedTokensQueried", "BlocksAllocated",
                "StepScheduled");
        assertThat(m.scheduled()).extracting(EngineModel.Request::id).containsExactly("r1");
        assertThat(m.blocksInUse()).as("40 tokens in blocks of 16").isEqualTo(3);
        m.finishStep(() -> 2L);
        assertThat(host.names()).containsExactly("SaveWaited", "FinishedPolled", "RequestFinished",
                "ConnectorOutputReceived", "Tick");
        assertThat(m.request("r1").status()).isEqualTo(EngineModel.Status.HELD);
        assertThat(m.blocksInUse()).as("the free is delayed").isEqualTo(3);
        assertThat(m.live()).isEqualTo(1);

        sent[0] = true;
        assertThat(m.beginStep(() -> 3L, 2)).as("nothing to schedule").isFalse();
        m.finishStep(() -> 4L);
        assertThat(m.blocksInUse()).isZero();
        assertThat(m.retained()).isZero();
        assertThat(m.live()).isZero();
        assertThat(m.hasWork()).isFalse();
        assertThat(host.told).containsExactly("admitted r1", "finished r1 FINISHED_LENGTH_CAPPED", "released r1");
    }

    @Test
    void without_tick_at_step_end_a_step_ends_with_the_connector_output() {
        Script host = new Script();
        EngineModel m = model(host, false);
        m.beginStep(() -> 1L, 1);
        m.finishStep(() -> 2L);
        assertThat(host.names()).containsExactly("StepScheduled", "SaveWaited", "FinishedPolled",
                "ConnectorOutputReceived");
    }

    @Test
    void a_request_id_the_engine_holds_is_rejected_and_an_abort_finishes_a_waiting_request() {
        Script host = new Script();
        EngineModel m = new EngineModel(new EngineModel.Rules(16, 2, 512, 4, false, true), host);
        m.add(new EngineModel.Request("big", 100, 1, FinishStatus.FINISHED_LENGTH_CAPPED, null));
        m.add(new EngineModel.Request("big", 10, 1, FinishStatus.FINISHED_LENGTH_CAPPED, null));
        m.beginStep(() -> 1L, 1);
        assertThat(host.told).containsExactly("admitted big", "rejected big");
        assertThat(host.names()).as("7 blocks do not fit a pool of 2: the connector is not asked")
                .containsExactly("RequestAdmitted", "StepScheduled");
        assertThat(m.hasWork()).isTrue();
        m.abort("big");
        m.beginStep(() -> 2L, 2);
        assertThat(host.names()).containsExactly("RequestFinished", "StepScheduled");
        assertThat(host.told).endsWith("released big", "finished big FINISHED_ABORTED");
        assertThat(m.retained()).isZero();
    }

    @Test
    void the_aggregator_reports_a_request_once_every_tp_rank_has() {
        KvOutputAggregator agg = new KvOutputAggregator();
        Effect.FinishedReported first = agg.aggregate(List.of(
                new Effect.FinishedReported(List.of("a"), List.of("b"), null),
                new Effect.FinishedReported(List.of(), List.of("b"), List.of(3))));
        assertThat(first.doneSending()).as("rank 1 has not reported a yet").isEmpty();
        assertThat(first.doneRecving()).containsExactly("b");
        assertThat(first.loadErrorBlocks()).containsExactly(3);
        Effect.FinishedReported second = agg.aggregate(List.of(
                new Effect.FinishedReported(null, null, null),
                new Effect.FinishedReported(List.of("a"), null, null)));
        assertThat(second.doneSending()).containsExactly("a");
        assertThat(second.doneRecving()).isEmpty();
        assertThat(second.loadErrorBlocks()).as("no rank reported load errors").isNull();
    }
}
