package io.kvledger.zmq;

/** A handshake that failed or timed out; the same reason is in the {@code HandshakeFailed} event. */
final class HandshakeException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final String key;

    HandshakeException(String key, String reason) {
        super(reason);
        this.key = key;
    }

    String key() {
        return key;
    }
}
