package io.kvledger.rdma.layout;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.rdma.FailureCode;
import io.kvledger.rdma.OffsetBatch;
import io.kvledger.rdma.Result;
import org.junit.jupiter.api.Test;

/** The layout rules of protocol section 6, row by row. */
class KvGeometryTest {

    static KvGeometry ok(Result<KvGeometry> r) {
        return r.orElseThrow();
    }

    static void entries(OffsetBatch b, long[]... expected) {
        assertThat(b.size()).as("%s", b).isEqualTo(expected.length);
        for (int i = 0; i < expected.length; i++) {
            assertThat(new long[] {b.localOffset(i), b.remoteOffset(i), b.sizeBytes(i)}).as("entry %d of %s", i, b)
                    .containsExactly(expected[i]);
        }
    }

    @Test
    void mlaIsOneTransferPerBlockOfBlockSizeTimesLatent() {
        KvGeometry g = ok(KvGeometry.of(KvTensor.contiguous(2, 10, 16, 576), 64, true, 0));
        assertThat(g.kind()).isEqualTo(KvGeometry.Kind.MLA);
        assertThat(g.blockLenBytes()).as("tensor block size wins over spec 64").isEqualTo(16 * 576 * 2);
        assertThat(g.transfersPerBlock()).isEqualTo(1);
        assertThat(g.regionsPerBlock()).isEqualTo(1);
        entries(g.computeOffsets(new int[] {1, 3}, new int[] {2, 5}).orElseThrow(),
                new long[] {18432, 36864, 18432}, new long[] {3 * 18432, 5 * 18432, 18432});
        assertThat(g.localExtentBytes()).isEqualTo(10 * 18432);
    }

    @Test
    void mlaWithAPaddedBlockStrideNeverMerges() {
        KvGeometry g = ok(KvGeometry.of(KvTensor.of(new long[] {10, 16, 576}, new long[] {10000, 576, 1}, 2), 16, true, 0));
        assertThat(g.blockStrideBytes()).isEqualTo(20000);
        OffsetBatch planned = g.plan(new int[] {1, 2, 3}, new int[] {1, 2, 3}).orElseThrow();
        assertThat(planned.size()).as("stride %d > block_len %d", g.blockStrideBytes(), g.blockLenBytes()).isEqualTo(3);
    }

    @Test
    void kvSplitNhdHasKThenVWithTheRemoteKvStrideFromTheRemoteBlockCount() {
        KvGeometry g = ok(KvGeometry.of(KvTensor.contiguous(2, 2, 8, 16, 4, 32), 16, false, 12));
        assertThat(g.kind()).isEqualTo(KvGeometry.Kind.KV_SPLIT);
        assertThat(g.blockLenBytes()).isEqualTo(16 * 4 * 32 * 2);
        assertThat(g.blockStrideBytes()).isEqualTo(4096);
        assertThat(g.localKvStrideBytes()).as("stride[0]").isEqualTo(8 * 4096);
        assertThat(g.remoteKvStrideBytes()).as("stride[1] * remote_num_blocks").isEqualTo(12 * 4096);
        assertThat(g.transfersPerBlock()).isEqualTo(2);
        assertThat(g.regionsPerBlock()).isEqualTo(2);
        entries(g.computeOffsets(new int[] {1, 6}, new int[] {2, 11}).orElseThrow(),
                new long[] {4096, 8192, 4096},
                new long[] {8 * 4096 + 4096, 12 * 4096 + 8192, 4096},
                new long[] {6 * 4096, 11 * 4096, 4096},
                new long[] {8 * 4096 + 6 * 4096, 12 * 4096 + 11 * 4096, 4096});
        assertThat(g.localExtentBytes()).isEqualTo(16 * 4096);
        assertThat(g.remoteExtentBytes()).isEqualTo(24 * 4096);
    }

    @Test
    void kvSplitWithoutARemoteBlockCountAssumesTheLocalOne() {
        KvGeometry g = ok(KvGeometry.of(KvTensor.contiguous(2, 2, 8, 16, 4, 32), 16, false, 0));
        assertThat(g.remoteNumBlocks()).isEqualTo(8);
        assertThat(g.remoteKvStrideBytes()).isEqualTo(g.localKvStrideBytes());
        assertThat(KvGeometry.kvSplit(8, 0, 4096, 4096)).isEqualTo(g);
    }

