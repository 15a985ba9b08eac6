package io.kvledger.core.effect;

import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.ReqMeta;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.model.KvParams;
import java.util.List;

/**
 * What the reducer decided, as values. Three kinds:
 * <ul>
 *   <li>hook replies, which the engine adapter returns to vLLM ({@link MatchedTokens},
 *       {@link MetadataBuilt}, {@link FinishDecision}, {@link FinishedReported},
 *       {@link FinishedSendingRewritten});</li>
 *   <li>I/O commands, which publishers execute ({@code Send*}, {@link StartHandshake},
 *       {@link PostWrite}, {@link PostRead});</li>
 *   <li>decision records, which the journal keeps as derived entries and replay compares
 *       ({@link PhaseChanged}, {@link DeferralStarted}, {@link AckParked}, {@link AckSurfaced},
 *       {@link StaleAckDropped}, {@link Unmapped}, {@link Anomaly}).</li>
 * </ul>
 */
public sealed interface Effect {

    /** Whether this effect is a decision record (derived, journaled, never executed). */
    default boolean isDecision() {
        return false;
    }

    // ---------------------------------------------------------------- hook replies

    /** The reply to {@code get_num_new_matched_tokens}. */
    record MatchedTokens(String requestId, int count, boolean loadAsync) implements Effect {}

    /**
     * The connector metadata of a step ({@code build_connector_meta}'s result).
     *
     * @param reqsToSend  request ids shipped in {@code reqs_to_send} this step
     * @param mappingSize the size of the transfer-id map snapshot handed to the worker
     */
    record MetadataBuilt(long step, List<ReqMeta> reqsToRecv, List<ReqMeta> reqsToSave, List<String> reqsToSend,
                         int mappingSize) implements Effect {}

    /** The reply to {@code request_finished}: free later ({@code delayFree}) and the returned params. */
    record FinishDecision(String requestId, boolean delayFree, KvParams params) implements Effect {}

    /** The reply to {@code get_finished} and {@code get_block_ids_with_load_errors}. */
    record FinishedReported(List<String> doneSending, List<String> doneRecving, List<Integer> loadErrorBlocks)
            implements Effect {}

    /**
     * {@code update_connector_output} rewrote {@code finished_sending}: vLLM frees exactly these
     * requests' blocks now. {@code safe} is empty when the Python value is None.
     */
    record FinishedSendingRewritten(List<String> safe) implements Effect {}

    // ---------------------------------------------------------------- I/O commands

    /** Who sends a notify: the scheduler's DEALERs or the worker's. */
    enum Sender { SCHEDULER, WORKER }

    /** Send a {@code remote_blocks} frame to {@code tcp://host:port}. */
    record SendRemoteBlocks(String host, int port, String reqId, Object transferId, List<Integer> blockNotifyList,
                            int decodeRank) implements Effect {}

    /** Send a {@code release} frame. */
    record SendRelease(Sender sender, String host, int port, Object transferId, int consumerTpSize)
            implements Effect {}

    /** Send a {@code write_done} frame. */
    record SendWriteDone(String host, int port, String transferId) implements Effect {}

    /** Send a {@code write_failed} frame (open PR #57705, behind its switch). */
    record SendWriteFailed(String host, int port, String transferId, String reason) implements Effect {}

    /** Start a handshake with the peer rank whose tables are keyed {@code key}. */
    record StartHandshake(String key, String host, int port, String remoteEngineId, int remoteDpRank)
            implements Effect {}

    /** Post one layer's batch write; its completion comes back as a TransferCompleted with statusId. */
    record PostWrite(long statusId, String transferId, String layerName, String sessionKey,
                     int[] localBlockIds, int[] remoteBlockIds) implements Effect {}

    /** Post one layer's batch read. */
    record PostRead(long statusId, String requestId, String transferId, String layerName, String sessionKey,
                    int[] localBlockIds, int[] remoteBlockIds) implements Effect {}

    // ---------------------------------------------------------------- decision records

    /** A request changed phase, with the reason (the only way phases change). */
    record PhaseChanged(String requestId, RequestPhase from, RequestPhase to, String reason) implements Effect {
        @Override public boolean isDecision() { return true; }
    }

    /** Free deferred until an ACK or {@code deadlineNs}. */
    record DeferralStarted(String requestId, String transferId, long deadlineNs) implements Effect {
        @Override public boolean isDecision() { return true; }
    }

    /** An ACK arrived before its deferral existed; parked until {@code deadlineNs}. */
    record AckParked(String requestId, long deadlineNs) implements Effect {
        @Override public boolean isDecision() { return true; }
    }

    /** How a request came to be surfaced in finished_sending. */
    enum SurfaceReason { ACKED, PARKED_ACK_RELEASED, REAPED }

    /** A request was surfaced in finished_sending (vLLM frees it). */
    record AckSurfaced(String requestId, String transferId, SurfaceReason reason) implements Effect {
        @Override public boolean isDecision() { return true; }
    }

    /** A parked ACK passed its deadline without a deferral and was dropped. */
    record StaleAckDropped(String requestId) implements Effect {
        @Override public boolean isDecision() { return true; }
    }

    /** How an unmap found its entry. */
    enum UnmapKind { EXACT, BY_TRANSFER_ID, MISS }

    /** The request-id/transfer-id map lost an entry (or missed). */
    record Unmapped(String requestId, String transferId, String removedRequestId, UnmapKind kind) implements Effect {
        @Override public boolean isDecision() { return true; }
    }

    /** Something the Python connector would raise, assert, warn about or leak. */
    record Anomaly(AnomalyKind kind, String requestId, String transferId, String detail) implements Effect {
        @Override public boolean isDecision() { return true; }
    }
}
