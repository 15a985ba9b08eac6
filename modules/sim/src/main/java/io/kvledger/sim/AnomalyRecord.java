package io.kvledger.sim;

import io.kvledger.core.model.AnomalyKind;

/**
 * An {@code Anomaly} effect one node's reducer emitted, with where and when.
 *
 * @param node       the node's name ({@code P0}, {@code D0}, ...)
 * @param atNs       virtual time of the event that produced it (0 for start-up checks)
 * @param kind       what went wrong
 * @param requestId  the request it concerns, or {@code null}
 * @param transferId the transfer it concerns, or {@code null}
 * @param detail     the reducer's detail text
 */
public record AnomalyRecord(String node, long atNs, AnomalyKind kind, String requestId, String transferId,
                            String detail) {
}
