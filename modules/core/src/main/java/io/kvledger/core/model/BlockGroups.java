package io.kvledger.core.model;

import java.util.Arrays;
import java.util.List;

/**
 * Block ids per KV-cache group ({@code KVCacheBlocks.get_block_ids()}): one int array per group.
 * Immutable: the arrays are never mutated after construction and {@link #group} hands out the
 * shared array, which callers must not modify.
 */
public final class BlockGroups {

    public static final BlockGroups NONE = new BlockGroups(new int[0][]);

    private final int[][] groups;

    private BlockGroups(int[][] groups) {
        this.groups = groups;
    }

    /** One group per argument; the arrays are copied. */
    public static BlockGroups of(int[]... groups) {
        int[][] g = new int[groups.length][];
        for (int i = 0; i < groups.length; i++) {
            g[i] = groups[i].clone();
        }
        return new BlockGroups(g);
    }

    /** A single group (the flat, pre-HMA shape). */
    public static BlockGroups single(int... ids) {
        return new BlockGroups(new int[][] {ids.clone()});
    }

    /** {@code n} empty groups. */
    public static BlockGroups empty(int n) {
        int[][] g = new int[n][];
        for (int i = 0; i < n; i++) {
            g[i] = new int[0];
        }
        return new BlockGroups(g);
    }

    /** Wraps arrays without copying: for reducer-internal use only. */
    static BlockGroups wrap(int[][] groups) {
        return new BlockGroups(groups);
    }

    static BlockGroups fromLists(List<? extends List<? extends Number>> lists) {
        int[][] g = new int[lists.size()][];
        for (int i = 0; i < g.length; i++) {
            g[i] = toInts(lists.get(i));
        }
        return new BlockGroups(g);
    }

    /**
     * Reads a {@code remote_block_ids}-shaped parameter value: a list of ints (flat, one group) or
     * a list of lists. Returns {@code null} when the value has neither shape.
     */
    static BlockGroups fromParamValue(Object v) {
        if (v instanceof GroupedView g) {
            return new BlockGroups(g.groups);
        }
        if (v instanceof LongView l) {
            return new BlockGroups(new int[][] {l.ids});
        }
        if (!(v instanceof List<?> list)) {
            return null;
        }
        if (list.isEmpty()) {
            return new BlockGroups(new int[][] {new int[0]});
        }
        boolean allLists = true;
        boolean allNumbers = true;
        for (Object o : list) {
            allLists &= o instanceof List<?>;
            allNumbers &= o instanceof Number && !(o instanceof Double) && !(o instanceof Float);
        }
        if (allNumbers) {
            return new BlockGroups(new int[][] {toIntsUnchecked(list)});
        }
        if (!allLists) {
            return null;
        }
        int[][] g = new int[list.size()][];
        for (int i = 0; i < g.length; i++) {
            List<?> inner = (List<?>) list.get(i);
            for (Object o : inner) {
                if (!(o instanceof Number)) {
                    return null;
                }
            }
            g[i] = toIntsUnchecked(inner);
        }
        return new BlockGroups(g);
    }

    /** Whether the value is a flat list of numbers (the seed's shape). */
    static boolean isFlatParamValue(Object v) {
        if (v instanceof LongView) {
            return true;
        }
        if (v instanceof GroupedView g) {
            return g.groups.length == 0;
        }
        if (!(v instanceof List<?> list)) {
            return false;
        }
        for (Object o : list) {
            if (!(o instanceof Number)) {
                return false;
            }
        }
        return true;
    }

    private static int[] toInts(List<? extends Number> l) {
        int[] a = new int[l.size()];
        for (int i = 0; i < a.length; i++) {
            a[i] = l.get(i).intValue();
        }
        return a;
    }

    private static int[] toIntsUnchecked(List<?> l) {
        int[] a = new int[l.size()];
        for (int i = 0; i < a.length; i++) {
            a[i] = ((Number) l.get(i)).intValue();
        }
        return a;
    }

    public int size() {
        return groups.length;
    }

    /** The ids of group {@code i} (shared; do not modify). */
    public int[] group(int i) {
        return groups[i];
    }

