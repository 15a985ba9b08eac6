package io.kvledger.node.engine;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import java.util.List;

/**
 * Where an engine's hook calls go: the event is journaled and applied by the node loop, and the
 * call returns the reducer's effects for it (the engine reads its hook reply among them).
 */
public interface HookPort {

    /**
     * @throws HookCallException when the node did not answer (its inbox stayed full, it stopped)
     */
    List<Effect> call(NodeEvent event);

    /**
     * Whether the worker has no READ load and no handshake in flight: the forward waits for this
     * (the Python worker busy-waits for handshakes in {@code start_load_kv} and
     * {@code save_kv_layer}, and holds each layer for its reads). {@code true} when the port
     * cannot tell. A rank that awaits the TP vote and holds its reads for it counts as settled once
     * its handshakes are: the vote comes next.
     */
    default boolean forwardSettled() {
        return true;
    }

    /**
     * The worker's handshake keys ({@code engine_dpN}) whose last handshake failed, for the TP vote
     * of {@code start_load_kv}; empty when the port cannot tell.
     */
    default List<String> failedHandshakes() {
        return List.of();
    }

    /** A hook call that got no answer. */
    final class HookCallException extends RuntimeException {
        public HookCallException(String message, Throwable cause) {
            super(message, cause);
        }
    }
}
