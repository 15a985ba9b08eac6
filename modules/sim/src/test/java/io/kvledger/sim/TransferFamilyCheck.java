package io.kvledger.sim;

import io.kvledger.ledger.diagnosis.Finding;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The check a family test runs on one simulated run whose fault damaged some transfers: every
 * damaged transfer is named with the family's class on its prefill (that request on that node) and
 * on a decode, and no request finding names another transfer or another class. The engine's
 * "Reaped N" warning ({@code reaped-warning}) and findings on no request are left out.
 */
final class TransferFamilyCheck {

    private TransferFamilyCheck() {}

    /**
     * Adds a line to {@code problems} for each transfer not named on both legs and for each finding
     * outside the damaged transfers or with another class.
     *
     * @param what           the run, for the messages (mode, shape, seed)
     * @param damaged        the transfer ids the fault damaged, read from the journal
     * @param prefillRequest the prefill's request id per transfer id
     * @param prefillNode    the prefill's node per transfer id
     * @param damage         how the messages name the damage ("aliased", "raced")
     */
    static void check(String what, int bugClass, String damage, Set<String> damaged, Map<String, String> prefillRequest,
            Map<String, String> prefillNode, List<Finding> findings, List<String> problems) {
        for (String tid : damaged) {
            String prid = prefillRequest.get(tid);
            boolean prefillNamed = findings.stream().anyMatch(f -> f.bugClass() == bugClass
                    && f.node().equals(prefillNode.get(tid)) && prid.equals(f.requestId()));
            boolean decodeNamed = findings.stream().anyMatch(f -> f.bugClass() == bugClass
                    && f.node().startsWith("D") && tid.equals(f.transferId()));
            if (!prefillNamed || !decodeNamed) {
                problems.add(what + ": " + tid + " prefill named " + prefillNamed + ", decode named " + decodeNamed);
            }
        }
        for (Finding f : findings) {
            if (f.requestId() == null || f.detector().equals("reaped-warning")) {
                continue;
            }
            if (f.transferId() == null || !damaged.contains(f.transferId())) {
                problems.add(what + ": finding on a transfer that was not " + damage + ": " + f);
            } else if (f.bugClass() != bugClass) {
                problems.add(what + ": a " + damage + " transfer named with class " + f.bugClass() + ": " + f);
            }
        }
    }
}
