package io.kvledger.journal;

import io.kvledger.wire.GrowableBytes;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * The bytes of a group excerpt being built on the heap (see {@link JournalFormat#GROUP_LAYOUT}):
 * room for the group's envelope, then its members, each a 4-byte length word, a layout-2 entry and
 * zeros to the next multiple of 4. {@link JournalWriter} fills it between {@code beginGroup} and
 * {@code endGroup} and copies it into one Chronicle excerpt. Reused: it allocates only to grow.
 */
final class GroupBuffer extends GrowableBytes {

    private static final VarHandle I32 = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);

    GroupBuffer() {
        super(64 * 1024);
    }

    void reset() {
        length = JournalFormat.ENVELOPE_V2;
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
