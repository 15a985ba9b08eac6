package io.kvledger.node.loop;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One immutable snapshot of a live node's counters, which its loop publishes after each batch of
 * items (and on demand, {@link NodeLoop#freshStatus}); the HTTP server ({@code GET /v1/status}),
 * the metrics and the CLI's status file read it instead of reaching into the node's parts.
 *
 * @param running        whether the loop ran when the snapshot was taken
 * @param lastEventAtNs  the time of the last applied event (node time base; {@code Long.MIN_VALUE}
 *                       before the first)
 * @param shadow         a shadow node's comparisons, or {@code null}
 * @param bridge         the engine bridge's counts, or {@code null} when the engine is not bridged
 * @param worker         a {@code sim-worker} node's model runner, or {@code null}
 * @param engine         the built-in simulated engine, or {@code null}
 */
public record NodeStatus(
        String node, String role, String mode, boolean running,
        long eventsApplied, long ticks, long lastSeq, long journalErrors, long loopErrors, long lastEventAtNs,
        int inboxDepth, int inboxCapacity, long inboxRefused, long eventsLost,
        String transferEngine, long sessionsBound, long handshakesFailed, int transfersPending,
        long notifiesSent, long notifiesFailed, long framesReceived, long framesRejected, long faultsInjected,
        Shadow shadow, Bridge bridge, Worker worker, Engine engine) {

    /**
     * A shadow node's counts.
     *
     * @param divergencesByHook divergences of each compared hook, in the monitor's hook order
     */
    public record Shadow(long inputs, long divergences, long compared, long linesReceived, long linesLost,
                         long messages, Map<String, Long> divergencesByHook) {
        public Shadow {
            divergencesByHook = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(divergencesByHook));
        }
    }

    /**
     * The engine bridge's counts: every call the node applied is answered while its caller is
     * connected; what could not be delivered (the caller had gone) is counted here.
     */
    public record Bridge(long callsReceived, long callsHandedOff, long callsBusy, long callsTimedOut,
                         long callsRejected, int callsInFlight, int repliesHeld, long repliesUndeliverable,
                         long repliesUndeliverableApplied) {}

    /** A TP rank's model runner ({@code sim-worker}). */
    public record Worker(int tpRank, long verifiedBytes, long verifiedRequests, long corruptRequests) {}

    /** The built-in simulated engine. */
    public record Engine(long submitted, long completed, long failed, long verifiedBytes, long corruptRequests,
                         long steps, int freeBlocks, int heldRequests) {}

    /** The same snapshot, saying the loop no longer runs. */
    NodeStatus notRunning() {
        return new NodeStatus(node, role, mode, false, eventsApplied, ticks, lastSeq, journalErrors, loopErrors,
                lastEventAtNs, inboxDepth, inboxCapacity, inboxRefused, eventsLost, transferEngine, sessionsBound,
                handshakesFailed, transfersPending, notifiesSent, notifiesFailed, framesReceived, framesRejected,
                faultsInjected, shadow, bridge, worker, engine);
    }

    /** The JSON object of {@code GET /v1/status} (docs/http-api.md), keys in its order; a fresh, mutable map. */
    public Map<String, Object> toJson() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("node", node);
        m.put("role", role);
        m.put("mode", mode);
        m.put("running", running);
        m.put("events_applied", eventsApplied);
        m.put("ticks", ticks);
        m.put("last_seq", lastSeq);
        m.put("journal_errors", journalErrors);
        m.put("loop_errors", loopErrors);
        m.put("inbox_depth", inboxDepth);
        m.put("inbox_capacity", inboxCapacity);
        m.put("inbox_refused", inboxRefused);
        m.put("events_lost", eventsLost);
        m.put("transfer_engine", transferEngine);
        m.put("sessions_bound", sessionsBound);
        m.put("handshakes_failed", handshakesFailed);
        m.put("transfers_pending", transfersPending);
        m.put("notifies_sent", notifiesSent);
        m.put("notifies_failed", notifiesFailed);
        m.put("frames_received", framesReceived);
        m.put("frames_rejected", framesRejected);
        if (shadow != null) {
            m.put("shadow_inputs", shadow.inputs());
            m.put("shadow_divergences", shadow.divergences());
            m.put("shadow_lines_received", shadow.linesReceived());
            m.put("shadow_lines_lost", shadow.linesLost());
            m.put("shadow_messages", shadow.messages());
        }
        if (bridge != null) {
            Map<String, Object> bm = new LinkedHashMap<>();
            bm.put("calls_received", bridge.callsReceived());
            bm.put("calls_handed_off", bridge.callsHandedOff());
            bm.put("calls_busy", bridge.callsBusy());
            bm.put("calls_timed_out", bridge.callsTimedOut());
            bm.put("calls_rejected", bridge.callsRejected());
            bm.put("calls_in_flight", (long) bridge.callsInFlight());
            bm.put("replies_held", (long) bridge.repliesHeld());
            bm.put("replies_undeliverable", bridge.repliesUndeliverable());
            bm.put("replies_undeliverable_applied", bridge.repliesUndeliverableApplied());
            m.put("bridge", bm);
        }
        m.put("faults_injected", faultsInjected);
        if (worker != null) {
            Map<String, Object> wm = new LinkedHashMap<>();
            wm.put("tp_rank", (long) worker.tpRank());
            wm.put("verified_bytes", worker.verifiedBytes());
            wm.put("verified_requests", worker.verifiedRequests());
            wm.put("corrupt_requests", worker.corruptRequests());
            m.put("worker", wm);
        }
        if (engine != null) {
            Map<String, Object> em = new LinkedHashMap<>();
            em.put("submitted", engine.submitted());
            em.put("completed", engine.completed());
            em.put("failed", engine.failed());
            em.put("verified_bytes", engine.verifiedBytes());
            em.put("corrupt_requests", engine.corruptRequests());
            em.put("steps", engine.steps());
            em.put("free_blocks", engine.freeBlocks());
            em.put("held_requests", engine.heldRequests());
            m.put("engine", em);
        }
        return m;
    }
}
