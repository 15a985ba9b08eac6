package io.kvledger.core.model;

/**
 * Where a request is in one node's connector lifecycle. The codes are permanent: they are written
 * to journals and printed by the CLI. A new phase takes a new code; a code is never reused.
 */
public enum RequestPhase {
    /** Admitted, nothing allocated yet. */
    ADMITTED(1, false),
    /** Producer, WRITE: allocated, the prompt is not yet covered (chunked prefill). */
    PENDING_SAVE(2, false),
    /** Producer: allocated and staged for save (WRITE), or only mapped (READ). */
    PREFILLING(3, false),
    /** Consumer, READ: staged for receive. */
    RECV_STAGED(4, false),
    /** Consumer, READ: reads posted, waiting for their statuses. */
    READS_IN_FLIGHT(5, false),
    /** Consumer, WRITE: blocks allocated, waiting for the producer's write_done. */
    WAITING_FOR_REMOTE_KVS(6, false),
    /** Consumer, WRITE: reported in finished_recving. */
    KV_RECEIVED(7, false),
    /** Consumer: running locally (READ after its receive is staged, or no transfer at all). */
    RUNNING(8, false),
    /** Producer: finished with blocks held for the remote side (delay_free). */
    DEFERRED_FREE(9, false),
    /** Finished and freed without a transfer wait (not length-capped, no blocks, consumer). */
    FINISHED(10, true),
    /** Producer: blocks freed after a real ACK. */
    FREED_AFTER_ACK(11, true),
    /** Producer: blocks force-freed after defer_timeout without an ACK. */
    REAPED(12, true),
    /** Finished while do_remote_prefill was still set: aborted before allocation. */
    ABORTED_BEFORE_ALLOC(13, true),
    /** Consumer, READ: the receive failed or was aborted; blocks reported as load errors. */
    LOAD_FAILED(14, false);

    private final int code;
    private final boolean terminal;

    RequestPhase(int code, boolean terminal) {
        this.code = code;
        this.terminal = terminal;
    }

    public int code() {
        return code;
    }

    public boolean terminal() {
        return terminal;
    }

    public static RequestPhase byCode(int code) {
        for (RequestPhase p : values()) {
            if (p.code == code) {
                return p;
            }
        }
        return null;
    }
}
