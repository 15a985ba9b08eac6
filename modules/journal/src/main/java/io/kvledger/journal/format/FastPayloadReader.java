package io.kvledger.journal.format;

import io.kvledger.core.model.KvParams;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;

/**
 * A faster way to read the payloads of well-formed entries, for passes over large journals
 * ({@code replay}, {@code hangs}): it reads the msgpack bytes in place, without msgpack-core's
 * unpacker and its per-value format lookups. (Handing out one {@link String} instance for
 * strings that recur, to save the reducers' maps rehashing them, was tried: it cost more in
 * lookups than it saved.)
 *
 * <p>It gives the same records as {@link EntryType#read} on every payload it accepts, field by
 * field through the same {@link Schema} builders; it accepts only what it reads plainly (the
 * expected msgpack types, no extra trailing fields; Python values as {@link io.kvledger.wire.PyValues#unpack}
 * gives them, params maps only with distinct string keys) and refuses everything else with {@link #read}
 * returning {@code null}, so that the caller decodes that payload with {@link EntryType#read},
 * which produces the record or the exact error as before.
 *
 * <p>Not thread-safe: one per pass over one journal.
 */
public final class FastPayloadReader {

    /** Thrown (without a stack) when a payload leaves the fast path. */
    static final class Fallback extends RuntimeException {
        Fallback() {
            super("not on the fast path", null, false, false);
        }
    }

    static final Fallback FALLBACK = new Fallback();

    private byte[] b;
    int pos;
    private int end;
    /**
     * The keys of the last params map read, interned: the next map with the same keys (in a
     * journal, nearly every one) shares the array ({@link KvParams#ofDistinct} never writes it),
     * and the reducers' lookups by literal keys then match them by identity.
     */
    private String[] lastKeys = new String[0];
    /**
     * The strings {@link #readRecurringString} read last, with their msgpack bytes, in the order
     * first read; {@link #recentHint} is where the next one is looked for first (after the last
     * hit: layer names come round in order).
     */
    private final String[] recent = new String[RECENT];
    private final byte[][] recentBytes = new byte[RECENT][];
    private int recentNext;
    private int recentHint;
    private int recentCount;
    private static final int RECENT = 128;

    /**
     * The field arrays {@link Schema#readFast} fills, one per nesting depth (a field whose
     * values are records of another schema reads them one level down): a payload's values are
     * read into the array of its depth and built into its record, and the array is cleared and
     * handed back, instead of a new array and {@link Values} per payload (a tenth of what a
     * {@code replay} over a large journal allocated).
     */
    private Values[] scratch = new Values[4];
    private int depth;

    public FastPayloadReader() {}

    /** The field array of the next nesting depth, at least {@code size} long. */
    Values borrowValues(int size) {
        int d = depth++;
        if (d == scratch.length) {
            scratch = Arrays.copyOf(scratch, 2 * d);
        }
        Values v = scratch[d];
        if (v == null || v.slots().length < size) {
            v = new Values(new Object[Math.max(size, 8)]);
            scratch[d] = v;
        }
        return v;
    }

    /** Hands back the array {@link #borrowValues} gave, its first {@code size} values cleared. */
    void returnValues(Values v, int size) {
        v.clear(size);
        depth--;
    }

    /**
     * Reads the payload {@code b[from, to)} of an entry of {@code type}.
     *
     * @return the record, or {@code null} when the payload is not one this reader takes (then
     *         decode it with {@link EntryType#read})
     */
    public Object read(EntryType type, byte[] b, int from, int to, long atNs) {
        Schema<?> schema = type.schema();
        if (schema == null) {
            return null;
        }
        this.b = b;
        this.pos = from;
        this.end = to;
        try {
            return schema.readFast(this, atNs);
        } catch (RuntimeException e) {
            // anything unexpected (a type this reader does not take, a malformed payload, a
            // builder's refusal): the generic decoder reproduces the result, or the exact error
            return null;
        } finally {
            this.b = null;
        }
    }

    // ------------------------------------------------------------------ msgpack, big-endian

    private int u8() {
        if (pos >= end) {
            throw FALLBACK;
        }
        return b[pos++] & 0xff;
    }

    private int u16() {
        return u8() << 8 | u8();
    }

    /** A 32-bit length that a Java array can hold, or the generic path. */
    private int length32() {
        long l = u32();
        if (l > Integer.MAX_VALUE) {
            throw FALLBACK;
        }
        return (int) l;
    }

    /** Moves past {@code n} payload bytes (the generic path when they run past the end): where they start. */
    private int skip(int n) {
        if (n > end - pos) {
            throw FALLBACK;
        }
        int at = pos;
        pos += n;
        return at;
    }

    private long u32() {
        return ((long) u8() << 24) | (u8() << 16) | (u8() << 8) | u8();
    }

