package io.kvledger.node;

import io.kvledger.core.effect.Effect;

/**
 * Hands one effect to the publisher that executes it. Called on the loop thread: it must not
 * block (publishers queue their work on their own threads).
 */
@FunctionalInterface
public interface EffectRouter {

    void route(Effect effect);

    /** A router that executes nothing (replay-like runs, benchmarks of the loop alone). */
    static EffectRouter none() {
        return e -> {};
    }
}
