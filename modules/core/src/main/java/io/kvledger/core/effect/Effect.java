package io.kvledger.core.effect;

import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.ReqMeta;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.model.TransferId;
import io.kvledger.core.model.KvParams;
import java.util.List;

/**
 * What the reducer decided, as values. Three sealed families, each switched over exhaustively by
 * the code that routes it:
 * <ul>
 *   <li>{@link HookReply} hook replies, which the engine adapter returns to vLLM ({@link MatchedTokens},
 *       {@link MetadataBuilt}, {@link FinishDecision}, {@link FinishedReported},
 *       {@link FinishedSendingRewritten});</li>
 *   <li>{@link IoCommand} I/O commands, which publishers execute: {@link Notify} the notify frames
 *       ({@code Send*}, the notify publisher's), {@link Post} the transfer posts ({@link PostWrite},
 *       {@link PostRead}, the transfer publisher's) and {@link StartHandshake} (the data plane's);</li>
 *   <li>{@link Decision} decision records, which the journal keeps as derived entries and replay compares
 *       ({@link PhaseChanged}, {@link DeferralStarted}, {@link AckParked}, {@link AckSurfaced},
 *       {@link StaleAckDropped}, {@link Unmapped}, {@link Anomaly}).</li>
 * </ul>
 * Every leaf is in exactly one family, and every I/O command in exactly one publisher's sub-family:
 * putting a new effect in a family is deciding where it goes, and each router's switch over its
 * family fails to compile until the new leaf is handled. Hook replies and decision records have no
 * publisher: a node journals every effect, hands the whole list to its listeners and to the hook's
 * caller, and executes only the I/O commands.
 */
public sealed interface Effect permits Effect.HookReply, Effect.IoCommand, Effect.Decision {

    /** Whether this effect is a decision record (derived, journaled, never executed). */
    default boolean isDecision() {
        return this instanceof Decision;
    }

    /**
     * Replies to the engine's hook calls; the engine adapter returns them to vLLM. A router
     * switches over this family exhaustively (no {@code default}), so a new reply type fails to
     * compile until every router handles it.
     */
    sealed interface HookReply extends Effect
            permits MatchedTokens, MetadataBuilt, FinishDecision, FinishedReported, FinishedSendingRewritten {}

    /**
     * Commands publishers execute, one sub-family per publisher: {@link Notify} notify frames,
     * {@link Post} transfer posts, {@link StartHandshake} handshakes.
     */
    sealed interface IoCommand extends Effect permits Notify, Post, StartHandshake {}

    /** Notify frames, which the notify publisher sends to {@code tcp://host:port}. */
    sealed interface Notify extends IoCommand permits SendRemoteBlocks, SendRelease, SendWriteDone, SendWriteFailed {
        String host();

        int port();
    }

    /**
     * Transfer posts, which the transfer publisher hands to the transfer engine; each completion
     * comes back as a {@code TransferCompleted} with the post's {@code statusId}.
     */
    sealed interface Post extends IoCommand permits PostWrite, PostRead {
        long statusId();
    }

    /** Decision records: derived, journaled, compared by replay, never executed. */
    sealed interface Decision extends Effect
            permits PhaseChanged, DeferralStarted, AckParked, AckSurfaced, StaleAckDropped, Unmapped, Anomaly {}

    // ---------------------------------------------------------------- hook replies

    /** The reply to {@code get_num_new_matched_tokens}. */
    record MatchedTokens(String requestId, int count, boolean loadAsync) implements HookReply {}

    /**
     * The connector metadata of a step ({@code build_connector_meta}'s result).
     *
     * @param reqsToSend  request ids shipped in {@code reqs_to_send} this step
     * @param mappingSize the size of the transfer-id map snapshot handed to the worker
     */
    record MetadataBuilt(long step, List<ReqMeta> reqsToRecv, List<ReqMeta> reqsToSave, List<String> reqsToSend,
                         int mappingSize) implements HookReply {}

