package io.kvledger.journal.format;

import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.TransferId;
import io.kvledger.journal.json.Json;
import java.util.List;
import java.util.function.Function;

/**
 * Helpers for the dissectors' one-line renderings: short, stable, ASCII-only for ids and lists
 * (long lists are cut after {@link #MAX_IDS} elements with a count of the rest).
 */
public final class Render {

    /** Elements of an id list printed before it is cut. */
    static final int MAX_IDS = 8;

    private Render() {}

    /** A Python value as compact JSON ({@code None} for null). */
    static String py(Object v) {
        if (v == null) {
            return "None";
        }
        try {
            return Json.write(PyJson.toJson(v));
        } catch (RuntimeException e) {
            return String.valueOf(v);
        }
    }

    /** A transfer id as compact JSON, as {@link #py(Object)} renders its Python value. */
    static String py(TransferId id) {
        return switch (id) {
            case TransferId.None n -> "None";
            case TransferId.Str s -> py(s.value());
            case TransferId.Int i -> py(i.value());
            case TransferId.Bytes b -> py(b.value());
            case TransferId.Other o -> py(o.value().toObject());
            case TransferId.Unpackable u -> u.text();
        };
    }

        /** A string, or {@code None}. */
    static String s(String v) {
        return v == null ? "None" : v;
    }

    static String ints(int[] ids) {
        if (ids == null) {
            return "None";
        }
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < ids.length && i < MAX_IDS; i++) {
            b.append(i == 0 ? "" : ",").append(ids[i]);
        }
        if (ids.length > MAX_IDS) {
            b.append(",...(+").append(ids.length - MAX_IDS).append(')');
        }
        return b.append(']').toString();
    }

    static String intList(List<Integer> ids) {
        if (ids == null) {
            return "None";
        }
        int[] a = new int[ids.size()];
        for (int i = 0; i < a.length; i++) {
            a[i] = ids.get(i);
        }
        return ints(a);
    }

    static String blocks(BlockGroups g) {
        if (g == null) {
            return "None";
        }
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < g.size(); i++) {
            b.append(i == 0 ? "" : ",").append(ints(g.group(i)));
        }
        return b.append(']').toString();
    }

    static String strs(List<String> l) {
        if (l == null) {
            return "None";
        }
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < l.size(); i++) {
            b.append(i == 0 ? "" : ",").append(s(l.get(i)));
        }
        return b.append(']').toString();
    }

    static <R> String list(List<R> l, Function<R, String> each) {
        if (l == null) {
            return "None";
        }
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < l.size(); i++) {
            b.append(i == 0 ? "" : ", ").append(each.apply(l.get(i)));
        }
        return b.append(']').toString();
    }

    /** The first {@code max} bytes as hex, with the total length. */
    public static String hex(byte[] bytes, int max) {
        if (bytes == null) {
            return "None";
        }
        StringBuilder b = new StringBuilder();
        b.append(bytes.length).append("B:");
        for (int i = 0; i < bytes.length && i < max; i++) {
            b.append(Character.forDigit((bytes[i] >> 4) & 0xf, 16)).append(Character.forDigit(bytes[i] & 0xf, 16));
        }
        if (bytes.length > max) {
            b.append("...");
        }
        return b.toString();
    }
}
