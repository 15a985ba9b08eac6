package io.kvledger.wire;

/** Checks shared by the decoders. */
final class Frames {

    private Frames() {}

    static void checkSize(byte[] frame, WireLimits limits) {
        if (frame == null || frame.length == 0) {
            throw new WireReject(RejectReason.EMPTY_FRAME, "zero-length frame");
        }
        if (frame.length > limits.maxFrameBytes()) {
            throw new WireReject(RejectReason.FRAME_TOO_LARGE, "frame of " + frame.length + " bytes exceeds the limit of "
                    + limits.maxFrameBytes() + " bytes");
        }
    }

    static void checkEnd(MsgpackReader reader) {
        if (reader.remaining() > 0) {
            throw new WireReject(RejectReason.TRAILING_BYTES, reader.remaining() + " bytes follow the map at offset " + reader.position());
        }
    }
}
