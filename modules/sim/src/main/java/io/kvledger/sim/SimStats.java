package io.kvledger.sim;

/**
 * What the simulated network, data plane, proxy and engines counted during a run.
 *
 * @param clientRequests        requests the proxy received
 * @param decodeCompleted       client requests whose decode leg finished normally (stop or length)
 * @param abortsInjected        legs the abort fault aborted
 * @param decodeNotDispatched   READ: decode legs the proxy never sent (the prefill leg failed)
 * @param framesSent            notify frames the nodes sent
 * @param framesDelivered       notify frames delivered (duplicates count twice)
 * @param framesLost            frames sent to a host:port no node listens on
 * @param framesDropped         frames the drop fault removed
 * @param framesDuplicated      frames the dup fault delivered twice
 * @param framesDelayed         frames the delay fault held back
 * @param framesReordered       frames the reorder fault delivered after a later one
 * @param framesUnsupported     frames of a type the node events cannot carry ({@code write_failed})
 * @param framesSendFailed      frames the send-fail fault kept from leaving their sender
 * @param handshakesStarted     handshakes the nodes started
 * @param handshakesFailed      handshakes that failed (injected, or no listener at the address)
 * @param transfersPosted       batch reads and writes posted
 * @param transfersFailed       transfers that completed with {@code succeeded=false}
 * @param transfersStalled      transfers that never completed
 * @param loadErrorBlocks       blocks the decode workers reported as load errors
 * @param unexpectedFrees       {@code finished_sending} rewrites naming a request the engine was not
 *                              holding for a delayed free (vLLM would assert or free a live request)
 * @param unexpectedRecvs       {@code finished_recving} entries naming a request that was not
 *                              waiting for remote KV
 * @param stepsBlockedTimeout   engine steps whose handshake or read wait hit {@code transfer_timeout}
 * @param endNs                 virtual time at which the run stopped
 * @param stoppedBy             why it stopped
 */
public record SimStats(
        int clientRequests,
        int decodeCompleted,
        int abortsInjected,
        int decodeNotDispatched,
        long framesSent,
        long framesDelivered,
        long framesLost,
        long framesDropped,
        long framesDuplicated,
        long framesDelayed,
        long framesReordered,
        long framesUnsupported,
        long framesSendFailed,
        long handshakesStarted,
        long handshakesFailed,
        long transfersPosted,
        long transfersFailed,
        long transfersStalled,
        long loadErrorBlocks,
        long unexpectedFrees,
        long unexpectedRecvs,
        long stepsBlockedTimeout,
        long endNs,
        StopReason stoppedBy) {

    /** Why a run stopped. */
    public enum StopReason {
        /** Every request on every node reached a terminal phase. */
        ALL_TERMINAL,
        /** The time limit passed; the run then went on for defer_timeout + 1 s for reaping. */
        TIME_LIMIT,
        /** Nothing was left to happen (no engine step, frame or timer pending). */
        QUIESCENT
    }
}
