package io.kvledger.core.model;

import io.kvledger.core.moriio.ExtraConfig;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A request's {@code kv_transfer_params}: an insertion-ordered map of Python values (null, Boolean,
 * Long, Double, String, List, Map), read with Python semantics (truthiness, {@code get} with a
 * default, {@code setdefault}).
 *
 * <p>The connector mutates the live params of a request (it sets {@code transfer_id} and clears
 * {@code do_remote_prefill}), so the reducer holds a private copy per request: events carry
 * their own instance and the reducer {@link #copy()}s it on entry.
 */
public final class KvParams {

    private LinkedHashMap<String, Object> values;
    /** Copy on write: set when another KvParams may share {@link #values}. */
    private boolean shared;

    private KvParams(LinkedHashMap<String, Object> values) {
        this.values = values;
    }

    private KvParams(LinkedHashMap<String, Object> values, boolean shared) {
        this.values = values;
        this.shared = shared;
    }

    private void own() {
        if (shared) {
            values = new LinkedHashMap<>(values);
            shared = false;
        }
    }

    public static KvParams empty() {
        return new KvParams(new LinkedHashMap<>());
    }

    public static KvParams of(Map<String, ?> m) {
        return new KvParams(new LinkedHashMap<>(m));
    }

    /** Builds params from alternating keys and values. */
    public static KvParams of(Object... kv) {
        if (kv.length % 2 != 0) {
            throw new IllegalArgumentException("keys and values must alternate");
        }
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            Object v = kv[i + 1];
            m.put((String) kv[i], v instanceof Integer n ? Long.valueOf(n) : v);
        }
        return new KvParams(m);
    }

    /** An independent copy (copy on write: the entries are copied when either side next changes). */
    public KvParams copy() {
        shared = true;
        return new KvParams(values, true);
    }

    public boolean has(String key) {
        return values.containsKey(key);
    }

    /** {@code params.get(key)}: {@code null} when absent or None. */
    public Object get(String key) {
        return values.get(key);
    }

    /** {@code params.get(key, default)}: the default only when the key is absent. */
    public Object getOr(String key, Object fallback) {
        return values.containsKey(key) ? values.get(key) : fallback;
    }

    /** {@code bool(params.get(key))}. */
    public boolean truthy(String key) {
        return ExtraConfig.pythonTruthy(values.get(key));
    }

    /** The value as a string, or {@code null} when absent, None or not a string. */
    public String string(String key) {
        return values.get(key) instanceof String s ? s : null;
    }

    /**
     * {@code int(params.get(key, default))} for integral values (Long, Integer, integral strings,
     * booleans). Returns {@code null} when the value cannot be read as an int (Python would raise).
     */
    public Long integer(String key, long fallback) {
        if (!values.containsKey(key)) {
            return fallback;
        }
        return asLong(values.get(key));
    }

    /** Python {@code int(v)} for the value kinds params carry; {@code null} when it would raise. */
    public static Long asLong(Object v) {
        if (v instanceof Boolean b) {
            return b ? 1L : 0L;
        }
        if (v instanceof Double d) {
            return d.isNaN() || d.isInfinite() ? null : (long) d.doubleValue();
        }
        if (v instanceof Number n) {
            return n.longValue();
        }
        if (v instanceof String s) {
            try {
                return Long.parseLong(s.strip());
            } catch (NumberFormatException e) {
                return null;
            }
        }
        return null;
    }

    public void put(String key, Object value) {
        own();
        values.put(key, value instanceof Integer n ? Long.valueOf(n) : value);
    }

    /** {@code params.setdefault(key, value)}: sets only when the key is absent. */
    public void setDefault(String key, Object value) {
        if (!values.containsKey(key)) {
            own();
            values.put(key, value);
        }
    }

    public boolean isEmpty() {
        return values.isEmpty();
    }

    public int size() {
        return values.size();
    }

    /** An unmodifiable view in insertion order. */
    public Map<String, Object> asMap() {
        return Collections.unmodifiableMap(values);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof KvParams p && p.values.equals(values);
    }

    @Override
    public int hashCode() {
        return values.hashCode();
    }

    @Override
    public String toString() {
        return values.toString();
    }
}
