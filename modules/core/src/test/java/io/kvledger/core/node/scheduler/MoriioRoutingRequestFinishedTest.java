package io.kvledger.core.node.scheduler;

import static io.kvledger.core.node.scheduler.SchedulerFixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * moriio-protocol.md 8.2 ({@code test_moriio_routing.py}) and the shape of the producer's
 * response (seed-vs-newest C.15, A24).
 */
class MoriioRoutingRequestFinishedTest {

    private static final List<String> RESPONSE_KEYS = List.of("do_remote_prefill", "do_remote_decode",
            "remote_block_ids", "remote_engine_id", "remote_host", "remote_handshake_port", "remote_notify_port",
            "remote_dp_rank", "remote_dp_rank_override", "remote_dp_size", "remote_dp_size_local", "tp_size",
            "transfer_id");

    private static Effect.FinishDecision finishCapped(Node p, String rid, KvParams kv, int... blocks) {
        p.admit(rid, 32, kv);
        return p.decision(rid, FinishStatus.FINISHED_LENGTH_CAPPED, one(blocks));
    }

    @Test
    void test_request_finished_returns_prefill_rank_for_propagation() {
        Node p = new Node(producer(TransferMode.WRITE).dp(11, 16, 8));
        Effect.FinishDecision d = finishCapped(p, "req-route",
                params("do_remote_decode", true, "transfer_id", "tx-route"));

        assertThat(d.delayFree()).isFalse();
        assertThat(d.params()).isNotNull();
        assertThat(d.params().get("remote_dp_rank")).isEqualTo(11L);
        assertThat(d.params().get("remote_dp_rank_override")).isEqualTo(true);
        assertThat(d.params().get("remote_dp_size")).isEqualTo(16L);
        assertThat(d.params().get("remote_dp_size_local")).isEqualTo(8L);
        assertThat(d.params().get("transfer_id")).isEqualTo("tx-route");
    }

    @Test
    void test_request_finished_rank_tracks_the_actual_rank() {
        Node p = new Node(producer(TransferMode.WRITE).dp(4, 16, 8));
        Effect.FinishDecision d = finishCapped(p, "req-rank4",
                params("do_remote_decode", true, "transfer_id", "tx-4", "remote_dp_rank", 9));

        assertThat(d.params().get("remote_dp_rank")).isEqualTo(4L);
    }

    @Test
    void test_request_finished_no_kv_params_is_noop() {
        Node p = new Node(producer(TransferMode.WRITE));
        p.admit("req-none", 32, null);

        List<Effect> fx = p.finish("req-none", FinishStatus.FINISHED_LENGTH_CAPPED, one(1, 2));

        assertThat(single(fx, Effect.FinishDecision.class)).isEqualTo(new Effect.FinishDecision("req-none", false, null));
        assertThat(only(fx, Effect.DeferralStarted.class)).isEmpty();
        assertThat(p.state.deferredDeadlines()).isEmpty();
    }

    @Test
    void response_has_exactly_the_thirteen_keys_in_order_with_defaulted_string_ports() {
        Node p = new Node(producer(TransferMode.READ).hostIp("10.0.0.1").tp(0, 4));
        KvParams in = params("do_remote_decode", true, "do_remote_prefill", false, "transfer_id", "tx-13",
                "remote_tp_size", 8, "remote_dp_size", 2, "remote_engine_id", null, "remote_block_ids", null,
                "custom_key", "x");
        Effect.FinishDecision d = finishCapped(p, "req-13", in, 4, 5, 6);

        assertThat(d.delayFree()).isTrue();
        assertThat(List.copyOf(d.params().asMap().keySet())).containsExactlyElementsOf(RESPONSE_KEYS);
        assertThat(d.params().get("do_remote_prefill")).isEqualTo(true);
        assertThat(d.params().get("do_remote_decode")).isEqualTo(false);
        assertThat(d.params().get("remote_block_ids")).isEqualTo(grouped(a(4, 5, 6)));
        assertThat(d.params().get("remote_engine_id")).isEqualTo("10.0.0.1:6301");
        assertThat(d.params().get("remote_host")).isEqualTo("10.0.0.1");
        assertThat(d.params().get("remote_handshake_port")).isEqualTo("6301");
        assertThat(d.params().get("remote_notify_port")).isEqualTo("61005");
        assertThat(d.params().get("remote_dp_rank")).isEqualTo(0L);
        assertThat(d.params().get("remote_dp_rank_override")).isEqualTo(true);
        assertThat(d.params().get("remote_dp_size")).isEqualTo(1L);
        assertThat(d.params().get("remote_dp_size_local")).isEqualTo(1L);
        assertThat(d.params().get("tp_size")).isEqualTo(4L);
        assertThat(d.params().get("transfer_id")).isEqualTo("tx-13");
        assertThat(d.params().has("remote_tp_size")).isFalse();
        assertThat(d.params().has("custom_key")).isFalse();
    }

