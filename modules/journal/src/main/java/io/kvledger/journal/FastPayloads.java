package io.kvledger.journal;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.ReqMeta;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.model.TransferId;
import java.io.IOException;
import java.util.List;
import io.kvledger.wire.MsgOut;
import io.kvledger.wire.MsgpackWriter;
import io.kvledger.wire.PyValues;
import org.msgpack.core.MessagePacker;

/**
 * Payload encoders written out by hand for the entry types a live node journals most, producing
 * the same bytes as the generic {@code Schema.write} of their {@code EntryType} (a msgpack array of
 * the fields in schema order, nil for a null value, the trailing {@code later} field left out when
 * null) without its field array, boxing and per-field dispatch. {@link #write} returns
 * {@code false} for every other type, which the generic encoder then writes.
 * {@code FastPayloadsTest} compares both encoders' bytes over every entry type.
 *
 * <p>The schemas are in {@code EntryType}; a change there must be made here too (the test fails
 * otherwise). Encoding only: the decode side is untouched.
 */
public final class FastPayloads {

    private FastPayloads() {}

    /**
     * Writes {@code record}'s payload, or returns {@code false} when it has no encoder here (public
     * for {@code JournalCostBreakdown}; {@link JournalWriter} is what uses it).
     */
    public static boolean write(MessagePacker p, Object record) throws IOException {
        return write(MsgOut.of(p), record);
    }

    /** Writes {@code record}'s payload into {@code p}, or returns {@code false} (see above). */
    static boolean write(MsgOut p, Object record) throws IOException {
        if (record instanceof NodeEvent e) {
            return event(p, e);
        }
        if (record instanceof Effect e) {
            return effect(p, e);
        }
        return false;
    }

    private static boolean event(MsgOut p, NodeEvent event) throws IOException {
        switch (event) {
            case NodeEvent.MatchedTokensQueried e -> {
                if (e.acted() != null) {
                    return false; // a drive call answered from the inner: rare, the generic encoder writes it
                }
                p.arrayHeader(2);
                str(p, e.requestId());
                p.int64(e.numComputedTokens());
            }
            case NodeEvent.BlocksAllocated e -> {
                p.arrayHeader(3);
                str(p, e.requestId());
                blocks(p, e.blocks());
                p.int64(e.numExternalTokens());
            }
            case NodeEvent.RequestAdmitted e -> {
                p.arrayHeader(4);
                str(p, e.requestId());
                p.int64(e.numPromptTokens());
                p.int64(e.promptTokenIds());
                py(p, e.params(), "RequestAdmitted.kv_transfer_params");
            }
            case NodeEvent.RequestFinished e -> {
                if (e.acted() != null) {
                    return false; // a drive call answered from the inner: the generic encoder writes it
                }
                // admitted_request_id is a later field: left out when null
                p.arrayHeader(e.admittedRequestId() == null ? 3 : 4);
                str(p, e.requestId());
                if (e.status() == null) {
                    p.nil();
                } else {
                    p.str(e.status().name());
                }
                blocks(p, e.blockIds());
                if (e.admittedRequestId() != null) {
                    p.str(e.admittedRequestId());
                }
            }
            case NodeEvent.ConnectorOutputReceived e -> {
                if (e.acted() != null) {
                    return false; // a drive call answered from the inner: the generic encoder writes it
                }
                p.arrayHeader(2);
                strs(p, e.finishedSending());
                strs(p, e.finishedRecving());
            }
            case NodeEvent.LoadStarted e -> p.arrayHeader(0);
            case NodeEvent.SaveWaited e -> p.arrayHeader(0);
            case NodeEvent.FinishedPolled e -> p.arrayHeader(0);
            case NodeEvent.Tick e -> p.arrayHeader(0);
            case NodeEvent.LayerSaved e -> {
                p.arrayHeader(1);
                str(p, e.layerName());
            }
            case NodeEvent.TransferCompleted e -> {
                p.arrayHeader(4);
                p.int64(e.statusId());
                p.bool(e.succeeded());
                p.int64(e.code());
                str(p, e.message());
            }
            case NodeEvent.RemoteBlocksReceived e -> {
                p.arrayHeader(5);
                str(p, e.reqId());
                str(p, e.transferId());
                ints(p, e.blockNotifyList());
                p.int64(e.decodeRank());
                p.bool(e.legacyWithoutType());
            }
            case NodeEvent.StepScheduled e -> {
                if (e.scheduledNewReqs() != null || e.preemptedReqIds() != null) {
                    return false; // a recording's step with its new and preempted requests: the generic encoder
                }
                p.arrayHeader(2);
                p.int64(e.step());
                if (e.cachedRequests() == null) {
                    p.nil();
                } else {
                    p.arrayHeader(e.cachedRequests().size());
                    for (NodeEvent.CachedRequest c : e.cachedRequests()) {
                        p.arrayHeader(2);
                        str(p, c.requestId());
                        blocks(p, c.newBlockIds());
                    }
                }
            }
            case NodeEvent.HandshakeCompleted e -> {
                return false;
            }
            case NodeEvent.HandshakeVoted e -> {
                return false;
            }
            case NodeEvent.HandshakeFailed e -> {
                return false;
            }
            case NodeEvent.WriteDoneReceived e -> {
                return false;
            }
            case NodeEvent.ReleaseReceived e -> {
                return false;
            }
            case NodeEvent.RawCompletionReceived e -> {
                return false;
            }
            case NodeEvent.FrameRejected e -> {
                return false;
            }
            case NodeEvent.NotifySendFailed e -> {
                return false;
            }
            case NodeEvent.ShutDown e -> {
                return false;
            }
            case NodeEvent.KvCachesRegistered e -> {
                return false;
            }
            case NodeEvent.ForwardDone e -> {
                return false;
            }
        }
        return true;
    }

