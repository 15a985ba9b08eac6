package io.kvledger.zmq;

import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/** Offers an event to a sink until it is taken or the owner is closing: spin briefly, then park. */
final class Backoff {

    private Backoff() {}

    /** @return {@code true} when the sink took the event, {@code false} when abandoned because closing */
    static <T> boolean offer(EventSink<? super T> sink, T event, BooleanSupplier closing) {
        for (int attempt = 0; ; attempt++) {
            if (sink.offer(event)) {
                return true;
            }
            if (closing.getAsBoolean()) {
                return false;
            }
            if (attempt < 64) {
                Thread.onSpinWait();
            } else {
                LockSupport.parkNanos(attempt < 1024 ? 20_000 : 1_000_000);
            }
        }
    }
}
