package io.kvledger.core.node;

import java.util.Objects;

/**
 * What the node's open-addressing tables share ({@link PhaseTable}'s index, {@link RequestSlots}'
 * index, {@link MappingSnapshot}'s index): linear probing from a key's home slot, the low bits of
 * its spread hash, and deletion by backward shift instead of tombstones.
 */
final class OpenAddressing {

    private OpenAddressing() {}

    /** The spread hash of a key: its {@code hashCode} mixed so that the low bits depend on all of it. */
    static int spread(Object key) {
        int h = Objects.hashCode(key) * 0x9E3779B9;
        return h ^ (h >>> 16);
    }

    /**
     * Backward-shift deletion: whether the entry at slot {@code j}, whose home slot is
     * {@code home}, may move back into the hole at slot {@code hole} (its probe run from home
     * passes the hole; {@code j} follows the hole, wrapping around).
     */
    static boolean movable(int home, int hole, int j) {
        return hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
    }
}
