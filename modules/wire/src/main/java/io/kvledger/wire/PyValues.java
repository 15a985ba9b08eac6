package io.kvledger.wire;

import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.PyValue;
import java.io.IOException;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.msgpack.core.MessageFormat;
import org.msgpack.core.MessagePacker;
import org.msgpack.core.MessageUnpacker;

/**
 * The one Python-value msgpack codec: Python values (what {@code kv_transfer_params}, transfer
 * ids, the engine bridge's dicts and the journal header hold) as Python's {@code msgpack} 1.0
 * writes and reads them ({@code packb(use_bin_type=True)}, {@code unpackb(raw=False)}). The wire's
 * encoders and the journal both pack through here; the journal's fast payload reader
 * ({@code FastPayloadReader}) reads the same values in place and leaves anything it does not read
 * plainly to {@link #unpack}.
 *
 * <p>Packing: None ({@code null}) is nil, bool is bool, an int ({@link Long}, {@link Integer},
 * {@link Short}, {@link Byte}, a {@link BigInteger} from -2^63 to 2^64 - 1) is the smallest int
 * form (unsigned forms for non-negative values), a float ({@link Double}, {@link Float}) is
 * float64, str ({@link String}, any {@link CharSequence}) is str, bytes ({@code byte[]},
 * {@link OpaqueBytes}) is bin, a list ({@link Collection}, {@code Object[]}, {@code int[]},
 * {@link BlockGroups}) is an array, a dict ({@link Map}, {@link KvParams}) is a map in iteration
 * order. Nesting deeper than {@value #MAX_DEPTH} is refused by {@link #pack} (the journal;
 * no value of the protocol comes near it). What cannot be packed throws an {@link IllegalArgumentException}
 * naming why (a {@link WireEncodingException} for a string the strict {@link MsgpackWriter} refuses).
 * Map keys: {@link #pack} packs any key as {@code packb} does (the journal keeps what it was given);
 * {@link #packStrKeys} refuses every key that is not a str, since a peer's {@code unpackb}
 * ({@code strict_map_key=True}) refuses most of them and the protocol's dicts have str keys only.
 *
 * <p>Reading ({@link #unpack}, for the journal's own bytes): nil, bool, int ({@link Long}, a
 * {@link BigInteger} above {@link Long#MAX_VALUE}), float32 and float64 ({@link Double}), str
 * ({@link String}; malformed UTF-8 becomes U+FFFD as in msgpack-java), bin ({@code byte[]}), array
 * ({@link ArrayList}), map ({@link LinkedHashMap}, keys of any type, a repeated key's last value
 * winning as in a dict); ext types and nesting deeper than {@value #MAX_DEPTH} are a
 * {@link PyValueException}. Frames from peers are read by {@link PyMsgpack#decode} instead, with the
 * same values out but stricter rules (see there): str keys only, no repeated key, strict UTF-8, every
 * length checked against the frame, never throwing.
 *
 * <p>Stateless; safe from any thread.
 */
public final class PyValues {

    /** Deeper nesting is refused by {@link #pack} and {@link #unpack} (hostile or corrupt payloads). */
    public static final int MAX_DEPTH = 128;


    private static final BigInteger UINT64_LIMIT = BigInteger.ONE.shiftLeft(64);
    private static final BigInteger INT64_MIN = BigInteger.valueOf(Long.MIN_VALUE);

    private PyValues() {}

    /** Writes {@code v} as msgpack (map keys of any Python type). */
    public static void pack(MessagePacker p, Object v) throws IOException {
        pack(MsgOut.of(p), v, 0, MAX_DEPTH, false);
    }

    /** Writes {@code v} as msgpack into {@code out} (map keys of any Python type). */
    public static void pack(MsgOut out, Object v) throws IOException {
        pack(out, v, 0, MAX_DEPTH, false);
    }

    /**
     * Writes {@code v} as msgpack into {@code out} for a Python peer: map keys that are not str are
     * refused. No depth limit: the wire's tests build frames nested deeper than Python's
     * {@code packb} would (511) to see what a listener does with them.
     */
    static void packStrKeys(MsgOut out, Object v) throws IOException {
        pack(out, v, 0, Integer.MAX_VALUE, true);
    }

