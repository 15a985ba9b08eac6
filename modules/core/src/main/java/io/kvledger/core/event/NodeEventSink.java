package io.kvledger.core.event;

/**
 * The one shape in which adapters hand events to a node's loop: the loop's bounded inbox.
 *
 * <p>{@link #offer} never blocks: it takes the event and returns {@code true}, or refuses it
 * (inbox full, loop stopping) and returns {@code false}. What an adapter does on refusal is its
 * policy, and it must be visible: the adapters of modules/zmq and modules/rdma retry on their own
 * threads with a bounded backoff (so pressure travels back to the socket or engine), then drop the
 * event and count it in their {@code refused()} counter; they never wait forever and never drop
 * silently.
 *
 * <p>Called from adapter threads: an implementation shared by several adapters must be
 * thread-safe. Events from one adapter thread arrive in the order it offered them.
 */
@FunctionalInterface
public interface NodeEventSink {

    /** Takes {@code event} if there is room; {@code false} means refused (not taken). Never blocks. */
    boolean offer(NodeEvent event);
}
