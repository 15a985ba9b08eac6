package io.kvledger.rdma;

/**
 * A connection from one local region to one peer region (MoRIIO's
 * {@code create_session(local MemoryDesc, remote MemoryDesc)}), on which batches are posted.
 *
 * <p>Opening is asynchronous: the session starts {@link State#CONNECTING}, and a connection
 * that cannot be made (unreachable peer, remote key that does not unpack) turns it
 * {@link State#FAILED}. Batches may be posted at once; they are ordered after the connection
 * and, if it fails, complete with a failure event naming why. Posting never blocks and is safe
 * from any thread, including Reactor threads.
 */
public interface Session extends AutoCloseable {

    /** Life of a session. */
    enum State { CONNECTING, OPEN, FAILED, CLOSED }

    MemoryRegion local();

    RegionDescriptor remote();

    State state();

    /** Why the session failed or closed, or {@code null} while it is connecting or open. */
    TransferError failure();

    /**
     * Posts a batch. Bad input is refused before anything is posted: an empty batch
     * ({@link FailureCode#EMPTY_BATCH}), an entry of size 0 ({@link FailureCode#ZERO_SIZE}), an
     * entry outside the local or remote region ({@link FailureCode#LOCAL_OUT_OF_BOUNDS},
     * {@link FailureCode#REMOTE_OUT_OF_BOUNDS}), a transfer id already in flight
     * ({@link FailureCode#DUPLICATE_TRANSFER_ID}), a closed region, session or engine. An
     * accepted batch gets exactly one {@link TransferEvent}, within {@code transfer_timeout}.
     *
     * @param transferId engine-unique while in flight (MoRIIO's {@code allocate_transfer_uid()})
     */
    Result<PendingTransfer> post(long transferId, TransferOp op, OffsetBatch batch);

    default Result<PendingTransfer> read(long transferId, OffsetBatch batch) {
        return post(transferId, TransferOp.READ, batch);
    }

    default Result<PendingTransfer> write(long transferId, OffsetBatch batch) {
        return post(transferId, TransferOp.WRITE, batch);
    }

    /** Closes the session; batches in flight still complete. Idempotent. */
    @Override
    void close();
}