    private long s64() {
        return u32() << 32 | u32();
    }

    /** Bytes left in the payload. */
    int remaining() {
        return end - pos;
    }

    /** Whether the next value is nil; consumes it if so. */
    boolean nil() {
        if (pos < end && (b[pos] & 0xff) == 0xc0) {
            pos++;
            return true;
        }
        return false;
    }

    /** An array header (fixarray, array 16, array 32). */
    int arrayHeader() {
        int c = u8();
        if (c >= 0x90 && c <= 0x9f) {
            return c & 0x0f;
        }
        if (c == 0xdc) {
            return u16();
        }
        if (c == 0xdd) {
            return length32();
        }
        throw FALLBACK;
    }

    /** An integer of any width that fits in a signed 64 bits (as {@code FieldType.readLong}). */
    long readLong() {
        int c = u8();
        if (c <= 0x7f) {
            return c;
        }
        if (c >= 0xe0) {
            return (byte) c;
        }
        return switch (c) {
            case 0xcc -> u8();
            case 0xcd -> u16();
            case 0xce -> u32();
            case 0xcf -> {
                long v = s64();
                if (v < 0) {
                    throw FALLBACK; // above Long.MAX_VALUE: the generic path says so
                }
                yield v;
            }
            case 0xd0 -> (byte) u8();
            case 0xd1 -> (short) u16();
            case 0xd2 -> (int) u32();
            case 0xd3 -> s64();
            default -> throw FALLBACK;
        };
    }

