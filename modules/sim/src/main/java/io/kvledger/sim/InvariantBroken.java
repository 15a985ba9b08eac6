package io.kvledger.sim;

import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.node.Invariants;
import java.util.List;

/**
 * A simulation run failed: after an event, a node's state broke one of the reducer's
 * {@link Invariants} (checked after every event of every node). Names the seed to rerun it from,
 * the node, the event's sequence number on that node, the event and the violations.
 */
final class InvariantBroken extends IllegalStateException {

    private final transient List<Invariants.Violation> violations;

    InvariantBroken(long seed, String node, long seq, NodeEvent event, List<Invariants.Violation> violations) {
        super("seed " + seed + ": node " + node + " broke an invariant after event #" + seq + " (" + event + "): "
                + violations);
        this.violations = List.copyOf(violations);
    }

    /** What was broken, in check order. */
    List<Invariants.Violation> violations() {
        return violations;
    }
}
