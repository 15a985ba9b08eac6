package io.kvledger.wire;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.wire.WireVectors.Vector;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Runs every wire vector both ways: Java encodes the vector's value to exactly Python's bytes,
 * and decodes Python's bytes to the value (or to the rejection the vector asks for). Runs on the
 * module's copy of the vectors always, and on {@code <repo>/../shared/wire-vectors} too when that
 * directory exists (set {@code -Dkvledger.wireVectors.requireShared=true} to make its absence a
 * failure).
 */
class WireVectorsTest {

    private static final HexFormat HEX = HexFormat.of();

    /** Malformed notify vectors: the reason and whether Python's listener thread dies on it. */
    private static final Map<String, Object[]> MALFORMED = Map.of(
            "non_utf8", new Object[] {RejectReason.NOT_UTF8, true},
            "bin_keys", new Object[] {RejectReason.BIN_KEY, true},
            "unknown_type", new Object[] {RejectReason.UNKNOWN_TYPE, true},
            "truncated_map", new Object[] {RejectReason.TRUNCATED, true},
            "empty_frame", new Object[] {RejectReason.EMPTY_FRAME, true},
            "wrong_field_type", new Object[] {RejectReason.WRONG_FIELD_TYPE, false},
            "release_zero_tp", new Object[] {RejectReason.INVALID_VALUE, true},
            "huge_block_list_header", new Object[] {RejectReason.LENGTH_CLAIM_EXCEEDS_FRAME, true});

    static Stream<Arguments> vectors() throws IOException {
        List<Arguments> out = new ArrayList<>();
        for (Vector v : WireVectors.all()) {
            out.add(Arguments.of("copy", v));
        }
        Path shared = WireVectors.sharedDir();
        if (shared != null && Files.isDirectory(shared)) {
            for (String f : WireVectors.FILES) {
                for (Vector v : WireVectors.parse(f, Files.readString(shared.resolve(f), StandardCharsets.UTF_8))) {
                    out.add(Arguments.of("shared", v));
                }
            }
        }
        return out.stream();
    }

    @Test
    void everyVectorFileIsPresentAndNonTrivial() {
        List<Vector> all = WireVectors.all();
        assertThat(all).extracting(Vector::name).contains("remote_blocks", "remote_blocks_legacy_no_type", "write_done",
                "release", "release_no_tp", "raw_completion_id", "get_meta_msg", "agent_metadata", "layer_map",
                "register_prefill", "register_decode");
        assertThat(all).extracting(Vector::name).containsAll(MALFORMED.keySet());
    }

