package io.kvledger.node.engine;

import io.kvledger.core.model.FinishStatus;
import java.util.Map;

/**
 * How a request ended in the simulated engine: what the OpenAI-style response of a vLLM engine
 * would carry, plus what the data plane verified.
 *
 * @param kvTransferParams the {@code kv_transfer_params} {@code request_finished} returned
 *                         ({@code null} when none)
 * @param verifiedBytes    KV bytes checked against the prefill's pattern after the transfer
 *                         (decode legs; 0 elsewhere)
 * @param mismatch         where the received KV first differed from the prefill's, or {@code null}
 * @param error            why the request failed inside the engine, or {@code null}
 */
public record Completion(String requestId, FinishStatus finishStatus, int promptTokens, int outputTokens,
                         Map<String, Object> kvTransferParams, long verifiedBytes, String mismatch,
                         boolean loadFailed, String error) {}
