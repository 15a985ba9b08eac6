package io.kvledger.rdma.layout;

import java.util.Arrays;

/**
 * The shape of one layer's KV cache tensor, as {@code tensor.shape}, {@code tensor.stride()}
 * (in elements, like torch) and {@code tensor.element_size()}.
 */
public final class KvTensor {

    private final long[] shape;
    private final long[] strides;
    private final int elementSize;

    private KvTensor(long[] shape, long[] strides, int elementSize) {
        this.shape = shape;
        this.strides = strides;
        this.elementSize = elementSize;
    }

    /** A tensor; the arrays are copied. Checked by {@link KvGeometry#of}, not here. */
    static KvTensor of(long[] shape, long[] strides, int elementSize) {
        return new KvTensor(shape == null ? null : shape.clone(), strides == null ? null : strides.clone(), elementSize);
    }

    /** A contiguous (row-major) tensor of this shape. */
    public static KvTensor contiguous(int elementSize, long... shape) {
        long[] st = new long[shape.length];
        long acc = 1;
        for (int i = shape.length - 1; i >= 0; i--) {
            st[i] = acc;
            acc *= shape[i];
        }
        return new KvTensor(shape.clone(), st, elementSize);
    }

    int rank() {
        return shape == null ? -1 : shape.length;
    }

    long shape(int i) {
        return shape[i];
    }

    long stride(int i) {
        return strides[i];
    }

    long[] shapeArray() {
        return shape;
    }

    long[] strideArray() {
        return strides;
    }

    int elementSize() {
        return elementSize;
    }

    /** Elements in dims {@code from..rank-1}. */
    long product(int from) {
        long p = 1;
        for (int i = from; i < shape.length; i++) {
            p = Math.multiplyExact(p, shape[i]);
        }
        return p;
    }

    @Override
    public String toString() {
        return "KvTensor[shape " + Arrays.toString(shape) + ", stride " + Arrays.toString(strides) + ", esz "
                + elementSize + "]";
    }
}
