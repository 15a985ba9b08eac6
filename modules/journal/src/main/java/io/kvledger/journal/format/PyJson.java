package io.kvledger.journal.format;

import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.KvParams;
import io.kvledger.wire.PyValueException;
import io.kvledger.wire.PyValues;
import java.io.IOException;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.msgpack.core.MessageUnpacker;

/**
 * Python values (what {@code kv_transfer_params} and transfer ids hold) in the journal's JSON,
 * and the journal's reading of them from msgpack. Their msgpack codec is the wire module's
 * {@link PyValues}: this class reads through it, reporting what it refuses as a
 * {@link PayloadException}.
 *
 * <p>JSON: the values {@link PyValues} reads, except for three values JSON cannot hold, which become one-key tag objects:
 * {@code {"$float":"nan"|"inf"|"-inf"}}, {@code {"$bytes":"<base64>"}} and
 * {@code {"$int":"<decimal>"}} for integers beyond 64 bits.
 */
public final class PyJson {

    private PyJson() {}

    /** Reads a msgpack map with string keys as params. */
    static KvParams unpackParams(MessageUnpacker u) throws IOException {
        return paramsOf(unpack(u));
    }

    /**
     * {@link PyValues#unpack}, its refusals (an ext type, too deep) as a {@link PayloadException}
     * like every other damaged payload.
     */
    public static Object unpack(MessageUnpacker u) throws IOException {
        try {
            return PyValues.unpack(u);
        } catch (PyValueException e) {
            throw new PayloadException(e.getMessage());
        }
    }

    @SuppressWarnings("unchecked")
    static KvParams paramsOf(Object v) {
        if (!(v instanceof Map<?, ?> m)) {
            throw new PayloadException("expected a map, found " + PyValues.describe(v));
        }
        for (Object k : m.keySet()) {
            if (!(k instanceof String)) {
                throw new PayloadException("params keys must be strings, found " + PyValues.describe(k));
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
            throw new PayloadException("tag " + tag + " needs a string value, found " + PyValues.describe(value));
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
}
