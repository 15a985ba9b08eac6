package io.kvledger.core.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ToyProxyParamsTest {

    @Test
    void the_decode_leg_copies_what_the_prefill_leg_returned_as_it_came() {
        Map<String, Object> returned = new LinkedHashMap<>();
        returned.put("remote_engine_id", "10.0.0.1:6301");
        returned.put("remote_block_ids", List.of(3L, 4L));
        returned.put("transfer_id", 7);
        returned.put("remote_host", "10.0.0.1");
        KvParams p = ToyProxyParams.decode(2, 4, "tx-minted", returned);
        assertThat(p.asMap()).containsExactly(Map.entry("do_remote_decode", false), Map.entry("do_remote_prefill", true),
                Map.entry("remote_engine_id", "10.0.0.1:6301"), Map.entry("remote_block_ids", List.of(3L, 4L)),
                Map.entry("transfer_id", 7L), Map.entry("remote_dp_size", 2L), Map.entry("remote_tp_size", 4L));
    }

    @Test
    void a_key_the_prefill_leg_did_not_return_is_none_and_without_a_return_the_minted_id_stays() {
        KvParams p = ToyProxyParams.decode(1, 1, "tx-minted", Map.of("remote_engine_id", "e"));
        assertThat(p.has("remote_block_ids")).isTrue();
        assertThat(p.get("remote_block_ids")).isNull();
        assertThat(p.get("transfer_id")).as("params.get('transfer_id') of the returned dict").isNull();
        assertThat(p.get("remote_engine_id")).isEqualTo("e");
        assertThat(ToyProxyParams.decode(1, 1, "tx-minted", null).get("transfer_id")).isEqualTo("tx-minted");
    }
}
