package io.kvledger.wire;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;

/**
 * The msgpack writer of the project: writes in place into a {@link GrowableBytes} the bytes
 * msgpack-java's packer and Python's {@code msgpack.packb(use_bin_type=True)} write (the smallest
 * form of each value: unsigned forms for non-negative integers, str8 from 32 bytes, float64 for
 * every float), without a packer's buffer hand-offs. The wire's encoders ({@link PyPacker}) and the
 * journal writer (into its group buffer) both write through it.
 *
 * <p>Strings: a strict writer ({@code strictUtf8}) refuses a string with an unpaired surrogate
 * with a {@link WireEncodingException}, as Python's UTF-8 codec does (what goes to a Python peer);
 * a lenient one writes {@code '?'} for it, as Java's {@code String.getBytes(UTF_8)} and
 * msgpack-java do (what the journal has always written). Strings of {@value #CACHED_MIN} characters
 * or more keep their UTF-8 bytes in a small cache, because a node journals the same request and
 * transfer ids in most of its entries (a request id of the toy proxy is about 170 characters).
 *
 * <p>Not thread-safe: one per writing thread.
 */
public final class MsgpackWriter implements MsgOut {

    static final int CACHED_MIN = 24;
    private static final int CACHE = 64;

    private final GrowableBytes out;
    private final boolean strictUtf8;
    private final String[] keys = new String[CACHE];
    private final byte[][] utf8 = new byte[CACHE][];

    /**
     * @param out        where the bytes go (appended at its {@code length})
     * @param strictUtf8 refuse strings with an unpaired surrogate (else write {@code '?'} for it)
     */
    public MsgpackWriter(GrowableBytes out, boolean strictUtf8) {
        this.out = out;
        this.strictUtf8 = strictUtf8;
    }

    /** Where this writer writes. */
    GrowableBytes out() {
        return out;
    }

    private void b1(int v) {
        out.ensure(1);
        out.bytes[out.length++] = (byte) v;
    }

    private void b2(int tag, int v) {
        out.ensure(3);
        byte[] b = out.bytes;
        int p = out.length;
        b[p] = (byte) tag;
        b[p + 1] = (byte) (v >>> 8);
        b[p + 2] = (byte) v;
        out.length = p + 3;
    }

    private void b4(int tag, int v) {
        out.ensure(5);
        byte[] b = out.bytes;
        int p = out.length;
        b[p] = (byte) tag;
        b[p + 1] = (byte) (v >>> 24);
        b[p + 2] = (byte) (v >>> 16);
        b[p + 3] = (byte) (v >>> 8);
        b[p + 4] = (byte) v;
        out.length = p + 5;
    }

    private void b8(int tag, long v) {
        out.ensure(9);
        byte[] b = out.bytes;
        int p = out.length;
        b[p] = (byte) tag;
        for (int i = 0; i < 8; i++) {
            b[p + 1 + i] = (byte) (v >>> (56 - 8 * i));
        }
        out.length = p + 9;
    }

    @Override
    public void nil() {
        b1(0xc0);
    }

    @Override
    public void bool(boolean v) {
        b1(v ? 0xc3 : 0xc2);
    }

    @Override
    public void int64(long v) {
        if (v < -(1L << 5)) {
            if (v < -(1L << 15)) {
                if (v < -(1L << 31)) {
                    b8(0xd3, v);
                } else {
                    b4(0xd2, (int) v);
                }
            } else if (v < -(1 << 7)) {
                b2(0xd1, (int) v);
            } else {
                out.ensure(2);
                out.bytes[out.length] = (byte) 0xd0;
                out.bytes[out.length + 1] = (byte) v;
                out.length += 2;
            }
        } else if (v < (1 << 7)) {
            b1((int) v);
        } else if (v < (1L << 16)) {
            if (v < (1 << 8)) {
                out.ensure(2);
                out.bytes[out.length] = (byte) 0xcc;
                out.bytes[out.length + 1] = (byte) v;
                out.length += 2;
            } else {
                b2(0xcd, (int) v);
            }
        } else if (v < (1L << 32)) {
            b4(0xce, (int) v);
        } else {
            b8(0xcf, v);
        }
    }

