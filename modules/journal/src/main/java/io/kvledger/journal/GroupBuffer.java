package io.kvledger.journal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * The bytes of a group excerpt being built on the heap (see {@link JournalFormat#GROUP_LAYOUT}):
 * room for the group's envelope, then its members, each a 4-byte length word, a layout-2 entry and
 * zeros to the next multiple of 4. {@link JournalWriter} fills it between {@code beginGroup} and
 * {@code endGroup} and copies it into one Chronicle excerpt. Reused: it allocates only to grow.
 */
final class GroupBuffer {

    private static final VarHandle I32 = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);

    byte[] bytes = new byte[64 * 1024];
    int length;

    void reset() {
        length = JournalFormat.ENVELOPE_V2;
    }

    void ensure(int more) {
        if (length + more > bytes.length) {
            byte[] b = new byte[Math.max(length + more, bytes.length * 2)];
            System.arraycopy(bytes, 0, b, 0, length);
            bytes = b;
        }
    }

    void put(byte[] src, int off, int len) {
        ensure(len);
        System.arraycopy(src, off, bytes, length, len);
        length += len;
    }

    int intAt(int at) {
        return (int) I32.get(bytes, at);
    }

    void putIntAt(int at, int v) {
        I32.set(bytes, at, v);
    }

    /** Zeros up to the next multiple of 4 (the members' alignment). */
    void pad() {
        int p = (4 - (length & 3)) & 3;
        ensure(p);
        for (int i = 0; i < p; i++) {
            bytes[length++] = 0;
        }
    }
}
