package io.kvledger.wire;

import static io.kvledger.wire.Frames2.concat;
import static io.kvledger.wire.Frames2.hex;
import static io.kvledger.wire.Frames2.map;
import static io.kvledger.wire.Frames2.py;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Registration, handshake request, agent metadata and layer map codecs beyond the vectors. */
class CodecsTest {

    private final RegistrationCodec reg = new RegistrationCodec();
    private final HandshakeCodec hs = new HandshakeCodec();

    @Test
    void registrationRoundTripsAndIsStrict() {
        Registration r = new Registration("P", "10.0.0.1:8100", Registration.zmqAddress("10.0.0.1", 6301, 61005), 2, 4, "WRITE");
        assertThat(r.zmqAddress()).isEqualTo("host:10.0.0.1,handshake:6301,notify:61005");
        assertThat(reg.decode(reg.encode(r))).isEqualTo(new DecodeResult.Ok<>(r));
        assertThat(reg.decode(reg.encode(Registration.hello()))).isEqualTo(new DecodeResult.Ok<>(Registration.hello()));
        assertThat(hex(reg.encode(Registration.hello()))).isEqualTo("81a474797065a548454c4c4f");
        assertThat(reg.decode(py(map("type", "P", "http_address", "a"))).rejectionOrNull().reason()).isEqualTo(RejectReason.MISSING_FIELD);
        assertThat(reg.decode(py(map("type", "X"))).rejectionOrNull().reason()).isEqualTo(RejectReason.UNKNOWN_TYPE);
        assertThat(reg.decode(py(map("http_address", "a"))).rejectionOrNull().reason()).isEqualTo(RejectReason.MISSING_TYPE);
        assertThat(reg.decode(py(List.of(1))).rejectionOrNull().reason()).isEqualTo(RejectReason.NOT_A_MAP);
        assertThat(reg.decode(new byte[0]).rejectionOrNull().reason()).isEqualTo(RejectReason.EMPTY_FRAME);
        byte[] binKey = concat(hex("81c404"), "type".getBytes(java.nio.charset.StandardCharsets.US_ASCII), py("P"));
        assertThat(reg.decode(binKey).rejectionOrNull().reason()).isEqualTo(RejectReason.BIN_KEY);
        byte[] withExtra = py(map("type", "D", "http_address", "a:1", "zmq_address", "z", "dp_size", 1, "tp_size", 8,
                "transfer_mode", "READ", "handshake_port", 6301));
        assertThat(reg.decode(withExtra).valueOrNull()).isEqualTo(new Registration("D", "a:1", "z", 1, 8, "READ"));
    }

    @Test
    void handshakeRequestsAreExactBytes() {
        assertThat(HandshakeRequest.decode("get_meta_msg".getBytes(java.nio.charset.StandardCharsets.US_ASCII)).valueOrNull())
                .isEqualTo(HandshakeRequest.GET_META_MSG);
        assertThat(HandshakeRequest.decode("pop_done_recv".getBytes(java.nio.charset.StandardCharsets.US_ASCII)).valueOrNull())
                .isEqualTo(HandshakeRequest.POP_DONE_RECV);
        Rejection r = HandshakeRequest.decode("get_meta_msg ".getBytes(java.nio.charset.StandardCharsets.US_ASCII)).rejectionOrNull();
        assertThat(r.reason()).isEqualTo(RejectReason.UNKNOWN_TYPE);
        assertThat(r.wouldKillPythonListener()).as("HandshakeError ends the Python handshake thread").isTrue();
        assertThat(HandshakeRequest.decode(new byte[] {0, (byte) 0xff}).rejectionOrNull().detail()).contains("??");
        assertThat(HandshakeRequest.decode(null).rejectionOrNull().reason()).isEqualTo(RejectReason.EMPTY_FRAME);
    }