    /** As {@link #packStrKeys(MsgOut, Object)}, for params ({@code null} as nil): the map case directly. */
    static void packStrKeys(MsgOut out, KvParams params) throws IOException {
        if (params == null) {
            out.nil();
            return;
        }
        pack(out, params.asMap(), 0, Integer.MAX_VALUE, true);
    }

    /** As {@link #packStrKeys(MsgOut, Object)}, for the sealed value: its switch, no type tests first. */
    static void packStrKeys(MsgOut out, PyValue v) throws IOException {
        packValue(out, v, 0, Integer.MAX_VALUE, true);
    }

    private static void pack(MsgOut p, Object v, int depth, int maxDepth, boolean strKeys) throws IOException {
        if (depth > maxDepth) {
            throw new IllegalArgumentException("value nested deeper than " + maxDepth);
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
            case BigInteger bi -> {
                if (!fits(bi)) {
                    throw new IllegalArgumentException(tooWide(bi));
                }
                p.bigInt(bi);
            }
            case Double d -> p.float64(d);
            case Float f -> p.float64(f);
            case CharSequence cs -> p.str(cs.toString());
            case byte[] bytes -> p.bin(bytes);
            case OpaqueBytes o -> p.bin(o.raw());
            case PyValue pv -> packValue(p, pv, depth, maxDepth, strKeys);
            case KvParams params -> pack(p, params.asMap(), depth, maxDepth, strKeys);
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
                    if (strKeys && !(e.getKey() instanceof String)) {
                        throw new IllegalArgumentException("map key " + e.getKey() + " is not a str");
                    }
                    pack(p, e.getKey(), depth + 1, maxDepth, strKeys);
                    pack(p, e.getValue(), depth + 1, maxDepth, strKeys);
                }
            }
            case List<?> l -> {
                p.arrayHeader(l.size());
                for (Object o : l) {
                    pack(p, o, depth + 1, maxDepth, strKeys);
                }
            }
            case Collection<?> c -> {
                p.arrayHeader(c.size());
                for (Object o : c) {
                    pack(p, o, depth + 1, maxDepth, strKeys);
                }
            }
            case Object[] arr -> {
                p.arrayHeader(arr.length);
                for (Object o : arr) {
                    pack(p, o, depth + 1, maxDepth, strKeys);
                }
            }
            default -> throw new IllegalArgumentException(notPython(v));
        }
    }

    /** A {@link PyValue}: every case, no default, so a new kind of value breaks the build here. */
    private static void packValue(MsgOut p, PyValue v, int depth, int maxDepth, boolean strKeys) throws IOException {
        switch (v) {
            case PyValue.Nil n -> p.nil();
            case PyValue.Bool b -> p.bool(b.value());
            case PyValue.Int i -> p.int64(i.value());
            case PyValue.BigInt b -> p.bigInt(b.value());
            case PyValue.Float f -> p.float64(f.value());
            case PyValue.Str s -> p.str(s.value());
            case PyValue.Bytes b -> p.bin(b.value());
            case PyValue.List l -> {
                p.arrayHeader(l.items().size());
                for (PyValue o : l.items()) {
                    pack(p, o, depth + 1, maxDepth, strKeys);
                }
            }
            case PyValue.Map m -> {
                p.mapHeader(m.entries().size());
                for (Map.Entry<PyValue, PyValue> e : m.entries().entrySet()) {
                    if (strKeys && !(e.getKey() instanceof PyValue.Str)) {
                        throw new IllegalArgumentException("map key " + e.getKey() + " is not a str");
                    }
                    pack(p, e.getKey(), depth + 1, maxDepth, strKeys);
                    pack(p, e.getValue(), depth + 1, maxDepth, strKeys);
                }
            }
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
            return tooDeep();
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
            case BigInteger bi -> fits(bi) ? null : tooWide(bi);
            case Double d -> null;
            case Float f -> null;
            case CharSequence cs -> null;
            case byte[] bytes -> null;
            case OpaqueBytes o -> null;
            case PyValue pv -> pv instanceof PyValue.List || pv instanceof PyValue.Map ? refusal(pv.toObject(), depth) : null;
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
            default -> notPython(v);
        };
    }

    /**
     * The {@link PyValue} of a plain-Java Python value: what {@link #pack} takes ({@code null},
     * {@link Boolean}, the integer boxes, {@link BigInteger}, {@link Double}, {@link Float},
     * {@link CharSequence}, {@code byte[]}, {@link OpaqueBytes}, lists, arrays, maps,
     * {@link KvParams}, {@link BlockGroups}); a {@code PyValue} is itself.
     *
     * @throws IllegalArgumentException for what {@link #refusal} refuses
     */
    public static PyValue value(Object v) {
        String why = refusal(v);
        if (why != null) {
            throw new IllegalArgumentException(why);
        }
        return convert(v);
    }

    private static PyValue convert(Object v) {
        return switch (v) {
            case null -> PyValue.NONE;
            case PyValue p -> p;
            case Boolean b -> new PyValue.Bool(b);
            case Long l -> new PyValue.Int(l);
            case Integer i -> new PyValue.Int(i);
            case Short s -> new PyValue.Int(s);
            case Byte b -> new PyValue.Int(b);
            case BigInteger bi -> bi.bitLength() <= 63 ? new PyValue.Int(bi.longValue()) : new PyValue.BigInt(bi);
            case Double d -> new PyValue.Float(d);
            case Float f -> new PyValue.Float(f);
            case CharSequence cs -> new PyValue.Str(cs.toString());
            case byte[] b -> new PyValue.Bytes(b);
            case OpaqueBytes o -> new PyValue.Bytes(o.raw());
            case KvParams p -> convert(p.asMap());
            case BlockGroups g -> {
                ArrayList<PyValue> groups = new ArrayList<>(g.size());
                for (int i = 0; i < g.size(); i++) {
                    groups.add(convert(g.group(i)));
                }
                yield new PyValue.List(groups);
            }
            case int[] ints -> {
                ArrayList<PyValue> l = new ArrayList<>(ints.length);
                for (int i : ints) {
                    l.add(new PyValue.Int(i));
                }
                yield new PyValue.List(l);
            }
            case Map<?, ?> m -> {
                LinkedHashMap<PyValue, PyValue> out = new LinkedHashMap<>();
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    out.put(convert(e.getKey()), convert(e.getValue()));
                }
                yield new PyValue.Map(out);
            }
            case Collection<?> c -> {
                ArrayList<PyValue> l = new ArrayList<>(c.size());
                for (Object o : c) {
                    l.add(convert(o));
                }
                yield new PyValue.List(l);
            }
            case Object[] arr -> convert(java.util.Arrays.asList(arr));
            default -> throw new IllegalArgumentException("a value of type " + v.getClass().getName() + " is not a Python value");
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

    private static boolean fits(BigInteger bi) {
        return bi.compareTo(INT64_MIN) >= 0 && bi.compareTo(UINT64_LIMIT) < 0;
    }

    static String tooWide(BigInteger v) {
        return "the integer " + v + " does not fit msgpack's 64 bits (Python raises OverflowError)";
    }

    private static String tooDeep() {
        return "value nested deeper than " + MAX_DEPTH;
    }

    private static String notPython(Object v) {
        return "a value of type " + v.getClass().getName() + " is not a Python value";
    }

    /** A list of ints (block ids) as an array. */
    public static void packInts(MsgOut p, int[] ids) throws IOException {
        if (p instanceof MsgpackWriter w) {
            w.ints(ids, 0, ids.length);
            return;
        }
        p.arrayHeader(ids.length);
        for (int id : ids) {
            p.int64(id);
        }
    }

    /** Reads one msgpack value (see the class comment). */
    public static Object unpack(MessageUnpacker u) throws IOException {
        return unpack(u, 0);
    }

    private static Object unpack(MessageUnpacker u, int depth) throws IOException {
        if (depth > MAX_DEPTH) {
            throw new PyValueException(tooDeep());
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
            case EXTENSION -> throw new PyValueException("msgpack extension types are not Python values");
        };
    }

    /** A short description of a value's type for error messages. */
    public static String describe(Object v) {
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
