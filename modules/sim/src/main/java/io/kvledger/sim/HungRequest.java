package io.kvledger.sim;

import io.kvledger.core.model.RequestPhase;

/** A request a node's reducer still held in a non-terminal phase when the run stopped. */
public record HungRequest(String node, String requestId, RequestPhase phase) {
}
