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
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The {@code vllm-239b5ff30} profile: the scheduler side of vLLM main at 239b5ff30
 * (moriio_connector.py of 2026-05-18), where it differs from the seed.
 */
class Vllm239b5ff30SchedulerTest {

    static final Behaviour V = Behaviour.vllm239b5ff30();

    @Test
    void the_preset_is_the_seed_without_section_e_plus_the_new_request_receive() {
        List<Switch> differ = new ArrayList<>();
        for (Switch s : Switch.values()) {
            if (V.on(s) != seed().on(s)) {
                differ.add(s);
            }
        }
        assertThat(differ).containsExactlyInAnyOrder(Switch.MODE_FROM_ENV, Switch.TRANSFER_ID_REQUIRED, Switch.READ_RECV_ALIGNS_FULL_HIT,
                Switch.WRITE_NOTIFY_DECODE_ADDRESS, Switch.PENDING_SAVE_UNKNOWN_RAISES, Switch.META_WITHOUT_ROUTING_FIELDS,
                Switch.FINISH_UNMAP_EVERY_ROLE, Switch.WRITE_ABORT_STAGES_RECV, Switch.FINISH_PARAMS_SIX_KEYS,
                Switch.NO_CONNECTOR_OUTPUT_HOOK, Switch.WRITE_CONSUMER_RECV_NEW_REQS);
        for (Switch s : differ) {
            // on in vllm-239b5ff30 only: a header written before they existed lists none, and keeps its behaviour
            assertThat(seed().on(s)).as(s.key()).isFalse();
            assertThat(Behaviour.newest().on(s)).as(s.key()).isFalse();
        }
        assertThat(V.profile()).isEqualTo("vllm-239b5ff30");
        assertThat(Behaviour.preset("vllm-239b5ff30")).isEqualTo(V);
    }

    @Test
    void the_mode_comes_from_the_environment_as_vllm_parses_it() {
        java.util.Map<String, Object> extra = java.util.Map.of("read_mode", true);
        for (String env : new String[] {"1", "TRUE", "true"}) {
            assertThat(io.kvledger.core.config.NodeConfig.fromExtraConfig("kv_consumer", extra, null, env, V, 0, 1, 1, 0, 1)
                    .value().mode()).as(env).isEqualTo(TransferMode.READ);
        }
        for (String env : new String[] {null, "yes", " true", "0"}) {
            assertThat(io.kvledger.core.config.NodeConfig.fromExtraConfig("kv_consumer", extra, null, env, V, 0, 1, 1, 0, 1)
                    .value().mode()).as(String.valueOf(env)).isEqualTo(TransferMode.WRITE);
        }
        // the seed reads read_mode, whatever the environment says
        assertThat(io.kvledger.core.config.NodeConfig.fromExtraConfig("kv_consumer", extra, null, null, seed(), 0, 1, 1, 0, 1)
                .value().mode()).isEqualTo(TransferMode.READ);
    }

    @Test
    void request_finished_returns_six_keys_with_flat_block_ids_and_unmaps_the_producer() {
        Node p = new Node(producer(TransferMode.WRITE).hostIp("10.0.0.5").handshakePort(6301).behaviour(V));
        String rid = proxyRid("r1");
        p.admit(rid, 32, params("do_remote_decode", true, "transfer_id", "t1"));
        p.alloc(rid, one(1, 2), 0);
        List<Effect> fx = p.finish(rid, FinishStatus.FINISHED_LENGTH_CAPPED, one(1, 2));
        Effect.FinishDecision d = single(fx, Effect.FinishDecision.class);
        assertThat(d.delayFree()).isTrue();
        assertThat(d.params().asMap().keySet()).containsExactly("do_remote_prefill", "do_remote_decode", "remote_block_ids",
                "remote_engine_id", "tp_size", "transfer_id");
        assertThat(d.params().get("remote_block_ids")).isEqualTo(ids(1, 2));
        assertThat(d.params().get("remote_engine_id")).isEqualTo("10.0.0.5:6301");
        // no deferral deadline: 239b5ff30 has none, and the map entry is gone at the finish
        assertThat(only(fx, Effect.DeferralStarted.class)).isEmpty();
        assertThat(single(fx, Effect.Unmapped.class).kind()).isEqualTo(Effect.UnmapKind.EXACT);
        assertThat(anomalies(fx)).doesNotContain(AnomalyKind.MAPPING_LEAK);
        assertThat(p.state.phaseOf(rid)).isEqualTo(RequestPhase.DEFERRED_FREE);
        // long past any defer_timeout nothing is reaped; finished_sending frees it as reported
        assertThat(only(p.at(p.now + 3600 * S).output(null, null), Effect.AckSurfaced.class)).isEmpty();
        List<Effect> ack = p.acks(rid);
        assertThat(single(ack, Effect.FinishedSendingRewritten.class).safe()).containsExactly(rid);
        assertThat(p.state.phaseOf(rid)).isEqualTo(RequestPhase.FREED_AFTER_ACK);
    }

