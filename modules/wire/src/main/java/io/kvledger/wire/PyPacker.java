package io.kvledger.wire;

import io.kvledger.core.model.TransferId;
import java.io.IOException;
import java.util.Arrays;

/**
 * The wire's encoders' packer: a strict {@link MsgpackWriter} (an unpaired surrogate is refused,
 * as Python's UTF-8 codec refuses it) into its own buffer, and {@link PyValues#packStrKeys} for
 * Python values, so that the bytes are Python's {@code msgpack.packb(use_bin_type=True)}'s and a
 * value that has no Python msgpack form is a {@link WireEncodingException}.
 *
 * <p>Reusable ({@link #reset()}, {@link #toByteArray()}) and not thread-safe.
 */
final class PyPacker {

    private final GrowableBytes buf = new GrowableBytes(256);
    private final MsgpackWriter w = new MsgpackWriter(buf, true);

    PyPacker reset() {
        buf.length = 0;
        return this;
    }

    /** A fresh array with everything packed since {@link #reset()} (never reused: JeroMQ keeps it). */
    byte[] toByteArray() {
        return Arrays.copyOf(buf.bytes, buf.length);
    }

    PyPacker mapHeader(int n) {
        w.mapHeader(n);
        return this;
    }

    PyPacker arrayHeader(int n) {
        w.arrayHeader(n);
        return this;
    }

    PyPacker str(String s) {
        w.str(s);
        return this;
    }

    /** A str, or nil for {@code null}. */
    PyPacker strOrNil(String s) {
        if (s == null) {
            w.nil();
        } else {
            w.str(s);
        }
        return this;
    }

    /**
     * A transfer id as the params held it: a switch over its forms, so the common ones (str, int,
     * None) are written without a generic value; only {@link TransferId.Other} (a bool, a float, a
     * big int, a container) goes through {@link #value(Object)}.
     */
    PyPacker transferId(TransferId id) {
        switch (id) {
            case TransferId.Str s -> w.str(s.value());
            case TransferId.Int i -> w.int64(i.value());
            case TransferId.None n -> w.nil();
            case TransferId.Bytes b -> w.bin((byte[]) b.raw());
            case TransferId.Other o -> value(o.value());
        }
        return this;
    }

    PyPacker integer(long v) {
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

    PyPacker nil() {
        w.nil();
        return this;
    }

    /** Any Python value {@link PyValues#packStrKeys} packs (map keys str only). */
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