    @Test
    void kvSplitHndFindsTheBlockAxisAtThree() {
        KvGeometry g = ok(KvGeometry.of(KvTensor.contiguous(2, 2, 8, 4, 16, 32), 16, false, 0));
        assertThat(g.kind()).isEqualTo(KvGeometry.Kind.KV_SPLIT);
        assertThat(g.kernelBlocksPerBlock()).isEqualTo(1);
        assertThat(g.blockLenBytes()).isEqualTo(4096);
    }

    @Test
    void kvSplitKernelBlocksGroupIntoLogicalBlocks() {
        // spec block 32 tokens, kernel blocks of 16: kbpb = 2, 16 kernel blocks = 8 logical ones
        KvGeometry g = ok(KvGeometry.of(KvTensor.contiguous(2, 2, 16, 16, 4, 32), 32, false, 0));
        assertThat(g.kernelBlocksPerBlock()).isEqualTo(2);
        assertThat(g.numBlocks()).isEqualTo(8);
        assertThat(g.blockLenBytes()).isEqualTo(32 * 4 * 32 * 2);
        assertThat(g.blockStrideBytes()).as("stride[1] * kbpb * esz").isEqualTo(2048L * 2 * 2);
        assertThat(g.localKvStrideBytes()).isEqualTo(16 * 2048L * 2);
        assertThat(g.remoteKvStrideBytes()).isEqualTo(8 * 8192L);
        entries(g.computeOffsets(new int[] {3}, new int[] {1}).orElseThrow(),
                new long[] {3 * 8192, 8192, 8192}, new long[] {65536 + 3 * 8192, 65536 + 8192, 8192});
    }

    @Test
    void kernelBlocksThatDoNotDivideNumBlocksAreUnsupported() {
        Result<KvGeometry> r = KvGeometry.of(KvTensor.contiguous(2, 2, 10, 16, 4, 32), 48, false, 0);
        assertThat(r.errorOrNull().code()).isEqualTo(FailureCode.UNSUPPORTED_LAYOUT);
        assertThat(r.errorOrNull().message()).startsWith("Unsupported MoRIIO KV cache shape [2, 10, 16, 4, 32]")
                .contains("does not divide num_blocks 10");
    }

    @Test
    void fusedBlocksKeepKAndVInsideEachBlock() {
        KvGeometry g = ok(KvGeometry.of(KvTensor.contiguous(2, 8, 2, 16, 4, 32), 16, false, 0));
        assertThat(g.kind()).isEqualTo(KvGeometry.Kind.FUSED);
        assertThat(g.blockStrideBytes()).isEqualTo(8192);
        assertThat(g.localKvStrideBytes()).isEqualTo(4096).isEqualTo(g.remoteKvStrideBytes());
        assertThat(g.regionsPerBlock()).isEqualTo(1);
        entries(g.computeOffsets(new int[] {1}, new int[] {5}).orElseThrow(),
                new long[] {8192, 5 * 8192, 4096}, new long[] {8192 + 4096, 5 * 8192 + 4096, 4096});
        // K of block 1, V of block 1, K of block 2 ... are contiguous: one run
        entries(g.plan(new int[] {1, 2}, new int[] {5, 6}).orElseThrow(), new long[] {8192, 5 * 8192, 4 * 4096});
    }

    @Test
    void fusedKernelBlocksMoveTheWholeBlockInOneTransfer() {
        KvGeometry g = ok(KvGeometry.of(KvTensor.contiguous(2, 16, 2, 16, 4, 32), 32, false, 0));
        assertThat(g.kind()).isEqualTo(KvGeometry.Kind.FUSED_WHOLE_BLOCK);
        assertThat(g.transfersPerBlock()).isEqualTo(1);
        assertThat(g.numBlocks()).isEqualTo(8);
        assertThat(g.blockLenBytes()).as("stride[0] * kbpb * esz").isEqualTo(4096L * 2 * 2);
        entries(g.computeOffsets(new int[] {2}, new int[] {7}).orElseThrow(), new long[] {2 * 16384, 7 * 16384, 16384});
    }