    @Test
    void copyMatchesTheSharedVectors() throws IOException {
        Path shared = WireVectors.sharedDir();
        boolean required = Boolean.getBoolean("kvledger.wireVectors.requireShared");
        if (shared == null || !Files.isDirectory(shared)) {
            String msg = "shared wire vectors not found at " + shared
                    + " (expected <repo>/../shared/wire-vectors); the module's copy in src/test/resources/wire-vectors is used alone";
            if (required) {
                throw new AssertionError(msg);
            }
            Assumptions.abort(msg);
        }
        for (String f : WireVectors.FILES) {
            Path p = shared.resolve(f);
            assertThat(p).as("shared vector file %s", p).isRegularFile();
            assertThat(WireVectors.resourceText(f))
                    .as("module copy of %s must equal the shared file (re-copy it into src/test/resources/wire-vectors/)", f)
                    .isEqualTo(Files.readString(p, StandardCharsets.UTF_8));
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("vectors")
    void vectorBothWays(String source, Vector v) {
        switch (v.file()) {
            case "notify.json" -> notify(v);
            case "handshake.json" -> handshake(v);
            case "registration.json" -> registration(v);
            default -> throw new AssertionError("unknown vector file " + v.file());
        }
    }

    private static void notify(Vector v) {
        NotifyDecoder decoder = new NotifyDecoder();
        NotifyEncoder encoder = new NotifyEncoder();
        DecodeResult<NotifyMessage> got = decoder.decode(v.bytes());
        switch (v.group()) {
            case "valid" -> {
                NotifyMessage expected = notifyMessage(v.value());
                assertThat(got).as("decode %s", v).isEqualTo(new DecodeResult.Ok<>(expected));
                assertThat(HEX.formatHex(encoder.encode(expected))).as("typed encode %s", v).isEqualTo(HEX.formatHex(v.bytes()));
                assertThat(HEX.formatHex(PyMsgpack.encode(PyValues.value(v.value())))).as("generic encode %s", v).isEqualTo(HEX.formatHex(v.bytes()));
                PythonNotifyListener.Outcome py = PythonNotifyListener.verdict(v.bytes()).outcome();
                assertThat(py).as("python outcome %s", v).isEqualTo(v.name().equals("remote_blocks_empty")
                        ? PythonNotifyListener.Outcome.RAISES
                        : switch (expected) {
                            case NotifyMessage.RemoteBlocks rb -> PythonNotifyListener.Outcome.REMOTE_BLOCKS;
                            case NotifyMessage.WriteDone wd -> PythonNotifyListener.Outcome.WRITE_DONE;
                            case NotifyMessage.Release r -> PythonNotifyListener.Outcome.RELEASE;
                            case NotifyMessage.RawCompletion c -> PythonNotifyListener.Outcome.COMPLETION;
                        });
            }
            case "raw" -> {
                assertThat(got).isEqualTo(new DecodeResult.Ok<>(new NotifyMessage.RawCompletion("tx-legacy-raw")));
                assertThat(NotifyEncoder.completion("tx-legacy-raw")).isEqualTo(v.bytes());
                assertThat(PythonNotifyListener.verdict(v.bytes()).outcome()).isEqualTo(PythonNotifyListener.Outcome.COMPLETION);
            }
            case "malformed" -> {
                Object[] want = MALFORMED.get(v.name());
                assertThat(want).as("expectation for malformed vector %s (add it to MALFORMED)", v.name()).isNotNull();
                Rejection r = got.rejectionOrNull();
                assertThat(r).as("%s must be rejected (%s)", v, v.expect()).isNotNull();
                assertThat(r.reason()).as("%s: %s", v, r.detail()).isEqualTo(want[0]);
                assertThat(r.wouldKillPythonListener()).as("%s kills the Python listener", v).isEqualTo(want[1]);
                assertThat(r.detail()).isNotBlank();
            }
            default -> throw new AssertionError("unknown group " + v.group());
        }
    }

    @SuppressWarnings("unchecked")
    static NotifyMessage notifyMessage(Object value) {
        Map<String, Object> m = (Map<String, Object>) value;
        String type = (String) m.get("type");
        if (type == null || type.equals("remote_blocks")) {
            List<Integer> ids = new ArrayList<>();
            for (Object o : (List<Object>) m.get("block_notify_list")) {
                ids.add(Math.toIntExact((Long) o));
            }
            return new NotifyMessage.RemoteBlocks((String) m.get("req_id"), (String) m.get("transfer_id"), BlockIdList.copyOf(ids),
                    m.containsKey("decode_rank") ? Math.toIntExact((Long) m.get("decode_rank")) : 0, type == null);
        }
        if (type.equals("write_done")) {
            return new NotifyMessage.WriteDone((String) m.get("transfer_id"));
        }
        Object tp = m.get("consumer_tp_size");
        return new NotifyMessage.Release((String) m.get("transfer_id"), tp == null ? null : Math.toIntExact((Long) tp));
    }

    @SuppressWarnings("unchecked")
    private static void handshake(Vector v) {
        HandshakeCodec codec = new HandshakeCodec();
        switch (v.name()) {
            case "get_meta_msg" -> {
                assertThat(HandshakeRequest.decode(v.bytes())).isEqualTo(new DecodeResult.Ok<>(HandshakeRequest.GET_META_MSG));
                assertThat(HandshakeRequest.GET_META_MSG.bytes()).isEqualTo(v.bytes());
            }
            case "agent_metadata" -> {
                Map<String, Object> m = (Map<String, Object>) v.value();
                List<Object> addrList = (List<Object>) m.get("kv_caches_base_addr");
                long[] addrs = new long[addrList.size()];
                for (int i = 0; i < addrs.length; i++) {
                    addrs[i] = (Long) addrList.get(i);
                }
                AgentMetadata expected = new AgentMetadata((String) m.get("engine_id"), OpaqueBytes.of((byte[]) m.get("agent_metadata")),
                        addrs, (Long) m.get("num_blocks"), (Long) m.get("block_len"), (String) m.get("attn_backend_name"));
                assertThat(codec.decodeMetadata(v.bytes())).isEqualTo(new DecodeResult.Ok<>(expected));
                assertThat(HEX.formatHex(codec.encodeMetadata(expected))).isEqualTo(HEX.formatHex(v.bytes()));
                assertThat(HEX.formatHex(PyMsgpack.encode(PyValues.value(v.value())))).isEqualTo(HEX.formatHex(v.bytes()));
            }
            case "layer_map" -> {
                LinkedHashMap<String, List<OpaqueBytes>> layers = new LinkedHashMap<>();
                ((Map<String, Object>) v.value()).forEach((k, descs) -> {
                    List<OpaqueBytes> l = new ArrayList<>();
                    for (Object d : (List<Object>) descs) {
                        l.add(OpaqueBytes.of((byte[]) d));
                    }
                    layers.put(k, l);
                });
                LayerMap expected = new LayerMap(layers);
                assertThat(codec.decodeLayerMap(v.bytes())).isEqualTo(new DecodeResult.Ok<>(expected));
                assertThat(HEX.formatHex(codec.encodeLayerMap(expected))).isEqualTo(HEX.formatHex(v.bytes()));
                assertThat(HEX.formatHex(PyMsgpack.encode(PyValues.value(v.value())))).isEqualTo(HEX.formatHex(v.bytes()));
            }
            default -> throw new AssertionError("unknown handshake vector " + v.name());
        }
    }

    @SuppressWarnings("unchecked")
    private static void registration(Vector v) {
        Map<String, Object> m = (Map<String, Object>) v.value();
        Registration expected = new Registration((String) m.get("type"), (String) m.get("http_address"), (String) m.get("zmq_address"),
                Math.toIntExact((Long) m.get("dp_size")), Math.toIntExact((Long) m.get("tp_size")), (String) m.get("transfer_mode"));
        RegistrationCodec codec = new RegistrationCodec();
        assertThat(codec.decode(v.bytes())).isEqualTo(new DecodeResult.Ok<>(expected));
        assertThat(HEX.formatHex(codec.encode(expected))).isEqualTo(HEX.formatHex(v.bytes()));
        assertThat(HEX.formatHex(PyMsgpack.encode(PyValues.value(v.value())))).isEqualTo(HEX.formatHex(v.bytes()));
    }
}
