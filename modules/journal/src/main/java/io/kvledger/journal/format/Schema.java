package io.kvledger.journal.format;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.msgpack.core.MessagePacker;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.ValueType;

/**
 * The payload layout of one record type: its fields in order, how to take a record apart and how
 * to build one. In msgpack a payload is an array of the field values in this order; in JSON an
 * object keyed by the field names.
 *
 * <p>Compatibility rule (append-only): a field is never removed, reordered or retyped; a new field
 * goes at the end and must be nullable or optional. A reader fills fields missing at the end of
 * an older payload with their defaults and skips extra fields at the end of a newer one.
 *
 * @param <R> the record type
 */
final class Schema<R> {

    /**
     * Builds a record from decoded fields ({@code atNs} is 0 for effects and nested records).
     * {@code v} holds the fields only during the call (the fast reader reuses it for the next
     * payload): a builder takes the values out of it and keeps no reference to it.
     */
    @FunctionalInterface
    public interface Builder<R> {
        R build(long atNs, Values v);
    }

    private final Class<R> type;
    private final List<Field> fields;
    private final Function<R, Object[]> extract;
    private final Builder<R> builder;
    private final Function<R, String> dissector;
    /** For {@link #readFast}: the fields' types, whether each is primitive, and how to read each. */
    private final FieldType<?>[] types;
    private final boolean[] primitive;
    private final byte[] fastKinds;

    // How readFast reads a field: the common types directly (the same call their readFast makes),
    // any other through its type's readFast (a call on one of many FieldType classes).
    private static final byte OTHER = 0;
    private static final byte I32 = 1;
    private static final byte I64 = 2;
    private static final byte BOOL = 3;
    private static final byte STR = 4;
    private static final byte RECURRING_STR = 5;
    private static final byte INT_ARRAY = 6;

    private Schema(Class<R> type, List<Field> fields, Function<R, Object[]> extract, Builder<R> builder,
                   Function<R, String> dissector) {
        this.type = type;
        this.fields = fields;
        this.extract = extract;
        this.builder = builder;
        this.dissector = dissector;
        int n = fields.size();
        this.types = new FieldType<?>[n];
        this.primitive = new boolean[n];
        this.fastKinds = new byte[n];
        for (int i = 0; i < n; i++) {
            FieldType<?> t = fields.get(i).type();
            types[i] = t;
            primitive[i] = t.primitive();
            fastKinds[i] = t == FieldType.I32 ? I32 : t == FieldType.I64 ? I64 : t == FieldType.BOOL ? BOOL
                    : t == FieldType.STR ? STR : t == FieldType.RECURRING_STR ? RECURRING_STR
                    : t == FieldType.INT_ARRAY ? INT_ARRAY : OTHER;
        }
    }

    /**
     * A schema.
     *
     * @param extract   the record's field values in the order of {@code fields}
     * @param dissector the one-line rendering of a record (without the type name)
     */
    public static <R> Schema<R> of(Class<R> type, Function<R, Object[]> extract, Builder<R> builder,
                                   Function<R, String> dissector, Field... fields) {
        return new Schema<>(type, List.of(fields), extract, builder, dissector);
    }

    public Class<R> type() {
        return type;
    }

    public List<Field> fields() {
        return fields;
    }

    /** Writes {@code r} as a msgpack array of its fields. */
    public void write(MessagePacker p, R r) throws IOException {
        Object[] vals = extract.apply(r);
        int n = vals.length;
        while (n > 0 && vals[n - 1] == null && fields.get(n - 1).omitNull()) {
            n--; // readers fill missing trailing fields with null
        }
        p.packArrayHeader(n);
        for (int i = 0; i < n; i++) {
            Object v = vals[i];
            if (v == null) {
                p.packNil();
            } else {
                try {
                    fields.get(i).type().writeAny(p, v);
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException(type.getSimpleName() + "." + fields.get(i).name() + ": "
                            + e.getMessage(), e);
                }
            }
        }
    }

    /** Reads a record written by {@link #write} (or by an older or newer version of it). */
    public R read(MessageUnpacker u, long atNs) throws IOException {
        if (u.getNextFormat().getValueType() != ValueType.ARRAY) {
            throw new PayloadException("expected an array of fields, found "
                    + u.getNextFormat().getValueType().name().toLowerCase());
        }
        int n = u.unpackArrayHeader();
        Object[] vals = new Object[fields.size()];
        for (int i = 0; i < vals.length; i++) {
            Field f = fields.get(i);
            if (i >= n) {
                vals[i] = f.type().absent();
            } else if (isNil(u)) {
                if (f.type().primitive()) {
                    throw new PayloadException(f.name() + ": nil for a " + f.type().doc());
                }
                vals[i] = null;
            } else {
                try {
                    vals[i] = f.type().read(u);
                } catch (PayloadException e) {
                    throw e.in(f.name());
                }
            }
        }
        for (int i = vals.length; i < n; i++) {
            u.skipValue();
        }
        return build(atNs, vals);
    }

