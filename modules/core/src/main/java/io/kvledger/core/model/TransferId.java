package io.kvledger.core.model;

import io.kvledger.core.moriio.ExtraConfig;
import java.util.Arrays;
import java.util.Objects;

/**
 * A {@code transfer_id} as the request's {@code kv_transfer_params} carry it, for the places that
 * must send it on exactly as it came ({@code remote_blocks}, {@code release}, a ReqMeta), as one
 * of the forms it takes: {@link Str} (normally {@code tx-<uuid4>} from the proxy), {@link Int},
 * {@link Bytes}, {@link #NONE} (a missing key or {@code None}: Python's {@code params.get(...)}
 * gives {@code None} for both; effects and metadata never hold {@code null} instead), and
 * {@link Other} for any other Python value a sidecar or a test may send (a bool, a float, an int
 * beyond 64 bits, a list, a dict). Peers match on the value, so it is re-encoded as that value
 * ({@link #raw()}, the plain-Java form a codec packs), never as its text.
 *
 * <p>{@link #equals} and {@link #hashCode} are those of the value ({@code bytes} by content, as
 * Python compares them), and {@link #toString} is {@code String.valueOf} of the plain value, so a
 * record holding one renders as it did when it held the raw value.
 */
public sealed interface TransferId {

    /** No {@code transfer_id}: the key is absent or its value is {@code None}. */
    TransferId NONE = new None();

    /**
     * The transfer id holding this Python value as the params decode it (a {@code String},
     * {@code Long}, {@code byte[]}, or another value); {@link #NONE} for {@code null}.
     */
    static TransferId of(Object raw) {
        // an instanceof chain, not a pattern switch: this runs once per request on the hook path
        if (raw instanceof String s) {
            return new Str(s);
        }
        if (raw == null) {
            return NONE;
        }
        if (raw instanceof Long l) {
            return new Int(l);
        }
        return raw instanceof byte[] b ? new Bytes(b) : new Other(raw);
    }

    /** Whether this id holds the very value {@code raw} (as the params hold it): reuse it for them. */
    boolean holds(Object raw);

    /** The plain-Java value a codec packs ({@code null} for {@link #NONE}), as the params held it. */
    Object raw();

    /** Whether there is no transfer id (absent or {@code None}). */
    default boolean isNone() {
        return this instanceof None;
    }

    /** {@code bool(transfer_id)}: false for None, {@code ""}, {@code 0}, {@code b""} and other false values. */
    boolean isTrue();

    /**
     * The id when it is a {@code str}, else {@code null}: the connector keys its tables by string
     * transfer ids, so an id of another type keys nothing.
     */
    default String asString() {
        return this instanceof Str s ? s.value() : null;
    }

    /** Python's {@code str()} of the value ({@code "None"} for {@link #NONE}): for messages. */
    String pythonStr();

    /**
     * The text a string-keyed reader files the id under: the string itself, the value's
     * {@code toString} for another type, {@code null} for {@link #NONE}.
     */
    default String text() {
        return this instanceof None ? null : this instanceof Str s ? s.value() : toString();
    }

    /** None, or no key: {@link #NONE}. */
    final class None implements TransferId {
        private None() {}

        @Override
        public boolean holds(Object raw) {
            return raw == null;
        }

        @Override
        public Object raw() {
            return null;
        }

        @Override
        public boolean isTrue() {
            return false;
        }

        @Override
        public String pythonStr() {
            return "None";
        }

        @Override
        public int hashCode() {
            return 0;
        }

        @Override
        public String toString() {
            return "null";
        }
    }

    /** A {@code str} id. */
    record Str(String value) implements TransferId {
        public Str {
            Objects.requireNonNull(value);
        }

        @Override
        public boolean holds(Object raw) {
            return raw == value;
        }

        @Override
        public Object raw() {
            return value;
        }

        @Override
        public boolean isTrue() {
            return !value.isEmpty();
        }

        @Override
        public String pythonStr() {
            return value;
        }

        @Override
        public int hashCode() {
            return value.hashCode();
        }

        @Override
        public String toString() {
            return value;
        }
    }

    /** An {@code int} id that fits 64 bits (a {@code Long} in the params). */
    record Int(long value) implements TransferId {
        @Override
        public boolean holds(Object raw) {
            return raw instanceof Long l && l == value;
        }

        @Override
        public Object raw() {
            return value;
        }

        @Override
        public boolean isTrue() {
            return value != 0;
        }

        @Override
        public String pythonStr() {
            return Long.toString(value);
        }

        @Override
        public int hashCode() {
            return Long.hashCode(value);
        }

        @Override
        public String toString() {
            return Long.toString(value);
        }
    }

    /** A {@code bytes} id, compared by content. */
    final class Bytes implements TransferId {
        private final byte[] value;

        private Bytes(byte[] value) {
            this.value = value;
        }

        @Override
        public boolean holds(Object raw) {
            return raw == value;
        }

        /** The array as the params held it (not copied: a codec packs it, nothing writes it). */
        @Override
        public Object raw() {
            return value;
        }

        @Override
        public boolean isTrue() {
            return value.length > 0;
        }

        @Override
        public String pythonStr() {
            return ExtraConfig.pythonStr(value);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Bytes b && Arrays.equals(value, b.value);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(value);
        }

        @Override
        public String toString() {
            return String.valueOf(value);
        }
    }

    /** A value of another type (a bool, a float, a big int, a list, a dict): carried as it came. */
    record Other(Object value) implements TransferId {
        @Override
        public boolean holds(Object raw) {
            return raw == value;
        }

        @Override
        public Object raw() {
            return value;
        }

        @Override
        public boolean isTrue() {
            return ExtraConfig.pythonTruthy(value);
        }

        @Override
        public String pythonStr() {
            return ExtraConfig.pythonStr(value);
        }

        @Override
        public int hashCode() {
            return Objects.hashCode(value);
        }

        @Override
        public String toString() {
            return String.valueOf(value);
        }
    }
}
