package io.kvledger.ledger.replay;

import io.kvledger.core.model.TransferId;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.ReqMeta;
import java.util.List;
import org.junit.jupiter.api.Test;

/** How kvledger's connector metadata is compared with a vLLM-bridge recording of the real one. */
class BridgeRepliesTest {

    static ReqMeta meta(String rid, int lastBlock, int dpRank, int dpLocal, Object tid, List<String> pods) {
        return new ReqMeta(rid, BlockGroups.of(new int[] {1, 4, lastBlock}), null, null, "10.0.1.1", 6301, 61005,
                dpRank, 1, dpLocal, 0, TransferId.of(tid), pods, true);
    }

    static Effect.MetadataBuilt built(long step, List<ReqMeta> save, List<String> send, int mapping) {
        return new Effect.MetadataBuilt(step, List.of(), save, send, mapping);
    }

    final Effect.MetadataBuilt kvledger = built(3, List.of(meta("r1", 6, 0, 1, "tx-1", List.of("10.0.1.1")),
            meta("r2", 9, 0, 1, "tx-2", List.of("10.0.1.1"))), List.of("r0", "r9"), 3);

    @Test
    void theSameMetadataInAnotherOrderAgrees() {
        Effect.MetadataBuilt connector = built(3, List.of(meta("r2", 9, 0, 1, "tx-2", List.of("10.0.1.1")),
                meta("r1", 6, 0, 1, "tx-1", List.of("10.0.1.1"))), List.of("r9", "r0"), 3);
        assertNull(BridgeReplies.metadataDifference(kvledger, connector));
        assertTrue(BridgeReplies.sameReply(kvledger, connector));
        assertFalse(BridgeReplies.same(kvledger, connector)); // not equal as values: the order differs
    }

    @Test
    void fieldsTheConnectorsReqMetaLacksAreNotCompared() {
        // an older ReqMeta: no remote_dp_rank, remote_dp_size_local, transfer_id, remote_hosts; no map
        Effect.MetadataBuilt connector = built(3, List.of(meta("r1", 6, -1, -1, null, List.of()),
                meta("r2", 9, -1, -1, null, List.of())), List.of("r0", "r9"), -1);
        assertNull(BridgeReplies.metadataDifference(kvledger, connector));
    }

    @Test
    void aWrongBlockIdIsNamedWithBothValues() {
        Effect.MetadataBuilt connector = built(3, List.of(meta("r1", 106, 0, 1, "tx-1", List.of("10.0.1.1")),
                meta("r2", 9, 0, 1, "tx-2", List.of("10.0.1.1"))), List.of("r0", "r9"), 3);
        assertEquals("reqs_to_save[r1].local_block_ids: the connector [[1, 4, 106]], kvledger [[1, 4, 6]]",
                BridgeReplies.metadataDifference(kvledger, connector));
        assertEquals(0, BridgeReplies.firstReplyDifference(List.of(kvledger), List.of(connector)));
    }

    @Test
    void missingEntriesSendsAndMapSizeAreDifferences() {
        Effect.MetadataBuilt fewer = built(3, List.of(meta("r1", 6, 0, 1, "tx-1", List.of("10.0.1.1"))),
                List.of("r0", "r9"), 3);
        assertEquals("reqs_to_save: the connector lacks [r2] (the connector [r1], kvledger [r1, r2])",
                BridgeReplies.metadataDifference(kvledger, fewer));
        Effect.MetadataBuilt sends = built(3, kvledger.reqsToSave(), List.of("r0"), 3);
        assertEquals("reqs_to_send: the connector [r0], kvledger [r0, r9]", BridgeReplies.metadataDifference(kvledger, sends));
        Effect.MetadataBuilt map = built(3, kvledger.reqsToSave(), List.of("r0", "r9"), 4);
        assertEquals("mapping_size (transfer_id_to_request_id entries): the connector 4, kvledger 3",
                BridgeReplies.metadataDifference(kvledger, map));
        Effect.MetadataBuilt dpRank = built(3, List.of(meta("r1", 6, 1, 1, "tx-1", List.of("10.0.1.1")),
                meta("r2", 9, 0, 1, "tx-2", List.of("10.0.1.1"))), List.of("r0", "r9"), 3);
        assertEquals("reqs_to_save[r1].remote_dp_rank: the connector 1, kvledger 0",
                BridgeReplies.metadataDifference(kvledger, dpRank));
    }

