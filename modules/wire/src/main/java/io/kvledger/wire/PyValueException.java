package io.kvledger.wire;

/**
 * A msgpack value {@link PyValues#unpack} does not take as a Python value (an ext type, nesting
 * deeper than {@link PyValues#MAX_DEPTH}); the message says which. The journal reports it as a
 * damaged payload.
 */
public final class PyValueException extends RuntimeException {

    PyValueException(String message) {
        super(message);
    }
}
