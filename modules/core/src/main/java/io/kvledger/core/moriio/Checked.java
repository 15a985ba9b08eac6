package io.kvledger.core.moriio;

import java.util.Objects;
import java.util.function.Function;

/**
 * A value or the reason there is none. The helpers that raise {@code ValueError} in the Python
 * connector return a failed {@code Checked} instead, so the reducer can record the failure as a
 * named anomaly and never throw.
 *
 * @param value the value when {@link #isOk()}, otherwise {@code null}
 * @param error the message the Python code would have raised, otherwise {@code null}
 */
public record Checked<T>(T value, String error) {

    public Checked {
        if ((value == null) == (error == null)) {
            throw new IllegalArgumentException("exactly one of value and error must be set");
        }
    }

    public static <T> Checked<T> ok(T value) {
        return new Checked<>(Objects.requireNonNull(value, "value"), null);
    }

    public static <T> Checked<T> fail(String error) {
        return new Checked<>(null, Objects.requireNonNull(error, "error"));
    }

    public boolean isOk() {
        return error == null;
    }

    public T orElse(T fallback) {
        return isOk() ? value : fallback;
    }

    public <R> Checked<R> map(Function<? super T, ? extends R> f) {
        return isOk() ? ok(f.apply(value)) : fail(error);
    }
}
