package io.kvledger.rdma;

import java.util.Arrays;

/**
 * The entries of one batch read or write: parallel arrays of local offset, remote offset and
 * size, in bytes, relative to the start of the local region and of the remote region. This is
 * the {@code (local_offsets, remote_offsets, sizes)} triple that MoRIIO hands to
 * {@code session.batch_read}/{@code batch_write}.
 *
 * <p>The arrays are copied in and never handed out, so a batch is immutable. A batch whose
 * arrays differ in length can be built (so that building never throws); posting it is refused
 * with {@link FailureCode#MALFORMED_BATCH}.
 */
public final class OffsetBatch {

    private static final long[] NONE = new long[0];
    private static final OffsetBatch EMPTY = new OffsetBatch(NONE, NONE, NONE, false);

    private final long[] local;
    private final long[] remote;
    private final long[] sizes;

    private OffsetBatch(long[] local, long[] remote, long[] sizes, boolean copy) {
        this.local = local == null ? NONE : copy ? local.clone() : local;
        this.remote = remote == null ? NONE : copy ? remote.clone() : remote;
        this.sizes = sizes == null ? NONE : copy ? sizes.clone() : sizes;
    }

    /** A batch from parallel arrays (copied); {@code null} arrays count as empty. */
    public static OffsetBatch of(long[] localOffsets, long[] remoteOffsets, long[] sizes) {
        return new OffsetBatch(localOffsets, remoteOffsets, sizes, true);
    }

    /** A batch of one entry. */
    public static OffsetBatch single(long localOffset, long remoteOffset, long size) {
        return new OffsetBatch(new long[] {localOffset}, new long[] {remoteOffset}, new long[] {size}, false);
    }

    /** The batch with no entries (posting it is refused with {@link FailureCode#EMPTY_BATCH}). */
    public static OffsetBatch empty() {
        return EMPTY;
    }

    /** Wraps arrays this package built and will not touch again. */
    static OffsetBatch adopt(long[] localOffsets, long[] remoteOffsets, long[] sizes) {
        return new OffsetBatch(localOffsets, remoteOffsets, sizes, false);
    }

    /** Number of entries (of the local offsets array when the arrays differ). */
    public int size() {
        return local.length;
    }

    /** Whether the three arrays have the same length. */
    public boolean isWellFormed() {
        return local.length == remote.length && local.length == sizes.length;
    }

    public long localOffset(int i) {
        return local[i];
    }

    public long remoteOffset(int i) {
        return remote[i];
    }

    public long sizeBytes(int i) {
        return sizes[i];
    }

    /** Copies of the three arrays. */
    public long[] localOffsets() {
        return local.clone();
    }

    public long[] remoteOffsets() {
        return remote.clone();
    }

    public long[] sizes() {
        return sizes.clone();
    }

    /** Sum of the sizes (saturating at {@link Long#MAX_VALUE}). */
    public long totalBytes() {
        long total = 0;
        for (long s : sizes) {
            total = s > 0 && total > Long.MAX_VALUE - s ? Long.MAX_VALUE : total + s;
        }
        return total;
    }

    /**
     * This batch with {@code localDelta} added to every local offset and {@code remoteDelta} to
     * every remote offset: a layer's place inside a shared memory region (protocol section 6,
     * "Shared MR": local offsets add {@code kv_layer_mr_offset[layer]}, remote offsets add the
     * layer's base address minus the remote region's base).
     */
    public OffsetBatch shifted(long localDelta, long remoteDelta) {
        long[] l = local.clone();
        long[] r = remote.clone();
        for (int i = 0; i < l.length; i++) {
            l[i] += localDelta;
        }
        for (int i = 0; i < r.length; i++) {
            r[i] += remoteDelta;
        }
        return new OffsetBatch(l, r, sizes.clone(), false);
    }

    /** This batch followed by {@code other}'s entries. */
    OffsetBatch concat(OffsetBatch other) {
        return new OffsetBatch(join(local, other.local), join(remote, other.remote), join(sizes, other.sizes), false);
    }

    private static long[] join(long[] a, long[] b) {
        long[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof OffsetBatch b && Arrays.equals(local, b.local) && Arrays.equals(remote, b.remote)
                && Arrays.equals(sizes, b.sizes);
    }

    @Override
    public int hashCode() {
        return 31 * (31 * Arrays.hashCode(local) + Arrays.hashCode(remote)) + Arrays.hashCode(sizes);
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("OffsetBatch[");
        int n = Math.min(Math.min(local.length, remote.length), sizes.length);
        for (int i = 0; i < n && i < 8; i++) {
            sb.append(i == 0 ? "" : ", ").append(local[i]).append("->").append(remote[i]).append(':').append(sizes[i]);
        }
        if (n > 8) {
            sb.append(", ... ").append(n - 8).append(" more");
        }
        if (!isWellFormed()) {
            sb.append(" MALFORMED ").append(local.length).append('/').append(remote.length).append('/').append(sizes.length);
        }
        return sb.append(']').toString();
    }
}
