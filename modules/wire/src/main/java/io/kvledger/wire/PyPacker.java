package io.kvledger.wire;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetEncoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

/**
 * Packs values the way Python's {@code msgpack.packb} (msgpack 1.0, {@code use_bin_type=True})
 * does, on msgpack-core's {@link MessageBufferPacker}: the smallest int format (unsigned formats
 * for non-negative values), str8 for 32 to 255 bytes of UTF-8, bin for bytes, float64 for floats,
 * maps in the iteration order of the Java map. Strings are encoded strictly (an unpaired
 * surrogate is an error, as it is for Python's UTF-8 codec).
 *
 * <p>Reusable ({@link #reset()}, {@link #toByteArray()}) and not thread-safe.
 */
final class PyPacker {

    private static final BigInteger UINT64_LIMIT = BigInteger.ONE.shiftLeft(64);
    private static final BigInteger INT64_MIN = BigInteger.valueOf(Long.MIN_VALUE);

    private final MessageBufferPacker packer = MessagePack.newDefaultBufferPacker();
    private final CharsetEncoder utf8 = StandardCharsets.UTF_8.newEncoder()
            .onMalformedInput(CodingErrorAction.REPORT)
            .onUnmappableCharacter(CodingErrorAction.REPORT);

    PyPacker reset() {
        packer.clear();
        return this;
    }

    /** A fresh array with everything packed since {@link #reset()} (never reused: JeroMQ keeps it). */
    byte[] toByteArray() {
        return packer.toByteArray();
    }

    PyPacker mapHeader(int n) {
        try {
            packer.packMapHeader(n);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return this;
    }

    PyPacker arrayHeader(int n) {
        try {
            packer.packArrayHeader(n);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return this;
    }

    PyPacker str(String s) {
        byte[] b;
        if (isAscii(s)) {
            b = s.getBytes(StandardCharsets.ISO_8859_1);
        } else {
            try {
                ByteBuffer bb = utf8.encode(CharBuffer.wrap(s));
                b = new byte[bb.remaining()];
                bb.get(b);
            } catch (CharacterCodingException e) {
                throw new WireEncodingException("string is not encodable as UTF-8 (unpaired surrogate): " + NotifyDecoder.clip(s));
            }
        }
        try {
            packer.packRawStringHeader(b.length);
            packer.writePayload(b);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return this;
    }

    PyPacker integer(long v) {
        try {
            packer.packLong(v);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return this;
    }

    /** The 64 bits of an unsigned value (device pointers): 2^63 and more as uint64. */
    PyPacker uint64Bits(long bits) {
        if (bits >= 0) {
            return integer(bits);
        }
        try {
            packer.packBigInteger(new BigInteger(Long.toUnsignedString(bits)));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return this;
    }

    PyPacker bin(byte[] b) {
        try {
            packer.packBinaryHeader(b.length);
            packer.writePayload(b);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return this;
    }

    PyPacker nil() {
        try {
            packer.packNil();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return this;
    }

    /**
     * Any Python-like value: null (None), Boolean, Byte/Short/Integer/Long/BigInteger (int), Float/Double
     * (float64, as Python floats), String (str), byte[] or {@link OpaqueBytes} (bin), List (array),
     * Map with String keys (map, in iteration order).
     */
    PyPacker value(Object v) {
        try {
            switch (v) {
                case null -> packer.packNil();
                case String s -> str(s);
                case Boolean b -> packer.packBoolean(b);
                case Integer i -> packer.packLong(i);
                case Long l -> packer.packLong(l);
                case Short s -> packer.packLong(s);
                case Byte b -> packer.packLong(b);
                case BigInteger big -> {
                    if (big.compareTo(INT64_MIN) < 0 || big.compareTo(UINT64_LIMIT) >= 0) {
                        throw new WireEncodingException("integer " + big + " does not fit msgpack (Python raises OverflowError)");
                    }
                    if (big.bitLength() <= 63) {
                        packer.packLong(big.longValue());
                    } else {
                        packer.packBigInteger(big);
                    }
                }
                case Double d -> packer.packDouble(d);
                case Float f -> packer.packDouble(f);
                case byte[] b -> bin(b);
                case OpaqueBytes o -> bin(o.raw());
                case List<?> list -> {
                    packer.packArrayHeader(list.size());
                    for (Object o : list) {
                        value(o);
                    }
                }
                case Map<?, ?> map -> {
                    packer.packMapHeader(map.size());
                    for (Map.Entry<?, ?> e : map.entrySet()) {
                        if (!(e.getKey() instanceof String k)) {
                            throw new WireEncodingException("map key " + e.getKey() + " is not a str");
                        }
                        str(k);
                        value(e.getValue());
                    }
                }
                default -> throw new WireEncodingException("cannot pack a " + v.getClass().getName() + " as msgpack");
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return this;
    }

    private static boolean isAscii(String s) {
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) >= 0x80) {
                return false;
            }
        }
        return true;
    }
}
