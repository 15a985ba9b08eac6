package io.kvledger.rdma.testing;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import java.lang.foreign.MemorySegment;

/**
 * The test data: every byte of a block is derived from (layer, block id, plane, position), so a
 * block that lands in the wrong place, a torn copy or a stray write all show as a mismatch that
 * names where.
 */
public final class KvPattern {

    private KvPattern() {}

    /** The byte at position {@code i} of block {@code block}'s {@code plane} (0 = K, 1 = V) in {@code layer}. */
    public static byte at(int layer, int block, int plane, long i) {
        long h = i * 0x9E3779B97F4A7C15L + block * 0xC2B2AE3D27D4EB4FL + layer * 0x165667B19E3779F9L + plane * 0x27D4EB2FL;
        return (byte) ((h >>> 56) ^ (h >>> 29) ^ 0x5A);
    }

    public static void fill(MemorySegment seg, long offset, long len, int layer, int block, int plane) {
        for (long i = 0; i < len; i++) {
            seg.set(JAVA_BYTE, offset + i, at(layer, block, plane, i));
        }
    }

    /** The first position that differs, or -1. */
    public static long firstMismatch(MemorySegment seg, long offset, long len, int layer, int block, int plane) {
        for (long i = 0; i < len; i++) {
            if (seg.get(JAVA_BYTE, offset + i) != at(layer, block, plane, i)) {
                return i;
            }
        }
        return -1;
    }

    /** The first non-zero position, or -1. */
    public static long firstNonZero(MemorySegment seg, long offset, long len) {
        for (long i = 0; i < len; i++) {
            if (seg.get(JAVA_BYTE, offset + i) != 0) {
                return i;
            }
        }
        return -1;
    }
}
