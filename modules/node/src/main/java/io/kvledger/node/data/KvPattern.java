package io.kvledger.node.data;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The verifiable content a simulated prefill writes into a request's blocks and a decode checks
 * after the transfer: every 8-byte word is a function of the transfer id, the layer, the K/V
 * plane, the block's position in the request and the word's position in the block. A block that
 * arrived from the wrong request, layer, plane or position, or not at all, fails the check.
 */
public final class KvPattern {

    private KvPattern() {}

    /** A 64-bit seed for one transfer id (FNV-1a over its characters). */
    static long seed(String transferId) {
        long h = 0xcbf29ce484222325L;
        for (int i = 0; i < transferId.length(); i++) {
            h ^= transferId.charAt(i);
            h *= 0x100000001b3L;
        }
        return h;
    }

    static long word(long seed, int layer, boolean v, int position, int wordIndex) {
        long x = seed ^ ((long) layer << 40) ^ ((v ? 1L : 0L) << 39) ^ ((long) position << 20) ^ wordIndex;
        x ^= x >>> 33;
        x *= 0xff51afd7ed558ccdL;
        x ^= x >>> 33;
        return x | 1L; // never zero, so a block left zeroed never passes
    }

    /** Fills the blocks {@code blockIds} (the request's blocks, in order) of every layer. */
    public static void fill(MemorySegment region, KvLayout layout, String transferId, int[] blockIds) {
        long seed = seed(transferId);
        int words = (int) (layout.blockLenBytes() / 8);
        for (int layer = 0; layer < layout.layers().size(); layer++) {
            for (int p = 0; p < blockIds.length; p++) {
                for (int plane = 0; plane < 2; plane++) {
                    long base = layout.blockOffset(layer, blockIds[p], plane == 1);
                    for (int w = 0; w < words; w++) {
                        region.set(ValueLayout.JAVA_LONG_UNALIGNED, base + 8L * w, word(seed, layer, plane == 1, p, w));
                    }
                }
            }
        }
    }

    /**
     * What {@link #verify} found.
     *
     * @param bytesOk  bytes that matched before the first difference (all of them when it passed)
     * @param mismatch where the first difference is, or {@code null} when every byte matched
     */
    public record Check(long bytesOk, String mismatch) {
        public boolean passed() {
            return mismatch == null;
        }
    }

    /**
     * Checks the blocks {@code blockIds} of every layer; only the first {@code positions} of them
     * (the blocks the prefill computed) are expected to carry the pattern.
     */
    public static Check verify(MemorySegment region, KvLayout layout, String transferId, int[] blockIds, int positions) {
        long seed = seed(transferId);
        int words = (int) (layout.blockLenBytes() / 8);
        long ok = 0;
        int n = Math.min(positions, blockIds.length);
        for (int layer = 0; layer < layout.layers().size(); layer++) {
            for (int p = 0; p < n; p++) {
                for (int plane = 0; plane < 2; plane++) {
                    long base = layout.blockOffset(layer, blockIds[p], plane == 1);
                    for (int w = 0; w < words; w++) {
                        long want = word(seed, layer, plane == 1, p, w);
                        long got = region.get(ValueLayout.JAVA_LONG_UNALIGNED, base + 8L * w);
                        if (got != want) {
                            return new Check(ok, "layer " + layout.layers().get(layer) + ", " + (plane == 1 ? "V" : "K")
                                    + " plane, block " + blockIds[p] + " (position " + p + "), word " + w + ": expected "
                                    + Long.toHexString(want) + ", found " + Long.toHexString(got));
                        }
                        ok += 8;
                    }
                }
            }
        }
        return new Check(ok, null);
    }

    /** Zeroes the blocks (a decode does it before the transfer, so stale bytes never pass). */
    public static void clear(MemorySegment region, KvLayout layout, int[] blockIds) {
        for (int layer = 0; layer < layout.layers().size(); layer++) {
            for (int b : blockIds) {
                for (int plane = 0; plane < 2; plane++) {
                    region.asSlice(layout.blockOffset(layer, b, plane == 1), layout.blockLenBytes()).fill((byte) 0);
                }
            }
        }
    }
}