    @Test
    void response_echoes_configured_base_ports_as_configured() {
        Node p = new Node(producer(TransferMode.READ).hostIp("10.0.0.9").handshakePort(7301).notifyPort("62005")
                .dp(3, 4, 2).tp(1, 2));
        Effect.FinishDecision d = finishCapped(p, "req-ports", params("do_remote_decode", true, "transfer_id", "t"), 1);

        assertThat(d.params().get("remote_engine_id")).isEqualTo("10.0.0.9:7301");
        assertThat(d.params().get("remote_handshake_port")).isEqualTo(7301L);
        // the base notify port, not the rank's offset one
        assertThat(d.params().get("remote_notify_port")).isEqualTo("62005");
        assertThat(d.params().get("remote_dp_rank")).isEqualTo(3L);
        assertThat(d.params().get("remote_dp_size_local")).isEqualTo(2L);
        assertThat(d.params().get("tp_size")).isEqualTo(2L);
    }

    @Test
    void falsy_int_port_is_defaulted_but_string_zero_is_kept() {
        Node zero = new Node(producer(TransferMode.READ).hostIp("h").handshakePort(0));
        Node strZero = new Node(producer(TransferMode.READ).hostIp("h").handshakePort("0"));

        Effect.FinishDecision a = finishCapped(zero, "r", params("do_remote_decode", true, "transfer_id", "t"), 1);
        Effect.FinishDecision b = finishCapped(strZero, "r", params("do_remote_decode", true, "transfer_id", "t"), 1);

        assertThat(a.params().get("remote_engine_id")).isEqualTo("h:6301");
        assertThat(a.params().get("remote_handshake_port")).isEqualTo("6301");
        assertThat(b.params().get("remote_engine_id")).isEqualTo("h:0");
        assertThat(b.params().get("remote_handshake_port")).isEqualTo("0");
    }

    @Test
    void newest_returns_grouped_remote_block_ids() {
        Node p = new Node(producer(TransferMode.READ));
        Effect.FinishDecision d = finishCapped(p, "req-g", params("do_remote_decode", true, "transfer_id", "t"), 4, 5);

        assertThat(d.params().get("remote_block_ids")).isEqualTo(List.of(List.of(4L, 5L)));
    }

    @Test
    void seed_returns_flat_remote_block_ids() {
        Node p = new Node(producer(TransferMode.READ).behaviour(seed()));
        Effect.FinishDecision d = finishCapped(p, "req-f", params("do_remote_decode", true, "transfer_id", "t"), 4, 5);

        assertThat(d.delayFree()).isTrue();
        assertThat(d.params().get("remote_block_ids")).isEqualTo(List.of(4L, 5L));
        assertThat(List.copyOf(d.params().asMap().keySet())).containsExactlyElementsOf(RESPONSE_KEYS);
    }

    @Test
    void response_carries_the_raw_empty_transfer_id_not_the_synthesized_one() {
        // C.1: present-but-empty tid: the map uses sidecar-<rid>, the P response keeps "".
        Node p = new Node(producer(TransferMode.READ));
        p.admit("req-empty", 32, params("do_remote_decode", true, "transfer_id", ""));
        p.alloc("req-empty", one(1, 2), 0);

        List<Effect> fx = p.finish("req-empty", FinishStatus.FINISHED_LENGTH_CAPPED, one(1, 2));

        assertThat(single(fx, Effect.FinishDecision.class).params().get("transfer_id")).isEqualTo("");
        assertThat(p.state.transferIdMap()).containsEntry("sidecar-req-empty", "req-empty");
    }

    @Test
    void response_carries_the_raw_none_transfer_id_not_the_synthesized_one() {
        // C.1: setdefault does not replace a key that is present with None.
        Node p = new Node(producer(TransferMode.READ));
        p.admit("req-none-tid", 32, params("do_remote_decode", true, "transfer_id", null));
        p.alloc("req-none-tid", one(1, 2), 0);

        List<Effect> fx = p.finish("req-none-tid", FinishStatus.FINISHED_LENGTH_CAPPED, one(1, 2));

        Effect.FinishDecision d = single(fx, Effect.FinishDecision.class);
        assertThat(d.params().has("transfer_id")).isTrue();
        assertThat(d.params().get("transfer_id")).isNull();
        assertThat(p.state.transferIdMap()).containsEntry("sidecar-req-none-tid", "req-none-tid");
    }
}
