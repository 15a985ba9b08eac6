package io.kvledger.journal.format;

import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.KvParams;
import java.io.IOException;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.msgpack.core.MessageFormat;
import org.msgpack.core.MessagePacker;
import org.msgpack.core.MessageUnpacker;

/**
 * Python values (what {@code kv_transfer_params} and transfer ids hold) in msgpack and in JSON.
 *
 * <p>msgpack: None is nil, bool is bool, int is int (any width), float is float64, str is str,
 * bytes is bin, list is array, dict is map, as Python's {@code msgpack.packb(use_bin_type=True)}
 * writes them. Decoding gives {@code null}, {@link Boolean}, {@link Long} (a {@link BigInteger}
 * above {@link Long#MAX_VALUE}), {@link Double}, {@link String}, {@code byte[]}, {@link ArrayList}
 * and {@link LinkedHashMap}.
 *
 * <p>JSON: the same, except for three values JSON cannot hold, which become one-key tag objects:
 * {@code {"$float":"nan"|"inf"|"-inf"}}, {@code {"$bytes":"<base64>"}} and
 * {@code {"$int":"<decimal>"}} for integers beyond 64 bits.
 */
public final class PyValues {

    /** Deeper nesting is refused on decode (hostile or corrupt payloads). */
    static final int MAX_DEPTH = 128;

    private PyValues() {}

    /** Writes {@code v} as msgpack. */
    public static void pack(MessagePacker p, Object v) throws IOException {
        pack(MsgOut.of(p), v, 0);
    }

    /** Writes {@code v} as msgpack into {@code out}. */
    public static void pack(MsgOut out, Object v) throws IOException {
        pack(out, v, 0);
    }

