package io.kvledger.node;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.model.PyValue;
import io.kvledger.wire.bridge.BridgeCodec;
import io.kvledger.wire.bridge.BridgeHook;
import io.kvledger.wire.bridge.BridgeReply;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The {@code failed_handshakes} entry a settled {@code start_load_kv} reply of a TP-vote rank carries. */
class VoteExtraTest {

    @Test
    void noFailedHandshakeIsOneSharedEmptyList() {
        Map<String, PyValue> extra = NodeService.failedHandshakes(Set.of());
        assertThat(extra).containsExactly(Map.entry("failed_handshakes", new PyValue.List(List.of())));
        assertThat(NodeService.failedHandshakes(new LinkedHashSet<>())).isSameAs(extra);
    }

    @Test
    void theFailedKeysReachTheReplyAsAListOfStrInTheSetsOrder() {
        LinkedHashSet<String> failed = new LinkedHashSet<>(List.of("e2:6302", "e1:6301"));
        byte[] frame = BridgeCodec.encodeReply(7, BridgeHook.START_LOAD_KV, List.of(), NodeService.failedHandshakes(failed));
        BridgeReply reply = BridgeCodec.decodeReply(frame).valueOrNull();
        assertThat(reply.ok()).isTrue();
        assertThat(reply.result().entries()).hasSize(1);
        assertThat(reply.result().get("failed_handshakes"))
                .isEqualTo(new PyValue.List(List.of(new PyValue.Str("e2:6302"), new PyValue.Str("e1:6301"))));
        // the bytes the plain list packed: what the node sent before the extra was typed
        assertThat(frame).isEqualTo(io.kvledger.wire.PyMsgpack.encode(envelope(List.of("e2:6302", "e1:6301"))));
    }

    private static Map<String, Object> envelope(List<String> failed) {
        Map<String, Object> result = new java.util.LinkedHashMap<>();
        result.put("failed_handshakes", failed);
        Map<String, Object> m = new java.util.LinkedHashMap<>();
        m.put("v", 1L);
        m.put("id", 7L);
        m.put("ok", true);
        m.put("result", result);
        return m;
    }
}