    private static boolean effect(MsgOut p, Effect effect) throws IOException {
        switch (effect) {
            case Effect.PhaseChanged e -> {
                p.arrayHeader(4);
                str(p, e.requestId());
                phase(p, e.from());
                phase(p, e.to());
                str(p, e.reason());
            }
            case Effect.FinishedReported e -> {
                p.arrayHeader(3);
                strs(p, e.doneSending());
                strs(p, e.doneRecving());
                ints(p, e.loadErrorBlocks());
            }
            case Effect.FinishDecision e -> {
                p.arrayHeader(3);
                str(p, e.requestId());
                p.bool(e.delayFree());
                py(p, e.params(), "FinishDecision.kv_transfer_params");
            }
            case Effect.MatchedTokens e -> {
                p.arrayHeader(3);
                str(p, e.requestId());
                p.int64(e.count());
                p.bool(e.loadAsync());
            }
            case Effect.PostWrite e -> {
                p.arrayHeader(6);
                p.int64(e.statusId());
                str(p, e.transferId());
                str(p, e.layerName());
                str(p, e.sessionKey());
                ints(p, e.localBlockIds());
                ints(p, e.remoteBlockIds());
            }
            case Effect.PostRead e -> {
                p.arrayHeader(7);
                p.int64(e.statusId());
                str(p, e.requestId());
                str(p, e.transferId());
                str(p, e.layerName());
                str(p, e.sessionKey());
                ints(p, e.localBlockIds());
                ints(p, e.remoteBlockIds());
            }
            case Effect.Unmapped e -> {
                p.arrayHeader(4);
                str(p, e.requestId());
                str(p, e.transferId());
                str(p, e.removedRequestId());
                name(p, e.kind());
            }
            case Effect.FinishedSendingRewritten e -> {
                p.arrayHeader(1);
                strs(p, e.safe());
            }
            case Effect.AckSurfaced e -> {
                p.arrayHeader(3);
                str(p, e.requestId());
                str(p, e.transferId());
                name(p, e.reason());
            }
            case Effect.DeferralStarted e -> {
                p.arrayHeader(3);
                str(p, e.requestId());
                str(p, e.transferId());
                p.int64(e.deadlineNs());
            }
            case Effect.SendRelease e -> {
                p.arrayHeader(5);
                name(p, e.sender());
                str(p, e.host());
                p.int64(e.port());
                transferId(p, e.transferId(), "SendRelease.transfer_id");
                p.int64(e.consumerTpSize());
            }
            case Effect.SendWriteDone e -> {
                p.arrayHeader(3);
                str(p, e.host());
                p.int64(e.port());
                str(p, e.transferId());
            }
            case Effect.MetadataBuilt e -> {
                p.arrayHeader(5);
                p.int64(e.step());
                reqMetas(p, e.reqsToRecv());
                reqMetas(p, e.reqsToSave());
                strs(p, e.reqsToSend());
                p.int64(e.mappingSize());
            }
            case Effect.SendRemoteBlocks e -> {
                p.arrayHeader(6);
                str(p, e.host());
                p.int64(e.port());
                str(p, e.reqId());
                transferId(p, e.transferId(), "SendRemoteBlocks.transfer_id");
                ints(p, e.blockNotifyList());
                p.int64(e.decodeRank());
            }
            case Effect.SendWriteFailed e -> {
                return false;
            }
            case Effect.StartHandshake e -> {
                return false;
            }
            case Effect.AckParked e -> {
                return false;
            }
            case Effect.StaleAckDropped e -> {
                return false;
            }
            case Effect.Anomaly e -> {
                return false;
            }
        }
        return true;
    }

