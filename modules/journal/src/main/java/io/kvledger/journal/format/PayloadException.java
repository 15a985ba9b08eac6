package io.kvledger.journal.format;

/**
 * A payload that does not match its type's schema (a wrong value type, an unknown enum code, a
 * missing required JSON field). The message names the field and what was found, so that readers
 * can report it and move on.
 */
public final class PayloadException extends RuntimeException {

    public PayloadException(String message) {
        super(message);
    }

    PayloadException(String message, Throwable cause) {
        super(message, cause);
    }

    /** This exception with {@code "field: "} in front of its message. */
    PayloadException in(String field) {
        return new PayloadException(field + ": " + getMessage(), getCause());
    }
}
