package io.kvledger.wire;

import java.util.AbstractList;
import java.util.List;
import java.util.RandomAccess;

/**
 * An immutable {@code List<Integer>} of block ids backed by an {@code int[]}, so a decoded
 * {@code block_notify_list} costs 4 bytes per id instead of a boxed {@code Integer} each. It
 * equals any other {@code List} with the same elements.
 */
final class BlockIdList extends AbstractList<Integer> implements RandomAccess {

    private static final BlockIdList EMPTY = new BlockIdList(new int[0]);

    private final int[] ids;

    private BlockIdList(int[] ids) {
        this.ids = ids;
    }

    /** A list holding a copy of {@code ids}. */
    static BlockIdList of(int... ids) {
        return ids.length == 0 ? EMPTY : new BlockIdList(ids.clone());
    }

    /** A list of the elements of {@code ids} (which must not contain null). */
    static BlockIdList copyOf(List<Integer> ids) {
        if (ids instanceof BlockIdList b) {
            return b;
        }
        int[] a = new int[ids.size()];
        for (int i = 0; i < a.length; i++) {
            a[i] = ids.get(i);
        }
        return a.length == 0 ? EMPTY : new BlockIdList(a);
    }

    /** Takes ownership of an array nobody else holds (decoders' own arrays). */
    static BlockIdList wrap(int[] ids) {
        return ids.length == 0 ? EMPTY : new BlockIdList(ids);
    }

    @Override
    public Integer get(int index) {
        return ids[index];
    }

    /** The id at {@code index}, unboxed. */
    int getInt(int index) {
        return ids[index];
    }

    @Override
    public int size() {
        return ids.length;
    }

    int[] toIntArray() {
        return ids.clone();
    }
}