    @Test
    void agentMetadataCarriesUnsignedPointersAndOpaqueBlobs() {
        long high = 0xffff_8000_0000_0000L;
        AgentMetadata m = new AgentMetadata("10.0.0.1:6301", OpaqueBytes.ofHex("00ff10"), new long[] {0, 140234567680000L, high},
                4096, 262144, "ROCM_AITER_FA");
        byte[] f = hs.encodeMetadata(m);
        assertThat(hex(f)).contains("cfffff800000000000");
        AgentMetadata back = hs.decodeMetadata(f).valueOrNull();
        assertThat(back).isEqualTo(m);
        assertThat(back.kvCachesBaseAddr()[2]).isEqualTo(high);
        assertThat(back.toString()).contains(Long.toUnsignedString(high));
        assertThat(back.agentMetadata().toByteArray()).isEqualTo(new byte[] {0, -1, 16});
    }

    @Test
    void agentMetadataDecodingIsStrict() {
        Object[] full = {"engine_id", "e", "agent_metadata", new byte[] {1}, "kv_caches_base_addr", List.of(1L), "num_blocks", 1,
            "block_len", 2, "attn_backend_name", "x"};
        assertThat(hs.decodeMetadata(py(map(full))).isOk()).isTrue();
        Object[] withExtra = java.util.Arrays.copyOf(full, full.length + 2);
        withExtra[full.length] = "future_field";
        withExtra[full.length + 1] = List.of(map("a", 1));
        assertThat(hs.decodeMetadata(py(map(withExtra))).isOk()).as("msgspec ignores unknown fields").isTrue();
        Object[] noBlob = {"engine_id", "e", "kv_caches_base_addr", List.of(), "num_blocks", 1, "block_len", 2, "attn_backend_name", "x"};
        assertThat(hs.decodeMetadata(py(map(noBlob))).rejectionOrNull().reason()).isEqualTo(RejectReason.MISSING_FIELD);
        Object[] strBlob = full.clone();
        strBlob[3] = "01";
        assertThat(hs.decodeMetadata(py(map(strBlob))).rejectionOrNull().reason()).isEqualTo(RejectReason.WRONG_FIELD_TYPE);
        Object[] negAddr = full.clone();
        negAddr[5] = List.of(-1L);
        assertThat(hs.decodeMetadata(py(map(negAddr))).rejectionOrNull().reason()).isEqualTo(RejectReason.INVALID_VALUE);
        assertThat(hs.decodeMetadata(py(List.of(1))).rejectionOrNull().reason()).isEqualTo(RejectReason.NOT_A_MAP);
    }

    @Test
    void layerMapsKeepOrderAndOpaqueDescriptors() {
        LayerMap lm = LayerMap.builder()
                .layer("model.layers.1.attn", OpaqueBytes.ofHex("02"))
                .layer("model.layers.0.kda", OpaqueBytes.ofHex("0a"), OpaqueBytes.ofHex("0b"))
                .layer("empty")
                .build();
        byte[] f = hs.encodeLayerMap(lm);
        LayerMap back = hs.decodeLayerMap(f).valueOrNull();
        assertThat(back).isEqualTo(lm);
        assertThat(back.layers().keySet()).containsExactly("model.layers.1.attn", "model.layers.0.kda", "empty");
        assertThat(hs.decodeLayerMap(py(map("l", List.of("str")))).rejectionOrNull().reason()).isEqualTo(RejectReason.WRONG_FIELD_TYPE);
        assertThat(hs.decodeLayerMap(py(map("l", new byte[] {1}))).rejectionOrNull().reason()).isEqualTo(RejectReason.WRONG_FIELD_TYPE);
        byte[] dup = concat(hex("82"), py("l"), py(List.of()), py("l"), py(List.of()));
        assertThat(hs.decodeLayerMap(dup).rejectionOrNull().reason()).isEqualTo(RejectReason.DUPLICATE_KEY);
        byte[] binKey = concat(hex("81c401"), new byte[] {'l'}, py(List.of()));
        assertThat(hs.decodeLayerMap(binKey).rejectionOrNull().reason()).isEqualTo(RejectReason.BIN_KEY);
    }
}
