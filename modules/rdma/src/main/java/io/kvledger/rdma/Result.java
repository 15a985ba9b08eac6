package io.kvledger.rdma;

import java.util.Objects;
import java.util.function.Function;

/**
 * The outcome of an operation that can be refused: a value, or a {@link TransferError}. The
 * port returns these instead of throwing, so a reactive caller never sees an exception for bad
 * input.
 *
 * @param <T> the value type
 */
public sealed interface Result<T> {

    /** A value. */
    record Ok<T>(T value) implements Result<T> {}

    /** A refusal. */
    record Err<T>(TransferError error) implements Result<T> {
        public Err {
            Objects.requireNonNull(error, "error");
        }
    }

    static <T> Result<T> ok(T value) {
        return new Ok<>(value);
    }

    static <T> Result<T> err(TransferError error) {
        return new Err<>(error);
    }

    static <T> Result<T> err(FailureCode code, String message) {
        return new Err<>(new TransferError(code, message));
    }

    default boolean isOk() {
        return this instanceof Ok;
    }

    /** The error, or {@code null} when this is a value. */
    default TransferError errorOrNull() {
        return this instanceof Err<T> e ? e.error() : null;
    }

    /** The value, or {@code null} when this is an error. */
    default T valueOrNull() {
        return this instanceof Ok<T> o ? o.value() : null;
    }

    /**
     * The value; for callers (tests, setup code) that treat a refusal as a bug.
     *
     * @throws IllegalStateException naming the error
     */
    default T orElseThrow() {
        return switch (this) {
            case Ok<T> o -> o.value();
            case Err<T> e -> throw new IllegalStateException(e.error().toString());
        };
    }

    default <U> Result<U> map(Function<? super T, ? extends U> f) {
        return switch (this) {
            case Ok<T> o -> new Ok<>(f.apply(o.value()));
            case Err<T> e -> new Err<>(e.error());
        };
    }

    default <U> Result<U> flatMap(Function<? super T, Result<U>> f) {
        return switch (this) {
            case Ok<T> o -> f.apply(o.value());
            case Err<T> e -> new Err<>(e.error());
        };
    }
}
