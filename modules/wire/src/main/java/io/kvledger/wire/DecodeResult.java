package io.kvledger.wire;

import java.util.Objects;

/**
 * The outcome of decoding one frame: a value, or a rejection. Decoders return this instead of
 * throwing.
 *
 * @param <T> the decoded value's type
 */
public sealed interface DecodeResult<T> {

    /** A frame that decoded. */
    record Ok<T>(T value) implements DecodeResult<T> {
        public Ok {
            Objects.requireNonNull(value, "value");
        }
    }

    /** A frame that did not. */
    record Rejected<T>(Rejection rejection) implements DecodeResult<T> {
        public Rejected {
            Objects.requireNonNull(rejection, "rejection");
        }
    }

    default boolean isOk() {
        return this instanceof Ok;
    }

    /** The value, or {@code null} when rejected. */
    default T valueOrNull() {
        return this instanceof Ok<T> ok ? ok.value() : null;
    }

    /** The rejection, or {@code null} when decoded. */
    default Rejection rejectionOrNull() {
        return this instanceof Rejected<T> r ? r.rejection() : null;
    }
}
