package io.kvledger.wire;

import java.io.IOException;
import java.math.BigInteger;
import org.msgpack.core.MessagePacker;

/**
 * Where msgpack encoders write, {@link PyValues#pack} among them: msgpack-java's
 * {@link MessagePacker} (through {@link #of}) or a {@link MsgpackWriter} writing in place. Both
 * produce the same bytes: the smallest msgpack form of each value, as msgpack-java and Python's
 * {@code msgpack.packb} write it.
 */
public interface MsgOut {

    void nil() throws IOException;

    void bool(boolean b) throws IOException;

    /** An integer in its smallest form. */
    void int64(long v) throws IOException;

    /** An integer beyond 64 signed bits (up to 2^64 - 1 as uint64; larger ones are refused). */
    void bigInt(BigInteger v) throws IOException;

    void float64(double d) throws IOException;

    /** A str (UTF-8). */
    void str(String s) throws IOException;

    /** A bin. */
    void bin(byte[] b) throws IOException;

    void arrayHeader(int n) throws IOException;

    void mapHeader(int n) throws IOException;

    /** msgpack-java's packer as a {@code MsgOut}. */
    static MsgOut of(MessagePacker p) {
        return new Packer(p);
    }

    /** The adapter {@link #of} returns. */
    record Packer(MessagePacker p) implements MsgOut {
        @Override public void nil() throws IOException { p.packNil(); }
        @Override public void bool(boolean b) throws IOException { p.packBoolean(b); }
        @Override public void int64(long v) throws IOException { p.packLong(v); }
        @Override public void bigInt(BigInteger v) throws IOException { p.packBigInteger(v); }
        @Override public void float64(double d) throws IOException { p.packDouble(d); }
        @Override public void str(String s) throws IOException { p.packString(s); }
        @Override public void bin(byte[] b) throws IOException {
            p.packBinaryHeader(b.length);
            p.writePayload(b);
        }
        @Override public void arrayHeader(int n) throws IOException { p.packArrayHeader(n); }
        @Override public void mapHeader(int n) throws IOException { p.packMapHeader(n); }
    }
}
