package io.kvledger.rdma;

/**
 * Why a transfer was rejected or failed. The numeric codes are permanent: they travel in
 * {@code NodeEvent.TransferCompleted.code} and so end up in journals. 0 means success and is
 * not a member. Codes 1xx are rejections (the batch was never posted, the caller gets a
 * {@link TransferError}); codes 2xx are failures of posted transfers (a {@link TransferEvent.Failed}).
 */
public enum FailureCode {
    /** A batch with no entries. */
    EMPTY_BATCH(101),
    /** An entry of size 0 or less. */
    ZERO_SIZE(102),
    /** An entry outside the local region, or a negative local offset. */
    LOCAL_OUT_OF_BOUNDS(103),
    /** An entry outside the remote region named by the descriptor, or a negative remote offset. */
    REMOTE_OUT_OF_BOUNDS(104),
    /** Offset, remote offset and size arrays of different lengths. */
    MALFORMED_BATCH(105),
    /** The transfer id is already in flight on this engine. */
    DUPLICATE_TRANSFER_ID(106),
    /** A descriptor that does not decode (bad magic, version, checksum or lengths). */
    BAD_DESCRIPTOR(107),
    /** A descriptor for another region than the one the caller expected. */
    WRONG_REGION(108),
    /** A descriptor made by another kind of engine (UCX descriptor given to the in-JVM engine). */
    FOREIGN_ENGINE(109),
    /** The local region was unregistered. */
    REGION_CLOSED(110),
    /** The engine is closed. */
    ENGINE_CLOSED(111),
    /** No session is bound for an effect's session key and layer. */
    NO_SESSION(112),
    /** A bad argument: a negative length, an empty name, a null. */
    INVALID_ARGUMENT(113),
    /** The engine could not start (library missing, UCX init failed). */
    ENGINE_UNAVAILABLE(114),
    /** Local and remote block id lists of different lengths (protocol section 6 raises ValueError). */
    UNEQUAL_BLOCK_LISTS(120),
    /** A block id outside {@code [0, num_blocks)} of its side. */
    BLOCK_ID_OUT_OF_RANGE(121),
    /** A KV cache tensor shape the layout rules do not cover ("Unsupported MoRIIO ... cache shape"). */
    UNSUPPORTED_LAYOUT(122),
    /** Memory registration failed (allocation or {@code ucp_mem_map}). */
    REGISTRATION_FAILED(130),

    /** The transfer did not complete within {@code transfer_timeout}. */
    TIMEOUT(201),
    /** The peer could not be reached (endpoint creation failed, or no such peer in this JVM). */
    PEER_UNREACHABLE(202),
    /** The peer failed while the transfer was in flight (reset, endpoint timeout, peer gone). */
    PEER_FAILED(203),
    /** The session's endpoint was closed (by a timeout, a peer failure or the session's close). */
    ENDPOINT_CLOSED(204),
    /** The descriptor's remote key could not be unpacked. */
    BAD_RKEY(205),
    /** Any other transport error; the message carries the transport's status. */
    TRANSPORT_ERROR(206),
    /** The engine closed while the transfer was in flight. */
    CANCELED(207);

    private final int code;

    FailureCode(int code) {
        this.code = code;
    }

    /** The permanent numeric code. */
    public int code() {
        return code;
    }

    /** Whether this code is a rejection before posting (1xx) rather than a transfer failure (2xx). */
    boolean isRejection() {
        return code < 200;
    }

    /** The code with this number, or {@code null}. */
    public static FailureCode ofCode(int code) {
        for (FailureCode c : values()) {
            if (c.code == code) {
                return c;
            }
        }
        return null;
    }
}
