package io.kvledger.journal.format;

import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.model.TransferId;
import io.kvledger.journal.json.Json;
import io.kvledger.wire.MsgOut;
import io.kvledger.wire.PyValues;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;
import java.util.function.ToIntFunction;
import org.msgpack.core.MessagePacker;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.ValueType;

/**
 * How one payload field is written in msgpack and in JSON. The null value is handled by
 * {@link Schema} (msgpack nil, JSON null); a type only sees non-null values.
 *
 * @param <T> the Java type of the field in the record
 */
abstract class FieldType<T> {

    private final String doc;

    FieldType(String doc) {
        this.doc = doc;
    }

    /** The type as {@code journal/FORMAT.md} names it (msgpack form / JSON form when they differ). */
    public String doc() {
        return doc;
    }

    abstract void write(MessagePacker p, T v) throws IOException;

    abstract T read(MessageUnpacker u) throws IOException;

    /**
     * {@link #read} from a {@link FastPayloadReader}: the same value for a well-formed field;
     * throws {@link FastPayloadReader.Fallback} for anything this type does not read there (by
     * default: everything).
     */
    T readFast(FastPayloadReader in) {
        throw FastPayloadReader.FALLBACK;
    }

    abstract Object toJson(T v);

    abstract T fromJson(Object j);

    /** The value of a field an older writer did not write (the append-only rule). */
    T absent() {
        return null;
    }

    /** Whether the Java type is primitive (a msgpack nil or JSON null is then an error). */
    boolean primitive() {
        return false;
    }

    @SuppressWarnings("unchecked")
    final void writeAny(MessagePacker p, Object v) throws IOException {
        write(p, (T) v);
    }

    @SuppressWarnings("unchecked")
    final Object toJsonAny(Object v) {
        return toJson((T) v);
    }

    // ------------------------------------------------------------------ scalars

    /** A 32-bit integer. */
    public static final FieldType<Integer> I32 = new FieldType<>("int") {
        @Override void write(MessagePacker p, Integer v) throws IOException { p.packInt(v); }
        @Override Integer read(MessageUnpacker u) throws IOException { return toInt(readLong(u)); }
        @Override Integer readFast(FastPayloadReader in) { return in.readInt(); }
        @Override Object toJson(Integer v) { return (long) v; }
        @Override Integer fromJson(Object j) { return toInt(jsonLong(j)); }
        @Override Integer absent() { return 0; }
        @Override boolean primitive() { return true; }
    };

    /** A 64-bit integer. */
    public static final FieldType<Long> I64 = new FieldType<>("int64") {
        @Override void write(MessagePacker p, Long v) throws IOException { p.packLong(v); }
        @Override Long read(MessageUnpacker u) throws IOException { return readLong(u); }
        @Override Long readFast(FastPayloadReader in) { return in.readLong(); }
        @Override Object toJson(Long v) { return v; }
        @Override Long fromJson(Object j) { return jsonLong(j); }
        @Override Long absent() { return 0L; }
        @Override boolean primitive() { return true; }
    };

    /** A 32-bit integer that may be null (Python None). */
    public static final FieldType<Integer> I32_OR_NONE = new FieldType<>("int|nil") {
        @Override void write(MessagePacker p, Integer v) throws IOException { p.packInt(v); }
        @Override Integer read(MessageUnpacker u) throws IOException { return toInt(readLong(u)); }
        @Override Integer readFast(FastPayloadReader in) { return in.readInt(); }
        @Override Object toJson(Integer v) { return (long) v; }
        @Override Integer fromJson(Object j) { return toInt(jsonLong(j)); }
    };

