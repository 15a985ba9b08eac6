package io.kvledger.wire;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * What a handshake initiator (a DEALER) sends a handshake ROUTER (protocol spec 3.2): a single
 * frame of raw bytes, not msgpack.
 */
public enum HandshakeRequest {
    /** {@code get_meta_msg}: answered with two 2-frame replies, the metadata and the layer map. */
    GET_META_MSG("get_meta_msg"),
    /** {@code pop_done_recv}: legacy; the Python server reads one more message and ignores it. */
    POP_DONE_RECV("pop_done_recv");

    private final byte[] bytes;

    HandshakeRequest(String text) {
        this.bytes = text.getBytes(StandardCharsets.US_ASCII);
    }

    /** The request's bytes (a fresh copy). */
    public byte[] bytes() {
        return bytes.clone();
    }

    /**
     * Recognises a request frame. Anything else is {@link RejectReason#UNKNOWN_TYPE}, and would
     * make the Python handshake server raise {@code HandshakeError}, ending its thread. Never throws.
     */
    public static DecodeResult<HandshakeRequest> decode(byte[] frame) {
        if (frame == null || frame.length == 0) {
            return new DecodeResult.Rejected<>(new Rejection(RejectReason.EMPTY_FRAME, "zero-length handshake request", true));
        }
        for (HandshakeRequest r : values()) {
            if (Arrays.equals(r.bytes, frame)) {
                return new DecodeResult.Ok<>(r);
            }
        }
        String shown = frame.length <= 32 ? new String(frame, StandardCharsets.ISO_8859_1) : frame.length + " bytes";
        return new DecodeResult.Rejected<>(new Rejection(RejectReason.UNKNOWN_TYPE,
                "handshake request is neither get_meta_msg nor pop_done_recv: " + shown.replaceAll("[^\\x20-\\x7e]", "?"), true));
    }
}
