package io.kvledger.wire;

import io.kvledger.core.event.NodeEvent;
import java.util.Arrays;

/**
 * Turns received notify frames into the core's {@link NodeEvent}s: {@code RemoteBlocksReceived},
 * {@code WriteDoneReceived}, {@code ReleaseReceived}, {@code RawCompletionReceived}, or
 * {@code FrameRejected} carrying the reason text ({@code "REASON: detail"}), the frame's bytes
 * (the first {@link WireLimits#keptRejectedBytes()} of an over-size frame) and whether the same
 * frame would have killed the Python listener thread.
 *
 * <p>Wraps a {@link NotifyDecoder}: reusable and not thread-safe.
 */
public final class NotifyEvents {

    private final NotifyDecoder decoder;

    public NotifyEvents() {
        this(WireLimits.DEFAULT);
    }

    public NotifyEvents(WireLimits limits) {
        this.decoder = new NotifyDecoder(limits);
    }

    NotifyDecoder decoder() {
        return decoder;
    }

    /** The event for one received frame, stamped {@code atNs}. Never throws. */
    public NodeEvent toEvent(byte[] frame, long atNs) {
        return toEvent(decoder.decode(frame), frame, atNs);
    }

    /** The event for an already decoded frame. */
    NodeEvent toEvent(DecodeResult<NotifyMessage> result, byte[] frame, long atNs) {
        return switch (result) {
            case DecodeResult.Ok<NotifyMessage> ok -> of(ok.value(), atNs);
            case DecodeResult.Rejected<NotifyMessage> r -> rejected(r.rejection(), frame, atNs, decoder.limits());
        };
    }

    /** The event a decoded message stands for. */
    static NodeEvent of(NotifyMessage m, long atNs) {
        return switch (m) {
            case NotifyMessage.RemoteBlocks rb -> new NodeEvent.RemoteBlocksReceived(atNs, rb.reqId(), rb.transferId(),
                    rb.blockNotifyList(), rb.decodeRank(), rb.legacyWithoutType());
            case NotifyMessage.WriteDone wd -> new NodeEvent.WriteDoneReceived(atNs, wd.transferId());
            case NotifyMessage.Release r -> new NodeEvent.ReleaseReceived(atNs, r.transferId(), r.consumerTpSize());
            case NotifyMessage.RawCompletion c -> new NodeEvent.RawCompletionReceived(atNs, c.completionId());
        };
    }

    /** A {@code FrameRejected} for a rejection; frames within the limit are kept whole (copied). */
    static NodeEvent.FrameRejected rejected(Rejection r, byte[] frame, long atNs, WireLimits limits) {
        byte[] f = frame == null ? new byte[0] : frame;
        byte[] kept = f.length > limits.maxFrameBytes() ? Arrays.copyOf(f, Math.min(f.length, limits.keptRejectedBytes())) : f.clone();
        String text = kept.length < f.length
                ? r.text() + " (first " + kept.length + " of " + f.length + " bytes kept)"
                : r.text();
        return new NodeEvent.FrameRejected(atNs, text, kept, r.wouldKillPythonListener());
    }
}
