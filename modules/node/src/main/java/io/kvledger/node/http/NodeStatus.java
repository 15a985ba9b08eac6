package io.kvledger.node.http;

import io.kvledger.node.NodeService;
import io.kvledger.node.engine.SimulatedEngine;
import java.util.LinkedHashMap;
import java.util.Map;

/** The node's counters as a JSON-ready map ({@code GET /v1/status}). */
public final class NodeStatus {

    private NodeStatus() {}

    public static Map<String, Object> of(NodeService node) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("node", node.options().nodeId());
        m.put("role", node.options().config().role().name().toLowerCase());
        m.put("mode", node.options().config().mode().name().toLowerCase());
        m.put("running", node.isRunning());
        m.put("events_applied", node.loop().applied());
        m.put("ticks", node.loop().ticks());
        m.put("last_seq", node.loop().lastSeq());
        m.put("journal_errors", node.loop().journalErrors());
        m.put("loop_errors", node.loop().loopErrors());
        m.put("inbox_depth", node.inbox().depth());
        m.put("inbox_capacity", node.inbox().capacity());
        m.put("inbox_refused", node.inbox().refused());
        m.put("events_lost", node.eventsLost());
        m.put("transfer_engine", node.dataPlane().engineKind());
        m.put("sessions_bound", node.dataPlane().sessionsBound());
        m.put("handshakes_failed", node.dataPlane().handshakesFailed());
        m.put("transfers_pending", node.dataPlane().pendingTransfers());
        m.put("notifies_sent", node.publisher().sent());
        m.put("notifies_failed", node.publisher().failed());
        m.put("frames_received", node.listener() == null ? 0L : node.listener().received());
        m.put("frames_rejected", node.listener() == null ? 0L : node.listener().rejected());
        if (node.shadow() != null) {
            m.put("shadow_inputs", node.shadow().observed());
            m.put("shadow_divergences", node.shadow().divergences());
            m.put("shadow_lines_received", node.shadow().linesReceived());
            m.put("shadow_lines_lost", node.shadow().linesLost());
            m.put("shadow_messages", node.shadowServer() == null ? 0L : node.shadowServer().messages());
        }
        var bridge = node.bridge();
        if (bridge != null) {
            // the engine bridge: every call the node applied is answered while its caller is connected;
            // what could not be delivered (the caller had gone) is counted here
            Map<String, Object> bm = new LinkedHashMap<>();
            bm.put("calls_received", bridge.received());
            bm.put("calls_handed_off", bridge.handedOff());
            bm.put("calls_busy", bridge.busy());
            bm.put("calls_timed_out", bridge.timedOut());
            bm.put("calls_rejected", bridge.rejected());
            bm.put("calls_in_flight", (long) bridge.inFlight());
            bm.put("replies_held", (long) bridge.heldReplies());
            bm.put("replies_undeliverable", bridge.undeliverable());
            bm.put("replies_undeliverable_applied", bridge.undeliverableApplied());
            m.put("bridge", bm);
        }
        m.put("faults_injected", node.faultsInjected());
        if (node.worker() != null) {
            Map<String, Object> wm = new LinkedHashMap<>();
            wm.put("tp_rank", (long) node.options().config().tpRank());
            wm.put("verified_bytes", node.worker().verifiedBytes());
            wm.put("verified_requests", node.worker().verifiedRequests());
            wm.put("corrupt_requests", node.worker().corruptRequests());
            m.put("worker", wm);
        }
        SimulatedEngine e = node.engine();
        if (e != null) {
            Map<String, Object> em = new LinkedHashMap<>();
            em.put("submitted", e.submitted());
            em.put("completed", e.completed());
            em.put("failed", e.failed());
            em.put("verified_bytes", e.verifiedBytes());
            em.put("corrupt_requests", e.corruptRequests());
            em.put("steps", e.steps());
            em.put("free_blocks", e.freeBlocks());
            em.put("held_requests", e.heldRequests());
            m.put("engine", em);
        }
        return m;
    }
}
