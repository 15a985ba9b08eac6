package io.kvledger.sim;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import java.util.List;

/** One entry of a node's log: the {@code seq}-th event its reducer applied and what it decided. */
record AppliedEvent(long seq, NodeEvent event, List<Effect> effects) {

    public AppliedEvent {
        effects = List.copyOf(effects);
    }
}