    /**
     * A length where -1 stands for Python None ({@code len(prompt_token_ids)}): an int in msgpack,
     * an int or null in JSON.
     */
    public static final FieldType<Integer> LENGTH_OR_NONE = new FieldType<>("int (-1: None) / int|null") {
        @Override void write(MessagePacker p, Integer v) throws IOException { p.packInt(v); }
        @Override Integer read(MessageUnpacker u) throws IOException { return toInt(readLong(u)); }
        @Override Integer readFast(FastPayloadReader in) { return in.readInt(); }
        @Override Object toJson(Integer v) { return v < 0 ? null : (long) v; }
        @Override Integer fromJson(Object j) { return toInt(jsonLong(j)); }
        @Override Integer absent() { return -1; }
        @Override boolean primitive() { return true; }
    };

    /** A bool. */
    public static final FieldType<Boolean> BOOL = new FieldType<>("bool") {
        @Override void write(MessagePacker p, Boolean v) throws IOException { p.packBoolean(v); }
        @Override Boolean read(MessageUnpacker u) throws IOException {
            expect(u, ValueType.BOOLEAN);
            return u.unpackBoolean();
        }
        @Override Boolean readFast(FastPayloadReader in) { return in.readBool(); }
        @Override Object toJson(Boolean v) { return v; }
        @Override Boolean fromJson(Object j) {
            if (j instanceof Boolean b) {
                return b;
            }
            throw new PayloadException("expected true or false, found " + PyValues.describe(j));
        }
        @Override Boolean absent() { return false; }
        @Override boolean primitive() { return true; }
    };

    /** A UTF-8 string. */
    public static final FieldType<String> STR = new FieldType<>("str") {
        @Override void write(MessagePacker p, String v) throws IOException { p.packString(v); }
        @Override String read(MessageUnpacker u) throws IOException {
            expect(u, ValueType.STRING);
            return u.unpackString();
        }
        @Override String readFast(FastPayloadReader in) { return in.readString(); }
        @Override Object toJson(String v) { return v; }
        @Override String fromJson(Object j) {
            if (j instanceof String s) {
                return s;
            }
            throw new PayloadException("expected a string, found " + PyValues.describe(j));
        }
    };

    /**
     * A str that recurs a few names over and over (a layer name: one per layer and step): as
     * {@link #STR}, except that the fast reader hands out one instance per distinct name
     * ({@link FastPayloadReader#readRecurringString}), which also spares the reducers' sets
     * hashing a fresh copy per entry.
     */
    public static final FieldType<String> RECURRING_STR = new FieldType<>("str") {
        @Override void write(MessagePacker p, String v) throws IOException { STR.write(p, v); }
        @Override String read(MessageUnpacker u) throws IOException { return STR.read(u); }
        @Override String readFast(FastPayloadReader in) { return in.readRecurringString(); }
        @Override Object toJson(String v) { return STR.toJson(v); }
        @Override String fromJson(Object j) { return STR.fromJson(j); }
    };

    /** Raw bytes: msgpack bin, a base64 string in JSON. */
    public static final FieldType<byte[]> BYTES = new FieldType<>("bin / base64 str") {
        @Override void write(MessagePacker p, byte[] v) throws IOException {
            p.packBinaryHeader(v.length);
            p.writePayload(v);
        }
        @Override byte[] read(MessageUnpacker u) throws IOException {
            expect(u, ValueType.BINARY);
            return u.readPayload(u.unpackBinaryHeader());
        }
        @Override byte[] readFast(FastPayloadReader in) { return in.readBinary(); }
        @Override Object toJson(byte[] v) { return Base64.getEncoder().encodeToString(v); }
        @Override byte[] fromJson(Object j) {
            if (!(j instanceof String s)) {
                throw new PayloadException("expected a base64 string, found " + PyValues.describe(j));
            }
            try {
                return Base64.getDecoder().decode(s);
            } catch (IllegalArgumentException e) {
                throw new PayloadException("not base64: " + e.getMessage());
            }
        }
        @Override String render(byte[] v) { return Render.hex(v, 24); }
    };

