package io.kvledger.core.node;

/**
 * {@link NodeState#nextDeadlineAfter} as it was before the scheduler's tables of deadlines kept
 * their earliest one: a walk over every deadline the state holds. The property tests compare the
 * two after every event.
 */
public final class DeadlineWalk {

    private DeadlineWalk() {}

    public static long nextDeadlineAfter(NodeState s, long afterNs) {
        long best = Long.MAX_VALUE;
        for (var t : s.worker.deferredTasks()) {
            best = earliest(best, afterNs, sum(t.enqueueNs(), s.config.deferTimeoutNs()));
        }
        for (var w : s.worker.writes().values()) {
            if (w.waitStartNs >= 0 && !w.completionNotified) {
                best = earliest(best, afterNs, sum(w.waitStartNs, s.config.transferTimeoutNs()));
            }
        }
        for (var r : s.worker.recvingTransfers().values()) {
            best = earliest(best, afterNs, sum(r.startNs(), s.config.recvAbortTimeoutNs()));
        }
        for (var a : s.worker.pendingUnmappedAcks()) {
            best = earliest(best, afterNs, sum(a.firstSeenNs, s.config.unmappedAckTtlNs()));
        }
        for (NodeState.Deferral d : s.scheduler.deferredSendDeadlines().asMap().values()) {
            best = earliest(best, afterNs, d.deadlineNs());
        }
        for (long deadline : s.scheduler.pendingSentAcks().asMap().values()) {
            best = earliest(best, afterNs, deadline);
        }
        return best;
    }

    private static long earliest(long best, long afterNs, long deadlineNs) {
        long fireAt = deadlineNs == Long.MAX_VALUE ? Long.MAX_VALUE : deadlineNs + 1;
        return fireAt > afterNs && fireAt < best ? fireAt : best;
    }

    private static long sum(long a, long b) {
        long s = a + b;
        return ((a ^ s) & (b ^ s)) < 0 ? Long.MAX_VALUE : s;
    }
}
