package io.kvledger.core.moriio;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class RequestIdsTest {

    private static final String P = "host:10.0.0.1,handshake:6301,notify:61005";
    private static final String D = "host:10.0.0.2,handshake:6301,notify:61005";
    private static final String HEX = "0123456789abcdef0123456789abcdef";
    private static final String WRAPPED =
            "cmpl-___prefill_addr_" + P + "___decode_addr_" + D + "_" + HEX + "-0-b8ee174a";

    @Test
    void decode_side_finds_prefill_address_in_wrapped_vllm_id() {
        assertThat(RequestIds.peerZmqFromRequestId(WRAPPED, false)).contains(P);
    }

    @Test
    void prefill_side_finds_decode_address_in_wrapped_vllm_id() {
        assertThat(RequestIds.peerZmqFromRequestId(WRAPPED, true)).contains(D);
    }

    @Test
    void both_directions_work_on_the_bare_proxy_id() {
        String bare = "___prefill_addr_" + P + "___decode_addr_" + D + "_" + HEX;
        assertThat(RequestIds.peerZmqFromRequestId(bare, false)).contains(P);
        assertThat(RequestIds.peerZmqFromRequestId(bare, true)).contains(D);
    }

    @Test
    void extracted_addresses_parse() {
        String peer = RequestIds.peerZmqFromRequestId(WRAPPED, true).orElseThrow();
        assertThat(ZmqAddress.parse(peer).value()).isEqualTo(new ZmqAddress("10.0.0.2", 6301, 61005));
    }

    @Test
    void no_embedded_address_gives_empty() {
        assertThat(RequestIds.peerZmqFromRequestId("cmpl-abc-0-956053a4", false)).isEmpty();
        assertThat(RequestIds.peerZmqFromRequestId("cmpl-abc-0-956053a4", true)).isEmpty();
        assertThat(RequestIds.peerZmqFromRequestId("", true)).isEmpty();
    }

    @Test
    void uppercase_hex_does_not_match_producer_form() {
        String upper = "___prefill_addr_" + P + "___decode_addr_" + D + "_" + HEX.toUpperCase();
        assertThat(RequestIds.peerZmqFromRequestId(upper, true)).isEmpty();
        // The consumer form does not look at the uuid.
        assertThat(RequestIds.peerZmqFromRequestId(upper, false)).contains(P);
    }

    @Test
    void producer_form_needs_exactly_32_hex_before_end_or_dash() {
        String shortHex = "___decode_addr_" + D + "_" + HEX.substring(1);
        assertThat(RequestIds.peerZmqFromRequestId(shortHex, true)).isEmpty();
        String trailing = "___decode_addr_" + D + "_" + HEX + "x";
        assertThat(RequestIds.peerZmqFromRequestId(trailing, true)).isEmpty();
        // 33 hex digits: the greedy group takes one hex digit, which is not preceded by '_'; no match.
        String longHex = "___decode_addr_" + D + "_" + HEX + "a";
        assertThat(RequestIds.peerZmqFromRequestId(longHex, true)).isEmpty();
    }

    @Test
    void consumer_form_is_non_greedy_and_producer_form_is_greedy() {
        String twice = "___prefill_addr_A___decode_addr_B___prefill_addr_C___decode_addr_D_" + HEX;
        assertThat(RequestIds.peerZmqFromRequestId(twice, false)).contains("A");
        assertThat(RequestIds.peerZmqFromRequestId(twice, true))
                .contains("B___prefill_addr_C___decode_addr_D");
        String twoUuids = "___decode_addr_X_" + HEX + "_" + HEX;
        assertThat(RequestIds.peerZmqFromRequestId(twoUuids, true)).contains("X_" + HEX);
    }

    @Test
    void dot_excludes_only_newline_like_python() {
        assertThat(RequestIds.peerZmqFromRequestId("___prefill_addr_a\rb___decode_addr_", false))
                .contains("a\rb");
        assertThat(RequestIds.peerZmqFromRequestId("___prefill_addr_a\u0085b___decode_addr_", false))
                .contains("a\u0085b");
        assertThat(RequestIds.peerZmqFromRequestId("___prefill_addr_a\nb___decode_addr_", false))
                .isEmpty();
        assertThat(RequestIds.peerZmqFromRequestId("___decode_addr_a\u2028b_" + HEX, true))
                .contains("a\u2028b");
    }

    @Test
    void dollar_matches_before_a_final_newline_only() {
        String base = "___decode_addr_" + D + "_" + HEX;
        assertThat(RequestIds.peerZmqFromRequestId(base + "\n", true)).contains(D);
        assertThat(RequestIds.peerZmqFromRequestId(base + "-0-b8ee174a\n", true)).contains(D);
        assertThat(RequestIds.peerZmqFromRequestId(base + "\n\n", true)).isEmpty();
        assertThat(RequestIds.peerZmqFromRequestId(base + "\r", true)).isEmpty();
        assertThat(RequestIds.peerZmqFromRequestId(base + "\r\n", true)).isEmpty();
    }

    @Test
    void proxy_request_id_round_trips_through_both_regexes() {
        ZmqAddress p = new ZmqAddress("10.0.0.1", 6301, 61005);
        ZmqAddress d = new ZmqAddress("::1", 6302, 61006);
        String id = RequestIds.proxyRequestId(p, d, HEX);
        assertThat(id).isEqualTo("___prefill_addr_host:10.0.0.1,handshake:6301,notify:61005"
                + "___decode_addr_host:::1,handshake:6302,notify:61006_" + HEX);
        String wrapped = "cmpl-" + id + "-0-b8ee174a";
        assertThat(ZmqAddress.parse(RequestIds.peerZmqFromRequestId(wrapped, false).orElseThrow()).value())
                .isEqualTo(p);
        assertThat(ZmqAddress.parse(RequestIds.peerZmqFromRequestId(wrapped, true).orElseThrow()).value())
                .isEqualTo(d);
    }

    @Test
    void synthesized_transfer_id_prefixes_sidecar() {
        assertThat(RequestIds.synthesizedTransferId("cmpl-R-0-1234abcd")).isEqualTo("sidecar-cmpl-R-0-1234abcd");
        assertThat(RequestIds.synthesizedTransferId("")).isEqualTo("sidecar-");
    }
}