    /** The reply to {@code request_finished}: free later ({@code delayFree}) and the returned params. */
    record FinishDecision(String requestId, boolean delayFree, KvParams params) implements HookReply {}

    /** The reply to {@code get_finished} and {@code get_block_ids_with_load_errors}. */
    record FinishedReported(List<String> doneSending, List<String> doneRecving, List<Integer> loadErrorBlocks)
            implements HookReply {}

    /**
     * {@code update_connector_output} rewrote {@code finished_sending}: vLLM frees exactly these
     * requests' blocks now. {@code safe} is empty when the Python value is None.
     */
    record FinishedSendingRewritten(List<String> safe) implements HookReply {}

    // ---------------------------------------------------------------- I/O commands

    /** Who sends a notify: the scheduler's DEALERs or the worker's. */
    enum Sender { SCHEDULER, WORKER }

    /**
     * Send a {@code remote_blocks} frame to {@code tcp://host:port}; {@code transferId} as the
     * params carry it ({@link TransferId#NONE} when they carry none), sent as it came.
     */
    record SendRemoteBlocks(String host, int port, String reqId, TransferId transferId, List<Integer> blockNotifyList,
                            int decodeRank) implements Notify {
        public SendRemoteBlocks {
            transferId = transferId == null ? TransferId.NONE : transferId;
        }
    }

    /** Send a {@code release} frame; {@code transferId} as the params or metadata carry it. */
    record SendRelease(Sender sender, String host, int port, TransferId transferId, int consumerTpSize)
            implements Notify {
        public SendRelease {
            transferId = transferId == null ? TransferId.NONE : transferId;
        }
    }

    /** Send a {@code write_done} frame. */
    record SendWriteDone(String host, int port, String transferId) implements Notify {}

    /** Send a {@code write_failed} frame (open PR #57705, behind its switch). */
    record SendWriteFailed(String host, int port, String transferId, String reason) implements Notify {}

    /** Start a handshake with the peer rank whose tables are keyed {@code key}. */
    record StartHandshake(String key, String host, int port, String remoteEngineId, int remoteDpRank)
            implements IoCommand {}

    /** Post one layer's batch write; its completion comes back as a TransferCompleted with statusId. */
    record PostWrite(long statusId, String transferId, String layerName, String sessionKey,
                     int[] localBlockIds, int[] remoteBlockIds) implements Post {}

    /** Post one layer's batch read. */
    record PostRead(long statusId, String requestId, String transferId, String layerName, String sessionKey,
                    int[] localBlockIds, int[] remoteBlockIds) implements Post {}

    // ---------------------------------------------------------------- decision records

    /** A request changed phase, with the reason (the only way phases change). */
    record PhaseChanged(String requestId, RequestPhase from, RequestPhase to, String reason) implements Decision {}

    /** Free deferred until an ACK or {@code deadlineNs}. */
    record DeferralStarted(String requestId, String transferId, long deadlineNs) implements Decision {}

    /** An ACK arrived before its deferral existed; parked until {@code deadlineNs}. */
    record AckParked(String requestId, long deadlineNs) implements Decision {}

    /** How a request came to be surfaced in finished_sending. */
    enum SurfaceReason { ACKED, PARKED_ACK_RELEASED, REAPED }

    /** A request was surfaced in finished_sending (vLLM frees it). */
    record AckSurfaced(String requestId, String transferId, SurfaceReason reason) implements Decision {}

    /** A parked ACK passed its deadline without a deferral and was dropped. */
    record StaleAckDropped(String requestId) implements Decision {}

    /** How an unmap found its entry. */
    enum UnmapKind { EXACT, BY_TRANSFER_ID, MISS }

    /** The request-id/transfer-id map lost an entry (or missed). */
    record Unmapped(String requestId, String transferId, String removedRequestId, UnmapKind kind) implements Decision {}

    /** Something the Python connector would raise, assert, warn about or leak. */
    record Anomaly(AnomalyKind kind, String requestId, String transferId, String detail) implements Decision {}
}
