package io.kvledger.wire.bridge;

import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** One request per hook (several for hooks with optional shapes), for round trips and fuzz seeds. */
public final class BridgeSamples {

    private BridgeSamples() {}

    public static KvParams proxyParams() {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("remote_dp_size", 1L);
        p.put("remote_tp_size", 2L);
        p.put("transfer_id", "tx-0b9c5c3e-6f0e-4f43-9b7b-3f4f1f6f0e11");
        p.put("do_remote_decode", false);
        p.put("do_remote_prefill", true);
        p.put("remote_engine_id", null);
        p.put("remote_block_ids", null);
        p.put("ratio", 0.5);
        p.put("remote_hosts", new ArrayList<>(List.of("10.0.0.1", "10.0.0.2")));
        p.put("nested", new LinkedHashMap<>(Map.of("k", new ArrayList<>(List.of(1L, -2L, 300L)))));
        p.put("big", 1L << 40);
        p.put("blob", new byte[] {0, 1, (byte) 0xff});
        return KvParams.of(p);
    }

    public static List<BridgeRequest> all() {
        List<BridgeRequest> out = new ArrayList<>();
        long id = 1;
        out.add(new BridgeRequest(id++, new HookCall.AddRequest("cmpl-a-0-1a2b3c4d", 17, 17, proxyParams())));
        out.add(new BridgeRequest(id++, new HookCall.AddRequest("emb-1", 9, -1, null)));
        out.add(new BridgeRequest(id++, new HookCall.GetNumNewMatchedTokens("cmpl-a-0-1a2b3c4d", 0)));
        out.add(new BridgeRequest(id++, new HookCall.UpdateStateAfterAlloc("cmpl-a-0-1a2b3c4d", BlockGroups.single(4, 5, 6), 16)));
        out.add(new BridgeRequest(id++, new HookCall.UpdateStateAfterAlloc("hma", BlockGroups.of(new int[] {1, 2}, new int[] {}, new int[] {70000}), 0)));
        out.add(new BridgeRequest(id++, new HookCall.BuildConnectorMeta(3, List.of())));
        out.add(new BridgeRequest(id++, new HookCall.BuildConnectorMeta(4, List.of(
                new NodeEvent.CachedRequest("r1", BlockGroups.single(9)),
                new NodeEvent.CachedRequest("r2", null)))));
        out.add(new BridgeRequest(id++, new HookCall.BuildConnectorMeta(5, List.of(new NodeEvent.CachedRequest("r1", null)),
                List.of(new NodeEvent.NewRequest("n1", BlockGroups.of(new int[] {7, 8}, new int[] {9}), 0,
                                KvParams.of(java.util.Map.of("do_remote_prefill", true, "transfer_id", "tx-1"))),
                        new NodeEvent.NewRequest("n2", BlockGroups.single(), 16, null)),
                List.of("p1", "p2"))));
        out.add(new BridgeRequest(id++, new HookCall.BuildConnectorMeta(6, List.of(), List.of(), List.of())));
        out.add(new BridgeRequest(id++, new HookCall.BuildConnectorMeta(7, List.of(), null, List.of("p3"))));
        out.add(new BridgeRequest(id++, new HookCall.RequestFinished("cmpl-a-0-1a2b3c4d", FinishStatus.FINISHED_LENGTH_CAPPED,
                BlockGroups.single(4, 5, 6))));
        out.add(new BridgeRequest(id++, new HookCall.RequestFinished("r9", FinishStatus.FINISHED_ABORTED, BlockGroups.single())));
        out.add(new BridgeRequest(id++, new HookCall.UpdateConnectorOutput(List.of("a", "b"), null)));
        out.add(new BridgeRequest(id++, new HookCall.UpdateConnectorOutput(null, List.of("c"))));
        out.add(new BridgeRequest(id++, new HookCall.UpdateConnectorOutput(List.of(), List.of())));
        out.add(new BridgeRequest(id++, new HookCall.StartLoadKv()));
        out.add(new BridgeRequest(id++, new HookCall.SaveKvLayer("model.layers.0.self_attn.attn")));
        out.add(new BridgeRequest(id++, new HookCall.WaitForSave()));
        out.add(new BridgeRequest(id++, new HookCall.GetFinished()));
        out.add(new BridgeRequest(id++, new HookCall.HandshakeVoted("10.0.0.1:6301", 1, List.of())));
        out.add(new BridgeRequest(id++, new HookCall.HandshakeVoted("10.0.0.1:6301", 0, List.of(1, 3))));
        out.add(new BridgeRequest(id++, new HookCall.HandshakeVoted("10.0.0.1:6301", 0, null)));
        out.add(new BridgeRequest(id++, new HookCall.Hello("kv_consumer", "write", 0, 1, "worker")));
        out.add(new BridgeRequest(id++, new HookCall.Hello(null, null, null, null, null)));
        out.add(new BridgeRequest(id++, new HookCall.Hello("kv_consumer", "write", 0, null, "scheduler",
                "0.11.1.dev5+g239b5ff30.d20260518", "239b5ff30cf46f9196149c888a20be2096fdff03",
                "vllm.distributed.kv_transfer.kv_connector.v1.moriio.moriio_connector.MoRIIOConnector")));
        out.add(new BridgeRequest(id++, new HookCall.Ping()));
        out.add(new BridgeRequest(Long.MAX_VALUE, new HookCall.Ping()));
        out.add(new BridgeRequest(-5, new HookCall.SaveKvLayer("ünïcødé-layer")));
        return out;
    }

    /** Deep equality for requests (byte[] inside params compares by content). */
    public static boolean same(BridgeRequest a, BridgeRequest b) {
        return a.id() == b.id() && deepEquals(a.call(), b.call());
    }

    private static boolean deepEquals(Object a, Object b) {
        if (a instanceof HookCall.AddRequest x && b instanceof HookCall.AddRequest y) {
            return x.requestId().equals(y.requestId()) && x.numPromptTokens() == y.numPromptTokens()
                    && x.promptTokenIds() == y.promptTokenIds()
                    && (x.params() == null ? y.params() == null : y.params() != null && valueEquals(x.params().asMap(), y.params().asMap()));
        }
        return a.equals(b);
    }

    static boolean valueEquals(Object a, Object b) {
        if (a instanceof byte[] x && b instanceof byte[] y) {
            return Arrays.equals(x, y);
        }
        if (a instanceof Map<?, ?> x && b instanceof Map<?, ?> y) {
            if (x.size() != y.size() || !new ArrayList<>(x.keySet()).equals(new ArrayList<>(y.keySet()))) {
                return false;
            }
            for (Object k : x.keySet()) {
                if (!valueEquals(x.get(k), y.get(k))) {
                    return false;
                }
            }
            return true;
        }
        if (a instanceof List<?> x && b instanceof List<?> y) {
            if (x.size() != y.size()) {
                return false;
            }
            for (int i = 0; i < x.size(); i++) {
                if (!valueEquals(x.get(i), y.get(i))) {
                    return false;
                }
            }
            return true;
        }
        return java.util.Objects.equals(a, b);
    }
}
