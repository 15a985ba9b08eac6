package io.kvledger.ledger.replay;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.ReqMeta;
import java.util.List;

/**
 * The request ids and transfer ids an input event or an effect names, and the pairs it binds
 * (a request carrying a transfer id), for commands that follow one request or transfer through
 * journals ({@code inspect}, filters of {@code dump}). Status ids are not ids of this kind: a
 * {@code TransferCompleted} names only its status, which {@link Sink#status} reports, and the
 * {@code PostWrite}/{@code PostRead} that posted it reports the same status with its transfer.
 *
 * <p>A raw completion id is reported as both a request id and a transfer id (the legacy frame
 * carries whichever the sender put there). A rejected frame's bytes are not parsed.
 */
public final class Mentions {

    private Mentions() {}

    /** Receives what an event or effect names. Every method may be called several times. */
    public interface Sink {
        void requestId(String rid);

        void transferId(String tid);

        /** {@code rid} is known to carry {@code tid} (both were also reported on their own). */
        default void bind(String rid, String tid) {
        }

        /** A data-plane status id: posted for {@code tid} (may be {@code null} on completion). */
        default void status(long statusId, String tid) {
        }
    }

    /** Reports what {@code e} names. */
    public static void of(NodeEvent e, Sink s) {
        switch (e) {
            case NodeEvent.RequestAdmitted x -> {
                rid(s, x.requestId());
                String tid = transferId(x.params());
                tid(s, tid);
                bind(s, x.requestId(), tid);
            }
            case NodeEvent.MatchedTokensQueried x -> rid(s, x.requestId());
            case NodeEvent.BlocksAllocated x -> rid(s, x.requestId());
            case NodeEvent.StepScheduled x -> {
                if (x.cachedRequests() != null) {
                    for (NodeEvent.CachedRequest c : x.cachedRequests()) {
                        rid(s, c.requestId());
                    }
                }
            }
            case NodeEvent.RequestFinished x -> {
                rid(s, x.requestId());
                if (x.admittedRequestId() != null) {
                    rid(s, x.admittedRequestId()); // the same request, admitted under this id
                }
            }
            case NodeEvent.ConnectorOutputReceived x -> {
                rids(s, x.finishedSending());
                rids(s, x.finishedRecving());
                if (x.acted() != null) {
                    rids(s, x.acted().finishedSending()); // the inner's rewrite may add parked or reaped ones
                }
            }
            case NodeEvent.TransferCompleted x -> s.status(x.statusId(), null);
            case NodeEvent.RemoteBlocksReceived x -> {
                rid(s, x.reqId());
                tid(s, x.transferId());
                bind(s, x.reqId(), x.transferId());
            }
            case NodeEvent.WriteDoneReceived x -> tid(s, x.transferId());
            case NodeEvent.ReleaseReceived x -> tid(s, x.transferId());
            case NodeEvent.NotifySendFailed x -> tid(s, x.transferId());
            case NodeEvent.RawCompletionReceived x -> {
                rid(s, x.completionId());
                tid(s, x.completionId());
            }
            case NodeEvent.LoadStarted x -> { }
            case NodeEvent.LayerSaved x -> { }
            case NodeEvent.SaveWaited x -> { }
            case NodeEvent.FinishedPolled x -> { }
            case NodeEvent.HandshakeCompleted x -> { }
            case NodeEvent.HandshakeFailed x -> { }
            case NodeEvent.HandshakeVoted x -> { }
            case NodeEvent.FrameRejected x -> { }
            case NodeEvent.Tick x -> { }
            case NodeEvent.ShutDown x -> { }
            case NodeEvent.KvCachesRegistered x -> { }
            case NodeEvent.ForwardDone x -> rids(s, x.readsPosted());
        }
    }

    /** Reports what {@code e} names. */
    public static void of(Effect e, Sink s) {
        switch (e) {
            case Effect.MatchedTokens x -> rid(s, x.requestId());
            case Effect.MetadataBuilt x -> {
                metas(s, x.reqsToRecv());
                metas(s, x.reqsToSave());
                rids(s, x.reqsToSend());
            }
            case Effect.FinishDecision x -> {
                rid(s, x.requestId());
                String tid = transferId(x.params());
                tid(s, tid);
                bind(s, x.requestId(), tid);
            }
            case Effect.FinishedReported x -> {
                rids(s, x.doneSending());
                rids(s, x.doneRecving());
            }
            case Effect.FinishedSendingRewritten x -> rids(s, x.safe());
            case Effect.SendRemoteBlocks x -> {
                rid(s, x.reqId());
                String tid = x.transferId().asString();
                tid(s, tid);
                bind(s, x.reqId(), tid);
            }
            case Effect.SendRelease x -> tid(s, x.transferId().asString());
            case Effect.SendWriteDone x -> tid(s, x.transferId());
            case Effect.SendWriteFailed x -> tid(s, x.transferId());
            case Effect.StartHandshake x -> { }
            case Effect.PostWrite x -> {
                tid(s, x.transferId());
                s.status(x.statusId(), x.transferId());
            }
            case Effect.PostRead x -> {
                rid(s, x.requestId());
                tid(s, x.transferId());
                bind(s, x.requestId(), x.transferId());
                s.status(x.statusId(), x.transferId());
            }
            case Effect.PhaseChanged x -> rid(s, x.requestId());
            case Effect.DeferralStarted x -> {
                rid(s, x.requestId());
                tid(s, x.transferId());
                bind(s, x.requestId(), x.transferId());
            }
            case Effect.AckParked x -> rid(s, x.requestId());
            case Effect.AckSurfaced x -> {
                rid(s, x.requestId());
                tid(s, x.transferId());
                bind(s, x.requestId(), x.transferId());
            }
            case Effect.StaleAckDropped x -> rid(s, x.requestId());
            case Effect.Unmapped x -> {
                rid(s, x.requestId());
                rid(s, x.removedRequestId());
                tid(s, x.transferId());
                if (x.kind() != Effect.UnmapKind.MISS) {
                    bind(s, x.requestId(), x.transferId());
                }
            }
            case Effect.Anomaly x -> {
                rid(s, x.requestId());
                tid(s, x.transferId());
                bind(s, x.requestId(), x.transferId());
            }
        }
    }

    /** The {@code transfer_id} of params, when it is a non-empty string. */
    static String transferId(KvParams p) {
        return p != null && p.get("transfer_id") instanceof String t && !t.isEmpty() ? t : null;
    }

    private static void metas(Sink s, List<ReqMeta> metas) {
        if (metas == null) {
            return;
        }
        for (ReqMeta m : metas) {
            rid(s, m.requestId());
            String tid = m.transferIdString();
            if (tid != null && !tid.isEmpty()) {
                tid(s, tid);
                bind(s, m.requestId(), tid);
            }
        }
    }

    private static void rids(Sink s, List<String> ids) {
        if (ids != null) {
            for (String id : ids) {
                rid(s, id);
            }
        }
    }

    private static void rid(Sink s, String rid) {
        if (rid != null && !rid.isEmpty()) {
            s.requestId(rid);
        }
    }

    private static void tid(Sink s, String tid) {
        if (tid != null && !tid.isEmpty()) {
            s.transferId(tid);
        }
    }

    private static void bind(Sink s, String rid, String tid) {
        if (rid != null && !rid.isEmpty() && tid != null && !tid.isEmpty()) {
            s.bind(rid, tid);
        }
    }
}
