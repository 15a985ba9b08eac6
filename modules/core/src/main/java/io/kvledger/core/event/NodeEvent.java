package io.kvledger.core.event;

import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import java.util.List;

/**
 * Everything that can happen to one engine rank's connector, as past-tense records. Each event
 * carries the monotonic time it happened at ({@link #atNs()}), stamped by the adapter that
 * observed it: the reducer has no clock of its own.
 *
 * <p>The scheduler-side events mirror the hooks vLLM's scheduler calls on the connector, the
 * worker-side ones the hooks the model runner calls, the notify events the frames the worker's
 * ZMQ listener receives, and the data-plane events the completions of posted transfers.
 */
public sealed interface NodeEvent {

    /** Monotonic nanoseconds at which the event happened. */
    long atNs();

    // ---------------------------------------------------------------- scheduler side

    /**
     * A request entered the scheduler ({@code add_request} / {@code on_new_request}).
     *
     * @param promptTokenIds the length of {@code prompt_token_ids}, or -1 when it is None
     *                       (prompt embeds)
     * @param params         {@code kv_transfer_params}, or {@code null} when the request has none
     */
    record RequestAdmitted(long atNs, String requestId, int numPromptTokens, int promptTokenIds,
                           KvParams params) implements NodeEvent {}

    /**
     * {@code get_num_new_matched_tokens(request, num_computed_tokens)}.
     *
     * @param acted the answer vLLM acted on without waiting for the node's (drive mode taking it
     *              from the inner connector, {@code drive_matched_from_inner}), or {@code null}
     *              when vLLM waited for the node's answer (or the event is not a drive call). The
     *              reducer names a different answer of its own {@code DRIVE_ANSWER_DIVERGED}.
     */
    record MatchedTokensQueried(long atNs, String requestId, int numComputedTokens, MatchedAnswer acted)
            implements NodeEvent {

        /** A query whose answer vLLM waited for. */
        public MatchedTokensQueried(long atNs, String requestId, int numComputedTokens) {
            this(atNs, requestId, numComputedTokens, null);
        }
    }

    /**
     * An answer to {@code get_num_new_matched_tokens} as vLLM acted on it.
     *
     * @param numTokens the count, or {@code null} for None ("ask again")
     */
    record MatchedAnswer(Integer numTokens, boolean loadAsync) {}

    /**
     * An answer to {@code request_finished} as vLLM acted on it.
     *
     * @param params the {@code kv_transfer_params} returned, or {@code null} for None
     */
    record FinishAnswer(boolean delayFree, KvParams params) {}

    /** {@code update_state_after_alloc(request, blocks, num_external_tokens)}. */
    record BlocksAllocated(long atNs, String requestId, BlockGroups blocks, int numExternalTokens)
            implements NodeEvent {}

    /**
     * {@code build_connector_meta(scheduler_output)}: the scheduler finished a step.
     *
     * @param cachedRequests   {@code scheduled_cached_reqs}: each running request with the block ids
     *                         newly allocated to it this step ({@code null} when none)
     * @param scheduledNewReqs {@code scheduled_new_reqs}: the requests scheduled for the first time
     *                         this step (or again after a preemption); {@code null} when not
     *                         recorded (journals and recordings that predate the field), which is
     *                         not the same as an empty list
     * @param preemptedReqIds  {@code preempted_req_ids}; {@code null} when not recorded
     */
    record StepScheduled(long atNs, long step, List<CachedRequest> cachedRequests, List<NewRequest> scheduledNewReqs,
                         List<String> preemptedReqIds) implements NodeEvent {

        /** A step whose new and preempted requests were not recorded. */
        public StepScheduled(long atNs, long step, List<CachedRequest> cachedRequests) {
            this(atNs, step, cachedRequests, null, null);
        }
    }

    /** One entry of {@code scheduled_cached_reqs}. */
    record CachedRequest(String requestId, BlockGroups newBlockIds) {}

    /**
     * One entry of {@code scheduled_new_reqs} ({@code NewRequestData}).
     *
     * @param blockIds          the request's block ids, one list per KV-cache group
     * @param numComputedTokens {@code num_computed_tokens} when scheduled
     * @param params            {@code sampling_params.extra_args["kv_transfer_params"]}, or
     *                          {@code null} when the request has none
     */
    record NewRequest(String requestId, BlockGroups blockIds, int numComputedTokens, KvParams params) {}

