package io.kvledger.wire;

/**
 * A value Python's {@code msgpack.dumps} could not pack either: an unsupported type, an integer
 * outside [-2^63, 2^64), a string with an unpaired surrogate, a non-str map key. Encoders throw
 * it; publishers turn it into a send-failure event.
 */
public final class WireEncodingException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    WireEncodingException(String message) {
        super(message);
    }
}