    @Test
    void an_ack_for_a_running_request_goes_through_and_is_named() {
        Node p = new Node(producer(TransferMode.READ).behaviour(V));
        String rid = proxyRid("r2");
        p.admit(rid, 32, params("do_remote_decode", true, "transfer_id", "t2"));
        p.alloc(rid, one(1, 2), 0);
        List<Effect> fx = p.acks(rid, "nobody");
        assertThat(single(fx, Effect.FinishedSendingRewritten.class).safe()).containsExactly(rid, "nobody");
        assertThat(anomalies(fx)).containsExactly(AnomalyKind.FINISHED_SENDING_LIVE_REQUEST,
                AnomalyKind.FINISHED_SENDING_UNKNOWN_REQUEST);
    }

    @Test
    void the_write_notify_goes_from_every_rank_to_the_decode_address_per_tp_index() {
        Node d = new Node(consumer(TransferMode.WRITE).dp(1, 2, 2).tp(0, 2).behaviour(V));
        String rid = proxyRid("r3");
        d.admit(rid, 40, params("do_remote_prefill", true, "transfer_id", "t3", "remote_dp_rank", 1L,
                "remote_dp_rank_override", true));
        d.match(rid, 0);
        List<Effect> fx = d.alloc(rid, one(4, 5, 6), 0);
        List<Effect.SendRemoteBlocks> sent = only(fx, Effect.SendRemoteBlocks.class);
        assertThat(sent).extracting(Effect.SendRemoteBlocks::host).containsOnly(DECODE.host());
        assertThat(sent).extracting(Effect.SendRemoteBlocks::port).containsExactly(62005 + 1, 62005 + 2);
        assertThat(sent.get(0).blockNotifyList()).containsExactly(4, 5, 6); // even with no external tokens
        assertThat(sent.get(0).decodeRank()).isEqualTo(1);
        // a request id without an embedded address raises ValueError: no notify, do_remote_prefill stays
        d.admit("plain", 40, params("do_remote_prefill", true, "transfer_id", "t4"));
        d.match("plain", 0);
        List<Effect> raised = d.alloc("plain", one(7), 40);
        assertThat(only(raised, Effect.SendRemoteBlocks.class)).isEmpty();
        assertThat(anomalies(raised)).contains(AnomalyKind.NOTIFY_ADDRESS_UNRESOLVED);
    }

    @Test
    void a_missing_transfer_id_raises_instead_of_being_synthesized() {
        Node p = new Node(producer(TransferMode.WRITE).behaviour(V));
        p.admit("r5", 16, params("do_remote_decode", true));
        List<Effect> fx = p.alloc("r5", one(1), 0);
        assertThat(anomalies(fx)).containsExactly(AnomalyKind.TRANSFER_ID_MISSING);
        assertThat(p.state.phaseOf("r5")).isEqualTo(RequestPhase.ADMITTED);
    }

    @Test
    void a_write_producer_raises_on_a_scheduled_request_without_a_pending_save() {
        Node p = new Node(producer(TransferMode.WRITE).cacheBlockSize(16).behaviour(V));
        List<Effect> fx = p.step(cached("cmpl-plain-1", one(9)));
        assertThat(anomalies(fx)).containsExactly(AnomalyKind.PENDING_SAVE_UNKNOWN_REQUEST);
        assertThat(single(fx, Effect.MetadataBuilt.class).reqsToSave()).isEmpty();
        // the seed skips it
        Node s = new Node(producer(TransferMode.WRITE).cacheBlockSize(16).behaviour(seed()));
        assertThat(anomalies(s.step(cached("cmpl-plain-1", one(9))))).isEmpty();
    }