    @Test
    void otherShapesAreUnsupportedWithTheProtocolsMessage() {
        for (KvTensor t : new KvTensor[] {
                KvTensor.contiguous(2, 3, 8, 16, 4, 32),   // no axis of size 2 at 0 or 1
                KvTensor.contiguous(2, 8, 16, 64),         // rank 3 without MLA
                KvTensor.contiguous(2, 2, 8, 7, 5, 32)}) { // no block axis, 7 and 5 do not divide 16
            Result<KvGeometry> r = KvGeometry.of(t, 16, false, 0);
            assertThat(r.errorOrNull()).as("%s", t).isNotNull();
            assertThat(r.errorOrNull().code()).isEqualTo(FailureCode.UNSUPPORTED_LAYOUT);
            assertThat(r.errorOrNull().message()).startsWith("Unsupported MoRIIO KV cache shape");
        }
        assertThat(KvGeometry.of(KvTensor.contiguous(2, 2, 8, 16, 64), 16, true, 0).errorOrNull().code())
                .as("MLA of rank 4").isEqualTo(FailureCode.UNSUPPORTED_LAYOUT);
    }

    @Test
    void badTensorsAreInvalidArgumentsNotExceptions() {
        assertThat(KvGeometry.of(null, 16, false, 0).errorOrNull().code()).isEqualTo(FailureCode.INVALID_ARGUMENT);
        assertThat(KvGeometry.of(KvTensor.of(new long[] {2, 8}, new long[] {8}, 2), 16, false, 0).errorOrNull().code())
                .isEqualTo(FailureCode.INVALID_ARGUMENT);
        assertThat(KvGeometry.of(KvTensor.contiguous(0, 2, 8, 16, 4, 32), 16, false, 0).errorOrNull().code())
                .isEqualTo(FailureCode.INVALID_ARGUMENT);
        assertThat(KvGeometry.of(KvTensor.contiguous(2, 2, 0, 16, 4, 32), 16, false, 0).errorOrNull().code())
                .isEqualTo(FailureCode.INVALID_ARGUMENT);
        assertThat(KvGeometry.of(KvTensor.contiguous(2, 2, 8, 16, 4, 32), 16, false, -1).errorOrNull().code())
                .isEqualTo(FailureCode.INVALID_ARGUMENT);
        assertThat(KvGeometry.of(KvTensor.of(new long[] {2, 1L << 40, 16, 1L << 20, 1L << 20},
                new long[] {1L << 62, 1L << 40, 1L << 40, 1L << 20, 1}, 8), 16, false, 0).errorOrNull().code())
                .as("overflow").isEqualTo(FailureCode.INVALID_ARGUMENT);
    }

    @Test
    void unequalBlockListsAreATypedErrorNotAnException() {
        KvGeometry g = KvGeometry.kvSplit(8, 0, 4096, 4096);
        Result<OffsetBatch> r = g.computeOffsets(new int[] {1, 2, 3}, new int[] {1, 2});
        assertThat(r.errorOrNull().code()).isEqualTo(FailureCode.UNEQUAL_BLOCK_LISTS);
        assertThat(r.errorOrNull().message()).contains("3 block ids", "remote 2");
        assertThat(g.plan(new int[] {1}, new int[0]).errorOrNull().code()).isEqualTo(FailureCode.UNEQUAL_BLOCK_LISTS);
        assertThat(g.plan(null, new int[0]).errorOrNull().code()).isEqualTo(FailureCode.INVALID_ARGUMENT);
    }

    @Test
    void blockIdsOutsideEitherSideAreRefused() {
        KvGeometry g = KvGeometry.kvSplit(8, 12, 4096, 4096);
        assertThat(g.computeOffsets(new int[] {8}, new int[] {0}).errorOrNull().message()).contains("local block id 8");
        assertThat(g.computeOffsets(new int[] {-1}, new int[] {0}).errorOrNull().code())
                .isEqualTo(FailureCode.BLOCK_ID_OUT_OF_RANGE);
        assertThat(g.computeOffsets(new int[] {0}, new int[] {12}).errorOrNull().message()).contains("remote block id 12");
        assertThat(g.computeOffsets(new int[] {7}, new int[] {11}).isOk()).isTrue();
        assertThat(g.computeOffsets(new int[0], new int[0]).orElseThrow().size()).as("no blocks, no entries").isZero();
    }

