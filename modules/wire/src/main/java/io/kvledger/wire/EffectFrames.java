package io.kvledger.wire;

import io.kvledger.core.effect.Effect;

/**
 * Encodes the core's send effects ({@code SendRemoteBlocks}, {@code SendRelease},
 * {@code SendWriteDone}, {@code SendWriteFailed}) as the frames the Python peers send for them,
 * with Python's key order (see {@link NotifyEncoder}). Address and port are taken from the effect
 * as is: the reducer already applied the port form each message type uses (protocol spec 2.1).
 *
 * <p>Reusable and not thread-safe.
 */
public final class EffectFrames {

    private final NotifyEncoder encoder = new NotifyEncoder();

    /** Whether the effect is one this class encodes. */
    public static boolean isSend(Effect e) {
        return e instanceof Effect.SendRemoteBlocks || e instanceof Effect.SendRelease
                || e instanceof Effect.SendWriteDone || e instanceof Effect.SendWriteFailed;
    }

    /**
     * The frame for a send effect, or {@code null} for any other effect.
     *
     * @throws WireEncodingException when a value in the effect cannot be packed (Python would
     *                               raise too)
     */
    public OutboundFrame encode(Effect e) {
        return switch (e) {
            case Effect.SendRemoteBlocks s -> new OutboundFrame(s.host(), s.port(), "remote_blocks", String.valueOf(s.transferId()),
                    encoder.remoteBlocks(s.reqId(), s.transferId(), s.blockNotifyList(), s.decodeRank()));
            case Effect.SendRelease s -> new OutboundFrame(s.host(), s.port(), "release", String.valueOf(s.transferId()),
                    encoder.release(s.transferId(), s.consumerTpSize()));
            case Effect.SendWriteDone s -> new OutboundFrame(s.host(), s.port(), "write_done", s.transferId(),
                    encoder.writeDone(s.transferId()));
            case Effect.SendWriteFailed s -> new OutboundFrame(s.host(), s.port(), "write_failed", s.transferId(),
                    encoder.writeFailed(s.transferId(), s.reason()));
            case Effect.HookReply _, Effect.StartHandshake _, Effect.PostWrite _, Effect.PostRead _,
                    Effect.Decision _ -> null;
        };
    }
}
