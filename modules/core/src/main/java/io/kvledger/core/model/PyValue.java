package io.kvledger.core.model;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HexFormat;
import java.util.LinkedHashMap;

/**
 * A Python value as the connector's peers send it (msgpack's types), as a closed set: a switch
 * over a {@code PyValue} needs no {@code default}. It lives in the core so that the reducer's
 * params and the wire's codec share one type; the codec (packing, reading frames, converting the
 * plain-Java form) is the wire module's {@code PyValues} and {@code PyMsgpack}. {@link #toObject}
 * gives the plain-Java form the journal reads ({@code null}, {@link Boolean}, {@link Long},
 * {@link BigInteger}, {@link Double}, {@link String}, {@code byte[]}, {@link ArrayList},
 * {@link LinkedHashMap}).
 *
 * <p>No ext type: neither reader takes one (the journal's and the peer's both refuse it), so there
 * is none to carry. Values are immutable: containers are copied in. Pure: no I/O.
 */
public sealed interface PyValue {

    /** None. */
    record Nil() implements PyValue {
        @Override
        public String toString() {
            return "None";
        }
    }

    /** The one {@link Nil}. */
    Nil NONE = new Nil();

    record Bool(boolean value) implements PyValue {}

    /** An int that fits a signed 64-bit {@code long}. */
    record Int(long value) implements PyValue {}

    /** An int from 2^63 to 2^64 - 1: the ints msgpack carries beyond a {@code long} (uint64). */
    record BigInt(BigInteger value) implements PyValue {
        private static final BigInteger MIN = BigInteger.ONE.shiftLeft(63);
        private static final BigInteger LIMIT = BigInteger.ONE.shiftLeft(64);

        public BigInt {
            if (value.compareTo(MIN) < 0 || value.compareTo(LIMIT) >= 0) {
                throw new IllegalArgumentException(value + " is not from 2^63 to 2^64 - 1 (a smaller int is an Int; a larger one has no msgpack form)");
            }
        }
    }

    /** A float (float64; a float32 read widens). */
    record Float(double value) implements PyValue {}

    record Str(String value) implements PyValue {
        public Str {
            java.util.Objects.requireNonNull(value);
        }
    }

    /** bytes: compared and hashed by content. */
    record Bytes(byte[] value) implements PyValue {
        public Bytes {
            value = value.clone();
        }

        /** A copy of the bytes. */
        @Override
        public byte[] value() {
            return value.clone();
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
            return "b'" + HexFormat.of().formatHex(value) + "'";
        }
    }

    record List(java.util.List<PyValue> items) implements PyValue {
        public List {
            items = java.util.List.copyOf(items);
        }
    }

    /** A dict, in insertion order (the order it is packed in). */
    record Map(java.util.Map<PyValue, PyValue> entries) implements PyValue {
        public Map {
            entries = Collections.unmodifiableMap(new LinkedHashMap<>(entries));
            for (java.util.Map.Entry<PyValue, PyValue> e : entries.entrySet()) {
                java.util.Objects.requireNonNull(e.getKey(), "key");
                java.util.Objects.requireNonNull(e.getValue(), "value");
            }
        }

        /** The value under the str key {@code key}, or {@code null} when there is none. */
        public PyValue get(String key) {
            return entries.get(new Str(key));
        }
    }

    /**
     * The value of a plain-Java Python value, the inverse of {@link #toObject}: {@code null},
     * {@link Boolean}, the integer boxes, {@link BigInteger} (up to 2^64 - 1), {@link Double},
     * {@link java.lang.Float}, {@link CharSequence}, {@code byte[]}, lists and other collections,
     * arrays, maps; a {@code PyValue} is itself.
     *
     * @throws IllegalArgumentException for a value of another type or an int beyond msgpack's 64 bits
     */
    static PyValue of(Object v) {
        return switch (v) {
            case null -> NONE;
            case PyValue p -> p;
            case Boolean b -> new Bool(b);
            case Long l -> new Int(l);
            case Integer i -> new Int(i);
            case Short s -> new Int(s);
            case Byte b -> new Int(b);
            case BigInteger bi -> {
                if (bi.bitLength() <= 63) {
                    yield new Int(bi.longValue());
                }
                if (bi.signum() < 0 || bi.bitLength() > 64) {
                    throw new IllegalArgumentException("the integer " + bi + " does not fit msgpack's 64 bits (Python raises OverflowError)");
                }
                yield new BigInt(bi);
            }
            case Double d -> new Float(d);
            case java.lang.Float f -> new Float(f);
            case CharSequence cs -> new Str(cs.toString());
            case byte[] b -> new Bytes(b);
            case java.util.Map<?, ?> m -> {
                LinkedHashMap<PyValue, PyValue> out = new LinkedHashMap<>();
                for (java.util.Map.Entry<?, ?> e : m.entrySet()) {
                    out.put(of(e.getKey()), of(e.getValue()));
                }
                yield new Map(out);
            }
            case java.util.Collection<?> c -> {
                ArrayList<PyValue> out = new ArrayList<>(c.size());
                for (Object o : c) {
                    out.add(of(o));
                }
                yield new List(out);
            }
            case Object[] arr -> of(Arrays.asList(arr));
            default -> throw new IllegalArgumentException("a value of type " + v.getClass().getName() + " is not a Python value");
        };
    }

    /** The plain-Java form (see the class comment). */
    default Object toObject() {
        return switch (this) {
            case Nil n -> null;
            case Bool b -> b.value();
            case Int i -> i.value();
            case BigInt b -> b.value();
            case Float f -> f.value();
            case Str s -> s.value();
            case Bytes b -> b.value();
            case List l -> {
                ArrayList<Object> out = new ArrayList<>(l.items().size());
                for (PyValue p : l.items()) {
                    out.add(p.toObject());
                }
                yield out;
            }
            case Map m -> {
                LinkedHashMap<Object, Object> out = new LinkedHashMap<>();
                for (java.util.Map.Entry<PyValue, PyValue> e : m.entries().entrySet()) {
                    out.put(e.getKey().toObject(), e.getValue().toObject());
                }
                yield out;
            }
        };
    }
}
