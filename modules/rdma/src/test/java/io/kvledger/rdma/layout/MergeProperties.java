package io.kvledger.rdma.layout;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.rdma.OffsetBatch;
import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * Merging contiguous runs never changes which bytes go where: expanding the merged entries into
 * {@code block_len} pieces gives back exactly the unmerged entries (as a sorted list), the total
 * is unchanged, and no two neighbouring merged entries could be merged further.
 */
class MergeProperties {

    record Case(KvGeometry geometry, int[] local, int[] remote) {}

    @Provide
    Arbitrary<Case> cases() {
        Arbitrary<Integer> blocks = Arbitraries.integers().between(1, 48);
        return Combinators.combine(blocks, blocks, Arbitraries.integers().between(0, 2), Arbitraries.integers().between(0, 40))
                .flatAs((nl, nr, pad, n) -> {
                    long len = 512;
                    KvGeometry g = KvGeometry.kvSplit(nl, nr, len, len + pad * 64L);
                    Arbitrary<int[]> l = Arbitraries.integers().between(0, nl - 1).array(int[].class).ofSize(n);
                    Arbitrary<int[]> r = Arbitraries.integers().between(0, nr - 1).array(int[].class).ofSize(n);
                    return Combinators.combine(l, r).as((a, b) -> new Case(g, a, b));
                });
    }

    static List<String> pieces(OffsetBatch b, long len) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < b.size(); i++) {
            for (long k = 0; k < b.sizeBytes(i); k += len) {
                out.add((b.localOffset(i) + k) + "->" + (b.remoteOffset(i) + k));
            }
        }
        out.sort(null);
        return out;
    }

    @Property(tries = 300)
    void mergingPreservesTheByteMapping(@ForAll("cases") Case c) {
        OffsetBatch raw = c.geometry().computeOffsets(c.local(), c.remote()).orElseThrow();
        OffsetBatch merged = KvGeometry.mergeContiguous(raw, false);
        long len = c.geometry().blockLenBytes();
        assertThat(pieces(merged, len)).isEqualTo(pieces(raw, len));
        assertThat(merged.totalBytes()).isEqualTo(raw.totalBytes());
        assertThat(merged.size()).isLessThanOrEqualTo(raw.size());
        for (int i = 1; i < merged.size(); i++) {
            boolean mergeable = merged.localOffset(i) == merged.localOffset(i - 1) + merged.sizeBytes(i - 1)
                    && merged.remoteOffset(i) == merged.remoteOffset(i - 1) + merged.sizeBytes(i - 1);
            assertThat(mergeable).as("entries %d and %d of %s", i - 1, i, merged).isFalse();
            assertThat(merged.localOffset(i)).isGreaterThanOrEqualTo(merged.localOffset(i - 1));
        }
    }
}
