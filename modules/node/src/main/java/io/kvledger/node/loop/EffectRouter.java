package io.kvledger.node.loop;

import io.kvledger.core.effect.Effect;

/**
 * Executes the I/O commands of an applied input: each goes to the publisher that owns its
 * sub-family ({@link Effect.Notify} the notify publisher, {@link Effect.Post} the transfer
 * publisher, {@link Effect.StartHandshake} the data plane). The other families have other owners
 * (the loop answers hook replies to the hook's caller itself and hands decision records to its
 * listeners). Called on the loop thread: it must not block (publishers queue their work on their
 * own threads).
 */
@FunctionalInterface
public interface EffectRouter {

    void execute(Effect.IoCommand command);

    /** A router that executes nothing (replay-like runs, benchmarks of the loop alone, observing nodes). */
    static EffectRouter none() {
        return c -> {};
    }
}