    @Test
    void contiguousRunsMergeOnBothSidesPerPlane() {
        KvGeometry g = KvGeometry.kvSplit(64, 96, 4096, 4096);
        OffsetBatch b = g.plan(new int[] {3, 4, 5, 10, 11, 20}, new int[] {40, 41, 42, 7, 8, 90}).orElseThrow();
        long kvL = 64 * 4096L;
        long kvR = 96 * 4096L;
        entries(b,
                new long[] {3 * 4096, 40 * 4096, 3 * 4096},
                new long[] {10 * 4096, 7 * 4096, 2 * 4096},
                new long[] {20 * 4096, 90 * 4096, 4096},
                new long[] {kvL + 3 * 4096, kvR + 40 * 4096, 3 * 4096},
                new long[] {kvL + 10 * 4096, kvR + 7 * 4096, 2 * 4096},
                new long[] {kvL + 20 * 4096, kvR + 90 * 4096, 4096});
        assertThat(b.totalBytes()).isEqualTo(12 * 4096);
    }

    @Test
    void aGapOnEitherSideBreaksARun() {
        KvGeometry g = KvGeometry.kvSplit(64, 64, 4096, 4096);
        OffsetBatch remoteGap = KvGeometry.mergeContiguous(
                g.computeOffsets(new int[] {3, 4, 5}, new int[] {40, 41, 50}).orElseThrow(), false);
        assertThat(remoteGap.size()).as("K: 3-4 then 5; V likewise").isEqualTo(4);
        OffsetBatch localGap = KvGeometry.mergeContiguous(
                g.computeOffsets(new int[] {3, 4, 6}, new int[] {40, 41, 42}).orElseThrow(), false);
        assertThat(localGap.size()).isEqualTo(4);
    }

    @Test
    void unsortedEntriesAreStableSortedByLocalOffsetBeforeMerging() {
        KvGeometry g = KvGeometry.kvSplit(64, 64, 4096, 4096);
        OffsetBatch b = g.plan(new int[] {5, 3, 4}, new int[] {42, 40, 41}).orElseThrow();
        entries(b, new long[] {3 * 4096, 40 * 4096, 3 * 4096}, new long[] {64 * 4096 + 3 * 4096, 64 * 4096 + 40 * 4096, 3 * 4096});
        // equal local offsets keep their order (stable) and never merge
        OffsetBatch dup = KvGeometry.mergeContiguous(OffsetBatch.of(new long[] {8, 0, 8}, new long[] {100, 0, 200},
                new long[] {8, 8, 8}), false);
        entries(dup, new long[] {0, 0, 8}, new long[] {8, 100, 8}, new long[] {8, 200, 8});
        // told it is sorted, it does not sort
        OffsetBatch asIs = KvGeometry.mergeContiguous(OffsetBatch.of(new long[] {8, 0}, new long[] {8, 0},
                new long[] {8, 8}), true);
        assertThat(asIs.size()).isEqualTo(2);
        assertThat(asIs.localOffset(0)).isEqualTo(8);
    }

    @Test
    void mergingLeavesMalformedAndTinyBatchesAlone() {
        OffsetBatch bad = OffsetBatch.of(new long[] {0, 8}, new long[] {0}, new long[] {8, 8});
        assertThat(KvGeometry.mergeContiguous(bad, false)).isSameAs(bad);
        OffsetBatch one = OffsetBatch.single(0, 0, 8);
        assertThat(KvGeometry.mergeContiguous(one, false)).isSameAs(one);
    }

    @Test
    void layerOffsetsShiftEveryEntry() {
        OffsetBatch b = KvGeometry.kvSplit(8, 8, 4096, 4096).plan(new int[] {1}, new int[] {2}).orElseThrow()
                .shifted(1 << 20, 2 << 20);
        entries(b, new long[] {(1 << 20) + 4096, (2 << 20) + 8192, 4096},
                new long[] {(1 << 20) + 8 * 4096 + 4096, (2 << 20) + 8 * 4096 + 8192, 4096});
    }
}