    /**
     * {@link #read} for a well-formed payload, by {@link FastPayloadReader}: the same fields, the
     * same defaults for missing trailing fields, the same builder; anything else throws
     * ({@link FastPayloadReader.Fallback}, or the builder's {@link PayloadException}).
     */
    R readFast(FastPayloadReader in, long atNs) {
        int n = in.arrayHeader();
        FieldType<?>[] ts = types;
        int size = ts.length;
        if (n > size) {
            throw FastPayloadReader.FALLBACK; // fields of a newer version: the generic path skips them
        }
        // the reader's field array for this nesting depth, not a new one per payload: builders
        // read their values and keep none of them through it (cleared on the way out)
        Values v = in.borrowValues(size);
        Object[] vals = v.slots();
        try {
            for (int i = 0; i < size; i++) {
                if (i >= n) {
                    vals[i] = ts[i].absent();
                } else if (in.nil()) {
                    if (primitive[i]) {
                        throw FastPayloadReader.FALLBACK;
                    }
                    vals[i] = null;
                } else {
                    vals[i] = switch (fastKinds[i]) {
                        case I32 -> Integer.valueOf(in.readInt());
                        case I64 -> Long.valueOf(in.readLong());
                        case BOOL -> Boolean.valueOf(in.readBool());
                        case STR -> in.readString();
                        case RECURRING_STR -> in.readRecurringString();
                        case INT_ARRAY -> in.readInts();
                        default -> ts[i].readFast(in);
                    };
                }
            }
            return build(atNs, v);
        } finally {
            in.returnValues(v, size);
        }
    }

    static boolean isNil(MessageUnpacker u) throws IOException {
        if (u.getNextFormat().getValueType() == ValueType.NIL) {
            u.unpackNil();
            return true;
        }
        return false;
    }

    private R build(long atNs, Object[] vals) {
        return build(atNs, new Values(vals));
    }

    private R build(long atNs, Values vals) {
        try {
            return builder.build(atNs, vals);
        } catch (RuntimeException e) {
            throw new PayloadException("cannot build a " + type.getSimpleName() + ": " + e, e);
        }
    }

    /** The JSON object of {@code r}'s fields, in schema order. */
    public Map<String, Object> toJson(R r) {
        Object[] vals = extract.apply(r);
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < vals.length; i++) {
            if (vals[i] == null && fields.get(i).omitNull()) {
                continue;
            }
            m.put(fields.get(i).name(), vals[i] == null ? null : fields.get(i).type().toJsonAny(vals[i]));
        }
        return m;
    }

    /**
     * Builds a record from a JSON object.
     *
     * @param ignored keys that belong to the envelope ({@code seq}, {@code kind}, ...) and are not
     *                payload fields; any other key that is not a field is an error
     */
    public R fromJson(Map<String, Object> m, long atNs, Set<String> ignored) {
        for (String k : m.keySet()) {
            if (!ignored.contains(k) && fields.stream().noneMatch(f -> f.name().equals(k))) {
                throw new PayloadException("unknown field \"" + k + "\" (fields: " + fieldNames() + ")");
            }
        }
        Object[] vals = new Object[fields.size()];
        for (int i = 0; i < vals.length; i++) {
            Field f = fields.get(i);
            if (!m.containsKey(f.name())) {
                if (!f.optional()) {
                    throw new PayloadException("missing field \"" + f.name() + "\"");
                }
                vals[i] = f.type().absent();
                continue;
            }
            Object j = m.get(f.name());
            if (j == null) {
                if (!f.nullable()) {
                    throw new PayloadException(f.name() + ": must not be null");
                }
                vals[i] = null;
                continue;
            }
            try {
                vals[i] = f.type().fromJson(j);
            } catch (PayloadException e) {
                throw e.in(f.name());
            }
        }
        return build(atNs, vals);
    }

    /** The field names, comma-separated. */
    public String fieldNames() {
        StringBuilder b = new StringBuilder();
        for (Field f : fields) {
            b.append(b.isEmpty() ? "" : ", ").append(f.name());
        }
        return b.toString();
    }

    /** The one-line rendering of {@code r}'s fields. */
    public String dissect(R r) {
        return dissector.apply(r);
    }

    /** The rendering of one field value, as dissectors print it. */
    public String render(int fieldIndex, Object value) {
        return fields.get(fieldIndex).type().renderAny(value);
    }
}
