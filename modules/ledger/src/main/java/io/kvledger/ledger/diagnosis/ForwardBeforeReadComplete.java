package io.kvledger.ledger.diagnosis;

import io.kvledger.ledger.diagnosis.Ledger.NodeView;
import io.kvledger.ledger.diagnosis.Ledger.ReadAwaited;
import java.util.List;

/**
 * Detector {@code forward-before-read-complete} (bug class 25 of moriio-protocol.md section 7): a
 * READ decode whose scheduler promised the KV synchronously ({@code load_kv_async=False}, so the
 * request runs in the step its reads are posted) ran that step's forward while the reads were still
 * in flight: vLLM 239b5ff30's {@code wait_for_layer_load} is a no-op, so nothing holds the forward
 * back, and it reads half-filled blocks (the fix, #48534, is a per-layer barrier).
 *
 * <p>Evidence, all from a vLLM bridge worker stream: its {@code forward_done} (the recorder's record
 * of a forward that posted reads: which requests', the layer waits) and its recorded
 * {@code get_finished} replies. A request is named when the first poll after its forward did not
 * report it received and a later one did: the poll runs after the forward ends, so the reads were
 * still in flight while the forward ran. Reads reported in the first poll after the forward are
 * not named (the journal cannot tell whether they landed before the forward read them or during
 * it). A connector that never reports a READ as received (the newest, which keeps the promise with
 * its barrier) gives no evidence and no finding. The promise is read off the scheduler journal of
 * the same engine when it is among the journals.
 */
final class ForwardBeforeReadComplete {

    static final String DETECTOR = "forward-before-read-complete";

    private ForwardBeforeReadComplete() {}

    static void run(Ledger l, List<Finding> out) {
        for (NodeView n : l.nodes.values()) {
            for (ReadAwaited r : n.readsConsumedUnfinished) {
                Boolean async = promise(l, n, r.requestId);
                if (Boolean.TRUE.equals(async)) {
                    continue; // an asynchronous load: the scheduler waits for it, the request is not in that forward
                }
                var f = r.forward;
                String waits = f.layerWaits() == 0 ? "no wait_for_layer_load call"
                        : f.layerWaits() + " wait_for_layer_load call" + (f.layerWaits() == 1 ? "" : "s")
                          + " that blocked " + HangDetectors.seconds(f.layerWaitNs()) + " in all";
                String promised = async == null
                        ? "the scheduler's journal of this engine is not among the journals (READ answers load_kv_async=False "
                          + "in every version kvledger models)"
                        : "its scheduler answered load_kv_async=False (the KV promised before the forward)";
                out.add(new Finding(DETECTOR, n.name, r.requestId, null, null, 25, f.atNs(), -1,
                        n.name + "'s forward that posted the request's reads ended at " + rel(l, f.atNs()) + " after "
                                + waits + "; the get_finished poll after it (" + rel(l, r.firstPollAt) + ") did not report "
                                + "the reads received" + (r.pollsWithout > 1 ? ", nor did " + (r.pollsWithout - 1)
                                + " later poll" + (r.pollsWithout == 2 ? "" : "s") : "") + "; the one at " + rel(l, r.doneAt)
                                + " did: the forward consumed KV still being read (its blocks also entered the prefix "
                                + "cache; #48534's per-layer barrier holds each layer until its reads land); " + promised));
            }
        }
    }

    /** The load_kv_async the request's scheduler answered, from any journal of the same engine (null: none holds it). */
    private static Boolean promise(Ledger l, NodeView worker, String rid) {
        for (NodeView n : l.nodes.values()) {
            if (n.config.hostIp().equals(worker.config.hostIp())
                    && String.valueOf(n.config.handshakePort()).equals(String.valueOf(worker.config.handshakePort()))
                    && n.config.dpRank() == worker.config.dpRank() && n.loadAsync.containsKey(rid)) {
                return n.loadAsync.get(rid);
            }
        }
        return null;
    }

    private static String rel(Ledger l, long atNs) {
        if (atNs == Long.MIN_VALUE || l.firstAtNs == Long.MAX_VALUE) {
            return "start";
        }
        return io.kvledger.ledger.text.Seconds.offset(atNs - l.firstAtNs);
    }
}
