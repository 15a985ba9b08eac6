package io.kvledger.wire;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.HexFormat;
import java.util.LinkedHashMap;

/**
 * A Python value as msgpack carries it, as a closed set of types: what {@link PyValues} packs and
 * {@link PyMsgpack#decodeValue} reads, without {@code Object}'s open set (a switch over a
 * {@code PyValue} needs no {@code default}). {@link #of} takes the plain-Java form the codec has
 * always taken ({@code null}, {@link Boolean}, {@link Long} and the other integer boxes,
 * {@link BigInteger}, {@link Double}, {@link Float}, {@link CharSequence}, {@code byte[]},
 * {@link OpaqueBytes}, lists, arrays, maps, the core's {@code KvParams} and {@code BlockGroups});
 * {@link #toObject} gives back the form {@link PyValues#unpack} reads ({@code null},
 * {@link Boolean}, {@link Long}, {@link BigInteger}, {@link Double}, {@link String},
 * {@code byte[]}, {@link ArrayList}, {@link LinkedHashMap}).
 *
 * <p>No ext type: neither reader takes one (the journal's and the peer's both refuse it), so there
 * is none to carry. Values are immutable: containers are copied in.
 */
sealed interface PyValue {

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

        /** The bytes themselves, for the codec (never handed out). */
        byte[] raw() {
            return value;
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
        PyValue get(String key) {
            return entries.get(new Str(key));
        }
    }

    /**
     * The value of a plain-Java Python value (see the class comment).
     *
     * @throws IllegalArgumentException for what {@link PyValues#refusal} refuses
     */
    static PyValue of(Object v) {
        String why = PyValues.refusal(v);
        if (why != null) {
            throw new IllegalArgumentException(why);
        }
        return convert(v);
    }

    private static PyValue convert(Object v) {
        return switch (v) {
            case null -> NONE;
            case PyValue p -> p;
            case Boolean b -> new Bool(b);
            case Long l -> new Int(l);
            case Integer i -> new Int(i);
            case Short s -> new Int(s);
            case Byte b -> new Int(b);
            case BigInteger bi -> bi.bitLength() <= 63 ? new Int(bi.longValue()) : new BigInt(bi);
            case Double d -> new Float(d);
            case java.lang.Float f -> new Float(f);
            case CharSequence cs -> new Str(cs.toString());
            case byte[] b -> new Bytes(b);
            case OpaqueBytes o -> new Bytes(o.raw());
            case io.kvledger.core.model.KvParams p -> convert(p.asMap());
            case io.kvledger.core.model.BlockGroups g -> {
                ArrayList<PyValue> groups = new ArrayList<>(g.size());
                for (int i = 0; i < g.size(); i++) {
                    groups.add(convert(g.group(i)));
                }
                yield new List(groups);
            }
            case int[] ints -> {
                ArrayList<PyValue> l = new ArrayList<>(ints.length);
                for (int i : ints) {
                    l.add(new Int(i));
                }
                yield new List(l);
            }
            case java.util.Map<?, ?> m -> {
                LinkedHashMap<PyValue, PyValue> out = new LinkedHashMap<>();
                for (java.util.Map.Entry<?, ?> e : m.entrySet()) {
                    out.put(convert(e.getKey()), convert(e.getValue()));
                }
                yield new Map(out);
            }
            case Collection<?> c -> {
                ArrayList<PyValue> l = new ArrayList<>(c.size());
                for (Object o : c) {
                    l.add(convert(o));
                }
                yield new List(l);
            }
            case Object[] arr -> convert(Arrays.asList(arr));
            default -> throw new IllegalArgumentException("a value of type " + v.getClass().getName() + " is not a Python value");
        };
    }

    /** The plain-Java form {@link PyValues#unpack} reads (see the class comment). */
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
