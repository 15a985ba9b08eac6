package io.kvledger.core.model;

/**
 * Everything the Python connector would raise, assert, warn about or silently leak, as a named
 * anomaly the reducer records instead. Codes are permanent (journal and CLI); {@link #bugClass()}
 * names the entry of moriio-protocol.md section 7 the anomaly is evidence of (0 when none).
 * {@link Severity#WARNING} and {@link Severity#WOULD_RAISE} mean the Python code logs or raises at
 * that very call; a kind marked {@link #upstreamSilent()} is kvledger's own diagnosis of a spot
 * where the Python code says nothing.
 */
public enum AnomalyKind {
    // configuration, at node start
    KV_BOTH_ROLE_ASYMMETRY(1, Severity.WARNING, 36, "kv_both gives a consumer scheduler and a producer worker"),
    INIT_HYBRID_INVALID(2, Severity.WOULD_RAISE, 34, "hybrid model configuration rejected (MoRIIOError)"),
    INIT_HMA_UNSUPPORTED(3, Severity.WOULD_RAISE, 0, "HMA with these groups is not supported (NotImplementedError)"),
    READ_FULL_CUDAGRAPH(4, Severity.WARNING, 25, "READ with full CUDA graphs: the per-layer read barrier cannot fire"),
    PORT_FORMS_DISAGREE(5, Severity.HANG_RISK, 23, "DP > 1 and TP > 1: 2-argument listeners and 3-argument dialers disagree"),
    // scheduler side
    HMA_MULTI_GROUP_ASSERT(10, Severity.WOULD_RAISE, 0, "vLLM asserts a single KV group when the connector lacks SupportsHMA"),
    NEGATIVE_MATCHED_TOKENS(11, Severity.WARNING, 0, "get_num_new_matched_tokens returned a negative count"),
    READ_MATCH_WITHOUT_RECV(12, Severity.HANG_RISK, 0, "READ declared tokens as loaded for a request that is not a remote prefill"),
    TRANSFER_ID_SYNTHESIZED(13, Severity.INFO, 16, "request carried no transfer_id; sidecar-<rid> synthesized"),
    TRANSFER_ID_COLLISION(14, Severity.HANG_RISK, 13, "a second request id claimed a live transfer id"),
    UNMAP_MISS(15, Severity.WARNING, 13, "unmap found neither the request id nor the transfer id"),
    UNPINNED_DP_RANK(16, Severity.WARNING, 18, "remote_dp_size > 1 but neither remote_dp_rank nor is_request_leader is set; rank 0 assumed"),
    NOTIFY_ADDRESS_UNRESOLVED(17, Severity.WOULD_RAISE, 16, "no peer address in the request id or the params (ValueError)"),
    READ_INVALID_PARAMS(18, Severity.WARNING, 14, "READ recv with remote_block_ids but no remote_engine_id key: warned, nothing is transferred"),
    READ_ALIGNMENT_FAILED(19, Severity.WOULD_RAISE, 0, "local and remote block lists cannot be aligned"),
    META_ADDRESS_UNRESOLVED(20, Severity.WOULD_RAISE, 16, "build_connector_meta cannot resolve the peer address (ValueError)"),
    RELEASE_NOT_SENT(21, Severity.HANG_RISK, 13, "abort-before-alloc release could not be sent (no transfer id or address)"),
    MAPPING_LEAK(22, Severity.HANG_RISK, 35, "request finished but its transfer-id mapping is never removed"),
    FINISHED_SENDING_UNKNOWN_REQUEST(23, Severity.WOULD_RAISE, 1, "finished_sending names a request the scheduler does not hold (scheduler.py assert)"),
    EARLY_ACK_PARKED(24, Severity.INFO, 11, "ACK arrived before request_finished and was parked"),
    DEFERRAL_REAPED(25, Severity.HANG_RISK, 7, "deferred free reaped after defer_timeout without an ACK"),
    STALE_ACK_DROPPED(26, Severity.WARNING, 11, "parked ACK never matched a deferral and was dropped"),
    REQUEST_UNKNOWN(27, Severity.WARNING, 0, "a hook named a request that was never admitted"),
    WRITE_RECV_REPARKED(28, Severity.HANG_RISK, 27, "WRITE consumer asked again after its load finished: re-parked in WAITING_FOR_REMOTE_KVS"),
    HYBRID_FINISH_WITHOUT_MAMBA(29, Severity.WOULD_RAISE, 34, "hybrid completion without mamba groups (MoRIIOError)"),
    PENDING_SAVE_LEAK(30, Severity.HANG_RISK, 0, "a staged save never reaches its final chunk (READ producer under the seed)"),
    FREE_WHILE_TRANSFER_IN_FLIGHT(31, Severity.HANG_RISK, 8, "request freed while its transfer is still in flight"),
    REAP_THEN_LATE_ACK(32, Severity.HANG_RISK, 8, "an ACK arrived for a request already reaped (its blocks may have been reused)"),
    // worker side
    ACK_BEFORE_WORKER_MAPPING(40, Severity.INFO, 12, "ACK arrived before the worker's mapping held its transfer id; retried"),
    ACK_UNMAPPED_DROPPED(41, Severity.HANG_RISK, 12, "ACK for a transfer id the worker cannot map was dropped"),
    ACK_FOR_NON_LIVE_TRANSFER(42, Severity.WARNING, 1, "ACK for a transfer id that is not live was ignored"),
    DUPLICATE_ACK(43, Severity.INFO, 22, "ACK for an already completed transfer id was ignored"),
    ACK_FANIN_INVALID(44, Severity.WOULD_RAISE, 22, "consumer TP size is not a multiple of producer TP size (ValueError)"),
    RELEASE_INVALID_TP_SIZE(45, Severity.WOULD_RAISE, 28, "release with consumer_tp_size <= 0 raises in the listener"),
    EMPTY_REMOTE_BLOCKS(46, Severity.WOULD_RAISE, 28, "remote_blocks with an empty block_notify_list raises MoRIIOError"),
    LISTENER_WOULD_DIE_IN_PYTHON(47, Severity.HANG_RISK, 28, "this frame ends the Python listener thread: later notifies on this rank are lost"),
    NOTIFY_ROLE_MISMATCH(48, Severity.WOULD_RAISE, 28, "notify type not accepted by this role (role assertion in the handler)"),
    REMOTE_BLOCKS_FOR_TERMINAL(49, Severity.INFO, 6, "remote_blocks for a terminal transfer id ignored"),
    WRITE_DONE_UNMATCHED(50, Severity.WARNING, 1, "write_done or completion id matches no transfer in the worker mapping; kept for retry"),
    WRITE_TASK_EXPIRED(51, Severity.HANG_RISK, 27, "deferred WRITE task expired without remote_blocks: self-ACK, decode never told"),
    WRITE_FAILED(52, Severity.HANG_RISK, 27, "WRITE failed or timed out: self-ACK, decode never told"),
    HANDSHAKE_FAILED(53, Severity.HANG_RISK, 21, "handshake failed (Python blocks forever or raises HandshakeError)"),
    READ_FAILED(54, Severity.WARNING, 2, "READ transfer failed: load error reported, release sent"),
    READ_RECV_TIMEOUT(55, Severity.HANG_RISK, 26, "READ still pending after recv_abort_timeout: load error, no release"),
    HYBRID_READ_RAISES(56, Severity.WOULD_RAISE, 34, "hybrid READ failure raises TransferError and keeps all state"),
    RECV_WITHOUT_LOCAL_BLOCKS(57, Severity.INFO, 0, "no local blocks to read into: release sent at once"),
    WRITE_TIMEOUT(58, Severity.HANG_RISK, 5, "WRITE statuses not complete within transfer_timeout"),
    UNKNOWN_STATUS(59, Severity.WARNING, 0, "completion for a status id that was never posted"),
    READ_RELEASED_WHILE_PENDING(60, Severity.HANG_RISK, 3, "release sent while some status of the transfer was pending or failed"),
    PROMPT_TRUNCATED(61, Severity.INFO, 0, "hybrid producer dropped the last prompt token"),
    ACK_UNMAPPED_STUCK(62, Severity.HANG_RISK, 1, "ACK has waited past the TTL for a worker mapping that never came (id mismatch?)"),
    UNKNOWN_TRANSFER_ID(63, Severity.WARNING, 0, "a staged transfer has no usable transfer id"),
    CONSUMER_DEFERRED_FREE(66, Severity.HANG_RISK, 36,
            "a consumer deferred a free: only producers reap or surface deferrals, so its blocks are held forever"),
    WRITE_WAIT_WITHOUT_TRANSFER(67, Severity.HANG_RISK, 27,
            "WRITE consumer parked a request in WAITING_FOR_REMOTE_KVS that no producer will write"),
    REQUEST_ADMITTED_TWICE(65, Severity.WARNING, 0,
            "a request id was admitted while the scheduler still holds it; the second admission is ignored"),
    FINISHED_RECVING_UNEXPECTED(64, Severity.WOULD_RAISE, 10,
            "finished_recving names a request that is not waiting for remote KVs (scheduler assertion)"),
    NOTIFY_SEND_FAILED(68, Severity.HANG_RISK, 7,
            "a notify never left this node (not encodable, no such address, queue full or refused): its peer waits for it"),
    READS_POSTED_OUT_OF_PHASE(69, Severity.WARNING, 0,
            "the worker posted reads for a request the scheduler no longer holds staged for receive (stale metadata)"),
    META_PARAM_MISSING(70, Severity.WOULD_RAISE, 14,
            "add_new_req reads transfer_id and remote_block_ids by key: a missing key raises KeyError out of build_connector_meta"),
    PARAM_NOT_AN_INT(71, Severity.WOULD_RAISE, 16,
            "the scheduler calls int() on a kv_transfer_params value that is not a number (ValueError or TypeError)"),
    DEFERRAL_EXPIRED_AT_ACK(72, Severity.WARNING, 7,
            "a deferral expired in the call its ACK arrived: counted in the \"Reaped N\" warning, freed by its ACK"),
    READ_RECV_WITHOUT_REMOTE_BLOCKS(73, Severity.INFO, 14, true,
            "READ consumer params without remote_block_ids (missing or empty): no receive staged, the prefill waits for its reap"),
    // recorded by a shadow node (kvledger node --engine shadow), never by the reducer
    SHADOW_DIVERGENCE(74, Severity.WARNING, 0, true,
            "the real connector answered a hook otherwise than kvledger's reducer (shadow node: both answers in the detail)"),
    REQUEST_RENAMED_AT_FINISH(75, Severity.INFO, 13, true,
            "request_finished names the request by another id than it was admitted with (vLLM's -<8 hex> suffix); the connector's tables keep the admitted id"),
    NOTIFY_SOCKET_CLOSE_FAILED(76, Severity.WARNING, 0,
            "shutdown: closing a cached notify socket raised (\"Error closing ZMQ socket for path\")"),
    SHUT_DOWN_WITH_REQUESTS_HELD(77, Severity.INFO, 0, true,
            "shutdown while the scheduler still held requests: their transfers end with the node"),
    HANDSHAKE_VOTE_FAILED(78, Severity.WOULD_RAISE, 21,
            "the TP-wide eager-handshake vote failed: every TP rank raises HandshakeError and the step's reads are never posted"),
    // vLLM 239b5ff30's scheduler (profile vllm-239b5ff30)
    TRANSFER_ID_MISSING(79, Severity.WOULD_RAISE, 16,
            "kv_transfer_params has no transfer_id: params[\"transfer_id\"] raises KeyError (vLLM 239b5ff30 synthesizes none)"),
    PENDING_SAVE_UNKNOWN_REQUEST(80, Severity.WOULD_RAISE, 0,
            "a scheduled request with new blocks has no pending save: _reqs_need_pending_save[req_id] raises KeyError (vLLM 239b5ff30)"),
    FINISHED_SENDING_LIVE_REQUEST(81, Severity.HANG_RISK, 1,
            "finished_sending names a request that has not finished: with no update_connector_output (vLLM 239b5ff30) the scheduler frees a live request's blocks"),
    INPUT_NOT_RECORDED(82, Severity.WARNING, 0, true,
            "the journal lacks an input this profile's connector reads (scheduled_new_reqs of a recording that predates it): its answer is not known"),
    // heterogeneous TP
    WRITE_RANK_NOT_NOTIFIED(83, Severity.HANG_RISK, 22,
            "deferred WRITE task expired on a prefill TP rank the decode never notifies (its scheduler sends remote_blocks to its own TP size's ranks only): blocks held until defer_timeout on every request"),
    // drive mode
    DRIVE_ANSWER_DIVERGED(84, Severity.HANG_RISK, 0, true,
            "drive mode: vLLM acted on the inner connector's answer without waiting, and this node answers otherwise: the engine and the node no longer agree on the request");

