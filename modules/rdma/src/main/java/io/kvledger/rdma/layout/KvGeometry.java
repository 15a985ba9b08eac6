package io.kvledger.rdma.layout;

import io.kvledger.rdma.FailureCode;
import io.kvledger.rdma.OffsetBatch;
import io.kvledger.rdma.Result;
import java.util.Arrays;

/**
 * One layer's transfer geometry and the offset arithmetic of MoRIIO's {@code moriio_layout.py}
 * (protocol section 6): which bytes of the KV region a block id names, on each side.
 *
 * <p>All lengths here are bytes (the Python strides are elements; {@link #of} multiplies by the
 * element size once). For each pair {@code (lb, rb)} of local and remote block ids:
 * <ul>
 *   <li>the K entry (the only entry of one-transfer layouts) is
 *       {@code (lb·block_stride, rb·block_stride, block_len)};</li>
 *   <li>two-transfer layouts add the V entry
 *       {@code (local_kv_stride + lb·block_stride, remote_kv_stride + rb·block_stride, block_len)}.</li>
 * </ul>
 *
 * @param kind                 which row of the layout table this is
 * @param numBlocks            local blocks (logical, after kernel-block grouping)
 * @param remoteNumBlocks      the peer's blocks ({@code remote_num_blocks}, or {@code numBlocks})
 * @param blockLenBytes        bytes per entry ({@code block_len})
 * @param blockStrideBytes     bytes from one block to the next ({@code esz·block_stride})
 * @param localKvStrideBytes   bytes from a block's K to its V here (0 for one-transfer layouts)
 * @param remoteKvStrideBytes  the same on the peer ({@code esz·remote_kv_stride})
 * @param transfersPerBlock    1 or 2
 * @param regionsPerBlock      regions the registration splits into (2 for K/V split planes)
 * @param kernelBlocksPerBlock {@code kbpb}, 1 unless the tensor is cut into kernel blocks
 */