    /**
     * {@code request_finished(request, block_ids)}.
     *
     * @param requestId         {@code request.request_id} as the connector sees it at finish
     * @param blockIds          the request's blocks, one list per group (vLLM passes group 0 alone
     *                          when the connector does not support HMA)
     * @param admittedRequestId the id the request was admitted (and mapped) under when it differs
     *                          from {@code requestId} (vLLM's input processor appends
     *                          {@code -<8 hex>} after mapping), else {@code null}. The connector
     *                          itself never learns the old id: upstream defers and reaps under
     *                          {@code requestId} while its tables keep the admitted id; the field
     *                          only tells kvledger that this is the same request.
     * @param acted             the answer vLLM acted on without waiting for the node's (drive
     *                          mode taking it from the inner connector,
     *                          {@code drive_finished_from_inner}), or {@code null} when vLLM waited
     *                          (or the event is not a drive call); a different answer of the
     *                          reducer's own is named {@code DRIVE_ANSWER_DIVERGED}
     */
    record RequestFinished(long atNs, String requestId, FinishStatus status, BlockGroups blockIds,
                           String admittedRequestId, FinishAnswer acted) implements NodeEvent {

        /** A finish under the id the request was admitted with. */
        public RequestFinished(long atNs, String requestId, FinishStatus status, BlockGroups blockIds) {
            this(atNs, requestId, status, blockIds, null, null);
        }

        /** A finish whose answer vLLM waited for. */
        public RequestFinished(long atNs, String requestId, FinishStatus status, BlockGroups blockIds,
                               String admittedRequestId) {
            this(atNs, requestId, status, blockIds, admittedRequestId, null);
        }
    }

    /**
     * {@code update_connector_output(connector_output)}: the aggregated worker output of a step.
     *
     * @param finishedSending request ids, or {@code null} for None
     * @param acted           the {@code finished_sending} vLLM acted on without waiting for the
     *                        node's rewrite (drive mode taking the inner connector's,
     *                        {@code drive_freed_from_inner}: the requests whose blocks vLLM frees),
     *                        or {@code null} when vLLM waited (or the event is not a drive call); a
     *                        different set of the reducer's own is named {@code DRIVE_ANSWER_DIVERGED}
     */
    record ConnectorOutputReceived(long atNs, List<String> finishedSending, List<String> finishedRecving,
                                   FreedAnswer acted) implements NodeEvent {

        /** An output whose rewrite vLLM waited for (or a consumer's). */
        public ConnectorOutputReceived(long atNs, List<String> finishedSending, List<String> finishedRecving) {
            this(atNs, finishedSending, finishedRecving, null);
        }
    }

    /**
     * A producer's {@code finished_sending} as vLLM acted on it after {@code update_connector_output}.
     *
     * @param finishedSending the request ids whose blocks vLLM frees, or {@code null} for None
     */
    record FreedAnswer(List<String> finishedSending) {}

    // ---------------------------------------------------------------- worker side

    /** {@code start_load_kv}: the worker starts a step with the newest connector metadata. */
    record LoadStarted(long atNs) implements NodeEvent {}

    /** {@code save_kv_layer(layer_name, ...)}, called for an attention layer during the forward. */
    record LayerSaved(long atNs, String layerName) implements NodeEvent {}

    /** {@code wait_for_save()}, after the forward. */
    record SaveWaited(long atNs) implements NodeEvent {}

    /** {@code get_finished()} (and {@code get_block_ids_with_load_errors()}). */
    record FinishedPolled(long atNs) implements NodeEvent {}

    /** A handshake with {@code key} ("{eid}_dp{R}") answered with the peer's metadata. */
    record HandshakeCompleted(long atNs, String key) implements NodeEvent {}

    /** A handshake failed or timed out (the Python initiator would block forever or raise). */
    record HandshakeFailed(long atNs, String key, String reason) implements NodeEvent {}

    /**
     * The TP-wide vote that ends {@code _eager_handshake_all_dp_ranks} (#46116) for one remote
     * engine: after joining its own eager handshakes, every TP worker of the instance takes a CPU
     * {@code all_reduce(MIN)} over the TP group of its own result (1 every handshake succeeded, 0
     * one failed), and every worker gets the same minimum. With 0, every rank raises
     * {@code HandshakeError} after the collective, its own handshakes good or not; with 1, the
     * engine counts as eagerly handshaken and the step's reads go ahead.
     *
     * <p>An input like a handshake reply: the collective is outside the connector's rank, so the
     * recorder journals what the all-reduce returned.
     *
     * @param remoteEngineId {@code "{remote_host}:{remote_handshake_port}"}, the engine voted on
     * @param vote           the all-reduced minimum: 1 passed, 0 failed
     * @param failedTpRanks  the TP ranks that voted 0 when the recorder knows them (an all-reduce
     *                       alone does not say), else {@code null}
     */
    record HandshakeVoted(long atNs, String remoteEngineId, int vote, List<Integer> failedTpRanks)
            implements NodeEvent {

        /** Whether every TP rank's eager handshakes succeeded. */
        public boolean passed() {
            return vote != 0;
        }
    }

    /** A posted transfer (one status of a batch read or write) completed. */
    record TransferCompleted(long atNs, long statusId, boolean succeeded, int code, String message)
            implements NodeEvent {}

    // ---------------------------------------------------------------- notify listener

    /**
     * A {@code remote_blocks} frame (D scheduler to P worker, WRITE).
     *
     * @param legacyWithoutType whether the frame had no {@code type} key (the legacy form)
     */
    record RemoteBlocksReceived(long atNs, String reqId, String transferId, List<Integer> blockNotifyList,
                                int decodeRank, boolean legacyWithoutType) implements NodeEvent {}

