package io.kvledger.wire.bridge;

import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import java.util.List;
import java.util.Objects;

/**
 * The decoded arguments of one bridge call. The engine hooks ({@link Engine}) carry everything
 * their {@link NodeEvent} needs except the time: the engine sends no clock, the adapter that
 * receives the call stamps it ({@link Engine#at(long)}). {@link Hello} and {@link Ping} are the
 * bridge's own control calls and never reach the reducer.
 */
public sealed interface HookCall {

    BridgeHook hook();

    /** A call that becomes one {@link NodeEvent}. */
    sealed interface Engine extends HookCall {
        /** The event this call is, as it happened at {@code atNs} (monotonic nanoseconds). */
        NodeEvent at(long atNs);
    }

    /**
     * {@code add_request}: a request entered the scheduler.
     *
     * @param promptTokenIds the length of {@code prompt_token_ids}, or -1 when it is None
     * @param params         {@code kv_transfer_params}, or {@code null} for None
     */
    record AddRequest(String requestId, int numPromptTokens, int promptTokenIds, KvParams params) implements Engine {
        public AddRequest {
            Objects.requireNonNull(requestId, "requestId");
        }

        @Override public BridgeHook hook() { return BridgeHook.ADD_REQUEST; }

        @Override public NodeEvent at(long atNs) {
            return new NodeEvent.RequestAdmitted(atNs, requestId, numPromptTokens, promptTokenIds, params);
        }
    }

    /**
     * {@code get_num_new_matched_tokens(request, num_computed_tokens)}.
     *
     * @param acted the answer vLLM acted on without waiting ({@code args.acted}), or {@code null}
     */
    record GetNumNewMatchedTokens(String requestId, int numComputedTokens, NodeEvent.MatchedAnswer acted)
            implements Engine {
        public GetNumNewMatchedTokens {
            Objects.requireNonNull(requestId, "requestId");
        }

        /** A query whose answer the engine waits for. */
        public GetNumNewMatchedTokens(String requestId, int numComputedTokens) {
            this(requestId, numComputedTokens, null);
        }

        @Override public BridgeHook hook() { return BridgeHook.GET_NUM_NEW_MATCHED_TOKENS; }

        @Override public NodeEvent at(long atNs) {
            return new NodeEvent.MatchedTokensQueried(atNs, requestId, numComputedTokens, acted);
        }
    }

    /** {@code update_state_after_alloc(request, blocks, num_external_tokens)}. */
    record UpdateStateAfterAlloc(String requestId, BlockGroups blockIds, int numExternalTokens) implements Engine {
        public UpdateStateAfterAlloc {
            Objects.requireNonNull(requestId, "requestId");
            Objects.requireNonNull(blockIds, "blockIds");
        }

        @Override public BridgeHook hook() { return BridgeHook.UPDATE_STATE_AFTER_ALLOC; }

        @Override public NodeEvent at(long atNs) {
            return new NodeEvent.BlocksAllocated(atNs, requestId, blockIds, numExternalTokens);
        }
    }

    /**
     * {@code build_connector_meta(scheduler_output)}.
     *
     * @param cachedRequests   {@code scheduled_cached_reqs}, each with its newly allocated block ids
     *                         ({@code null} when none)
     * @param scheduledNewReqs {@code scheduled_new_reqs}, or {@code null} when the caller did not
     *                         send them (not the same as an empty list)
     * @param preemptedReqIds  {@code preempted_req_ids}, or {@code null} when not sent
     */
    record BuildConnectorMeta(long step, List<NodeEvent.CachedRequest> cachedRequests,
                              List<NodeEvent.NewRequest> scheduledNewReqs, List<String> preemptedReqIds) implements Engine {
        public BuildConnectorMeta {
            cachedRequests = List.copyOf(cachedRequests);
            scheduledNewReqs = scheduledNewReqs == null ? null : List.copyOf(scheduledNewReqs);
            preemptedReqIds = preemptedReqIds == null ? null : List.copyOf(preemptedReqIds);
        }

        /** A step whose new and preempted requests were not sent. */
        public BuildConnectorMeta(long step, List<NodeEvent.CachedRequest> cachedRequests) {
            this(step, cachedRequests, null, null);
        }

        @Override public BridgeHook hook() { return BridgeHook.BUILD_CONNECTOR_META; }

        @Override public NodeEvent at(long atNs) {
            return new NodeEvent.StepScheduled(atNs, step, cachedRequests, scheduledNewReqs, preemptedReqIds);
        }
    }

    /**
     * {@code request_finished(request, block_ids)}.
     *
     * @param acted the answer vLLM acted on without waiting ({@code args.acted}), or {@code null}
     */
    record RequestFinished(String requestId, FinishStatus status, BlockGroups blockIds, NodeEvent.FinishAnswer acted)
            implements Engine {
        public RequestFinished {
            Objects.requireNonNull(requestId, "requestId");
            Objects.requireNonNull(status, "status");
            Objects.requireNonNull(blockIds, "blockIds");
        }

        /** A finish whose answer the engine waits for. */
        public RequestFinished(String requestId, FinishStatus status, BlockGroups blockIds) {
            this(requestId, status, blockIds, null);
        }

        @Override public BridgeHook hook() { return BridgeHook.REQUEST_FINISHED; }

        @Override public NodeEvent at(long atNs) {
            return new NodeEvent.RequestFinished(atNs, requestId, status, blockIds, null, acted);
        }
    }

