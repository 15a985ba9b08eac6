package io.kvledger.rdma;

/**
 * The completion of one posted batch, as data. Exactly one event arrives per accepted batch:
 * nothing an engine does can leave a batch without one (a transfer that outlives
 * {@code transfer_timeout} gets a {@link Failed} with {@link FailureCode#TIMEOUT}).
 */
public sealed interface TransferEvent {

    /** The id the batch was posted with. */
    long transferId();

    /** {@link System#nanoTime()} when the engine saw the completion. */
    long atNs();

    TransferOp op();

    boolean succeeded();

    /** 0 on success, else {@link FailureCode#code()}. */
    int code();

    /** "ok" on success, else what failed. */
    String message();

    /**
     * The batch completed: every byte is in place at the destination (remote completion for
     * writes, local for reads).
     *
     * @param entries   number of entries posted
     * @param bytes     bytes moved
     * @param latencyNs from the post call to the completion
     */
    record Succeeded(long transferId, long atNs, TransferOp op, int entries, long bytes, long latencyNs)
            implements TransferEvent {
        @Override public boolean succeeded() { return true; }
        @Override public int code() { return 0; }
        @Override public String message() { return "ok"; }
    }

    /**
     * The batch failed: some of its bytes may have arrived, none can be trusted.
     *
     * @param failure why
     * @param detail  what failed, with the transport's own status where there is one
     */
    record Failed(long transferId, long atNs, TransferOp op, FailureCode failure, String detail)
            implements TransferEvent {
        @Override public boolean succeeded() { return false; }
        @Override public int code() { return failure.code(); }
        @Override public String message() { return detail; }
    }
}