    @Test
    void a_write_abort_before_allocation_stages_an_empty_receive_and_sends_no_release() {
        Node d = new Node(consumer(TransferMode.WRITE).behaviour(V));
        String rid = proxyRid("r6");
        d.admit(rid, 40, params("do_remote_prefill", true, "transfer_id", "t6", "remote_block_ids", null,
                "remote_engine_id", null));
        List<Effect> fx = d.finish(rid, FinishStatus.FINISHED_ABORTED, one());
        assertThat(only(fx, Effect.SendRelease.class)).isEmpty();
        Effect.MetadataBuilt m = d.meta();
        assertThat(m.reqsToRecv()).singleElement().satisfies(r -> {
            assertThat(r.requestId()).isEqualTo(rid);
            assertThat(r.remoteHost()).isEqualTo(PREFILL.host());
            assertThat(r.localBlockIds().first()).isEmpty();
        });
    }

    @Test
    void a_write_consumer_receives_every_scheduled_new_request() {
        Node d = new Node(consumer(TransferMode.WRITE).behaviour(V));
        String rid = proxyRid("r8");
        io.kvledger.core.model.KvParams kv = params("do_remote_prefill", false, "transfer_id", "t8", "remote_block_ids", null,
                "remote_engine_id", null, "remote_dp_size", 2L);
        List<Effect> fx = d.apply(new io.kvledger.core.event.NodeEvent.StepScheduled(d.now, 1, List.of(),
                List.of(new io.kvledger.core.event.NodeEvent.NewRequest(rid, groups(a(3, 4), a(9)), 40, kv)), List.of()));
        Effect.MetadataBuilt m = single(fx, Effect.MetadataBuilt.class);
        assertThat(m.reqsToRecv()).singleElement().satisfies(r -> {
            assertThat(r.requestId()).isEqualTo(rid);
            assertThat(r.localBlockIds().size()).isEqualTo(1); // list(new_req.block_ids)[0]
            assertThat(r.localBlockIds().first()).containsExactly(3, 4);
            assertThat(r.remoteHost()).isEqualTo(PREFILL.host());
            assertThat(r.remoteEngineId()).isNull();
        });
        // a plain request (no kv_transfer_params): add_new_req raises KeyError on transfer_id
        List<Effect> raised = d.apply(new io.kvledger.core.event.NodeEvent.StepScheduled(d.now, 2, List.of(),
                List.of(new io.kvledger.core.event.NodeEvent.NewRequest("plain", one(5), 16, null)), List.of()));
        assertThat(anomalies(raised)).containsExactly(AnomalyKind.META_PARAM_MISSING);
        assertThat(single(raised, Effect.MetadataBuilt.class).reqsToRecv()).isEmpty();
        // a recording without scheduled_new_reqs cannot say what this connector received
        List<Effect> unknown = d.apply(new io.kvledger.core.event.NodeEvent.StepScheduled(d.now, 3, List.of()));
        assertThat(anomalies(unknown)).containsExactly(AnomalyKind.INPUT_NOT_RECORDED);
        // the seed builds nothing from them
        Node s = new Node(consumer(TransferMode.WRITE).behaviour(seed()));
        assertThat(single(s.apply(new io.kvledger.core.event.NodeEvent.StepScheduled(s.now, 1, List.of(),
                List.of(new io.kvledger.core.event.NodeEvent.NewRequest(rid, one(3, 4), 40, kv)), List.of())),
                Effect.MetadataBuilt.class).reqsToRecv()).isEmpty();
    }

    @Test
    void a_read_receive_with_no_external_tokens_still_aligns_the_allocation() {
        Node d = new Node(consumer(TransferMode.READ).behaviour(V));
        String rid = proxyRid("r7");
        d.admit(rid, 40, params("do_remote_prefill", true, "transfer_id", "t7", "remote_block_ids", ids(11, 12, 13),
                "remote_engine_id", "10.0.0.1:6301"));
        d.match(rid, 32);
        d.alloc(rid, one(1, 2), 0);
        Effect.MetadataBuilt m = d.meta();
        // local [1, 2] is shorter than remote: remote[-2:] (upstream's own quirk)
        assertThat(m.reqsToRecv()).singleElement().satisfies(r -> assertThat(r.localBlockIds().first()).containsExactly(12, 13));
    }
}