    /** An integer that fits in 32 bits (as {@code FieldType.toInt(readLong(u))}). */
    int readInt() {
        long v = readLong();
        if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
            throw FALLBACK;
        }
        return (int) v;
    }

    boolean readBool() {
        int c = u8();
        if (c == 0xc2) {
            return false;
        }
        if (c == 0xc3) {
            return true;
        }
        throw FALLBACK;
    }

    int[] readInts() {
        int n = arrayHeader();
        if (n > remaining()) {
            throw FALLBACK; // each int takes a byte at least
        }
        int[] a = new int[n];
        byte[] b = this.b;
        int e = end;
        for (int i = 0; i < n; i++) {
            // block ids: a fixint or a uint 16 nearly always, read here; anything else by readInt
            int p = pos;
            int c = p < e ? b[p] & 0xff : -1;
            if (c >= 0 && c <= 0x7f) {
                a[i] = c;
                pos = p + 1;
            } else if (c == 0xcd && p + 3 <= e) {
                a[i] = (b[p + 1] & 0xff) << 8 | (b[p + 2] & 0xff);
                pos = p + 3;
            } else {
                a[i] = readInt();
            }
        }
        return a;
    }

    /** Whether the next value is a msgpack str (without consuming it). */
    boolean atString() {
        if (pos >= end) {
            return false;
        }
        int c = b[pos] & 0xff;
        return (c >= 0xa0 && c <= 0xbf) || c == 0xd9 || c == 0xda || c == 0xdb;
    }

    /** A str, decoded as msgpack-core does ({@code new String(bytes, UTF_8)}). */
    String readString() {
        int c = u8();
        int n;
        if (c >= 0xa0 && c <= 0xbf) {
            n = c & 0x1f;
        } else if (c == 0xd9) {
            n = u8();
        } else if (c == 0xda) {
            n = u16();
        } else if (c == 0xdb) {
            n = length32();
        } else {
            throw FALLBACK;
        }
        int at = skip(n);
        return new String(b, at, n, StandardCharsets.UTF_8);
    }

    /**
     * {@link #readString}, but the same instance for the same bytes as one of the last
     * {@value #RECENT} distinct strings read here (equal bytes decode to equal strings).
     */
    String readRecurringString() {
        if (pos < end) {
            int c = b[pos] & 0xff;
            int at;
            int n;
            if (c >= 0xa0 && c <= 0xbf) {
                at = pos + 1;
                n = c & 0x1f;
            } else if (c == 0xd9 && pos + 1 < end) {
                at = pos + 2;
                n = b[pos + 1] & 0xff;
            } else {
                return readString();
            }
            if (n > end - at) {
                throw FALLBACK;
            }
            int filled = recentCount;
            for (int k = 0, i = recentHint; k < filled; k++, i = i + 1 == filled ? 0 : i + 1) {
                byte[] r = recentBytes[i];
                if (r.length == n && Arrays.equals(b, at, at + n, r, 0, n)) {
                    pos = at + n;
                    recentHint = i + 1 == filled ? 0 : i + 1;
                    return recent[i];
                }
            }
            String s = readString();
            recent[recentNext] = s;
            recentBytes[recentNext] = Arrays.copyOfRange(b, at, at + n);
            recentNext = (recentNext + 1) & (RECENT - 1);
            recentCount = Math.min(recentCount + 1, RECENT);
            return s;
        }
        return readString();
    }

    /** A bin payload, copied. */
    byte[] readBinary() {
        int c = u8();
        int n;
        if (c == 0xc4) {
            n = u8();
        } else if (c == 0xc5) {
            n = u16();
        } else if (c == 0xc6) {
            n = length32();
        } else {
            throw FALLBACK;
        }
        int at = skip(n);
        return Arrays.copyOfRange(b, at, at + n);
    }

    /**
     * One Python value, as {@link io.kvledger.wire.PyValues#unpack} gives it: {@code null}, {@link Boolean},
     * {@link Long}, {@link Double}, {@link String}, {@code byte[]}, {@link ArrayList},
     * {@link LinkedHashMap}; anything else (an integer above {@link Long#MAX_VALUE}, a float32, an
     * extension type, nesting deeper than {@link PyValues#MAX_DEPTH}) leaves the fast path.
     */
    Object readPy() {
        return readPy(0);
    }

    private Object readPy(int depth) {
        if (depth > io.kvledger.wire.PyValues.MAX_DEPTH || pos >= end) {
            throw FALLBACK;
        }
        int c = b[pos] & 0xff;
        if (c <= 0x7f || c >= 0xe0 || (c >= 0xcc && c <= 0xd3)) {
            return readLong(); // Long.valueOf, as the generic path's boxing
        }
        if ((c >= 0xa0 && c <= 0xbf) || (c >= 0xd9 && c <= 0xdb)) {
            return readString();
        }
        if (c >= 0x90 && c <= 0x9f || c == 0xdc || c == 0xdd) {
            int n = arrayHeader();
            if (n > remaining()) {
                throw FALLBACK; // each element takes a byte at least
            }
            ArrayList<Object> l = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                l.add(readPy(depth + 1));
            }
            return l;
        }
        if (c >= 0x80 && c <= 0x8f || c == 0xde || c == 0xdf) {
            int n = mapHeader();
            LinkedHashMap<Object, Object> m = new LinkedHashMap<>();
            for (int i = 0; i < n; i++) {
                Object k = readPy(depth + 1);
                m.put(k, readPy(depth + 1));
            }
            return m;
        }
        switch (c) {
            case 0xc0 -> {
                pos++;
                return null;
            }
            case 0xc2 -> {
                pos++;
                return Boolean.FALSE;
            }
            case 0xc3 -> {
                pos++;
                return Boolean.TRUE;
            }
            case 0xcb -> {
                pos++;
                return Double.longBitsToDouble(s64());
            }
            case 0xc4, 0xc5, 0xc6 -> {
                return readBinary();
            }
            default -> throw FALLBACK;
        }
    }

    /** A map header (fixmap, map 16, map 32), at most as many entries as two bytes each can hold. */
    private int mapHeader() {
        int c = u8();
        int n;
        if (c >= 0x80 && c <= 0x8f) {
            n = c & 0x0f;
        } else if (c == 0xde) {
            n = u16();
        } else if (c == 0xdf) {
            n = length32();
        } else {
            throw FALLBACK;
        }
        if (n > remaining() / 2) {
            throw FALLBACK; // each key and value takes a byte at least
        }
        return n;
    }

    /**
     * {@code kv_transfer_params}: a map whose keys are distinct strings (a repeated key, which
     * the generic path resolves as a dict does, leaves the fast path, as does any other key).
     */
    KvParams readParams() {
        int n = mapHeader();
        String[] prev = lastKeys;
        // prev as long as every key so far is prev's
        String[] keys = n == prev.length ? prev : new String[n];
        Object[] vals = new Object[n];
        for (int i = 0; i < n; i++) {
            if (keys == prev && matchesKey(prev[i])) {
                pos += 1 + prev[i].length();
            } else {
                if (keys == prev) {
                    keys = Arrays.copyOf(prev, n); // its keys before i are these
                }
                if (!atString()) {
                    throw FALLBACK; // the generic path names the key that is not a string
                }
                String k = readString().intern();
                for (int j = 0; j < i; j++) {
                    if (keys[j].equals(k)) {
                        throw FALLBACK;
                    }
                }
                keys[i] = k;
            }
            vals[i] = readPy(1);
        }
        lastKeys = keys;
        return KvParams.ofDistinct(keys, vals);
    }

    /**
     * Whether the next value is the fixstr of the ASCII string {@code k} (up to 31 bytes; a
     * longer key is compared as any new key).
     */
    private boolean matchesKey(String k) {
        int n = k.length();
        if (n > 31 || pos + 1 + n > end || (b[pos] & 0xff) != (0xa0 | n)) {
            return false;
        }
        for (int i = 0; i < n; i++) {
            int ch = k.charAt(i);
            if (ch >= 0x80 || b[pos + 1 + i] != ch) {
                return false;
            }
        }
        return true;
    }
}