    /** A {@code write_done} frame (P worker to D worker, WRITE). */
    record WriteDoneReceived(long atNs, String transferId) implements NodeEvent {}

    /**
     * A {@code release} frame (D to P).
     *
     * @param consumerTpSize {@code consumer_tp_size}, or {@code null} when the frame has none
     */
    record ReleaseReceived(long atNs, String transferId, Integer consumerTpSize) implements NodeEvent {}

    /** A raw UTF-8 completion id (the legacy frame that is not a msgpack map). */
    record RawCompletionReceived(long atNs, String completionId) implements NodeEvent {}

    /**
     * A frame the listener could not accept.
     *
     * @param wouldKillPythonListener whether the same frame raises out of the Python listener's
     *                                handler, which ends that rank's listener thread
     */
    record FrameRejected(long atNs, String reason, byte[] frame, boolean wouldKillPythonListener)
            implements NodeEvent {}

    // ---------------------------------------------------------------- notify publisher

    /**
     * A notify this node meant to send never left it: the publisher could not encode it, the
     * address did not resolve, the port was out of range, its queue was full, or ZMQ refused the
     * frame. (Python's DEALER would raise here or queue the frame forever; either way the peer
     * never hears of it.)
     *
     * @param endpoint    where it was going ({@code tcp://host:port}), or the unresolved host
     * @param messageType {@code remote_blocks}, {@code release}, {@code write_done} or
     *                    {@code write_failed}
     * @param transferId  the frame's transfer id, or {@code null} when it has none
     * @param frame       the encoded frame, empty when encoding itself failed
     */
    record NotifySendFailed(long atNs, String endpoint, String messageType, String transferId, String reason,
                            byte[] frame) implements NodeEvent {}

    // ---------------------------------------------------------------- lifecycle of the connector

    /**
     * The connector's {@code shutdown()}: the worker stops, and the scheduler closes every notify
     * DEALER it cached per peer path with {@code linger=0} (a frame still queued on one, say to a
     * peer not yet connected, is dropped), logging a warning for each close that raises, then
     * forgets them. Nothing else changes: a later notify would open a new socket.
     *
     * @param closeFailures one {@code "<path>: <error>"} per socket whose close raised, empty when
     *                      none did, or {@code null} when the recorder could not see them
     */
    record ShutDown(long atNs, List<String> closeFailures) implements NodeEvent {}

    /**
     * One KV-cache tensor the worker registered ({@code register_kv_caches}): its layer, its shape
     * as the attention backend allocated it, and its dtype as torch names it ({@code torch.bfloat16}).
     */
    record KvCacheTensor(String layerName, List<Integer> shape, String dtype) {
        public KvCacheTensor {
            shape = shape == null ? List.of() : List.copyOf(shape);
        }
    }

    /**
     * The worker's {@code register_kv_caches(kv_caches)}, once per worker at start-up, recorded
     * before the connector saw it (a connector that refuses the shapes raises there): every tensor
     * in the order vLLM handed them over, and the block size the connector was configured with
     * ({@code cache_config.block_size}), which it computes offsets with unless it takes the block
     * dimension from the tensor (bug class 15). Nothing in the reducer depends on it.
     *
     * @param configBlockSize tokens per block as configured, -1 when the recorder could not read it
     * @param attnBackend     the attention backend the engine was configured with, when known
     */
    record KvCachesRegistered(long atNs, int configBlockSize, String attnBackend, List<KvCacheTensor> tensors)
            implements NodeEvent {
        public KvCachesRegistered {
            tensors = tensors == null ? List.of() : List.copyOf(tensors);
        }
    }

    /**
     * The end of a worker's forward pass that posted READs ({@code wait_for_save}, after the
     * forward), written by the vLLM bridge recorder only for a step whose bound metadata held
     * requests to receive: which requests' reads {@code start_load_kv} posted, how many
     * {@code wait_for_layer_load} calls returned during the forward, how long they blocked in all,
     * and how long before this event the last returned. With {@code load_kv_async=False} the
     * scheduler promised the KV is in place when the forward runs (bug class 25: a forward that
     * consumed reads still in flight). Nothing in the reducer depends on it.
     *
     * @param readsPosted           the request ids of the metadata's {@code reqs_to_recv}
     * @param layerWaits            {@code wait_for_layer_load} calls that returned since {@code start_load_kv}
     * @param layerWaitNs           the time spent inside them, in all
     * @param lastLayerWaitBeforeNs how long before this event the last one returned (-1: none was called)
     */
    record ForwardDone(long atNs, List<String> readsPosted, int layerWaits, long layerWaitNs,
                       long lastLayerWaitBeforeNs) implements NodeEvent {
        public ForwardDone {
            readsPosted = readsPosted == null ? List.of() : List.copyOf(readsPosted);
        }
    }

    // ---------------------------------------------------------------- time

    /** Time passed: lets deadlines (deferred writes, receive aborts, transfer waits) fire. */
    record Tick(long atNs) implements NodeEvent {}
}
