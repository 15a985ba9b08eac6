package io.kvledger.wire;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import org.msgpack.core.ExtensionTypeHeader;
import org.msgpack.core.MessageFormat;
import org.msgpack.core.MessageFormatException;
import org.msgpack.core.MessageInsufficientBufferException;
import org.msgpack.core.MessageIntegerOverflowException;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessageSizeException;
import org.msgpack.core.MessageTypeException;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.core.buffer.ArrayBufferInput;
import org.msgpack.core.buffer.MessageBuffer;
import org.msgpack.value.ValueType;

/**
 * A strict, bounded reader of one msgpack frame held in a {@code byte[]}, built on msgpack-core's
 * streaming {@link MessageUnpacker}. Every header's claimed item count or byte length is checked
 * against the bytes left in the frame before it is acted on, so nothing is ever allocated by a
 * claim. Problems throw {@link WireReject}; msgpack-core's own exceptions are translated by
 * {@link #translate(Exception)}.
 *
 * <p>Reusable ({@link #reset(byte[])}) and not thread-safe.
 */
final class MsgpackReader {

    private static final MessagePack.UnpackerConfig CONFIG = new MessagePack.UnpackerConfig()
            .withAllowReadingBinaryAsString(false)
            .withAllowReadingStringAsBinary(false)
            .withActionOnMalformedString(CodingErrorAction.REPORT)
            .withActionOnUnmappableString(CodingErrorAction.REPORT);

    private final ArrayBufferInput input = new ArrayBufferInput(new byte[0]);
    private final MessageUnpacker unpacker = CONFIG.newUnpacker(input);
    private final CharsetDecoder utf8 = StandardCharsets.UTF_8.newDecoder()
            .onMalformedInput(CodingErrorAction.REPORT)
            .onUnmappableCharacter(CodingErrorAction.REPORT);
    private final int maxDepth;
    private int length;

    MsgpackReader(int maxDepth) {
        this.maxDepth = maxDepth;
    }

    void reset(byte[] frame) {
        input.reset(frame);
        try {
            unpacker.reset(input);
        } catch (IOException e) {
            throw new IllegalStateException("an in-memory unpacker cannot fail to reset", e);
        }
        length = frame.length;
    }

    /** Bytes of the frame not read yet. */
    int remaining() {
        return length - (int) unpacker.getTotalReadBytes();
    }

    /** Offset of the next byte to read. */
    int position() {
        return (int) unpacker.getTotalReadBytes();
    }

    /** The format of the next value, rejecting end of frame and the reserved byte 0xc1. */
    MessageFormat peek(String what) throws IOException {
        if (remaining() <= 0) {
            throw new WireReject(RejectReason.TRUNCATED, "frame ends where " + what + " should start (offset " + position() + ")");
        }
        MessageFormat f = unpacker.getNextFormat();
        if (f == MessageFormat.NEVER_USED) {
            throw new WireReject(RejectReason.INVALID_FORMAT, "reserved byte 0xc1 at offset " + position() + " (" + what + ")");
        }
        return f;
    }

    static ValueType typeOf(MessageFormat f) {
        return f.getValueType();
    }

    /** A map header; its count is checked against the bytes left (each entry takes at least 2). */
    int mapHeader(String what) throws IOException {
        MessageFormat f = peek(what);
        if (f.getValueType() != ValueType.MAP) {
            throw wrongType(what, "map", f);
        }
        int at = position();
        int n = unpacker.unpackMapHeader();
        if ((long) n * 2 > remaining()) {
            throw new WireReject(RejectReason.LENGTH_CLAIM_EXCEEDS_FRAME, what + ": map header at offset " + at
                    + " claims " + n + " entries but only " + remaining() + " bytes remain");
        }
        return n;
    }

    /** An array header; its count is checked against the bytes left (each item takes at least 1). */
    int arrayHeader(String what) throws IOException {
        MessageFormat f = peek(what);
        if (f.getValueType() != ValueType.ARRAY) {
            throw wrongType(what, "array", f);
        }
        int at = position();
        int n = unpacker.unpackArrayHeader();
        if (n > remaining()) {
            throw new WireReject(RejectReason.LENGTH_CLAIM_EXCEEDS_FRAME, what + ": array header at offset " + at
                    + " claims " + n + " items but only " + remaining() + " bytes remain");
        }
        return n;
    }

