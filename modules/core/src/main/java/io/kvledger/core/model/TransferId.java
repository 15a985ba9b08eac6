package io.kvledger.core.model;

import io.kvledger.core.moriio.ExtraConfig;
import java.util.Arrays;
import java.util.Objects;

/**
 * A {@code transfer_id} as the request's {@code kv_transfer_params} carry it, for the places that
 * must send it on exactly as it came ({@code remote_blocks}, {@code release}, a ReqMeta), as one
 * of the forms it takes: {@link Str} (normally {@code tx-<uuid4>} from the proxy), {@link Int},
 * {@link Bytes}, {@link #NONE} (a missing key or {@code None}: Python's {@code params.get(...)}
 * gives {@code None} for both; effects and metadata never hold {@code null} instead),
 * {@link Other} for any other Python value a sidecar or a test may send (a bool, a float, an int
 * up to 64 bits unsigned, a list, a dict), held as a {@link PyValue}, and {@link Unpackable} for a
 * Java value with no Python form, which only hand-built params hold (the node refuses such params
 * before the reducer sees them, and a journal cannot hold them). Peers match on the value, so a
 * codec re-encodes it as that value by a switch over these forms (the str, int, None and bytes
 * forms written directly, {@link Other} through its codec, {@link Unpackable} refused), never as
 * its text.
 *
 * <p>{@link #equals} and {@link #hashCode} are those of the value ({@code bytes} by content, as
 * Python compares them), and {@link #toString} is {@code String.valueOf} of the plain-Java value,
 * so a record holding one renders as it did when it held the raw value.
 */
public sealed interface TransferId {

    /** No {@code transfer_id}: the key is absent or its value is {@code None}. */
    TransferId NONE = new None();

    /**
     * The transfer id holding this Python value as the params decode it (a {@code String},
     * {@code Long}, {@code byte[]}, or another value, which becomes {@link PyValue#of its PyValue});
     * {@link #NONE} for {@code null}. Never throws: a Java value with no Python form (not a Python
     * type, an int beyond 64 bits) is an {@link Unpackable}.
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
        return raw instanceof byte[] b ? new Bytes(b) : Other.of(raw);
    }

    /**
     * Whether this id holds the very value {@code raw} (as the params hold it): reuse it for them.
     * An {@link Other} holds a converted value, so it never does (it is rare; it is made again).
     */
    boolean holds(Object raw);

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

        /** A copy of the bytes. */
        public byte[] value() {
            return value.clone();
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

    /**
     * A value of another type (a bool, a float, a big int, a list, a dict), as its Python value.
     * Python's {@code str()}, truth and Java's {@code toString} are those of the plain-Java form
     * ({@link PyValue#toObject}), as when the id held that form.
     */
    record Other(PyValue value) implements TransferId {
        public Other {
            Objects.requireNonNull(value);
        }

        private static TransferId of(Object raw) {
            try {
                return new Other(PyValue.of(raw));
            } catch (IllegalArgumentException e) {
                return new Unpackable(e.getMessage(), String.valueOf(raw), ExtraConfig.pythonStr(raw),
                        ExtraConfig.pythonTruthy(raw));
            }
        }

        @Override
        public boolean holds(Object raw) {
            return false;
        }

        @Override
        public boolean isTrue() {
            return ExtraConfig.pythonTruthy(value.toObject());
        }

        @Override
        public String pythonStr() {
            return ExtraConfig.pythonStr(value.toObject());
        }

        @Override
        public String toString() {
            return String.valueOf(value.toObject());
        }
    }

    /**
     * A Java value with no Python form (not a Python type, an int beyond msgpack's 64 bits), as
     * only hand-built params hold one: its texts and truth, taken when it was read, and why a codec
     * refuses it. Equal when all of these are.
     *
     * @param why       why it has no Python form: the message a codec refuses it with
     * @param text      {@code String.valueOf} of the value ({@link #toString})
     * @param pythonStr Python's {@code str()} of the value as the connector's helpers give it
     * @param isTrue    its Python truth
     */
    record Unpackable(String why, String text, String pythonStr, boolean isTrue) implements TransferId {
        public Unpackable {
            Objects.requireNonNull(why);
            Objects.requireNonNull(text);
            Objects.requireNonNull(pythonStr);
        }

        @Override
        public boolean holds(Object raw) {
            return false;
        }

        @Override
        public String toString() {
            return text;
        }
    }
}
