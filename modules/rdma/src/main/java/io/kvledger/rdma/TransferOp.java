package io.kvledger.rdma;

/** The direction of a batch, seen from the side that posts it. */
public enum TransferOp {
    /** Pull remote bytes into the local region (MoRIIO {@code batch_read}; the READ-mode consumer). */
    READ,
    /** Push local bytes into the remote region (MoRIIO {@code batch_write}; the WRITE-mode producer). */
    WRITE
}
