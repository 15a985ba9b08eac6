package io.kvledger.core.node;

/**
 * {@link NodeState#nextDeadlineAfter} as it was before the scheduler's tables of deadlines kept
 * their earliest one: a walk over every deadline the state holds. The property tests compare the
 * two after every event (one deadline's tick and the overflow-safe sum are NodeState's own).
 */
public final class DeadlineWalk {

    private DeadlineWalk() {}

    public static long nextDeadlineAfter(NodeState s, long afterNs) {
        long best = Long.MAX_VALUE;
        for (var t : s.worker.deferredTasks()) {
            best = NodeState.earliest(best, afterNs, NodeState.sum(t.enqueueNs(), s.config.deferTimeoutNs()));
        }
        for (var w : s.worker.writes().values()) {
            if (w.waitStartNs >= 0 && !w.completionNotified) {
                best = NodeState.earliest(best, afterNs, NodeState.sum(w.waitStartNs, s.config.transferTimeoutNs()));
            }
        }
        for (var r : s.worker.recvingTransfers().values()) {
            best = NodeState.earliest(best, afterNs, NodeState.sum(r.startNs(), s.config.recvAbortTimeoutNs()));
        }
        for (var a : s.worker.pendingUnmappedAcks()) {
            best = NodeState.earliest(best, afterNs, NodeState.sum(a.firstSeenNs, s.config.unmappedAckTtlNs()));
        }
        for (NodeState.Deferral d : s.scheduler.deferredSendDeadlines().asMap().values()) {
            best = NodeState.earliest(best, afterNs, d.deadlineNs());
        }
        for (long deadline : s.scheduler.pendingSentAcks().asMap().values()) {
            best = NodeState.earliest(best, afterNs, deadline);
        }
        return best;
    }
}