public record KvGeometry(Kind kind, int numBlocks, int remoteNumBlocks, long blockLenBytes, long blockStrideBytes,
                         long localKvStrideBytes, long remoteKvStrideBytes, int transfersPerBlock,
                         int regionsPerBlock, int kernelBlocksPerBlock) {

    /** The rows of the protocol's layout table. */
    public enum Kind {
        /** MLA {@code [num_blocks, block_size, latent]}: one transfer per block. */
        MLA,
        /** {@code [2, num_blocks, ...]}: K plane then V plane, two transfers per block. */
        KV_SPLIT,
        /** {@code [num_blocks, 2, ...]} with the block axis at 2 or 3: K and V inside each block, two transfers. */
        FUSED,
        /** {@code [num_blocks, 2, ...]} cut into kernel blocks: the whole block in one transfer. */
        FUSED_WHOLE_BLOCK
    }

    /**
     * The geometry of a layer from its tensor, by the protocol's table.
     *
     * @param specBlockSize   {@code spec.block_size}: tokens per block of the layer's KV cache group
     * @param mla             whether the layer's spec is MLA ({@code MLAAttentionSpec}/{@code SlidingWindowMLASpec})
     * @param remoteNumBlocks the peer's {@code num_blocks}, or 0 for "the same as here"
     * @return the geometry, or {@link FailureCode#UNSUPPORTED_LAYOUT} ("Unsupported MoRIIO ... cache
     *         shape") / {@link FailureCode#INVALID_ARGUMENT} naming what is wrong
     */
    public static Result<KvGeometry> of(KvTensor t, int specBlockSize, boolean mla, int remoteNumBlocks) {
        if (t == null || t.shapeArray() == null || t.strideArray() == null) {
            return Result.err(FailureCode.INVALID_ARGUMENT, "tensor, shape and strides must not be null");
        }
        if (t.shapeArray().length != t.strideArray().length) {
            return Result.err(FailureCode.INVALID_ARGUMENT, "shape " + Arrays.toString(t.shapeArray()) + " and stride "
                    + Arrays.toString(t.strideArray()) + " differ in rank");
        }
        if (t.elementSize() <= 0 || specBlockSize <= 0 || remoteNumBlocks < 0) {
            return Result.err(FailureCode.INVALID_ARGUMENT, "element size " + t.elementSize() + ", spec block size "
                    + specBlockSize + " must be positive and remote num_blocks " + remoteNumBlocks + " not negative");
        }
        for (int i = 0; i < t.rank(); i++) {
            if (t.shape(i) <= 0 || t.stride(i) <= 0) {
                return Result.err(FailureCode.INVALID_ARGUMENT, "dimension " + i + " of " + t + " is not positive");
            }
        }
        try {
            return mla ? mlaOf(t, remoteNumBlocks) : attentionOf(t, specBlockSize, remoteNumBlocks);
        } catch (ArithmeticException overflow) {
            return Result.err(FailureCode.INVALID_ARGUMENT, t + " overflows 64-bit byte offsets");
        }
    }

    private static Result<KvGeometry> mlaOf(KvTensor t, int remoteNumBlocks) {
        if (t.rank() != 3) {
            return unsupported(t, "MLA expects [num_blocks, block_size, latent]");
        }
        long esz = t.elementSize();
        int nb = toInt(t.shape(0));
        // the tensor's block size wins over the config (FlashMLA override, #37716 Fix B)
        long blockLen = Math.multiplyExact(Math.multiplyExact(t.shape(1), t.shape(2)), esz);
        return Result.ok(new KvGeometry(Kind.MLA, nb, remoteNumBlocks == 0 ? nb : remoteNumBlocks, blockLen,
                Math.multiplyExact(t.stride(0), esz), 0, 0, 1, 1, 1));
    }

    private static Result<KvGeometry> attentionOf(KvTensor t, int spec, int remoteNumBlocks) {
        if (t.rank() < 4) {
            return unsupported(t, "attention layers expect [2, num_blocks, ...] or [num_blocks, 2, ...] of rank 4 or more");
        }
        long esz = t.elementSize();
        boolean blockAxis = t.shape(2) == spec || t.shape(3) == spec;
        if (t.shape(0) == 2) {
            long kbpb = 1;
            if (!blockAxis) {
                long kernel = kernelBlock(t, spec);
                if (kernel == 0) {
                    return unsupported(t, "neither axis 2 nor 3 equals or divides spec.block_size " + spec);
                }
                kbpb = spec / kernel;
                if (t.shape(1) % kbpb != 0) {
                    return unsupported(t, "spec.block_size / kernel_block = " + kbpb + " does not divide num_blocks "
                            + t.shape(1));
                }
            }
            int nb = toInt(t.shape(1) / kbpb);
            int rnb = remoteNumBlocks == 0 ? nb : remoteNumBlocks;
            long blockLen = Math.multiplyExact(Math.multiplyExact(t.product(2), kbpb), esz);
            long blockStride = Math.multiplyExact(Math.multiplyExact(t.stride(1), kbpb), esz);
            long localKv = Math.multiplyExact(t.stride(0), esz);
            // assumes the peer's V plane starts right after its own num_blocks (protocol section 6)
            long remoteKv = Math.multiplyExact(blockStride, rnb);
            return Result.ok(new KvGeometry(Kind.KV_SPLIT, nb, rnb, blockLen, blockStride, localKv, remoteKv, 2, 2,
                    (int) kbpb));
        }
        if (t.shape(1) == 2) {
            if (blockAxis) {
                int nb = toInt(t.shape(0));
                long kv = Math.multiplyExact(t.stride(1), esz);
                return Result.ok(new KvGeometry(Kind.FUSED, nb, remoteNumBlocks == 0 ? nb : remoteNumBlocks,
                        Math.multiplyExact(t.product(2), esz), Math.multiplyExact(t.stride(0), esz), kv, kv, 2, 1, 1));
            }
            long kernel = kernelBlock(t, spec);
            if (kernel == 0) {
                return unsupported(t, "neither axis 2 nor 3 equals or divides spec.block_size " + spec);
            }
            long kbpb = spec / kernel;
            if (t.shape(0) % kbpb != 0) {
                return unsupported(t, "spec.block_size / kernel_block = " + kbpb + " does not divide num_blocks "
                        + t.shape(0));
            }
            int nb = toInt(t.shape(0) / kbpb);
            long whole = Math.multiplyExact(Math.multiplyExact(t.stride(0), kbpb), esz);
            return Result.ok(new KvGeometry(Kind.FUSED_WHOLE_BLOCK, nb, remoteNumBlocks == 0 ? nb : remoteNumBlocks,
                    whole, whole, 0, 0, 1, 1, (int) kbpb));
        }
        return unsupported(t, "no axis of size 2 at 0 or 1");
    }

    /** The kernel block size: axis 2, else axis 3, whichever divides {@code spec} (axis 2 first, NHD). */
    private static long kernelBlock(KvTensor t, int spec) {
        if (t.shape(2) < spec && spec % t.shape(2) == 0) {
            return t.shape(2);
        }
        if (t.shape(3) < spec && spec % t.shape(3) == 0) {
            return t.shape(3);
        }
        return 0;
    }

    private static int toInt(long v) {
        if (v > Integer.MAX_VALUE) {
            throw new ArithmeticException("num_blocks " + v);
        }
        return (int) v;
    }

    private static Result<KvGeometry> unsupported(KvTensor t, String why) {
        return Result.err(FailureCode.UNSUPPORTED_LAYOUT, "Unsupported MoRIIO KV cache shape " + Arrays.toString(
                t.shapeArray()) + ": " + why);
    }

    /** A K/V-split geometry from its byte values (as {@link #of} computes them for contiguous tensors). */
    public static KvGeometry kvSplit(int numBlocks, int remoteNumBlocks, long blockLenBytes, long blockStrideBytes) {
        int rnb = remoteNumBlocks == 0 ? numBlocks : remoteNumBlocks;
        return new KvGeometry(Kind.KV_SPLIT, numBlocks, rnb, blockLenBytes, blockStrideBytes,
                blockStrideBytes * numBlocks, blockStrideBytes * rnb, 2, 2, 1);
    }

    // ------------------------------------------------------------------ offsets

    /**
     * {@code compute_block_transfer_offsets}: the entries for pairs of block ids, per pair the K
     * entry then (two-transfer layouts) the V entry; every size is {@code block_len}.
     *
     * @return the entries, or {@link FailureCode#UNEQUAL_BLOCK_LISTS} when the lists differ in
     *         length (Python raises ValueError), {@link FailureCode#BLOCK_ID_OUT_OF_RANGE} for an
     *         id outside its side's {@code [0, num_blocks)}
     */
    Result<OffsetBatch> computeOffsets(int[] localIds, int[] remoteIds) {
        if (localIds == null || remoteIds == null) {
            return Result.err(FailureCode.INVALID_ARGUMENT, "block id lists must not be null");
        }
        if (localIds.length != remoteIds.length) {
            return Result.err(FailureCode.UNEQUAL_BLOCK_LISTS, "local has " + localIds.length + " block ids, remote "
                    + remoteIds.length + "; compute_block_transfer_offsets needs equal lengths");
        }
        int n = localIds.length * transfersPerBlock;
        long[] l = new long[n];
        long[] r = new long[n];
        long[] s = new long[n];
        int k = 0;
        for (int i = 0; i < localIds.length; i++) {
            int lb = localIds[i];
            int rb = remoteIds[i];
            if (lb < 0 || lb >= numBlocks) {
                return Result.err(FailureCode.BLOCK_ID_OUT_OF_RANGE, "local block id " + lb + " (position " + i
                        + ") is outside [0, " + numBlocks + ")");
            }
            if (rb < 0 || rb >= remoteNumBlocks) {
                return Result.err(FailureCode.BLOCK_ID_OUT_OF_RANGE, "remote block id " + rb + " (position " + i
                        + ") is outside [0, " + remoteNumBlocks + ")");
            }
            l[k] = lb * blockStrideBytes;
            r[k] = rb * blockStrideBytes;
            s[k++] = blockLenBytes;
            if (transfersPerBlock == 2) {
                l[k] = localKvStrideBytes + lb * blockStrideBytes;
                r[k] = remoteKvStrideBytes + rb * blockStrideBytes;
                s[k++] = blockLenBytes;
            }
        }
        return Result.ok(OffsetBatch.of(l, r, s));
    }

    /** {@link #computeOffsets} then {@link #mergeContiguous}. */
    public Result<OffsetBatch> plan(int[] localIds, int[] remoteIds) {
        return computeOffsets(localIds, remoteIds).map(b -> mergeContiguous(b, false));
    }

    /**
     * {@code merge_contiguous_blocks}: stable-sorts the entries by local offset (unless
     * {@code assumeSorted}), then merges each entry into the previous one when both its local
     * and its remote offset follow the previous entry's end. A malformed batch comes back as it is.
     */
    static OffsetBatch mergeContiguous(OffsetBatch b, boolean assumeSorted) {
        if (!b.isWellFormed() || b.size() < 2) {
            return b;
        }
        int n = b.size();
        Integer[] order = new Integer[n];
        boolean sorted = true;
        for (int i = 0; i < n; i++) {
            order[i] = i;
            if (i > 0 && b.localOffset(i) < b.localOffset(i - 1)) {
                sorted = false;
            }
        }
        if (!assumeSorted && !sorted) {
            Arrays.sort(order, (x, y) -> Long.compare(b.localOffset(x), b.localOffset(y))); // stable (TimSort)
        }
        long[] l = new long[n];
        long[] r = new long[n];
        long[] s = new long[n];
        int m = -1;
        long prevL = 0;
        long prevR = 0;
        long prevS = 0;
        for (int j = 0; j < n; j++) {
            int i = order[j];
            long li = b.localOffset(i);
            long ri = b.remoteOffset(i);
            long si = b.sizeBytes(i);
            if (m >= 0 && li - prevL == prevS && ri - prevR == prevS) {
                s[m] += si;
            } else {
                m++;
                l[m] = li;
                r[m] = ri;
                s[m] = si;
            }
            prevL = li;
            prevR = ri;
            prevS = si;
        }
        m++;
        return OffsetBatch.of(Arrays.copyOf(l, m), Arrays.copyOf(r, m), Arrays.copyOf(s, m));
    }

    // ------------------------------------------------------------------ extents

    /** Bytes of the local region this layer's blocks span, from offset 0. */
    public long localExtentBytes() {
        return extent(numBlocks, localKvStrideBytes);
    }

    /** Bytes of the remote region this layer's blocks span, from offset 0. */
    public long remoteExtentBytes() {
        return extent(remoteNumBlocks, remoteKvStrideBytes);
    }

    private long extent(int blocks, long kvStride) {
        long last = (long) (blocks - 1) * blockStrideBytes + blockLenBytes;
        return transfersPerBlock == 2 ? kvStride + last : last;
    }
}