    /**
     * {@code update_connector_output(connector_output)}.
     *
     * @param finishedSending request ids, or {@code null} for None
     * @param finishedRecving request ids, or {@code null} for None
     * @param acted           the {@code finished_sending} vLLM acted on without waiting
     *                        ({@code args.acted}), or {@code null}
     */
    record UpdateConnectorOutput(List<String> finishedSending, List<String> finishedRecving,
                                 NodeEvent.FreedAnswer acted) implements Engine {
        public UpdateConnectorOutput {
            finishedSending = finishedSending == null ? null : List.copyOf(finishedSending);
            finishedRecving = finishedRecving == null ? null : List.copyOf(finishedRecving);
        }

        /** An output whose rewrite the engine waits for (or a consumer's). */
        public UpdateConnectorOutput(List<String> finishedSending, List<String> finishedRecving) {
            this(finishedSending, finishedRecving, null);
        }

        @Override public BridgeHook hook() { return BridgeHook.UPDATE_CONNECTOR_OUTPUT; }

        @Override public NodeEvent at(long atNs) {
            return new NodeEvent.ConnectorOutputReceived(atNs, finishedSending, finishedRecving, acted);
        }
    }

    /** {@code start_load_kv(forward_context)}. */
    record StartLoadKv() implements Engine {
        @Override public BridgeHook hook() { return BridgeHook.START_LOAD_KV; }

        @Override public NodeEvent at(long atNs) {
            return new NodeEvent.LoadStarted(atNs);
        }
    }

    /** {@code save_kv_layer(layer_name, kv_layer, attn_metadata)}: only the name crosses. */
    record SaveKvLayer(String layerName) implements Engine {
        public SaveKvLayer {
            Objects.requireNonNull(layerName, "layerName");
        }

        @Override public BridgeHook hook() { return BridgeHook.SAVE_KV_LAYER; }

        @Override public NodeEvent at(long atNs) {
            return new NodeEvent.LayerSaved(atNs, layerName);
        }
    }

    /** {@code wait_for_save()}. */
    record WaitForSave() implements Engine {
        @Override public BridgeHook hook() { return BridgeHook.WAIT_FOR_SAVE; }

        @Override public NodeEvent at(long atNs) {
            return new NodeEvent.SaveWaited(atNs);
        }
    }

    /** {@code get_finished(finished_req_ids)} with {@code get_block_ids_with_load_errors()}. */
    record GetFinished() implements Engine {
        @Override public BridgeHook hook() { return BridgeHook.GET_FINISHED; }

        @Override public NodeEvent at(long atNs) {
            return new NodeEvent.FinishedPolled(atNs);
        }
    }

    /**
     * {@code handshake_voted(remote_engine_id, vote, failed_tp_ranks)}: the outcome of the TP-wide
     * {@code all_reduce(MIN)} vote on the eager handshakes with {@code remoteEngineId} (1 passed,
     * 0 failed; {@code failedTpRanks} the ranks whose own handshakes failed, {@code null} when
     * not known).
     */
    record HandshakeVoted(String remoteEngineId, int vote, List<Integer> failedTpRanks) implements Engine {
        public HandshakeVoted {
            Objects.requireNonNull(remoteEngineId, "remoteEngineId");
            failedTpRanks = failedTpRanks == null ? null : List.copyOf(failedTpRanks);
        }

        @Override public BridgeHook hook() { return BridgeHook.HANDSHAKE_VOTED; }

        @Override public NodeEvent at(long atNs) {
            return new NodeEvent.HandshakeVoted(atNs, remoteEngineId, vote, failedTpRanks);
        }
    }

    /**
     * {@code hello}: the engine side introduces itself. Each field is {@code null} when the caller
     * did not send it; a field that is sent must match the node, or the call is refused.
     *
     * @param kvRole         vLLM's {@code kv_role} ({@code "kv_producer"} or {@code "kv_consumer"})
     * @param mode           {@code "read"} or {@code "write"}
     * @param dpRank         the caller's global data-parallel rank
     * @param tpRank         the caller's tensor-parallel rank
     * @param connectorRole  {@code "scheduler"} or {@code "worker"} (informational)
     * @param vllmVersion    the engine's {@code vllm.__version__}, as a recording's header has it
     * @param vllmCommit     the engine's vLLM commit, as a recording's header has it
     * @param innerConnector the connector the engine wraps ({@code "module.Class"}), as a
     *                       recording's header has it; the three pick the behaviour profile that
     *                       models the engine's connector ({@code UpstreamVersions}), which the node
     *                       must run
     */
    record Hello(String kvRole, String mode, Integer dpRank, Integer tpRank, String connectorRole,
                 String vllmVersion, String vllmCommit, String innerConnector) implements HookCall {

        /** A hello that names no vLLM install. */
        public Hello(String kvRole, String mode, Integer dpRank, Integer tpRank, String connectorRole) {
            this(kvRole, mode, dpRank, tpRank, connectorRole, null, null, null);
        }

        @Override public BridgeHook hook() { return BridgeHook.HELLO; }
    }

    /** {@code ping}. */
    record Ping() implements HookCall {
        @Override public BridgeHook hook() { return BridgeHook.PING; }
    }
}
