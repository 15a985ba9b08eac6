package io.kvledger.sim;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.model.RequestPhase;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * One node at the end of a run.
 *
 * @param name             {@code P0}, {@code P1}, ... for prefill, {@code D0}, ... for decode
 * @param config           the node's configuration
 * @param notifyPort       the port its notify listener binds ({@code notify_port + dp_local + tp})
 * @param handshakePort    the port its handshake listener binds
 * @param phaseCounts      requests per phase, over every request the node's reducer saw
 *                         (phases with no request are absent), in phase order
 * @param terminal         requests in a terminal phase
 * @param hung             requests in a non-terminal phase
 * @param hungRequests     those requests, in the order the node saw them
 * @param stateHash        {@code NodeState.stateHash()} at the end
 * @param eventsApplied    events applied to its reducer
 * @param blocksInUse      KV blocks the engine still held at the end
 * @param retainedRequests requests the simulated engine still kept in memory at the end (a done
 *                         request is dropped; only its counts stay)
 * @param peakRetained     the most requests it kept at once during the run
 * @param log              every (event, effects), in order; empty unless {@link SimOptions#keepLog()}
 */
public record NodeReport(
        String name,
        NodeConfig config,
        int notifyPort,
        int handshakePort,
        Map<RequestPhase, Integer> phaseCounts,
        int terminal,
        int hung,
        List<HungRequest> hungRequests,
        long stateHash,
        long eventsApplied,
        int blocksInUse,
        int retainedRequests,
        int peakRetained,
        List<AppliedEvent> log) {

    public NodeReport {
        phaseCounts = Collections.unmodifiableMap(phaseCounts.isEmpty() ? new EnumMap<>(RequestPhase.class) : new EnumMap<>(phaseCounts));
        hungRequests = List.copyOf(hungRequests);
        log = List.copyOf(log);
    }

    /** Requests the node's reducer saw. */
    public int requests() {
        return terminal + hung;
    }
}
