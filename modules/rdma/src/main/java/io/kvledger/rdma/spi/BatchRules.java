package io.kvledger.rdma.spi;

import io.kvledger.rdma.FailureCode;
import io.kvledger.rdma.OffsetBatch;
import io.kvledger.rdma.TransferError;
import io.kvledger.rdma.TransferOp;
import java.lang.foreign.MemorySegment;

/** The checks every engine makes before posting a batch. */
public final class BatchRules {

    private BatchRules() {}

    /**
     * The first reason to refuse {@code batch} against a local region of {@code localLength}
     * bytes and a remote one of {@code remoteLength}, or {@code null} when it may be posted.
     */
    public static TransferError check(OffsetBatch batch, long localLength, long remoteLength) {
        if (batch == null) {
            return new TransferError(FailureCode.INVALID_ARGUMENT, "batch is null");
        }
        if (!batch.isWellFormed()) {
            return new TransferError(FailureCode.MALFORMED_BATCH, "batch arrays differ in length: "
                    + batch.localOffsets().length + " local offsets, " + batch.remoteOffsets().length
                    + " remote offsets, " + batch.sizes().length + " sizes");
        }
        if (batch.size() == 0) {
            return new TransferError(FailureCode.EMPTY_BATCH, "batch has no entries");
        }
        for (int i = 0; i < batch.size(); i++) {
            long l = batch.localOffset(i);
            long r = batch.remoteOffset(i);
            long s = batch.sizeBytes(i);
            if (s <= 0) {
                return new TransferError(FailureCode.ZERO_SIZE, "entry " + i + " has size " + s);
            }
            if (l < 0 || l > localLength - s) {
                return new TransferError(FailureCode.LOCAL_OUT_OF_BOUNDS, "entry " + i + " [" + l + ", " + l + "+" + s
                        + ") is outside the local region of " + localLength + " bytes");
            }
            if (r < 0 || r > remoteLength - s) {
                return new TransferError(FailureCode.REMOTE_OUT_OF_BOUNDS, "entry " + i + " [" + r + ", " + r + "+" + s
                        + ") is outside the remote region of " + remoteLength + " bytes");
            }
        }
        return null;
    }

    /**
     * Moves the batch with {@link MemorySegment#copy}: local to remote for a
     * write, remote to local for a read. Both engines' direct paths use it.
     *
     * @throws IllegalStateException when either segment's arena was closed meanwhile
     */
    public static void copy(TransferOp op, MemorySegment local,
                            MemorySegment remote, OffsetBatch b) {
        for (int i = 0; i < b.size(); i++) {
            if (op == TransferOp.WRITE) {
                MemorySegment.copy(local, b.localOffset(i), remote, b.remoteOffset(i), b.sizeBytes(i));
            } else {
                MemorySegment.copy(remote, b.remoteOffset(i), local, b.localOffset(i), b.sizeBytes(i));
            }
        }
    }
}
