package io.kvledger.zmq;

import io.kvledger.core.event.NodeEvent;
import io.kvledger.wire.HandshakeRequest;
import java.util.Objects;

/**
 * What happens in the adapters that the core's {@code NodeEvent}s do not cover: failures of the
 * adapters' own sends and heartbeats, and what the handshake server served or refused. Each
 * carries the monotonic time it happened at.
 *
 * <p>A failed send also belongs in the node's journal: {@link SendFailed#toNodeEvent()} gives the
 * core's {@code NodeEvent.NotifySendFailed}, which the reducer records as an anomaly of the
 * request owning the transfer id and the hang report names ("…, which never left D0"). The other
 * events are for logs and metrics.
 */
public sealed interface AdapterEvent {

    long atNs();

    /**
     * A notify frame could not be handed to ZMQ: the effect held a value Python could not pack,
     * the address did not resolve or the port was out of range, or the publisher's queue was full.
     *
     * @param frame the encoded frame, or an empty array when encoding itself failed
     */
    record SendFailed(long atNs, String endpoint, String messageType, String transferId, String reason, byte[] frame)
            implements AdapterEvent {
        public SendFailed {
            Objects.requireNonNull(reason, "reason");
        }

        /** The same failure as the node event the reducer and the journal take (time unchanged). */
        public NodeEvent.NotifySendFailed toNodeEvent() {
            return new NodeEvent.NotifySendFailed(atNs, endpoint, messageType, transferId, reason,
                    frame == null ? new byte[0] : frame.clone());
        }
    }

    /** A notify frame handed to ZMQ (reported only when the publisher is configured to). */
    record FrameSent(long atNs, String endpoint, String messageType, String transferId, byte[] frame) implements AdapterEvent {}

    /** The handshake server answered (or, for {@code pop_done_recv}, ignored) a request. */
    record HandshakeServed(long atNs, String endpoint, byte[] peerIdentity, HandshakeRequest request) implements AdapterEvent {}

    /**
     * The handshake server received something that is not a handshake request. The Python
     * server raises {@code HandshakeError} on it, which ends its handshake thread.
     */
    record HandshakeRequestRejected(long atNs, String endpoint, byte[] peerIdentity, String reason, byte[] frame,
                                    boolean wouldKillPythonHandshakeThread) implements AdapterEvent {}

    /** A registration heartbeat to the proxy could not be sent. */
    record HeartbeatFailed(long atNs, String endpoint, String reason) implements AdapterEvent {}
}
