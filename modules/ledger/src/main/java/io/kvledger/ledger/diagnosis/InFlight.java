package io.kvledger.ledger.diagnosis;

import io.kvledger.core.model.RequestPhase;

/**
 * A request still in a non-terminal phase when the journals end, and whether the hang detectors
 * call it stuck or why they do not.
 *
 * @param node        the node whose request this is
 * @param transferId  its transfer id ({@code null} when none is known)
 * @param phase       its last phase (never terminal)
 * @param sinceNs     when it entered that phase
 * @param lastEventNs its latest lifecycle event: the scheduler named it (queried, allocated,
 *                    scheduled, finished, reported), its phase changed, or its transfer moved (a
 *                    frame for it arrived, a transfer was posted or completed)
 * @param status      stuck, or why not
 */
public record InFlight(String node, String requestId, String transferId, RequestPhase phase, long sinceNs,
                       long lastEventNs, Status status) {

    /** Whether a non-terminal request is stuck, or why it is not. */
    public enum Status {
        /** In its phase longer than the bound, with no lifecycle event within the bound of the end: a finding. */
        STUCK,
        /** In its phase for no longer than the bound when the journals end: not a finding. */
        YOUNG,
        /**
         * In its phase longer than the bound, but with a lifecycle event within the bound of the end
         * (a decode still generating, a transfer still receiving): still making progress, not a finding.
         */
        PROGRESSING
    }
}
