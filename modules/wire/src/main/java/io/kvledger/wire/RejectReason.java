package io.kvledger.wire;

/**
 * Why a frame was rejected. The numeric {@link #code()} is permanent (journals and the CLI keep
 * it); names may be read by people, codes by programs. New reasons get new codes.
 */
public enum RejectReason {
    /** A zero-length frame. */
    EMPTY_FRAME(1),
    /** Longer than {@link WireLimits#maxFrameBytes()}; not parsed. */
    FRAME_TOO_LARGE(2),
    /** The frame ends inside a value. */
    TRUNCATED(3),
    /** A header claims more items or bytes than the frame has left. */
    LENGTH_CLAIM_EXCEEDS_FRAME(4),
    /** A string (or a raw completion id) that is not valid UTF-8. */
    NOT_UTF8(5),
    /** A map key packed as msgpack bin instead of str. */
    BIN_KEY(6),
    /** A map key that is neither str nor bin. */
    NON_STRING_KEY(7),
    /** The same known key twice in one map. */
    DUPLICATE_KEY(8),
    /** A notify map with neither {@code type} nor {@code req_id}. */
    MISSING_TYPE(9),
    /** A {@code type} (or handshake request) this protocol does not define. */
    UNKNOWN_TYPE(10),
    /** A required field is absent. */
    MISSING_FIELD(11),
    /** A field has the wrong msgpack type. */
    WRONG_FIELD_TYPE(12),
    /** A field has the right type but an invalid value (e.g. {@code consumer_tp_size <= 0}). */
    INVALID_VALUE(13),
    /** Bytes follow the end of the top-level value. */
    TRAILING_BYTES(14),
    /** Containers nested deeper than {@link WireLimits#maxNestingDepth()}. */
    NESTING_TOO_DEEP(15),
    /** The reserved byte {@code 0xc1} or another format msgpack does not define. */
    INVALID_FORMAT(16),
    /** An integer outside the range the field can hold. */
    INTEGER_OUT_OF_RANGE(17),
    /** The top-level value is not a map where a map is required. */
    NOT_A_MAP(18),
    /** A ZMQ message with the wrong number of frames or a missing empty delimiter. */
    BAD_FRAMING(19);

    private final int code;

    RejectReason(int code) {
        this.code = code;
    }

    /** The permanent numeric code. */
    int code() {
        return code;
    }

    /** The reason with this code, or {@code null} when none has it. */
    static RejectReason ofCode(int code) {
        for (RejectReason r : values()) {
            if (r.code == code) {
                return r;
            }
        }
        return null;
    }
}