    @Test
    void aRecordingWithoutMetadataComparesTheOtherRepliesOnly() {
        Effect.MatchedTokens m = new Effect.MatchedTokens("r1", 0, false);
        Effect.Anomaly decision = new Effect.Anomaly(io.kvledger.core.model.AnomalyKind.UNMAP_MISS, "r1", null, "x");
        List<Effect> reducer = List.of(kvledger, m, decision);
        assertEquals(List.of(m), BridgeReplies.comparable(reducer, List.of(m)));
        assertEquals(List.of(kvledger, m), BridgeReplies.comparable(reducer, List.of(kvledger, m)));
    }

    @Test
    void theRewrittenFinishedSendingIsASet() {
        // MoRIIO's SAFE is a Python set: the recorder writes it sorted, kvledger in surfacing order
        Effect.FinishedSendingRewritten kv = new Effect.FinishedSendingRewritten(List.of("r2", "r1"));
        assertTrue(BridgeReplies.sameReply(kv, new Effect.FinishedSendingRewritten(List.of("r1", "r2"))));
        assertFalse(BridgeReplies.sameReply(kv, new Effect.FinishedSendingRewritten(List.of("r1"))));
        assertFalse(BridgeReplies.sameReply(kv, new Effect.FinishedSendingRewritten(List.of("r1", "r2", "r3"))));
        assertEquals(-1, BridgeReplies.firstReplyDifference(List.of(kv),
                List.of(new Effect.FinishedSendingRewritten(List.of("r1", "r2")))));
    }

    @Test
    void workerStreamsAreToldApart() {
        assertTrue(BridgeReplies.workerStream("vllm-bridge 0.1.0 recorder worker dp0 tp1 inner=x.MoRIIOConnector"));
        assertFalse(BridgeReplies.workerStream("vllm-bridge 0.1.0 recorder scheduler dp0 tp0 inner=x.MoRIIOConnector"));
        assertFalse(BridgeReplies.workerStream("kvledger node"));
    }

    /** The connector's {@code transfer_id} against kvledger's, in a reqs_to_save entry of their own. */
    private static String tidDifference(Object connector, Object kvledger) {
        return BridgeReplies.metadataDifference(built(1, List.of(meta("r1", 6, 0, 1, kvledger, List.of())), List.of(), 1),
                built(1, List.of(meta("r1", 6, 0, 1, connector, List.of())), List.of(), 1));
    }

    @Test
    void transferIdsThatAreNumbersCompareByTheirLongValueTheRestByValue() {
        assertNull(tidDifference(1.0, 1L), "1.0 and 1");
        assertNull(tidDifference(1.9, 1L), "a float is cut toward zero, as Number.longValue does");
        assertNull(tidDifference(java.math.BigInteger.ONE.shiftLeft(64).subtract(java.math.BigInteger.ONE), -1L),
                "a big int's low 64 bits");
        assertEquals("reqs_to_save[r1].transfer_id: the connector true, kvledger 1", tidDifference(true, 1L),
                "a bool is not a number here");
        assertEquals("reqs_to_save[r1].transfer_id: the connector 1, kvledger 1", tidDifference("1", 1L));
        assertEquals("reqs_to_save[r1].transfer_id: the connector tx-1, kvledger null", tidDifference("tx-1", null));
        assertNull(tidDifference(new byte[] {1, 2}, new byte[] {1, 2}), "bytes by content");
        assertNull(tidDifference(List.of(1L, "a"), List.of(1L, "a")));
        assertNull(tidDifference(null, "tx-1"), "an id the connector lacks is not compared");
    }
}
