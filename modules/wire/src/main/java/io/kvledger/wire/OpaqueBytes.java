package io.kvledger.wire;

import java.util.Arrays;
import java.util.HexFormat;

/**
 * An opaque binary blob (a packed mori {@code EngineDesc} or {@code MemoryDesc}) carried as
 * msgpack {@code bin} and passed through untouched: kvledger never looks inside.
 *
 * <p>Immutable: the bytes are copied on the way in and out. Equality is by content.
 */
public final class OpaqueBytes {

    private static final HexFormat HEX = HexFormat.of();

    private final byte[] bytes;

    private OpaqueBytes(byte[] bytes) {
        this.bytes = bytes;
    }

    /** A blob holding a copy of {@code bytes}. */
    public static OpaqueBytes of(byte[] bytes) {
        return new OpaqueBytes(bytes.clone());
    }

    /** A blob from lowercase or uppercase hex digits. */
    public static OpaqueBytes ofHex(String hex) {
        return new OpaqueBytes(HEX.parseHex(hex));
    }

    /** Wraps an array the caller will never touch again (decoders' own fresh arrays). */
    static OpaqueBytes wrap(byte[] bytes) {
        return new OpaqueBytes(bytes);
    }

    /** A copy of the bytes. */
    public byte[] toByteArray() {
        return bytes.clone();
    }

    public int length() {
        return bytes.length;
    }

    /** The bytes without a copy, for encoders in this package (never mutated). */
    byte[] raw() {
        return bytes;
    }

    String hex() {
        return HEX.formatHex(bytes);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof OpaqueBytes other && Arrays.equals(bytes, other.bytes);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(bytes);
    }

    @Override
    public String toString() {
        return bytes.length <= 32 ? "bin:" + hex() : "bin[" + bytes.length + "]:" + HEX.formatHex(bytes, 0, 32) + "...";
    }
}