    /**
     * A transfer id as the params carry it: any Python value. {@link TransferId#NONE} is the null
     * value (nil); {@link #transferId} reads a null back as it.
     */
    public static final FieldType<TransferId> TRANSFER_ID = new FieldType<>("any") {
        @Override void write(MessagePacker p, TransferId v) throws IOException {
            MsgOut out = MsgOut.of(p);
            switch (v) {
                case TransferId.Str s -> out.str(s.value());
                case TransferId.Int i -> out.int64(i.value());
                case TransferId.None n -> out.nil();
                case TransferId.Bytes b -> out.bin(b.value());
                case TransferId.Other o -> PyValues.pack(out, o.value());
                case TransferId.Unpackable u -> throw new IllegalArgumentException(u.why());
            }
        }
        @Override TransferId read(MessageUnpacker u) throws IOException { return TransferId.of(PyJson.unpack(u)); }
        @Override TransferId readFast(FastPayloadReader in) { return TransferId.of(in.readPy()); }
        @Override Object toJson(TransferId v) {
            return switch (v) {
                case TransferId.Str s -> s.value();
                case TransferId.Int i -> i.value();
                case TransferId.None n -> null;
                case TransferId.Bytes b -> PyJson.toJson(b.value());
                case TransferId.Other o -> PyJson.toJson(o.value().toObject());
                case TransferId.Unpackable u -> throw new IllegalArgumentException(u.why());
            };
        }
        @Override TransferId fromJson(Object j) { return TransferId.of(PyJson.fromJson(j)); }
        @Override String render(TransferId v) { return Render.py(v); }
    };

    /** The field value of a transfer id: {@code null} for {@link TransferId#NONE} (written as nil). */
    static TransferId field(TransferId id) {
        return id.isNone() ? null : id;
    }

    /** A transfer id read back from its field: {@link TransferId#NONE} for {@code null}. */
    static TransferId transferId(Object v) {
        return v == null ? TransferId.NONE : (TransferId) v;
    }

    /** {@code kv_transfer_params}: a map with string keys and Python values. */
    public static final FieldType<KvParams> PARAMS = new FieldType<>("map") {
        @Override void write(MessagePacker p, KvParams v) throws IOException { PyValues.pack(p, v); }
        @Override KvParams read(MessageUnpacker u) throws IOException {
            expect(u, ValueType.MAP);
            return PyJson.unpackParams(u);
        }
        @Override KvParams readFast(FastPayloadReader in) { return in.readParams(); }
        @Override Object toJson(KvParams v) { return PyJson.toJson(v); }
        @Override KvParams fromJson(Object j) {
            if (!(j instanceof Map<?, ?>)) {
                throw new PayloadException("expected an object, found " + PyValues.describe(j));
            }
            return PyJson.paramsOf(PyJson.fromJson(j));
        }
        @Override String render(KvParams v) { return Render.py(v); }
    };

    // ------------------------------------------------------------------ lists

    /** Block ids per KV-cache group: an array of int arrays. */
    public static final FieldType<BlockGroups> BLOCKS = new FieldType<>("[[int]]") {
        @Override void write(MessagePacker p, BlockGroups v) throws IOException { PyValues.pack(p, v); }
        @Override BlockGroups read(MessageUnpacker u) throws IOException {
            int n = arrayHeader(u);
            int[][] g = new int[n][];
            for (int i = 0; i < n; i++) {
                g[i] = readInts(u);
            }
            return BlockGroups.of(g);
        }
        @Override BlockGroups readFast(FastPayloadReader in) {
            int n = in.arrayHeader();
            if (n > in.remaining()) {
                throw FastPayloadReader.FALLBACK; // each group takes a byte at least
            }
            int[][] g = new int[n][];
            for (int i = 0; i < n; i++) {
                g[i] = in.readInts();
            }
            return BlockGroups.of(g);
        }
        @Override Object toJson(BlockGroups v) { return v.toGroupedValue(); }
        @Override BlockGroups fromJson(Object j) {
            List<?> l = jsonList(j);
            int[][] g = new int[l.size()][];
            for (int i = 0; i < g.length; i++) {
                try {
                    g[i] = jsonInts(l.get(i));
                } catch (PayloadException e) {
                    throw e.in("group " + i);
                }
            }
            return BlockGroups.of(g);
        }
        @Override String render(BlockGroups v) { return Render.blocks(v); }
    };

