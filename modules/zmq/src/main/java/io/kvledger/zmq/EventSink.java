package io.kvledger.zmq;

/**
 * Where an adapter hands the events it observes. Called only from the adapter's own threads.
 *
 * <p>{@link #offer} must not block for long: return {@code false} when there is no room, and
 * the adapter will back off and offer the same event again (until it is closed). A sink shared
 * by several adapters must be thread-safe; events from one adapter arrive in order.
 *
 * @param <T> the event type
 */
@FunctionalInterface
public interface EventSink<T> {

    /** Takes the event if there is room; {@code false} asks the caller to retry later. */
    boolean offer(T event);

    /** A sink that takes and forgets everything. */
    static <T> EventSink<T> discarding() {
        return e -> true;
    }
}