    /** A str value, strictly UTF-8. */
    String string(String what) throws IOException {
        MessageFormat f = peek(what);
        if (f.getValueType() != ValueType.STRING) {
            throw wrongType(what, "str", f);
        }
        MessageBuffer b = payload(unpacker.unpackRawStringHeader(), what);
        return decodeUtf8(b.array(), b.arrayOffset(), b.size(), what);
    }

    /** A bin value's bytes, in a fresh array of exactly its length. */
    byte[] binary(String what) throws IOException {
        MessageFormat f = peek(what);
        if (f.getValueType() != ValueType.BINARY) {
            throw wrongType(what, "bin", f);
        }
        MessageBuffer b = payload(unpacker.unpackBinaryHeader(), what);
        byte[] out = new byte[b.size()];
        System.arraycopy(b.array(), b.arrayOffset(), out, 0, out.length);
        return out;
    }

    /**
     * A map key that must be a str: returns the index in {@code known} of the key it equals (byte
     * for byte), or -1 for any other (valid UTF-8) key. Bin keys are {@link RejectReason#BIN_KEY}.
     */
    int key(byte[][] known, String what) throws IOException {
        MessageFormat f = peek(what);
        if (f.getValueType() == ValueType.BINARY) {
            throw new WireReject(RejectReason.BIN_KEY, what + ": key at offset " + position()
                    + " is msgpack bin (" + f + "); keys must be str");
        }
        if (f.getValueType() != ValueType.STRING) {
            throw new WireReject(RejectReason.NON_STRING_KEY, what + ": key at offset " + position() + " is "
                    + describe(f) + "; keys must be str");
        }
        MessageBuffer b = payload(unpacker.unpackRawStringHeader(), what);
        byte[] a = b.array();
        int off = b.arrayOffset();
        int len = b.size();
        outer:
        for (int k = 0; k < known.length; k++) {
            byte[] cand = known[k];
            if (cand.length != len) {
                continue;
            }
            for (int i = 0; i < len; i++) {
                if (a[off + i] != cand[i]) {
                    continue outer;
                }
            }
            return k;
        }
        decodeUtf8(a, off, len, what + " key");
        return -1;
    }

    /** A map key that must be a str, as text. */
    String keyString(String what) throws IOException {
        MessageFormat f = peek(what);
        if (f.getValueType() == ValueType.BINARY) {
            throw new WireReject(RejectReason.BIN_KEY, what + ": key at offset " + position()
                    + " is msgpack bin (" + f + "); keys must be str");
        }
        if (f.getValueType() != ValueType.STRING) {
            throw new WireReject(RejectReason.NON_STRING_KEY, what + ": key at offset " + position() + " is "
                    + describe(f) + "; keys must be str");
        }
        return string(what + " key");
    }

    /** An integer that fits a signed 64-bit {@code long}. */
    long integer(String what) throws IOException {
        MessageFormat f = peek(what);
        if (f.getValueType() != ValueType.INTEGER) {
            throw wrongType(what, "int", f);
        }
        if (f == MessageFormat.UINT64) {
            int at = position();
            java.math.BigInteger v = unpacker.unpackBigInteger();
            if (v.bitLength() > 63) {
                throw new WireReject(RejectReason.INTEGER_OUT_OF_RANGE, what + ": " + v + " at offset " + at
                        + " does not fit a signed 64-bit integer");
            }
            return v.longValue();
        }
        return unpacker.unpackLong();
    }

    /** {@code what[index]}, built only when a rejection needs it. */
    static String item(String what, int index) {
        return what + "[" + index + "]";
    }

    /** Item {@code index} of an array named {@code what}: an integer that must fit an {@code int}. */
    int int32(String what, int index) throws IOException {
        try {
            return int32(what);
        } catch (WireReject e) {
            throw e.relabel(what, item(what, index));
        }
    }

    /** Item {@code index} of an array named {@code what}: see {@link #uint64Bits(String)}. */
    long uint64Bits(String what, int index) throws IOException {
        try {
            return uint64Bits(what);
        } catch (WireReject e) {
            throw e.relabel(what, item(what, index));
        }
    }

    /** Item {@code index} of an array named {@code what}: see {@link #binary(String)}. */
    byte[] binary(String what, int index) throws IOException {
        try {
            return binary(what);
        } catch (WireReject e) {
            throw e.relabel(what, item(what, index));
        }
    }

