package io.kvledger.rdma;

import java.util.Objects;

/**
 * A typed error: what was refused and why, in words that name the offending value.
 *
 * @param code    the failure code
 * @param message a sentence naming the value that was refused
 */
public record TransferError(FailureCode code, String message) {

    public TransferError {
        Objects.requireNonNull(code, "code");
        message = message == null ? code.name() : message;
    }

    @Override
    public String toString() {
        return code + "(" + code.code() + "): " + message;
    }
}
