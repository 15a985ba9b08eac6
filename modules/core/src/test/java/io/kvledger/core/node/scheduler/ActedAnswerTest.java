package io.kvledger.core.node.scheduler;

import static io.kvledger.core.node.scheduler.SchedulerFixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Drive mode's answers taken from the inner connector: a hook call carries the answer vLLM acted
 * on, and the reducer, deciding as always, names a different answer of its own
 * {@code DRIVE_ANSWER_DIVERGED}; an agreeing one adds nothing, and the decisions are those of the
 * same call without it.
 */
class ActedAnswerTest {

    private static final String RID = proxyRid("acted");

    private static Node producerWithAllocation() {
        Node p = new Node(producer(TransferMode.WRITE));
        p.admit(RID, 40, params("do_remote_decode", true, "do_remote_prefill", false, "transfer_id", "tx-acted"));
        p.match(RID, 0);
        p.alloc(RID, one(1, 2, 3), 0);
        p.meta();
        return p;
    }

    @Test
    void an_agreeing_matched_answer_adds_nothing_and_a_different_one_is_named() {
        Node plain = new Node(producer(TransferMode.WRITE));
        plain.admit(RID, 40, null);
        List<Effect> mine = plain.match(RID, 0);

        Node same = new Node(producer(TransferMode.WRITE));
        same.admit(RID, 40, null);
        List<Effect> agreeing = same.apply(new NodeEvent.MatchedTokensQueried(same.now, RID, 0,
                new NodeEvent.MatchedAnswer(0, false)));
        assertThat(agreeing).isEqualTo(mine);

        Node other = new Node(producer(TransferMode.WRITE));
        other.admit(RID, 40, null);
        List<Effect> diverged = other.apply(new NodeEvent.MatchedTokensQueried(other.now, RID, 0,
                new NodeEvent.MatchedAnswer(7, true)));
        assertThat(diverged.subList(0, mine.size())).isEqualTo(mine); // the node's answer stands
        Effect.Anomaly a = single(diverged, Effect.Anomaly.class);
        assertThat(a.kind()).isEqualTo(AnomalyKind.DRIVE_ANSWER_DIVERGED);
        assertThat(a.requestId()).isEqualTo(RID);
        assertThat(a.detail()).isEqualTo("get_num_new_matched_tokens: vLLM acted on (7, True) from the inner connector;"
                + " this node answers (0, False)");

        Node none = new Node(producer(TransferMode.WRITE));
        none.admit(RID, 40, null);
        assertThat(single(none.apply(new NodeEvent.MatchedTokensQueried(none.now, RID, 0,
                new NodeEvent.MatchedAnswer(null, false))), Effect.Anomaly.class).detail())
                .startsWith("get_num_new_matched_tokens: vLLM acted on (None, False)");
    }

    @Test
    void a_finish_agreeing_in_delay_free_and_every_param_adds_nothing() {
        List<Effect> mine = producerWithAllocation().finish(RID, FinishStatus.FINISHED_LENGTH_CAPPED, one(1, 2, 3));
        Effect.FinishDecision d = single(mine, Effect.FinishDecision.class);
        assertThat(d.delayFree()).isTrue();

        // the answer as it comes off the wire: a fresh map of plain Python values, in another key order
        Map<String, Object> wire = new LinkedHashMap<>();
        List<String> keys = new java.util.ArrayList<>(d.params().asMap().keySet());
        java.util.Collections.reverse(keys);
        for (String k : keys) {
            Object v = d.params().get(k);
            wire.put(k, v instanceof List<?> l ? copy(l) : v);
        }
        Node p = producerWithAllocation();
        List<Effect> agreeing = p.apply(new NodeEvent.RequestFinished(p.now, RID, FinishStatus.FINISHED_LENGTH_CAPPED,
                one(1, 2, 3), null, new NodeEvent.FinishAnswer(true, KvParams.of(wire))));
        assertThat(agreeing).isEqualTo(mine);
        assertThat(anomalies(agreeing)).doesNotContain(AnomalyKind.DRIVE_ANSWER_DIVERGED);
    }

    @Test
    void a_finish_vllm_freed_at_once_where_the_node_defers_is_named_on_the_request() {
        Node p = producerWithAllocation();
        List<Effect> fx = p.apply(new NodeEvent.RequestFinished(p.now, RID, FinishStatus.FINISHED_LENGTH_CAPPED,
                one(1, 2, 3), null, new NodeEvent.FinishAnswer(false, null)));
        assertThat(single(fx, Effect.FinishDecision.class).delayFree()).isTrue(); // the node decides as always
        Effect.Anomaly a = single(fx, Effect.Anomaly.class);
        assertThat(a.kind()).isEqualTo(AnomalyKind.DRIVE_ANSWER_DIVERGED);
        assertThat(a.requestId()).isEqualTo(RID);
        assertThat(a.transferId()).isEqualTo("tx-acted");
        assertThat(a.detail()).isEqualTo("request_finished: vLLM acted on delay_free=False from the inner connector;"
                + " this node answers delay_free=True");
        assertThat(AnomalyKind.DRIVE_ANSWER_DIVERGED.severity()).isEqualTo(AnomalyKind.Severity.HANG_RISK);
    }

