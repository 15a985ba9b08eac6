package io.kvledger.wire;

import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.PyValue;
import io.kvledger.core.model.TransferId;
import java.io.IOException;
import java.util.Arrays;
import java.util.List;

/**
 * The wire's encoders' packer: a strict {@link MsgpackWriter} (an unpaired surrogate is refused,
 * as Python's UTF-8 codec refuses it) into its own buffer, and {@link PyValues#packStrKeys} for
 * Python values, so that the bytes are Python's {@code msgpack.packb(use_bin_type=True)}'s and a
 * value that has no Python msgpack form is a {@link WireEncodingException}.
 *
 * <p>The typed methods ({@link #str}, {@link #integer}, {@link #transferId}, {@link #blockGroups},
 * ...) write a value straight from the field that holds it, with no map or list built first and
 * no boxing: the notify encoder and the engine bridge's replies ({@code io.kvledger.wire.bridge})
 * write their frames through them; {@link #params} writes the params as they came (their plain
 * values) and {@link #value(PyValue)} a {@link PyValue} (a transfer id of another type, the
 * bridge reply's extra entries).
 *
 * <p>Reusable ({@link #reset()}, {@link #toByteArray()}) and not thread-safe.
 */
public final class PyPacker {

    private final GrowableBytes buf = new GrowableBytes(256);
    private final MsgpackWriter w = new MsgpackWriter(buf, true);

    public PyPacker() {}

    PyPacker reset() {
        buf.length = 0;
        return this;
    }

    /** A fresh array with everything packed since {@link #reset()} (never reused: JeroMQ keeps it). */
    public byte[] toByteArray() {
        return Arrays.copyOf(buf.bytes, buf.length);
    }

    public PyPacker mapHeader(int n) {
        w.mapHeader(n);
        return this;
    }

    public PyPacker arrayHeader(int n) {
        w.arrayHeader(n);
        return this;
    }

    public PyPacker str(String s) {
        w.str(s);
        return this;
    }

    /** A str, or nil for {@code null}. */
    public PyPacker strOrNil(String s) {
        if (s == null) {
            w.nil();
        } else {
            w.str(s);
        }
        return this;
    }

    /**
     * A transfer id as the params held it: a switch over its forms, so the common ones (str, int,
     * None, bytes) are written directly; only {@link TransferId.Other} (a bool, a float, a big
     * int, a container) goes through the value codec, as its {@link PyValue}; an
     * {@link TransferId.Unpackable} is refused as the value codec refuses such a value.
     */
    public PyPacker transferId(TransferId id) {
        switch (id) {
            case TransferId.Str s -> w.str(s.value());
            case TransferId.Int i -> w.int64(i.value());
            case TransferId.None n -> w.nil();
            case TransferId.Bytes b -> w.bin(b.value());
            case TransferId.Other o -> value(o.value());
            case TransferId.Unpackable u -> throw new WireEncodingException("cannot pack as msgpack: " + u.why());
        }
        return this;
    }

    public PyPacker bool(boolean v) {
        w.bool(v);
        return this;
    }

    /** A list of str (each {@code null} as nil), or nil for {@code null}. */
    public PyPacker strsOrNil(List<String> l) {
        if (l == null) {
            w.nil();
            return this;
        }
        w.arrayHeader(l.size());
        for (String s : l) {
            strOrNil(s);
        }
        return this;
    }

    /** Block ids by group: a list of lists of ints (packed from the arrays, nothing boxed), or nil. */
    public PyPacker blockGroups(BlockGroups g) {
        if (g == null) {
            w.nil();
            return this;
        }
        w.arrayHeader(g.size());
        for (int i = 0; i < g.size(); i++) {
            int[] ids = g.group(i);
            w.ints(ids, 0, ids.length);
        }
        return this;
    }

    public PyPacker integer(long v) {
        w.int64(v);
        return this;
    }

    /** The 64 bits of an unsigned value (device pointers): 2^63 and more as uint64. */
    PyPacker uint64Bits(long bits) {
        w.uint64Bits(bits);
        return this;
    }

    PyPacker bin(byte[] b) {
        w.bin(b);
        return this;
    }

    public PyPacker nil() {
        w.nil();
        return this;
    }

    /** A {@link PyValue} (map keys str only): its switch, no type tests first. */
    public PyPacker value(PyValue v) {
        try {
            PyValues.packStrKeys(w, v);
        } catch (IllegalArgumentException e) {
            throw new WireEncodingException("cannot pack as msgpack: " + e.getMessage());
        } catch (IOException e) {
            throw new IllegalStateException("an in-memory writer cannot fail", e);
        }
        return this;
    }

    /**
     * A params dict ({@code kv_transfer_params}) as the params hold it, or nil for {@code null}:
     * straight to the map case of the plain-value codec (map keys str only).
     */
    public PyPacker params(KvParams params) {
        try {
            PyValues.packStrKeys(w, params);
        } catch (IllegalArgumentException e) {
            throw new WireEncodingException("cannot pack as msgpack: " + e.getMessage());
        } catch (IOException e) {
            throw new IllegalStateException("an in-memory writer cannot fail", e);
        }
        return this;
    }

    /**
     * Any plain-Java Python value {@link PyValues#packStrKeys(MsgOut, Object)} packs (map keys str
     * only): {@link PyMsgpack#encode(Object)}'s, for tests' frames.
     */
    PyPacker value(Object v) {
        try {
            PyValues.packStrKeys(w, v);
        } catch (IllegalArgumentException e) {
            throw new WireEncodingException("cannot pack as msgpack: " + e.getMessage());
        } catch (IOException e) {
            throw new IllegalStateException("an in-memory writer cannot fail", e);
        }
        return this;
    }
}
