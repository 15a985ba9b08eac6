package io.kvledger.journal;

import io.kvledger.core.model.TransferId;
import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.Switch;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.ReqMeta;
import io.kvledger.core.model.RequestPhase;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;

/**
 * One realistic instance of every event and effect record, used by the registry, codec and JSON
 * tests and by the FORMAT.md example generator. Kept in the order of the type ids.
 */
public final class Samples {

    private Samples() {}

    public static final String RID =
            "___prefill_addr_10.0.0.1:61005___decode_addr_10.0.1.1:61005_0b5e1c2a9f3d4e6f8a7b6c5d4e3f2a1b-3f2a1b0c";
    public static final String TID = "tx-6f1c0e52-9a1b-4c3d-8e7f-0a1b2c3d4e5f";
    public static final long T0 = 1_000_000_000L;

    /**
     * The prefill leg's params as the toy proxy sends them, plus a client key holding the other
     * Python value kinds (float, None, nested list).
     */
    public static KvParams params() {
        LinkedHashMap<String, Object> nested = new LinkedHashMap<>();
        nested.put("ratio", 0.5);
        nested.put("none", null);
        nested.put("list", List.of(1L, "two", List.of(3L)));
        return KvParams.of("remote_dp_size", 1L, "remote_tp_size", 1L, "transfer_id", TID, "do_remote_decode", true,
                "do_remote_prefill", false, "remote_engine_id", null, "remote_block_ids", null, "client_extra", nested);
    }

