package io.kvledger.wire;

import io.kvledger.core.effect.Effect;

/**
 * Encodes the core's notify effects ({@link Effect.Notify}: {@code SendRemoteBlocks}, {@code SendRelease},
 * {@code SendWriteDone}, {@code SendWriteFailed}) as the frames the Python peers send for them,
 * with Python's key order (see {@link NotifyEncoder}). Address and port are taken from the effect
 * as is: the reducer already applied the port form each message type uses (protocol spec 2.1).
 *
 * <p>Reusable and not thread-safe.
 */
public final class EffectFrames {

    private final NotifyEncoder encoder = new NotifyEncoder();

    /**
     * The frame for a notify effect.
     *
     * @throws WireEncodingException when a value in the effect cannot be packed (Python would
     *                               raise too)
     */
    public OutboundFrame encode(Effect.Notify e) {
        return switch (e) {
            case Effect.SendRemoteBlocks s -> new OutboundFrame(s.host(), s.port(), messageType(s), transferId(s),
                    encoder.remoteBlocks(s.reqId(), s.transferId(), s.blockNotifyList(), s.decodeRank()));
            case Effect.SendRelease s -> new OutboundFrame(s.host(), s.port(), messageType(s), transferId(s),
                    encoder.release(s.transferId(), s.consumerTpSize()));
            case Effect.SendWriteDone s -> new OutboundFrame(s.host(), s.port(), messageType(s), transferId(s),
                    encoder.writeDone(s.transferId()));
            case Effect.SendWriteFailed s -> new OutboundFrame(s.host(), s.port(), messageType(s), transferId(s),
                    encoder.writeFailed(s.transferId(), s.reason()));
        };
    }

    /** The frame's message type: {@code remote_blocks}, {@code release}, {@code write_done} or {@code write_failed}. */
    public static String messageType(Effect.Notify e) {
        return switch (e) {
            case Effect.SendRemoteBlocks _ -> "remote_blocks";
            case Effect.SendRelease _ -> "release";
            case Effect.SendWriteDone _ -> "write_done";
            case Effect.SendWriteFailed _ -> "write_failed";
        };
    }

    /** The frame's transfer id as text, for events and logs ({@code String.valueOf} of the Python value). */
    public static String transferId(Effect.Notify e) {
        return switch (e) {
            case Effect.SendRemoteBlocks s -> s.transferId().toString();
            case Effect.SendRelease s -> s.transferId().toString();
            case Effect.SendWriteDone s -> s.transferId();
            case Effect.SendWriteFailed s -> s.transferId();
        };
    }
}