    /**
     * Group 0 alone, as {@code single(first())} gives, without copying the shared array (this
     * instance when it has exactly one group).
     */
    public BlockGroups firstOnly() {
        return groups.length == 1 ? this : new BlockGroups(new int[][] {first()});
    }

    /** Group 0, or an empty array when there are no groups. */
    public int[] first() {
        return groups.length == 0 ? new int[0] : groups[0];
    }

    /** True when every group is empty (or there are no groups). */
    public boolean allEmpty() {
        for (int[] g : groups) {
            if (g.length > 0) {
                return false;
            }
        }
        return true;
    }

    public int totalBlocks() {
        int n = 0;
        for (int[] g : groups) {
            n += g.length;
        }
        return n;
    }

    /** This value with {@code other}'s group {@code i} appended to group {@code i}. */
    public BlockGroups appendPerGroup(BlockGroups other) {
        int n = Math.max(groups.length, other.groups.length);
        int[][] g = new int[n][];
        for (int i = 0; i < n; i++) {
            int[] a = i < groups.length ? groups[i] : new int[0];
            int[] b = i < other.groups.length ? other.groups[i] : new int[0];
            int[] c = Arrays.copyOf(a, a.length + b.length);
            System.arraycopy(b, 0, c, a.length, b.length);
            g[i] = c;
        }
        return new BlockGroups(g);
    }

    /** A one-group value holding group 0 followed by {@code extra}. */
    public static BlockGroups concatFlat(int[] a, int[] extra) {
        int[] c = Arrays.copyOf(a, a.length + extra.length);
        System.arraycopy(extra, 0, c, a.length, extra.length);
        return new BlockGroups(new int[][] {c});
    }

    /** Groups {@code indices} of this value, in that order. */
    public BlockGroups select(int[] indices) {
        int[][] g = new int[indices.length][];
        for (int i = 0; i < indices.length; i++) {
            g[i] = indices[i] < groups.length ? groups[indices[i]] : new int[0];
        }
        return new BlockGroups(g);
    }

    /** Replaces group {@code i}. */
    public BlockGroups withGroup(int i, int[] ids) {
        int[][] g = groups.clone();
        g[i] = ids;
        return new BlockGroups(g);
    }

    /** Group {@code i}'s last {@code keep} ids ({@code keep <= 0} keeps all). */
    public static int[] tail(int[] ids, int keep) {
        if (keep <= 0 || ids.length <= keep) {
            return ids;
        }
        return Arrays.copyOfRange(ids, ids.length - keep, ids.length);
    }

    /** The Python value of this object: a list of lists of ints (an unmodifiable view). */
    public List<Object> toGroupedValue() {
        return new GroupedView(groups);
    }

    /**
     * The Python value of one id list: an unmodifiable list of longs, a view over the array
     * (nothing is boxed until read; the array must not change afterwards).
     */
    public static List<Object> flatValue(int[] ids) {
        return new LongView(ids);
    }

    /** The ids as an unmodifiable list of integers, a view over the array. */
    public static List<Integer> intView(int[] ids) {
        return new IntView(ids);
    }

    private static final class LongView extends java.util.AbstractList<Object> implements java.util.RandomAccess {
        private final int[] ids;

        LongView(int[] ids) {
            this.ids = ids;
        }

        @Override
        public Object get(int i) {
            return (long) ids[i];
        }

        @Override
        public int size() {
            return ids.length;
        }
    }

    private static final class IntView extends java.util.AbstractList<Integer> implements java.util.RandomAccess {
        private final int[] ids;

        IntView(int[] ids) {
            this.ids = ids;
        }

        @Override
        public Integer get(int i) {
            return ids[i];
        }

        @Override
        public int size() {
            return ids.length;
        }
    }

    private static final class GroupedView extends java.util.AbstractList<Object> implements java.util.RandomAccess {
        private final int[][] groups;

        GroupedView(int[][] groups) {
            this.groups = groups;
        }

        @Override
        public Object get(int i) {
            return new LongView(groups[i]);
        }

        @Override
        public int size() {
            return groups.length;
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof BlockGroups b && Arrays.deepEquals(groups, b.groups);
    }

    @Override
    public int hashCode() {
        return Arrays.deepHashCode(groups);
    }

    @Override
    public String toString() {
        return Arrays.deepToString(groups);
    }
}
