package io.kvledger.wire.bridge;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.ReqMeta;
import io.kvledger.core.model.TransferId;
import io.kvledger.wire.PyMsgpack;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The reply encoders write their dicts straight from the effects' fields; these are the bytes of
 * the dicts they stand for, built as plain maps and packed by the generic packer (Python's
 * {@code packb} bytes, see WireVectorsTest): many metas, a request id twice, every transfer id
 * form, the node's extra entries (new and overriding a hook's key).
 */
class ReplyStreamingTest {
    static Map<String, Object> env(long id, Map<String, Object> r) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("v", 1L); m.put("id", id); m.put("ok", true); m.put("result", r);
        return m;
    }
    /** The id as a value the dict packs: its Python value. */
    private static Object value(TransferId id) {
        return switch (id) {
            case TransferId.Str s -> s.value();
            case TransferId.Int i -> i.value();
            case TransferId.None n -> null;
            case TransferId.Bytes b -> b.value();
            case TransferId.Other o -> o.value();
            case TransferId.Unpackable u -> throw new IllegalArgumentException(u.why());
        };
    }

    static Map<String, Object> metas(List<ReqMeta> metas) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (ReqMeta m : metas) {
            Map<String, Object> d = new LinkedHashMap<>();
            d.put("local_block_ids", m.localBlockIds() == null ? null : m.localBlockIds().toGroupedValue());
            d.put("remote_block_ids", m.remoteBlockIds() == null ? null : m.remoteBlockIds().toGroupedValue());
            d.put("remote_engine_id", m.remoteEngineId());
            d.put("remote_host", m.remoteHost());
            d.put("remote_handshake_port", (long) m.remoteHandshakePort());
            d.put("remote_notify_port", (long) m.remoteNotifyPort());
            d.put("remote_dp_rank", (long) m.remoteDpRank());
            d.put("remote_dp_size", (long) m.remoteDpSize());
            d.put("remote_dp_size_local", (long) m.remoteDpSizeLocal());
            d.put("remote_tp_size", (long) m.remoteTpSize());
            d.put("transfer_id", value(m.transferId()));
            d.put("multi_pod_hosts", new ArrayList<>(m.multiPodHosts()));
            d.put("write_mode", m.writeMode());
            out.put(m.requestId(), d);
        }
        return out;
    }
    static ReqMeta meta(String id, Object tid, int port) {
        return new ReqMeta(id, BlockGroups.of(new int[] {1, 200, 70000}, new int[] {}), port % 2 == 0 ? null : BlockGroups.single(5, 300),
                "eng", port % 3 == 0 ? null : "h", port, port + 70000, 1, 2, 3, 4, TransferId.of(tid), List.of("a", "b"), port % 2 == 0);
    }

    /** The typed form of a plain extra map (the expected dict keeps the plain form, packed generically). */
    static Map<String, io.kvledger.core.model.PyValue> typed(Map<String, Object> extra) {
        Map<String, io.kvledger.core.model.PyValue> out = new LinkedHashMap<>();
        extra.forEach((k, v) -> out.put(k, io.kvledger.wire.PyValues.value(v)));
        return out;
    }

    @Test
    void repliesAreTheBytesOfTheirDicts() {
        for (int n : new int[] {0, 1, 3, 8, 9, 20}) {
            for (boolean dup : new boolean[] {false, true}) {
                List<ReqMeta> ms = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    Object tid = switch (i % 5) { case 0 -> "tx-" + i; case 1 -> (long) i; case 2 -> null; case 3 -> new byte[] {1, 2}; default -> 1.5; };
                    ms.add(meta(dup && i % 3 == 2 ? "r0" : "r" + i, tid, i * 1000));
                }
                for (Map<String, Object> extra : List.<Map<String, Object>>of(Map.of(), new LinkedHashMap<>(Map.of("mapping_size", 9L)), new LinkedHashMap<>(Map.of("zzz", List.of(1L), "step", "s")))) {
                    Effect.MetadataBuilt mb = new Effect.MetadataBuilt(7, ms, n % 2 == 0 ? null : ms, n == 3 ? null : List.of("x", "y"), 12);
                    Map<String, Object> r = new LinkedHashMap<>();
                    r.put("step", 7L);
                    r.put("reqs_to_recv", metas(ms));
                    r.put("reqs_to_save", metas(n % 2 == 0 ? List.of() : ms));
                    r.put("reqs_to_send", n == 3 ? List.of() : List.of("x", "y"));
                    r.put("mapping_size", 12L);
                    r.putAll(extra);
                    assertThat(BridgeCodec.encodeReply(42, BridgeHook.BUILD_CONNECTOR_META, List.of(mb), typed(extra))).as("n %d dup %s extra %s", n, dup, extra).isEqualTo(PyMsgpack.encode(env(42, r)));
                    Map<String, Object> v = new LinkedHashMap<>(extra);
                    assertThat(BridgeCodec.encodeReply(42, BridgeHook.START_LOAD_KV, List.of(), typed(extra))).isEqualTo(PyMsgpack.encode(env(42, v)));
                }
            }
        }
        Effect.FinishedReported f = new Effect.FinishedReported(List.of("a"), List.of(), Arrays.asList(1, 300));
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("finished_sending", List.of("a")); r.put("finished_recving", null); r.put("load_error_blocks", List.of(1L, 300L));
        assertThat(BridgeCodec.encodeReply(3, BridgeHook.GET_FINISHED, List.of(f), Map.of())).isEqualTo(PyMsgpack.encode(env(3, r)));
        Effect.FinishDecision d = new Effect.FinishDecision("a", true, KvParams.of("transfer_id", "tx", "do_remote_decode", true, "n", 3L));
        r = new LinkedHashMap<>(); r.put("delay_free", true); r.put("kv_transfer_params", new LinkedHashMap<>(d.params().asMap()));
        assertThat(BridgeCodec.encodeReply(3, BridgeHook.REQUEST_FINISHED, List.of(d), Map.of())).isEqualTo(PyMsgpack.encode(env(3, r)));
        d = new Effect.FinishDecision("a", false, null);
        r = new LinkedHashMap<>(); r.put("delay_free", false); r.put("kv_transfer_params", null);
        assertThat(BridgeCodec.encodeReply(3, BridgeHook.REQUEST_FINISHED, List.of(d), Map.of())).isEqualTo(PyMsgpack.encode(env(3, r)));
        r = new LinkedHashMap<>(); r.put("num_tokens", 300L); r.put("load_async", true);
        assertThat(BridgeCodec.encodeReply(-5, BridgeHook.GET_NUM_NEW_MATCHED_TOKENS, List.of(new Effect.MatchedTokens("a", 300, true)), Map.of())).isEqualTo(PyMsgpack.encode(env(-5, r)));
        r = new LinkedHashMap<>(); r.put("finished_sending", null);
        assertThat(BridgeCodec.encodeReply(1, BridgeHook.UPDATE_CONNECTOR_OUTPUT, List.of(new Effect.FinishedSendingRewritten(List.of())), Map.of())).isEqualTo(PyMsgpack.encode(env(1, r)));
        assertThat(BridgeCodec.encodeReply(1, BridgeHook.UPDATE_CONNECTOR_OUTPUT, List.of(), Map.of())).isEqualTo(PyMsgpack.encode(env(1, new LinkedHashMap<>())));
        Map<String, Object> e = new LinkedHashMap<>(); e.put("v", 1L); e.put("id", null); e.put("ok", false); e.put("error", "boom");
        assertThat(BridgeCodec.encodeError(null, "boom")).isEqualTo(PyMsgpack.encode(e));
        e.put("id", 77L);
        assertThat(BridgeCodec.encodeError(77L, "boom")).isEqualTo(PyMsgpack.encode(e));
        assertThat(BridgeCodec.encodeEmpty(5)).isEqualTo(PyMsgpack.encode(env(5, new LinkedHashMap<>())));
    }
}
