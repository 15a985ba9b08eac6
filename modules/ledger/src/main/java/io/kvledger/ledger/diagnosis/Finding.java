package io.kvledger.ledger.diagnosis;

import io.kvledger.core.model.RequestPhase;

/**
 * One diagnosis of a hung or anomalous request: the node and request it concerns, what went
 * wrong in one line (naming the missing or wrong event), and the bug class of moriio-protocol.md
 * section 7 it matches.
 *
 * @param detector  the stable name of the detector that produced it (for example "stuck-waiting")
 * @param node      the node whose request this is
 * @param phase     the request's last phase on that node ({@code null} when it never had one)
 * @param bugClass  the section-7 bug class (0 when none matches)
 * @param atNs      when the problem became visible (the event time of its evidence)
 * @param sinceNs   when the request entered its last phase (or -1)
 */
public record Finding(String detector, String node, String requestId, String transferId, RequestPhase phase,
                      int bugClass, long atNs, long sinceNs, String message) {}
