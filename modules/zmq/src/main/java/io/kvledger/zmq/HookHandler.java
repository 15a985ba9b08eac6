package io.kvledger.zmq;

import io.kvledger.wire.bridge.BridgeDecoded;

/**
 * Receives the engine hook calls of an {@link EngineBridgeServer}, in the order the server reads
 * them, on the server's socket thread.
 *
 * <p>{@link #onHook} must not block: hand the call on (typically: offer
 * {@code call.event()} to the node loop's bounded inbox, with the call attached) and return. Answer
 * each call exactly once, later, from any thread, with {@link BridgeCall#reply} or
 * {@link BridgeCall#fail} (when the inbox is full, {@code fail("node busy")} at once). An
 * exception thrown here answers the call with {@code ok: False} and is counted; it does not end
 * the server.
 */
@FunctionalInterface
public interface HookHandler {

    void onHook(BridgeCall call);

    /**
     * A message that was not a valid request (already answered {@code ok: False}), for a journal
     * or a log; called on the socket thread, must not block. Does nothing by default.
     *
     * @param atNs      when it was read (the server's clock)
     * @param frame     the request frame (for a message with the wrong number of frames, its last
     *                  frame, or an empty array)
     * @param rejection why, with the request's id and hook when they could be read
     */
    default void onRejected(long atNs, byte[] frame, BridgeDecoded.Rejected rejection) {}

    /**
     * A {@code hello}, before the server checks it against {@code node}: returns who the node is
     * now (a node that takes its behaviour profile from the engine's {@code hello} may change its
     * profile here, once, before it has applied anything). Called on the socket thread; may wait a
     * bounded time for the node. Returns {@code node} by default.
     */
    default io.kvledger.wire.bridge.BridgeNodeInfo onHello(io.kvledger.wire.bridge.HookCall.Hello hello,
                                                          io.kvledger.wire.bridge.BridgeNodeInfo node) {
        return node;
    }
}
