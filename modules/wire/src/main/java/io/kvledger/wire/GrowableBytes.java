package io.kvledger.wire;

/**
 * A byte array that grows, for {@link MsgpackWriter} to write into in place: the bytes written
 * are {@code bytes[0, length)} (or from wherever its owner started). Public fields, because the
 * journal writer builds its group excerpts in one of these (a subclass adding its own layout)
 * and reads and patches them where they lie.
 *
 * <p>Not thread-safe.
 */
public class GrowableBytes {

    /** The bytes; replaced by a larger array when {@link #ensure} grows it. */
    public byte[] bytes;
    /** How many of {@link #bytes} are written. */
    public int length;

    public GrowableBytes(int capacity) {
        this.bytes = new byte[capacity];
    }

    /** Makes room for {@code more} bytes after {@link #length}. */
    public final void ensure(int more) {
        if (length + more > bytes.length) {
            byte[] b = new byte[Math.max(length + more, bytes.length * 2)];
            System.arraycopy(bytes, 0, b, 0, length);
            bytes = b;
        }
    }

    /** Appends {@code src[off, off + len)}. */
    public final void put(byte[] src, int off, int len) {
        ensure(len);
        System.arraycopy(src, off, bytes, length, len);
        length += len;
    }
}