    /** Block ids as an {@code int[]}. */
    public static final FieldType<int[]> INT_ARRAY = new FieldType<>("[int]") {
        @Override void write(MessagePacker p, int[] v) throws IOException { PyValues.packInts(MsgOut.of(p), v); }
        @Override int[] read(MessageUnpacker u) throws IOException { return readInts(u); }
        @Override int[] readFast(FastPayloadReader in) { return in.readInts(); }
        @Override Object toJson(int[] v) { return BlockGroups.flatValue(v); }
        @Override int[] fromJson(Object j) { return jsonInts(j); }
        @Override String render(int[] v) { return Render.ints(v); }
    };

    /** Ints as a {@code List<Integer>}. */
    public static final FieldType<List<Integer>> INT_LIST = new FieldType<>("[int]") {
        @Override void write(MessagePacker p, List<Integer> v) throws IOException {
            p.packArrayHeader(v.size());
            for (Integer i : v) {
                p.packInt(i);
            }
        }
        @Override List<Integer> read(MessageUnpacker u) throws IOException {
            int[] a = readInts(u);
            List<Integer> l = new ArrayList<>(a.length);
            for (int i : a) {
                l.add(i);
            }
            return l;
        }
        @Override List<Integer> readFast(FastPayloadReader in) {
            int[] a = in.readInts();
            List<Integer> l = new ArrayList<>(a.length);
            for (int i : a) {
                l.add(i);
            }
            return l;
        }
        @Override Object toJson(List<Integer> v) {
            List<Object> l = new ArrayList<>(v.size());
            for (Integer i : v) {
                l.add((long) i);
            }
            return l;
        }
        @Override List<Integer> fromJson(Object j) {
            int[] a = jsonInts(j);
            List<Integer> l = new ArrayList<>(a.length);
            for (int i : a) {
                l.add(i);
            }
            return l;
        }
        @Override String render(List<Integer> v) { return Render.intList(v); }
    };

