package io.kvledger.zmq;

import io.kvledger.core.event.NodeEvent;
import java.util.List;
import java.util.Objects;

/**
 * One message a notify listener received, with the event it became. Everything needed to
 * journal the frame (decoded or rejected) and to replay it.
 *
 * @param seq      the listener's count of messages before this one (from 0, no gaps)
 * @param atNs     when it was received (monotonic); equal to {@code event.atNs()}
 * @param endpoint the listener's bound endpoint
 * @param identity the ROUTER identity of the sending DEALER
 * @param frames   the frames after the identity: exactly one for every well-formed DEALER send;
 *                 for a multi-part message, the leading bytes kept by its rejection (at most
 *                 {@code WireLimits.keptRejectedBytes()} in total)
 * @param event    {@code RemoteBlocksReceived}, {@code WriteDoneReceived}, {@code ReleaseReceived},
 *                 {@code RawCompletionReceived} or {@code FrameRejected}
 */
public record InboundFrame(long seq, long atNs, String endpoint, byte[] identity, List<byte[]> frames, NodeEvent event) {

    public InboundFrame {
        Objects.requireNonNull(endpoint, "endpoint");
        Objects.requireNonNull(identity, "identity");
        frames = List.copyOf(frames);
        Objects.requireNonNull(event, "event");
    }

    /** The single payload frame (the first, when a peer sent several). */
    public byte[] payload() {
        return frames.isEmpty() ? new byte[0] : frames.get(0);
    }

    public boolean rejected() {
        return event instanceof NodeEvent.FrameRejected;
    }
}