    /** {@code reqs_to_recv} / {@code reqs_to_save}: an array of ReqMeta field arrays. */
    private static void reqMetas(MsgOut p, List<ReqMeta> l) throws IOException {
        if (l == null) {
            p.nil();
            return;
        }
        p.arrayHeader(l.size());
        for (ReqMeta m : l) {
            p.arrayHeader(14);
            str(p, m.requestId());
            blocks(p, m.localBlockIds());
            blocks(p, m.remoteBlockIds());
            str(p, m.remoteEngineId());
            str(p, m.remoteHost());
            p.int64(m.remoteHandshakePort());
            p.int64(m.remoteNotifyPort());
            p.int64(m.remoteDpRank());
            p.int64(m.remoteDpSize());
            p.int64(m.remoteDpSizeLocal());
            p.int64(m.remoteTpSize());
            transferId(p, m.transferId(), "ReqMeta.transfer_id");
            strs(p, m.multiPodHosts());
            p.bool(m.writeMode());
        }
    }

    private static void str(MsgOut p, String s) throws IOException {
        if (s == null) {
            p.nil();
        } else {
            p.str(s);
        }
    }

    private static void name(MsgOut p, Enum<?> e) throws IOException {
        if (e == null) {
            p.nil();
        } else {
            p.str(e.name());
        }
    }

    private static void phase(MsgOut p, RequestPhase ph) throws IOException {
        if (ph == null) {
            p.nil();
        } else {
            p.int64(ph.code());
        }
    }

    /** A Python value ({@code null} as nil); a value it cannot write names its field, as {@code Schema.write} does. */
    private static void py(MsgOut p, Object v, String field) throws IOException {
        try {
            PyValues.pack(p, v);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(field + ": " + e.getMessage(), e);
        }
    }

    /** A transfer id as its Python value: str, int, None and bytes directly, another value through its codec. */
    private static void transferId(MsgOut p, TransferId id, String field) throws IOException {
        switch (id) {
            case TransferId.Str s -> p.str(s.value());
            case TransferId.Int i -> p.int64(i.value());
            case TransferId.None n -> p.nil();
            case TransferId.Bytes b -> p.bin(b.value());
            case TransferId.Other o -> {
                try {
                    PyValues.pack(p, o.value());
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException(field + ": " + e.getMessage(), e);
                }
            }
            case TransferId.Unpackable u -> throw new IllegalArgumentException(field + ": " + u.why());
        }
    }

    private static void blocks(MsgOut p, BlockGroups g) throws IOException {
        if (g == null) {
            p.nil();
            return;
        }
        p.arrayHeader(g.size());
        for (int i = 0; i < g.size(); i++) {
            ints(p, g.group(i));
        }
    }

    private static void ints(MsgOut p, int[] ids) throws IOException {
        if (ids == null) {
            p.nil();
            return;
        }
        if (p instanceof MsgpackWriter f) {
            f.ints(ids, 0, ids.length);
            return;
        }
        p.arrayHeader(ids.length);
        for (int id : ids) {
            p.int64(id);
        }
    }

    private static void ints(MsgOut p, List<Integer> ids) throws IOException {
        if (ids == null) {
            p.nil();
            return;
        }
        p.arrayHeader(ids.size());
        for (int i = 0; i < ids.size(); i++) {
            p.int64(ids.get(i));
        }
    }

    private static void strs(MsgOut p, List<String> l) throws IOException {
        if (l == null) {
            p.nil();
            return;
        }
        p.arrayHeader(l.size());
        for (int i = 0; i < l.size(); i++) {
            str(p, l.get(i));
        }
    }
}