    /** Strings as a {@code List<String>} (request ids). */
    public static final FieldType<List<String>> STR_LIST = new FieldType<>("[str]") {
        @Override void write(MessagePacker p, List<String> v) throws IOException {
            p.packArrayHeader(v.size());
            for (String s : v) {
                if (s == null) {
                    p.packNil();
                } else {
                    p.packString(s);
                }
            }
        }
        @Override List<String> read(MessageUnpacker u) throws IOException {
            int n = arrayHeader(u);
            List<String> l = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                l.add(Schema.isNil(u) ? null : STR.read(u));
            }
            return l;
        }
        @Override List<String> readFast(FastPayloadReader in) {
            int n = in.arrayHeader();
            if (n > in.remaining()) {
                throw FastPayloadReader.FALLBACK; // each element takes a byte at least
            }
            List<String> l = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                l.add(in.nil() ? null : in.readString());
            }
            return l;
        }
        @Override Object toJson(List<String> v) { return new ArrayList<Object>(v); }
        @Override List<String> fromJson(Object j) {
            List<?> l = jsonList(j);
            List<String> out = new ArrayList<>(l.size());
            for (int i = 0; i < l.size(); i++) {
                Object o = l.get(i);
                if (o != null && !(o instanceof String)) {
                    throw new PayloadException("element " + i + ": expected a string, found " + PyValues.describe(o));
                }
                out.add((String) o);
            }
            return out;
        }
        @Override String render(List<String> v) { return Render.strs(v); }
    };

    // ------------------------------------------------------------------ enums

    /** A {@link RequestPhase}: its permanent code in msgpack, its name in JSON. */
    public static final FieldType<RequestPhase> PHASE =
            coded("phase code / name", RequestPhase.class, RequestPhase::code, RequestPhase::byCode);

    /** An {@link AnomalyKind}: its permanent code in msgpack, its name in JSON. */
    public static final FieldType<AnomalyKind> ANOMALY =
            coded("anomaly code / name", AnomalyKind.class, AnomalyKind::code, FieldType::anomalyByCode);

    private static AnomalyKind anomalyByCode(int code) {
        for (AnomalyKind k : AnomalyKind.values()) {
            if (k.code() == code) {
                return k;
            }
        }
        return null;
    }

    /** An enum without codes, written by its constant name in both forms (names are permanent). */
    public static <E extends Enum<E>> FieldType<E> named(Class<E> type) {
        StringBuilder doc = new StringBuilder("str: ");
        for (E e : type.getEnumConstants()) {
            doc.append(e.ordinal() == 0 ? "" : "|").append(e.name());
        }
        return new FieldType<>(doc.toString()) {
            @Override void write(MessagePacker p, E v) throws IOException { p.packString(v.name()); }
            @Override E read(MessageUnpacker u) throws IOException { return byName(type, STR.read(u)); }
            @Override E readFast(FastPayloadReader in) { return byName(type, in.readString()); }
            @Override Object toJson(E v) { return v.name(); }
            @Override E fromJson(Object j) { return byName(type, STR.fromJson(j)); }
            @Override String render(E v) { return v.name(); }
        };
    }

    private static <E extends Enum<E>> E byName(Class<E> type, String name) {
        for (E e : type.getEnumConstants()) {
            if (e.name().equals(name)) {
                return e;
            }
        }
        throw new PayloadException("unknown " + type.getSimpleName() + " \"" + name + "\"");
    }

    private static <E extends Enum<E>> FieldType<E> coded(String doc, Class<E> type, ToIntFunction<E> code,
                                                          IntFunction<E> byCode) {
        return new FieldType<>(doc) {
            @Override void write(MessagePacker p, E v) throws IOException { p.packInt(code.applyAsInt(v)); }
            @Override E read(MessageUnpacker u) throws IOException {
                int c = toInt(readLong(u));
                E e = byCode.apply(c);
                if (e == null) {
                    throw new PayloadException(type.getSimpleName() + " code " + c + " is unknown to this version");
                }
                return e;
            }
            @Override E readFast(FastPayloadReader in) {
                E e = byCode.apply(in.readInt());
                if (e == null) {
                    throw FastPayloadReader.FALLBACK;
                }
                return e;
            }
            @Override Object toJson(E v) { return v.name(); }
            @Override E fromJson(Object j) { return byName(type, STR.fromJson(j)); }
            @Override String render(E v) { return v.name(); }
        };
    }

    // ------------------------------------------------------------------ nested records

    /**
     * A list of nested records: an array of field arrays in msgpack (the same append-only rule as
     * payloads), an array of objects in JSON.
     */
    public static <R> FieldType<List<R>> listOf(Schema<R> schema) {
        return new FieldType<>("[" + schema.type().getSimpleName() + "]") {
            @Override void write(MessagePacker p, List<R> v) throws IOException {
                p.packArrayHeader(v.size());
                for (R r : v) {
                    schema.write(p, r);
                }
            }
            @Override List<R> read(MessageUnpacker u) throws IOException {
                int n = arrayHeader(u);
                List<R> l = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    l.add(schema.read(u, 0));
                }
                return l;
            }
            @Override List<R> readFast(FastPayloadReader in) {
                int n = in.arrayHeader();
                if (n > in.remaining()) {
                    throw FastPayloadReader.FALLBACK; // each element takes a byte at least
                }
                List<R> l = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    l.add(schema.readFast(in, 0));
                }
                return l;
            }
            @Override Object toJson(List<R> v) {
                List<Object> l = new ArrayList<>(v.size());
                for (R r : v) {
                    l.add(schema.toJson(r));
                }
                return l;
            }
            @Override List<R> fromJson(Object j) {
                List<?> l = jsonList(j);
                List<R> out = new ArrayList<>(l.size());
                for (int i = 0; i < l.size(); i++) {
                    if (!(l.get(i) instanceof Map<?, ?> m)) {
                        throw new PayloadException("element " + i + ": expected an object, found "
                                + PyValues.describe(l.get(i)));
                    }
                    try {
                        out.add(schema.fromJson(castMap(m), 0, java.util.Set.of()));
                    } catch (PayloadException e) {
                        throw e.in("element " + i);
                    }
                }
                return out;
            }
            @Override String render(List<R> v) { return Render.list(v, schema::dissect); }
        };
    }

    /**
     * One nested record: its field array in msgpack, an object in JSON (the same append-only rule
     * as a payload).
     */
    public static <R> FieldType<R> one(Schema<R> schema) {
        return new FieldType<>(schema.type().getSimpleName()) {
            @Override void write(MessagePacker p, R v) throws IOException { schema.write(p, v); }
            @Override R read(MessageUnpacker u) throws IOException { return schema.read(u, 0); }
            @Override R readFast(FastPayloadReader in) { return schema.readFast(in, 0); }
            @Override Object toJson(R v) { return schema.toJson(v); }
            @Override R fromJson(Object j) {
                if (!(j instanceof Map<?, ?> m)) {
                    throw new PayloadException("expected an object, found " + PyValues.describe(j));
                }
                return schema.fromJson(castMap(m), 0, java.util.Set.of());
            }
            @Override String render(R v) { return schema.dissect(v); }
        };
    }

    // ------------------------------------------------------------------ rendering

    /** The value in a dissector line; JSON text unless the type knows better. */
    String render(T v) {
        return Json.write(toJson(v));
    }

    @SuppressWarnings("unchecked")
    final String renderAny(Object v) {
        return v == null ? "None" : render((T) v);
    }

    // ------------------------------------------------------------------ helpers

    static void expect(MessageUnpacker u, ValueType t) throws IOException {
        ValueType found = u.getNextFormat().getValueType();
        if (found != t) {
            throw new PayloadException("expected " + t.name().toLowerCase() + ", found " + found.name().toLowerCase());
        }
    }

    static long readLong(MessageUnpacker u) throws IOException {
        expect(u, ValueType.INTEGER);
        try {
            return u.unpackLong();
        } catch (org.msgpack.core.MessageIntegerOverflowException e) {
            throw new PayloadException("integer does not fit in 64 bits");
        }
    }

    static int arrayHeader(MessageUnpacker u) throws IOException {
        expect(u, ValueType.ARRAY);
        return u.unpackArrayHeader();
    }

    static int[] readInts(MessageUnpacker u) throws IOException {
        int n = arrayHeader(u);
        int[] a = new int[n];
        for (int i = 0; i < n; i++) {
            a[i] = toInt(readLong(u));
        }
        return a;
    }

    static int toInt(long v) {
        if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
            throw new PayloadException("integer " + v + " does not fit in 32 bits");
        }
        return (int) v;
    }

    static long jsonLong(Object j) {
        if (j instanceof Long l) {
            return l;
        }
        if (j instanceof Integer i) {
            return i;
        }
        throw new PayloadException("expected an integer, found " + PyValues.describe(j));
    }

    static List<?> jsonList(Object j) {
        if (j instanceof List<?> l) {
            return l;
        }
        throw new PayloadException("expected a list, found " + PyValues.describe(j));
    }

    static int[] jsonInts(Object j) {
        List<?> l = jsonList(j);
        int[] a = new int[l.size()];
        for (int i = 0; i < a.length; i++) {
            try {
                a[i] = toInt(jsonLong(l.get(i)));
            } catch (PayloadException e) {
                throw e.in("element " + i);
            }
        }
        return a;
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> castMap(Map<?, ?> m) {
        return (Map<String, Object>) m;
    }
}