    /** An integer that must fit an {@code int}. */
    int int32(String what) throws IOException {
        int at = position();
        long v = integer(what);
        if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
            throw new WireReject(RejectReason.INTEGER_OUT_OF_RANGE, what + ": " + v + " at offset " + at
                    + " does not fit a 32-bit integer");
        }
        return (int) v;
    }

    /**
     * A non-negative integer up to 2^64 - 1, returned as the 64 bits of its unsigned value (device
     * pointers): values of 2^63 and more come back negative.
     */
    long uint64Bits(String what) throws IOException {
        MessageFormat f = peek(what);
        if (f.getValueType() != ValueType.INTEGER) {
            throw wrongType(what, "int", f);
        }
        int at = position();
        if (f == MessageFormat.UINT64) {
            return unpacker.unpackBigInteger().longValue();
        }
        long v = unpacker.unpackLong();
        if (v < 0) {
            throw new WireReject(RejectReason.INVALID_VALUE, what + ": " + v + " at offset " + at + " is negative");
        }
        return v;
    }

    boolean bool(String what) throws IOException {
        MessageFormat f = peek(what);
        if (f.getValueType() != ValueType.BOOLEAN) {
            throw wrongType(what, "bool", f);
        }
        return unpacker.unpackBoolean();
    }

    double float64(String what) throws IOException {
        MessageFormat f = peek(what);
        if (f.getValueType() != ValueType.FLOAT) {
            throw wrongType(what, "float", f);
        }
        return unpacker.unpackDouble();
    }

    java.math.BigInteger bigInteger(String what) throws IOException {
        MessageFormat f = peek(what);
        if (f.getValueType() != ValueType.INTEGER) {
            throw wrongType(what, "int", f);
        }
        return unpacker.unpackBigInteger();
    }

    void nil(String what) throws IOException {
        MessageFormat f = peek(what);
        if (f.getValueType() != ValueType.NIL) {
            throw wrongType(what, "nil", f);
        }
        unpacker.unpackNil();
    }

    boolean nextIsNil() throws IOException {
        return remaining() > 0 && unpacker.getNextFormat() == MessageFormat.NIL;
    }

    /**
     * Skips one value of any type, checking it as Python's {@code msgpack.loads} would accept it
     * (UTF-8 strings, str or bin map keys, valid timestamps, ext codes -1 or 0 to 127) and
     * bounding nesting.
     *
     * @param depth the nesting depth of the container holding the value (0 at top level)
     */
    void skip(int depth, String what) throws IOException {
        MessageFormat f = peek(what);
        switch (f.getValueType()) {
            case NIL, BOOLEAN, INTEGER, FLOAT -> unpacker.skipValue();
            case STRING -> {
                MessageBuffer b = payload(unpacker.unpackRawStringHeader(), what);
                decodeUtf8(b.array(), b.arrayOffset(), b.size(), what);
            }
            case BINARY -> payload(unpacker.unpackBinaryHeader(), what);
            case ARRAY, MAP -> skipCounted(depth, what);
            case EXTENSION -> {
                int at = position();
                ExtensionTypeHeader h = unpacker.unpackExtensionTypeHeader();
                MessageBuffer b = payload(h.getLength(), what);
                if (h.getType() == -1 && !validTimestamp(b)) {
                    throw new WireReject(RejectReason.INVALID_FORMAT, what + ": invalid msgpack timestamp (ext -1, "
                            + h.getLength() + " bytes) at offset " + at);
                }
                if (h.getType() < -1) {
                    throw new WireReject(RejectReason.INVALID_FORMAT, what + ": ext type " + h.getType() + " at offset " + at
                            + " is reserved (Python's ExtType takes 0 to 127)");
                }
            }
        }
    }

    /** Skips one array or map (checked as {@link #skip}), returning its item count. */
    int skipCounted(int depth, String what) throws IOException {
        MessageFormat f = peek(what);
        if (f.getValueType() == ValueType.ARRAY) {
            int n = arrayHeader(what);
            nest(depth, n, what);
            for (int i = 0; i < n; i++) {
                skip(depth + 1, what);
            }
            return n;
        }
        if (f.getValueType() == ValueType.MAP) {
            int n = mapHeader(what);
            nest(depth, n, what);
            for (int i = 0; i < n; i++) {
                MessageFormat kf = peek(what + " key");
                if (kf.getValueType() != ValueType.STRING && kf.getValueType() != ValueType.BINARY) {
                    throw new WireReject(RejectReason.NON_STRING_KEY, what + ": nested map key at offset "
                            + position() + " is " + describe(kf));
                }
                skip(depth + 1, what);
                skip(depth + 1, what);
            }
            return n;
        }
        throw wrongType(what, "array or map", f);
    }

    /** Non-empty containers count towards the depth (as in Python's unpacker stack). */
    private void nest(int depth, int items, String what) {
        if (items > 0 && depth + 1 > maxDepth) {
            throw new WireReject(RejectReason.NESTING_TOO_DEEP, what + ": containers nested deeper than "
                    + maxDepth + " at offset " + position());
        }
    }

    /** Python's {@code Timestamp.from_bytes}: 4, 8 or 12 bytes, nanoseconds below 10^9. */
    static boolean validTimestamp(MessageBuffer b) {
        byte[] a = b.array();
        int o = b.arrayOffset();
        return switch (b.size()) {
            case 4 -> true;
            case 8 -> ((((a[o] & 0xffL) << 24) | ((a[o + 1] & 0xffL) << 16) | ((a[o + 2] & 0xffL) << 8) | (a[o + 3] & 0xffL)) >>> 2) < 1_000_000_000L;
            case 12 -> (((a[o] & 0xffL) << 24) | ((a[o + 1] & 0xffL) << 16) | ((a[o + 2] & 0xffL) << 8) | (a[o + 3] & 0xffL)) < 1_000_000_000L;
            default -> false;
        };
    }

    /** Reads {@code len} payload bytes as a view into the frame, after checking they are there. */
    private MessageBuffer payload(int len, String what) throws IOException {
        if (len < 0 || len > remaining()) {
            throw new WireReject(RejectReason.TRUNCATED,
                    what + ": payload at offset " + position() + " claims " + (len < 0 ? Integer.toUnsignedString(len) : Integer.toString(len))
                            + " bytes but only " + remaining() + " remain");
        }
        return unpacker.readPayloadAsReference(len);
    }

    /** Strict UTF-8 (as Python's {@code bytes.decode("utf-8")}): ASCII fast path, else a reporting decoder. */
    String decodeUtf8(byte[] a, int off, int len, String what) {
        for (int i = 0; i < len; i++) {
            if (a[off + i] < 0) {
                try {
                    return utf8.decode(ByteBuffer.wrap(a, off, len)).toString();
                } catch (CharacterCodingException e) {
                    throw new WireReject(RejectReason.NOT_UTF8, what + ": " + len + " bytes are not valid UTF-8");
                }
            }
        }
        return new String(a, off, len, StandardCharsets.ISO_8859_1);
    }

    static WireReject wrongType(String what, String expected, MessageFormat got) {
        return new WireReject(RejectReason.WRONG_FIELD_TYPE, what + " must be " + expected + ", got " + describe(got));
    }

    static String describe(MessageFormat f) {
        return switch (f.getValueType()) {
            case NIL -> "nil";
            case BOOLEAN -> "bool";
            case INTEGER -> "int";
            case FLOAT -> "float";
            case STRING -> "str";
            case BINARY -> "bin";
            case ARRAY -> "array";
            case MAP -> "map";
            case EXTENSION -> "ext";
        };
    }

    /** Maps msgpack-core's exceptions onto rejections (the reader's own checks come first). */
    static WireReject translate(Exception e) {
        if (e instanceof WireReject r) {
            return r;
        }
        if (e instanceof MessageInsufficientBufferException) {
            return new WireReject(RejectReason.TRUNCATED, "frame ends inside a value");
        }
        if (e instanceof MessageIntegerOverflowException) {
            return new WireReject(RejectReason.INTEGER_OUT_OF_RANGE, "integer out of range: " + e.getMessage());
        }
        if (e instanceof MessageSizeException) {
            return new WireReject(RejectReason.LENGTH_CLAIM_EXCEEDS_FRAME, "header claims more than 2^31-1: " + e.getMessage());
        }
        if (e instanceof MessageTypeException) {
            return new WireReject(RejectReason.WRONG_FIELD_TYPE, "unexpected msgpack type: " + e.getMessage());
        }
        if (e instanceof MessageFormatException) {
            return new WireReject(RejectReason.INVALID_FORMAT, "invalid msgpack: " + e.getMessage());
        }
        return new WireReject(RejectReason.INVALID_FORMAT, "unreadable frame: " + e);
    }
}
