package io.kvledger.node.data;

import io.kvledger.rdma.layout.KvGeometry;
import java.util.List;

/**
 * The KV cache a node registers with its transfer engine: one region holding, for each layer,
 * a K plane then a V plane of {@code numBlocks} blocks of {@code blockLenBytes} (the
 * {@code [2, num_blocks, ...]} row of the protocol's layout table).
 */
public record KvLayout(List<String> layers, int numBlocks, long blockLenBytes) {

    public KvLayout {
        layers = List.copyOf(layers);
        if (layers.isEmpty() || numBlocks < 1 || blockLenBytes < 8 || blockLenBytes % 8 != 0) {
            throw new IllegalArgumentException("a KV layout needs layers, at least one block and a block length "
                    + "that is a positive multiple of 8 bytes");
        }
    }

    /** Bytes of one layer (K and V planes). */
    long layerBytes() {
        return 2L * numBlocks * blockLenBytes;
    }

    /** Bytes of the whole region. */
    long regionBytes() {
        return layers.size() * layerBytes();
    }

    /** Offset of layer {@code index} inside the region. */
    long layerOffset(int index) {
        return index * layerBytes();
    }

    /** The geometry of one layer against a peer with {@code remoteNumBlocks} blocks. */
    public KvGeometry geometry(int remoteNumBlocks) {
        return KvGeometry.kvSplit(numBlocks, remoteNumBlocks, blockLenBytes, blockLenBytes);
    }

    /** Offset of the K entry of {@code block} in layer {@code layer}; the V entry follows one plane later. */
    long blockOffset(int layer, int block, boolean v) {
        return layerOffset(layer) + (v ? (long) numBlocks * blockLenBytes : 0) + block * blockLenBytes;
    }
}