    private static void pack(MsgOut p, Object v, int depth) throws IOException {
        if (depth > MAX_DEPTH) {
            throw new IllegalArgumentException("value nested deeper than " + MAX_DEPTH);
        }
        // the values params hold most, before the type switch's chain of tests
        if (v instanceof String s) {
            p.str(s);
            return;
        }
        if (v instanceof Long l) {
            p.int64(l);
            return;
        }
        switch (v) {
            case null -> p.nil();
            case Boolean b -> p.bool(b);
            case Long l -> p.int64(l);
            case Integer i -> p.int64(i);
            case Short s -> p.int64(s);
            case Byte b -> p.int64(b);
            case BigInteger bi -> p.bigInt(bi);
            case Double d -> p.float64(d);
            case Float f -> p.float64(f);
            case CharSequence cs -> p.str(cs.toString());
            case byte[] bytes -> p.bin(bytes);
            case KvParams params -> pack(p, params.asMap(), depth);
            case BlockGroups g -> {
                p.arrayHeader(g.size());
                for (int i = 0; i < g.size(); i++) {
                    packInts(p, g.group(i));
                }
            }
            case int[] ints -> packInts(p, ints);
            case Map<?, ?> m -> {
                p.mapHeader(m.size());
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    pack(p, e.getKey(), depth + 1);
                    pack(p, e.getValue(), depth + 1);
                }
            }
            case List<?> l -> {
                p.arrayHeader(l.size());
                for (Object o : l) {
                    pack(p, o, depth + 1);
                }
            }
            case Collection<?> c -> {
                p.arrayHeader(c.size());
                for (Object o : c) {
                    pack(p, o, depth + 1);
                }
            }
            case Object[] arr -> {
                p.arrayHeader(arr.length);
                for (Object o : arr) {
                    pack(p, o, depth + 1);
                }
            }
            default -> throw new IllegalArgumentException(
                    "cannot journal a value of type " + v.getClass().getName() + " (not a Python value)");
        }
    }

    /**
     * Why {@link #pack} would refuse {@code v}, or {@code null} if it packs: the same rules
     * (Python value types, nesting up to {@value #MAX_DEPTH}, integers that fit msgpack's 64 bits),
     * checked without encoding anything, so a caller can refuse a value before it acts on it.
     */
    public static String refusal(Object v) {
        return refusal(v, 0);
    }

    private static String refusal(Object v, int depth) {
        if (depth > MAX_DEPTH) {
            return "value nested deeper than " + MAX_DEPTH;
        }
        if (v instanceof String || v instanceof Long || v == null) {
            return null; // what params hold most, before the type switch's chain of tests
        }
        return switch (v) {
            case null -> null;
            case Boolean b -> null;
            case Long l -> null;
            case Integer i -> null;
            case Short s -> null;
            case Byte b -> null;
            case BigInteger bi -> bi.bitLength() < 64 || (bi.signum() > 0 && bi.bitLength() == 64) ? null
                    : "cannot journal the integer " + bi + " (msgpack carries at most 64 bits)";
            case Double d -> null;
            case Float f -> null;
            case CharSequence cs -> null;
            case byte[] bytes -> null;
            case KvParams params -> refusal(params.asMap(), depth);
            case BlockGroups g -> null;
            case int[] ints -> null;
            case Map<?, ?> m -> {
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    String why = refusal(e.getKey(), depth + 1);
                    if (why == null) {
                        why = refusal(e.getValue(), depth + 1);
                    }
                    if (why != null) {
                        yield why;
                    }
                }
                yield null;
            }
            case Collection<?> c -> firstRefusal(c, depth);
            case Object[] arr -> firstRefusal(java.util.Arrays.asList(arr), depth);
            default -> "cannot journal a value of type " + v.getClass().getName() + " (not a Python value)";
        };
    }

    private static String firstRefusal(Collection<?> c, int depth) {
        for (Object o : c) {
            String why = refusal(o, depth + 1);
            if (why != null) {
                return why;
            }
        }
        return null;
    }

    static void packInts(MessagePacker p, int[] ids) throws IOException {
        packInts(MsgOut.of(p), ids);
    }

    static void packInts(MsgOut p, int[] ids) throws IOException {
        p.arrayHeader(ids.length);
        for (int id : ids) {
            p.int64(id);
        }
    }

    /** Reads one msgpack value. */
    public static Object unpack(MessageUnpacker u) throws IOException {
        return unpack(u, 0);
    }

    private static Object unpack(MessageUnpacker u, int depth) throws IOException {
        if (depth > MAX_DEPTH) {
            throw new PayloadException("value nested deeper than " + MAX_DEPTH);
        }
        MessageFormat f = u.getNextFormat();
        return switch (f.getValueType()) {
            case NIL -> {
                u.unpackNil();
                yield null;
            }
            case BOOLEAN -> u.unpackBoolean();
            case INTEGER -> {
                if (f == MessageFormat.UINT64) {
                    BigInteger bi = u.unpackBigInteger();
                    yield bi.bitLength() < 64 ? (Object) bi.longValue() : bi;
                }
                yield u.unpackLong();
            }
            case FLOAT -> u.unpackDouble();
            case STRING -> u.unpackString();
            case BINARY -> u.readPayload(u.unpackBinaryHeader());
            case ARRAY -> {
                int n = u.unpackArrayHeader();
                ArrayList<Object> l = new ArrayList<>(Math.min(n, 1 << 16));
                for (int i = 0; i < n; i++) {
                    l.add(unpack(u, depth + 1));
                }
                yield l;
            }
            case MAP -> {
                int n = u.unpackMapHeader();
                LinkedHashMap<Object, Object> m = new LinkedHashMap<>();
                for (int i = 0; i < n; i++) {
                    Object k = unpack(u, depth + 1);
                    m.put(k, unpack(u, depth + 1));
                }
                yield m;
            }
            case EXTENSION -> throw new PayloadException("msgpack extension types are not Python values");
        };
    }

    /** Reads a msgpack map with string keys as params. */
    static KvParams unpackParams(MessageUnpacker u) throws IOException {
        Object v = unpack(u);
        return paramsOf(v);
    }

    @SuppressWarnings("unchecked")
    static KvParams paramsOf(Object v) {
        if (!(v instanceof Map<?, ?> m)) {
            throw new PayloadException("expected a map, found " + describe(v));
        }
        for (Object k : m.keySet()) {
            if (!(k instanceof String)) {
                throw new PayloadException("params keys must be strings, found " + describe(k));
            }
        }
        return KvParams.of((Map<String, ?>) m);
    }

    // ------------------------------------------------------------------ JSON

    /** The JSON form of a Python value (see the class comment for the tag objects). */
    public static Object toJson(Object v) {
        return switch (v) {
            case null -> null;
            case Boolean b -> b;
            case Long l -> l;
            case Integer i -> (long) i;
            case Short s -> (long) s;
            case Byte b -> (long) b;
            case BigInteger bi -> bi.bitLength() < 64 ? (Object) bi.longValue() : Map.of("$int", bi.toString());
            case Double d -> floatJson(d);
            case Float f -> floatJson(f.doubleValue());
            case CharSequence cs -> cs.toString();
            case byte[] bytes -> Map.of("$bytes", Base64.getEncoder().encodeToString(bytes));
            case KvParams params -> toJson(params.asMap());
            case BlockGroups g -> g.toGroupedValue();
            case int[] ints -> BlockGroups.flatValue(ints);
            case Map<?, ?> m -> {
                LinkedHashMap<String, Object> out = new LinkedHashMap<>();
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    out.put(String.valueOf(e.getKey()), toJson(e.getValue()));
                }
                yield out;
            }
            case Collection<?> c -> {
                List<Object> out = new ArrayList<>(c.size());
                for (Object o : c) {
                    out.add(toJson(o));
                }
                yield out;
            }
            case Object[] arr -> {
                List<Object> out = new ArrayList<>(arr.length);
                for (Object o : arr) {
                    out.add(toJson(o));
                }
                yield out;
            }
            default -> throw new IllegalArgumentException(
                    "cannot write a value of type " + v.getClass().getName() + " as JSON");
        };
    }

    private static Object floatJson(double d) {
        if (Double.isNaN(d)) {
            return Map.of("$float", "nan");
        }
        if (Double.isInfinite(d)) {
            return Map.of("$float", d > 0 ? "inf" : "-inf");
        }
        return d;
    }

    /** The Python value of a parsed JSON value (undoing the tag objects). */
    public static Object fromJson(Object j) {
        return switch (j) {
            case null -> null;
            case Map<?, ?> m -> {
                if (m.size() == 1) {
                    Map.Entry<?, ?> e = m.entrySet().iterator().next();
                    String k = String.valueOf(e.getKey());
                    if (k.startsWith("$")) {
                        yield tagged(k, e.getValue());
                    }
                }
                LinkedHashMap<String, Object> out = new LinkedHashMap<>();
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    out.put(String.valueOf(e.getKey()), fromJson(e.getValue()));
                }
                yield out;
            }
            case List<?> l -> {
                List<Object> out = new ArrayList<>(l.size());
                for (Object o : l) {
                    out.add(fromJson(o));
                }
                yield out;
            }
            default -> j;
        };
    }

    private static Object tagged(String tag, Object value) {
        if (!(value instanceof String s)) {
            throw new PayloadException("tag " + tag + " needs a string value, found " + describe(value));
        }
        switch (tag) {
            case "$float" -> {
                return switch (s) {
                    case "nan" -> Double.NaN;
                    case "inf" -> Double.POSITIVE_INFINITY;
                    case "-inf" -> Double.NEGATIVE_INFINITY;
                    default -> throw new PayloadException("$float must be nan, inf or -inf, found \"" + s + "\"");
                };
            }
            case "$bytes" -> {
                try {
                    return Base64.getDecoder().decode(s);
                } catch (IllegalArgumentException e) {
                    throw new PayloadException("$bytes is not base64: " + e.getMessage());
                }
            }
            case "$int" -> {
                try {
                    BigInteger bi = new BigInteger(s);
                    return bi.bitLength() < 64 ? (Object) bi.longValue() : bi;
                } catch (NumberFormatException e) {
                    throw new PayloadException("$int is not a decimal integer: \"" + s + "\"");
                }
            }
            default -> throw new PayloadException("unknown tag " + tag + " (known: $float, $bytes, $int)");
        }
    }

    /** A short description of a value's type for error messages. */
    static String describe(Object v) {
        return switch (v) {
            case null -> "null";
            case Boolean b -> "a bool";
            case Long l -> "an integer";
            case Integer i -> "an integer";
            case Double d -> "a float";
            case String s -> "a string";
            case byte[] b -> "bytes";
            case List<?> l -> "a list";
            case Map<?, ?> m -> "a map";
            default -> "a " + v.getClass().getSimpleName();
        };
    }
}
