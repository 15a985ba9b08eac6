package io.kvledger.core.node;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.node.properties.EventSequences;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * {@link NodeState#checkInvariantsSinceLastCheck()} sees every change the reducer makes to what
 * the checks read: over random event sequences (random switch sets half of the time), every
 * request-keyed entry that changed (its tables, values, request fields, phase entry) was touched,
 * the transfer-id map changed only with its version, the worker's transfers only with their
 * signature; and the incremental check agrees with the full one after every event.
 */
class InvariantTrackingProperties {

    @Provide
    Arbitrary<EventSequences.Case> cases() {
        return EventSequences.cases();
    }

    @Property(tries = 300)
    void every_change_the_checks_read_is_tracked(@ForAll("cases") EventSequences.Case c) {
        NodeState s = NodeState.initial(c.config());
        assertThat(s.checkInvariantsSinceLastCheck()).isEmpty(); // the first call: full, and tracking on
        List<NodeEvent> events = c.events();
        for (int i = 0; i < events.size(); i++) {
            Map<RequestSlots.Slot, String> before = slotPrints(s);
            String mapBefore = s.scheduler.transferIdToRequestId() + "/" + s.scheduler.requestIdToTransferId();
            long versionBefore = s.scheduler.mappingVersion();
            String workerBefore = workerPrint(s);
            NodeReducer.apply(s, events.get(i));
            Map<RequestSlots.Slot, String> after = slotPrints(s);
            IdentityHashMap<RequestSlots.Slot, Boolean> touched = new IdentityHashMap<>();
            for (int k = 0; k < s.slots.touchedCount; k++) {
                touched.put(s.slots.touched[k], true);
            }
            for (Map.Entry<RequestSlots.Slot, String> e : after.entrySet()) {
                if (!Objects.equals(before.get(e.getKey()), e.getValue()) && !touched.containsKey(e.getKey())) {
                    fail("after event #" + i + ": " + e.getKey().rid + " changed (" + before.get(e.getKey()) + " -> "
                            + e.getValue() + ") untouched\n" + c);
                }
            }
            for (RequestSlots.Slot gone : before.keySet()) {
                if (!after.containsKey(gone) && !touched.containsKey(gone)) {
                    fail("after event #" + i + ": " + gone.rid + " left every table untouched\n" + c);
                }
            }
            if (!mapBefore.equals(s.scheduler.transferIdToRequestId() + "/" + s.scheduler.requestIdToTransferId())) {
                assertThat(s.scheduler.mappingVersion()).as("event #%d changed the map, not its version\n%s", i, c)
                        .isNotEqualTo(versionBefore);
            }
            if (!workerBefore.equals(workerPrint(s))) {
                assertThat(s.invariantsMemo.workerChanged(s)).as("event #%d changed the worker's transfers unseen: %s -> %s\n%s", i, workerBefore, workerPrint(s), c)
                        .isTrue();
            }
            List<Invariants.Violation> full = s.checkInvariants();
            assertThat(s.checkInvariantsSinceLastCheck()).as("event #%d\n%s", i, c).isEqualTo(full);
        }
    }

    /** Per slot in any table: what the per-entry checks read of it. */
    private static Map<RequestSlots.Slot, String> slotPrints(NodeState s) {
        Map<RequestSlots.Slot, String> m = new IdentityHashMap<>();
        RequestSlots.View<?>[] tables = {s.requests, s.scheduler.requestIdToTransferId(), s.scheduler.reqKvParams(), s.scheduler.reqsNeedRecv(),
            s.scheduler.reqsNeedSave(), s.scheduler.reqsNeedSend(), s.scheduler.deferredSendDeadlines(), s.scheduler.pendingSentAcks(), s.scheduler.reqsNeedPendingSave()};
        for (RequestSlots.View<?> t : tables) {
            for (RequestSlots.Slot sl = t.first(); sl != null; sl = t.next(sl)) {
                m.computeIfAbsent(sl, x -> print(s, x, tables));
            }
        }
        return m;
    }

    private static String print(NodeState s, RequestSlots.Slot sl, RequestSlots.View<?>[] tables) {
        StringBuilder b = new StringBuilder().append(sl.members).append(sl.released);
        for (RequestSlots.View<?> t : tables) {
            Object v = t.has(sl) ? t.get(sl) : null;
            b.append('|').append(System.identityHashCode(v));
            if (v instanceof NodeState.Req r) {
                b.append(r.requestId).append(r.admittedAs).append(r.phase).append(System.identityHashCode(r.slot))
                        .append(s.phases.mirrors(r));
            } else if (v instanceof NodeState.Stage st) {
                b.append(st.req().requestId).append(st.req().admittedAs);
            } else if (v != null) {
                b.append(v);
            }
        }
        return b.toString();
    }

    /** What the worker checks read: the in-flight transfers, their status ids and those statuses' owners. */
    private static String workerPrint(NodeState s) {
        Map<String, Object> m = new LinkedHashMap<>();
        s.worker.recvingTransfers().forEach((k, v) -> m.put("r:" + k, v == null ? null : v.statusIds()));
        s.worker.writes().forEach((k, v) -> m.put("w:" + k, v == null ? null : v.transferId + v.statusIds));
        s.worker.statuses().forEach((k, v) -> m.put("s:" + k, v == null ? null : v.transferId + "/" + v.requestId + "/" + v.write));
        return m + "/" + s.worker.nextStatusId();
    }
}