    @Override
    public void bigInt(BigInteger v) {
        if (v.bitLength() <= 63) {
            int64(v.longValue());
        } else if (v.signum() > 0 && v.bitLength() == 64) {
            b8(0xcf, v.longValue());
        } else {
            throw new IllegalArgumentException(PyValues.tooWide(v));
        }
    }

    /** The 64 bits of an unsigned value (device pointers): 2^63 and more as uint64. */
    void uint64Bits(long bits) {
        if (bits >= 0) {
            int64(bits);
        } else {
            b8(0xcf, bits);
        }
    }

    @Override
    public void float64(double d) {
        b8(0xcb, Double.doubleToRawLongBits(d));
    }

    @Override
    public void str(String s) {
        byte[] u;
        if (s.length() >= CACHED_MIN) {
            int h = s.hashCode();
            int i = (h ^ (h >>> 16)) & (CACHE - 1);
            String k = keys[i];
            if (k == s || (k != null && k.hashCode() == h && k.equals(s))) {
                u = utf8[i];
            } else {
                u = utf8(s);
                keys[i] = s;
                utf8[i] = u;
            }
        } else {
            u = utf8(s);
        }
        int n = u.length;
        if (n < 32) {
            b1(0xa0 | n);
        } else if (n < 256) {
            out.ensure(2);
            out.bytes[out.length] = (byte) 0xd9;
            out.bytes[out.length + 1] = (byte) n;
            out.length += 2;
        } else if (n < 65536) {
            b2(0xda, n);
        } else {
            b4(0xdb, n);
        }
        out.put(u, 0, n);
    }

    private byte[] utf8(String s) {
        if (strictUtf8) {
            int bad = unpairedSurrogate(s);
            if (bad >= 0) {
                throw new WireEncodingException("string is not encodable as UTF-8 (unpaired surrogate at index " + bad + "): "
                        + NotifyDecoder.clip(s));
            }
        }
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** The index of the first unpaired surrogate of {@code s}, or -1. */
    static int unpairedSurrogate(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isHighSurrogate(c)) {
                if (i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                    i++;
                } else {
                    return i;
                }
            } else if (Character.isLowSurrogate(c)) {
                return i;
            }
        }
        return -1;
    }

    @Override
    public void bin(byte[] v) {
        int n = v.length;
        if (n < 256) {
            out.ensure(2);
            out.bytes[out.length] = (byte) 0xc4;
            out.bytes[out.length + 1] = (byte) n;
            out.length += 2;
        } else if (n < 65536) {
            b2(0xc5, n);
        } else {
            b4(0xc6, n);
        }
        out.put(v, 0, n);
    }

    /**
     * An array of ints (block ids): the header and every element with one capacity check, each
     * element in its smallest form as {@link #int64} writes it.
     */
    public void ints(int[] ids, int from, int to) {
        arrayHeader(to - from);
        out.ensure(5 * (to - from));
        byte[] b = out.bytes;
        int p = out.length;
        for (int i = from; i < to; i++) {
            int v = ids[i];
            if (v >= 0 && v < 128) {
                b[p++] = (byte) v;
            } else if (v >= 0 && v < 256) {
                b[p++] = (byte) 0xcc;
                b[p++] = (byte) v;
            } else if (v >= 0 && v < 65536) {
                b[p++] = (byte) 0xcd;
                b[p++] = (byte) (v >>> 8);
                b[p++] = (byte) v;
            } else {
                out.length = p;
                int64(v);
                p = out.length;
            }
        }
        out.length = p;
    }

    @Override
    public void arrayHeader(int n) {
        if (n < 16) {
            b1(0x90 | n);
        } else if (n < 65536) {
            b2(0xdc, n);
        } else {
            b4(0xdd, n);
        }
    }

    @Override
    public void mapHeader(int n) {
        if (n < 16) {
            b1(0x80 | n);
        } else if (n < 65536) {
            b2(0xde, n);
        } else {
            b4(0xdf, n);
        }
    }
}
