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

    /** A decoding step that may throw (a {@link WireReject}, or msgpack-core's exceptions). */
    @FunctionalInterface
    interface Decoding<T> {
        T decode() throws java.io.IOException;
    }

    /**
     * Runs {@code decoding} and turns every way it can fail into a typed rejection: a
     * {@link WireReject} as it is, any other exception through {@link MsgpackReader#translate},
     * and a stack overflow (nesting too deep) as NESTING_TOO_DEEP.
     */
    static <T> DecodeResult<T> of(Decoding<T> decoding) {
        try {
            return new Ok<>(decoding.decode());
        } catch (WireReject e) {
            return new Rejected<>(e.toRejection());
        } catch (Exception e) {
            return new Rejected<>(MsgpackReader.translate(e).toRejection());
        } catch (StackOverflowError e) {
            return new Rejected<>(new Rejection(RejectReason.NESTING_TOO_DEEP, "nesting exhausted the stack", false));
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