    private static final String OWN = "kvledger's own";

    /** How bad an anomaly is. */
    public enum Severity {
        /** Expected under load; worth seeing in a timeline. */
        INFO,
        /** The Python connector logs a warning. */
        WARNING,
        /** The Python connector raises or asserts here (an engine crash or dead thread). */
        WOULD_RAISE,
        /** Leads to a leak, a hang or a use-after-free. */
        HANG_RISK
    }

    private final int code;
    private final Severity severity;
    private final int bugClass;
    private final boolean upstreamSilent;
    private final String summary;

    AnomalyKind(int code, Severity severity, int bugClass, String summary) {
        this(code, severity, bugClass, false, summary);
    }

    AnomalyKind(int code, Severity severity, int bugClass, boolean upstreamSilent, String summary) {
        this.code = code;
        this.severity = severity;
        this.bugClass = bugClass;
        this.upstreamSilent = upstreamSilent;
        this.summary = summary;
    }

    /**
     * True for a record that is kvledger's own diagnosis of a spot where the Python connector
     * says nothing (no log line, no exception): it is evidence for a detector, never a claim
     * that upstream raised or warned. Renderers mark it (see {@link #label()}).
     */
    public boolean upstreamSilent() {
        return upstreamSilent;
    }

    /** The severity as renderers print it: {@code INFO} or {@code INFO, kvledger's own}. */
    public String label() {
        return upstreamSilent ? severity + ", " + OWN : severity.toString();
    }

    public int code() {
        return code;
    }

    public Severity severity() {
        return severity;
    }

    public int bugClass() {
        return bugClass;
    }

    public String summary() {
        return summary;
    }
}