    public static NodeConfig config() {
        return NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).hostIp("10.0.0.1").dp(1, 2, 2).tp(0, 1)
                .layerNames(List.of("model.layers.0.self_attn.attn", "model.layers.1.self_attn.attn"))
                .deferTimeoutNs(30 * NodeConfig.NS_PER_S)
                .behaviour(Behaviour.newest().with(Switch.HOLD_UNTIL_REAL_ACK, true))
                .build();
    }

    public static JournalHeader header() {
        return JournalHeader.of("P1", config(), "samples");
    }

    public static List<NodeEvent> events() {
        long t = T0;
        return List.of(
                new NodeEvent.RequestAdmitted(t, RID, 48, 48, params()),
                new NodeEvent.MatchedTokensQueried(t + 1_000, RID, 0),
                new NodeEvent.BlocksAllocated(t + 2_000, RID, BlockGroups.single(7, 8, 9), 0),
                new NodeEvent.StepScheduled(t + 3_000, 12,
                        List.of(new NodeEvent.CachedRequest(RID, BlockGroups.single(10)),
                                new NodeEvent.CachedRequest("cmpl-b-0", null)),
                        List.of(new NodeEvent.NewRequest("cmpl-c-0", BlockGroups.single(11, 12), 0, null)),
                        List.of("cmpl-d-0")),
                new NodeEvent.RequestFinished(t + 4_000, RID, FinishStatus.FINISHED_LENGTH_CAPPED,
                        BlockGroups.single(7, 8, 9, 10)),
                new NodeEvent.ConnectorOutputReceived(t + 5_000, List.of(RID), null),
                new NodeEvent.LoadStarted(t + 6_000),
                new NodeEvent.LayerSaved(t + 7_000, "model.layers.0.self_attn.attn"),
                new NodeEvent.SaveWaited(t + 8_000),
                new NodeEvent.FinishedPolled(t + 9_000),
                new NodeEvent.HandshakeCompleted(t + 10_000, "10.0.1.1:6301_dp0"),
                new NodeEvent.HandshakeFailed(t + 11_000, "10.0.1.2:6301_dp1", "connection refused"),
                new NodeEvent.TransferCompleted(t + 12_000, 5, false, -3, "RDMA timeout"),
                new NodeEvent.RemoteBlocksReceived(t + 13_000, "cmpl-d-0", TID, List.of(21, 22, 23), 0, false),
                new NodeEvent.WriteDoneReceived(t + 14_000, TID),
                new NodeEvent.ReleaseReceived(t + 15_000, TID, 2),
                new NodeEvent.RawCompletionReceived(t + 16_000, TID),
                new NodeEvent.FrameRejected(t + 17_000, "unknown notify type 'bogus'",
                        new byte[] {(byte) 0x81, (byte) 0xa4, 't', 'y', 'p', 'e', (byte) 0xa5, 'b', 'o', 'g', 'u', 's'},
                        true),
                new NodeEvent.Tick(t + 18_000),
                new NodeEvent.NotifySendFailed(t + 19_000, "tcp://10.0.9.9:61005", "release", TID,
                        "publisher queue full (4096 frames)",
                        new byte[] {(byte) 0x82, (byte) 0xa4, 't', 'y', 'p', 'e', (byte) 0xa7, 'r', 'e', 'l', 'e', 'a', 's',
                                'e', (byte) 0xab, 't', 'r', 'a', 'n', 's', 'f', 'e', 'r', '_', 'i', 'd', (byte) 0xa1, 'x'}),
                new NodeEvent.ShutDown(t + 20_000, List.of("tcp://10.0.1.1:61005: Socket operation on non-socket")),
                new NodeEvent.HandshakeVoted(t + 21_000, "10.0.1.2:6301", 0, List.of(1)),
                new NodeEvent.KvCachesRegistered(t + 22_000, 16, "FLASHMLA",
                        List.of(new NodeEvent.KvCacheTensor("model.layers.0.self_attn.attn", List.of(2048, 64, 576),
                                "torch.bfloat16"))),
                new NodeEvent.ForwardDone(t + 23_000, List.of("cmpl-d-0"), 2, 0, 1_500));
    }

    public static List<Effect> effects() {
        ReqMeta meta = new ReqMeta(RID, BlockGroups.single(7, 8, 9), BlockGroups.single(21, 22, 23), "10.0.1.1:6301",
                "10.0.1.1", 6301, 61005, 0, 1, 1, 1, TransferId.of(TID), List.of(), true);
        return List.of(
                new Effect.MatchedTokens(RID, 0, false),
                new Effect.MetadataBuilt(12, List.of(), List.of(meta), List.of(RID), 3),
                new Effect.FinishDecision(RID, true, KvParams.of("do_remote_decode", false, "transfer_id", TID,
                        "remote_block_ids", List.of(List.of(7L, 8L, 9L, 10L)), "remote_host", "10.0.0.1")),
                new Effect.FinishedReported(List.of(RID), List.of(), List.of()),
                new Effect.FinishedSendingRewritten(List.of(RID)),
                new Effect.SendRemoteBlocks("10.0.0.1", 61006, "cmpl-d-0", TransferId.of(TID), List.of(21, 22, 23), 0),
                new Effect.SendRelease(Effect.Sender.WORKER, "10.0.0.1", 61006, TransferId.of(TID), 1),
                new Effect.SendWriteDone("10.0.1.1", 61005, TID),
                new Effect.SendWriteFailed("10.0.1.1", 61005, TID, "transfer_timeout"),
                new Effect.StartHandshake("10.0.1.1:6301_dp0", "10.0.1.1", 6301, "10.0.1.1:6301", 0),
                new Effect.PostWrite(5, TID, "model.layers.0.self_attn.attn", "10.0.1.1:6301_dp0#0",
                        new int[] {7, 8, 9}, new int[] {21, 22, 23}),
                new Effect.PostRead(6, RID, TID, "model.layers.0.self_attn.attn", "10.0.0.1:6301_dp1#0",
                        new int[] {31, 32}, new int[] {7, 8}),
                new Effect.PhaseChanged(RID, RequestPhase.PREFILLING, RequestPhase.DEFERRED_FREE, "delay_free"),
                new Effect.DeferralStarted(RID, TID, T0 + 30 * NodeConfig.NS_PER_S),
                new Effect.AckParked(RID, T0 + 30 * NodeConfig.NS_PER_S),
                new Effect.AckSurfaced(RID, TID, Effect.SurfaceReason.ACKED),
                new Effect.StaleAckDropped(RID),
                new Effect.Unmapped(RID, TID, RID, Effect.UnmapKind.EXACT),
                new Effect.Anomaly(AnomalyKind.DEFERRAL_REAPED, RID, TID, "no ACK within defer_timeout=30s"));
    }

    /** Every sample record, events first. */
    /** One proxy record of each type, in id order. */
    public static List<io.kvledger.journal.proxy.ProxyEvent> proxyEvents() {
        long t = T0;
        String prid = "___prefill_addr_host:10.0.0.1,handshake:6301,notify:61005___decode_addr_host:10.0.1.1,"
                + "handshake:6301,notify:61005_0b5e1c2a9f3d4e6f8a7b6c5d4e3f2a1b";
        KvParams sent = KvParams.of("transfer_id", TID, "do_remote_decode", true);
        KvParams back = KvParams.of("transfer_id", TID, "remote_block_ids", List.of(List.of(4L, 5L)),
                "remote_engine_id", "10.0.0.1:6301");
        return List.of(
                new io.kvledger.journal.proxy.ProxyEvent.ProxyStarted(t, "127.0.0.1:10001", 36367, null, 1000),
                new io.kvledger.journal.proxy.ProxyEvent.InstanceRegistered(t + 1, "P", "10.0.0.1:8100",
                        "host:10.0.0.1,handshake:6301,notify:61005", 2, 1, "READ", "new"),
                new io.kvledger.journal.proxy.ProxyEvent.InstanceExpired(t + 2, "D", "10.0.1.1:8200", t - 10_000_000_000L),
                new io.kvledger.journal.proxy.ProxyEvent.RegistrationRejected(t + 3,
                        "MISSING_FIELD: registration without 'zmq_address'", new byte[] {(byte) 0x81, (byte) 0xa4}),
                new io.kvledger.journal.proxy.ProxyEvent.RequestRejected(t + 4, "/v1/completions", null, 400,
                        "n must be 1 (one choice per request: a prefill hands off one KV cache), got 2"),
                new io.kvledger.journal.proxy.ProxyEvent.RequestRouted(t + 5, prid, TID, "/v1/completions", true, "client-7",
                        "READ", "10.0.0.1:8100", 1, "10.0.1.1:8200", null),
                new io.kvledger.journal.proxy.ProxyEvent.LegSent(t + 6, prid, TID, "prefill", "10.0.0.1:8100", sent),
                new io.kvledger.journal.proxy.ProxyEvent.LegAnswered(t + 7, prid, TID, "prefill", 200, 41_500_000L,
                        "length", back),
                new io.kvledger.journal.proxy.ProxyEvent.LegFailed(t + 8, prid, TID, "decode", null, 300_000_000_000L,
                        "no answer within 300.0 s"),
                new io.kvledger.journal.proxy.ProxyEvent.LegCancelled(t + 9, prid, TID, "decode", 1_200_000_000L,
                        "client disconnected"),
                new io.kvledger.journal.proxy.ProxyEvent.RequestCompleted(t + 10, prid, TID, 499, 1_250_000_000L),
                new io.kvledger.journal.proxy.ProxyEvent.RecordsDropped(t + 11, 3));
    }

    public static List<Object> all() {
        List<Object> all = new ArrayList<>(events());
        all.addAll(effects());
        all.addAll(proxyEvents());
        return all;
    }
}
