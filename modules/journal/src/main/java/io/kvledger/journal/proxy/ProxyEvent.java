package io.kvledger.journal.proxy;

import io.kvledger.core.model.KvParams;

/**
 * What a {@code kvledger proxy} journals: registrations, each client request with its composed ids
 * and chosen ranks, each leg's dispatch and outcome, cancellations. Times are the proxy's epoch
 * nanoseconds (the same axis as live nodes' journals).
 *
 * <p>Legs are named {@code "prefill"} and {@code "decode"}; instances by their registered
 * {@code http_address}; roles by the registration's {@code type} ({@code "P"}, {@code "D"}).
 */
public sealed interface ProxyEvent {

    String PREFILL = "prefill";
    String DECODE = "decode";

    long atNs();

    /** The proxy started listening. {@code mode} is null until the first registration latches it. */
    record ProxyStarted(long atNs, String httpAddress, int pingPort, String mode, int notifyPortShift)
            implements ProxyEvent {}

    /** A registration added an instance, or changed one's advertised fields ({@code change}: new, updated). */
    record InstanceRegistered(long atNs, String role, String httpAddress, String zmqAddress, int dpSize, int tpSize,
                              String transferMode, String change) implements ProxyEvent {}

    /** An instance's heartbeats stopped: no registration for longer than the time to live. */
    record InstanceExpired(long atNs, String role, String httpAddress, long lastSeenNs) implements ProxyEvent {}

    /** A registration frame the proxy ignored, with why (malformed, missing field, mode mismatch ...). */
    record RegistrationRejected(long atNs, String reason, byte[] frame) implements ProxyEvent {}

    /** A client request refused before any leg was sent (HTTP {@code status}). */
    record RequestRejected(long atNs, String api, String clientRequestId, int status, String reason)
            implements ProxyEvent {}

    /**
     * A client request was accepted and routed.
     *
     * @param prefillDpRank the prefill DP rank chosen, or null when its dp_size is 1
     * @param decodeDpRank  the decode DP rank chosen, or null when its dp_size is 1
     */
    record RequestRouted(long atNs, String requestId, String transferId, String api, boolean stream,
                         String clientRequestId, String mode, String prefill, Integer prefillDpRank, String decode,
                         Integer decodeDpRank) implements OfRequest {}

    /** One leg was sent, with the {@code kv_transfer_params} it carried. */
    record LegSent(long atNs, String requestId, String transferId, String leg, String instance,
                   KvParams kvTransferParams) implements OfRequest {}

    /**
     * One leg answered (for a streamed decode leg: its stream ended).
     *
     * @param kvTransferParams what the leg returned (the prefill's handoff), or null
     */
    record LegAnswered(long atNs, String requestId, String transferId, String leg, int httpStatus, long elapsedNs,
                       String finishReason, KvParams kvTransferParams) implements OfRequest {}

    /** One leg failed: an error status, a transport error, a timeout, or an invalid handoff. */
    record LegFailed(long atNs, String requestId, String transferId, String leg, Integer httpStatus, long elapsedNs,
                     String reason) implements OfRequest {}

    /** One leg was cancelled before it answered (the client went away, or the other leg failed). */
    record LegCancelled(long atNs, String requestId, String transferId, String leg, long elapsedNs, String reason)
            implements OfRequest {}

    /** The client got its answer (or its error) with this status. */
    record RequestCompleted(long atNs, String requestId, String transferId, int httpStatus, long elapsedNs)
            implements OfRequest {}

    /**
     * The proxy could not journal some records (its queue was full, or a record was not
     * journalable): {@code total} so far. The journal has a gap before this entry.
     */
    record RecordsDropped(long atNs, long total) implements ProxyEvent {}

    /** A record about one routed request: it names the request's proxy id and its transfer id. */
    sealed interface OfRequest extends ProxyEvent
            permits RequestRouted, LegSent, LegAnswered, LegFailed, LegCancelled, RequestCompleted {
        String requestId();

        String transferId();
    }

    /** The proxy request id {@code e} names, or null for a record that is not about one request. */
    static String requestIdOf(ProxyEvent e) {
        return e instanceof OfRequest r ? r.requestId() : null;
    }

    /** The transfer id {@code e} names, or null for a record that is not about one request. */
    static String transferIdOf(ProxyEvent e) {
        return e instanceof OfRequest r ? r.transferId() : null;
    }
}