    @Test
    void the_same_delay_free_with_other_params_names_the_keys_that_differ() {
        Effect.FinishDecision d = single(producerWithAllocation().finish(RID, FinishStatus.FINISHED_LENGTH_CAPPED,
                one(1, 2, 3)), Effect.FinishDecision.class);
        Map<String, Object> other = new LinkedHashMap<>(d.params().asMap());
        other.put("remote_host", "10.9.9.9");
        other.remove("tp_size");
        Node p = producerWithAllocation();
        List<Effect> fx = p.apply(new NodeEvent.RequestFinished(p.now, RID, FinishStatus.FINISHED_LENGTH_CAPPED,
                one(1, 2, 3), null, new NodeEvent.FinishAnswer(true, KvParams.of(other))));
        Effect.Anomaly a = single(fx, Effect.Anomaly.class);
        assertThat(a.kind()).isEqualTo(AnomalyKind.DRIVE_ANSWER_DIVERGED);
        assertThat(a.detail()).isEqualTo("request_finished: vLLM acted on delay_free=True from the inner connector;"
                + " this node answers delay_free=True with other params: remote_host: 10.9.9.9 != "
                + d.params().get("remote_host") + ", tp_size: absent != " + d.params().get("tp_size"));
    }

    /** A producer whose request {@link #RID} finished with a deferred free (the node holds its blocks). */
    private static Node producerDeferring() {
        Node p = producerWithAllocation();
        assertThat(p.decision(RID, FinishStatus.FINISHED_LENGTH_CAPPED, one(1, 2, 3)).delayFree()).isTrue();
        return p;
    }

    private static List<Effect> freed(Node p, List<String> sending, List<String> acted) {
        return p.apply(new NodeEvent.ConnectorOutputReceived(p.now, sending, null, new NodeEvent.FreedAnswer(acted)));
    }

    @Test
    void a_freed_set_agreeing_in_any_order_adds_nothing_and_the_decisions_are_those_without_it() {
        String other = proxyRid("acted-2");
        List<Effect> mine = producerDeferring().output(List.of(RID, other), null);
        assertThat(single(mine, Effect.FinishedSendingRewritten.class).safe()).containsExactly(RID);
        assertThat(freed(producerDeferring(), List.of(RID, other), List.of(RID))).isEqualTo(mine);

        // nothing surfaced: None and an empty set are the same answer
        List<Effect> none = producerDeferring().output(null, null);
        assertThat(freed(producerDeferring(), null, null)).isEqualTo(none);
        assertThat(freed(producerDeferring(), null, List.of())).isEqualTo(none);
    }

    @Test
    void a_request_vllm_freed_that_the_node_still_holds_and_one_it_frees_that_vllm_kept_are_named() {
        Node p = producerDeferring();
        String early = proxyRid("acted-early");
        List<Effect> mine = producerDeferring().output(List.of(RID), null);
        // vLLM kept RID (the inner left it out) and freed one the node never deferred
        List<Effect> fx = freed(p, List.of(RID), List.of(early));
        assertThat(fx.subList(0, mine.size() - 1)).isEqualTo(mine.subList(0, mine.size() - 1));
        assertThat(single(fx, Effect.FinishedSendingRewritten.class).safe()).containsExactly(RID); // the node's stands
        List<Effect.Anomaly> diverged = fx.stream().filter(e -> e instanceof Effect.Anomaly a
                && a.kind() == AnomalyKind.DRIVE_ANSWER_DIVERGED).map(e -> (Effect.Anomaly) e).toList();
        assertThat(diverged).hasSize(2);
        assertThat(diverged.get(0).requestId()).isEqualTo(early);
        assertThat(diverged.get(0).detail()).isEqualTo("update_connector_output: vLLM freed its blocks (the inner"
                + " connector's finished_sending); this node does not surface it this step");
        assertThat(diverged.get(1).requestId()).isEqualTo(RID);
        assertThat(diverged.get(1).transferId()).isEqualTo("tx-acted");
        assertThat(diverged.get(1).detail()).isEqualTo("update_connector_output: this node surfaces it (frees its"
                + " blocks); vLLM kept them (the inner connector's finished_sending leaves it out)");
        // the node's state moved as without acted: RID is freed, a second ACK for it is not deferred any more
        Node without = producerDeferring();
        without.output(List.of(RID), null);
        assertThat(p.state.canonical()).isEqualTo(without.state.canonical());
    }

    private static List<Object> copy(List<?> l) {
        List<Object> out = new java.util.ArrayList<>(l.size());
        for (Object o : l) {
            out.add(o instanceof List<?> inner ? copy(inner) : o);
        }
        return out;
    }
}
