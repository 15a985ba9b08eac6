/**
 * KV-cache layout arithmetic of protocol section 6 ({@code moriio_layout.py}): a layer's
 * geometry from its tensor shape (MLA, K/V split planes, fused, kernel blocks), the byte
 * offsets of block ids on each side, and the merging of contiguous runs. Pure functions; may
 * depend on {@code io.kvledger.rdma} (for {@code OffsetBatch}, {@code Result}) and the JDK only.
 */
package io.kvledger.rdma.layout;
