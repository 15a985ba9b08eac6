package io.kvledger.core.node;

/**
 * What the node's open-addressing tables share ({@link PhaseTable}'s index, {@link RequestSlots}'
 * index, {@link MappingSnapshot}'s index): linear probing from a key's home slot, the low bits of
 * its spread hash, and deletion by backward shift instead of tombstones.
 */
final class OpenAddressing {

    private OpenAddressing() {}

    /**
     * The spread hash of a key: its {@code hashCode} (0 for {@code null}, as
     * {@code Objects.hashCode}) mixed so that the low bits depend on all of it. The call is made
     * here, not through {@code Objects.hashCode}: that method's profile is shared by every caller
     * in the JVM, so whether C2 inlined {@code String.hashCode} into the reducer's lookups
     * depended on what else the process had run ("already compiled into a medium method").
     */
    static int spread(Object key) {
        int h = (key == null ? 0 : key.hashCode()) * 0x9E3779B9;
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
