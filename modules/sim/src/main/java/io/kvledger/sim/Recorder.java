package io.kvledger.sim;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import java.util.List;

/**
 * Listens to every node's reducer during a run, so that a journal can persist what the simulator
 * fed it. Called on the simulation's only thread, synchronously, in the order the events were
 * applied; an implementation must not keep the effect lists' caller from continuing (it may copy
 * them, they are not modified afterwards).
 */
@FunctionalInterface
public interface Recorder {

    /** Records nothing. */
    Recorder NONE = (node, seq, event, effects) -> { };

    /**
     * A node was created, before any of its events.
     *
     * @param startupEffects what {@code NodeReducer.startupChecks} found (anomalies only)
     */
    default void nodeStarted(String node, NodeConfig config, List<Effect> startupEffects) {
    }

    /**
     * One event was applied to a node's reducer.
     *
     * @param seq     the node's event sequence number, from 0
     * @param effects the transition's effects, in order
     */
    void applied(String node, long seq, NodeEvent event, List<Effect> effects);
}
