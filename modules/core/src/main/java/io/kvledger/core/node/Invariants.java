package io.kvledger.core.node;

import io.kvledger.core.config.Switch;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.moriio.ExtraConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * What must hold of every {@link NodeState} the reducer can reach, under every profile, written
 * down as code ({@link NodeState#checkInvariants()}): after any event, whatever its payload or
 * order. A violation is a defect of the reducer, not of the engine or the peers (what they get
 * wrong is an anomaly the reducer reports and the state absorbs).
 *
 * <p>Pure and total like the reducer: it reads the state, never changes it, never throws, and
 * returns the violations as values. It allocates nothing when every check passes, and each check
 * walks only the tables it is about, so a caller can afford it after every event: the simulator
 * does (a violation fails the run), as do the property tests and {@code replay --verify}.
 */
public final class Invariants {

    private Invariants() {}

    /** The named checks; each is one sentence of what always holds. */
    public enum Check {
        /**
         * Every request vLLM holds is keyed by its own id, reached through its own slot, and not
         * in a terminal phase (a request leaves {@code requests} as it reaches one).
         */
        REQUEST_KEYED_BY_ID,
        /** The phase table's entry of a held request, while it has one, is the request's phase. */
        PHASE_MIRRORED,
        /**
         * Blocks are owned at most once: each staged receive, save and pending save is the entry
         * of the one request it names (its id, or the id it was admitted under when renamed at
         * finish), with its block groups; each in-flight READ is the one receive of its request
         * id; each WRITE transfer is the one of its transfer id; and every status a transfer
         * waits for is a record of that transfer alone (no status id is shared or reused).
         */
        BLOCKS_OWNED_ONCE,
        /**
         * Every deferred free has a deadline, and every held request in {@link RequestPhase#DEFERRED_FREE}
         * has a deferral (unless the connector has no {@code update_connector_output}, where
         * nothing is deferred).
         */
        DEFERRAL_HAS_DEADLINE,
        /**
         * Every parked early ACK has a deadline; every ACK the worker buffers for its mapping
         * names a transfer id, is buffered only when unmapped ACKs are retried at all, and, with
         * the TTL and cap of #50674, within that cap.
         */
        PARKED_ACK_HAS_TTL,
        /**
         * Under first-owner-wins (the collision guards of PR #56468) the transfer-id map is a
         * function both ways: a request mapped to a transfer id is that id's owner. (Without
         * them, last-write-wins can leave a request mapped to an id another request owns: that
         * is upstream's leak, which the reducer reproduces and reports as MAPPING_LEAK.)
         */
        MAPPING_INVERSE,
        /**
         * ACK fan-in counts are positive and only for transfers not yet complete.
         */
        ACK_COUNTS_OPEN,
        /**
         * Tables are bounded: the remembered-id sets stay within
         * {@link ExtraConfig#MAX_TERMINAL_TRANSFER_IDS}, each request-keyed table within the
         * slots, and a slot lives only while some table holds its id.
         */
        TABLES_BOUNDED
    }

    /** One violated check, with what was found. */
    public record Violation(Check check, String detail) {
        @Override
        public String toString() {
            return check + ": " + detail;
        }
    }

    /** Every violation {@code s} holds, in check order; empty (and not allocated) when none. */
    static List<Violation> check(NodeState s) {
        Found f = new Found();
        requestKeyed(s, f);
        worker(s, f);
        parkedAcks(s, f);
        mapping(s, f);
        ackCounts(s, f);
        bounds(s, f);
        return f.list == null ? List.of() : f.list;
    }

    /**
     * The same checks, of what changed since the previous call: the entries of the request ids
     * whose tables or phase changed (the slots {@link RequestSlots#touch touched}), the
     * transfer-id map when its version moved, the worker's transfers when their sizes or the next
     * status id moved, and the small tables (ACK counts, the unmapped-ACK buffer) and the bounds. The first call checks everything and starts the tracking.
     * For a caller that checks after every event ({@code replay --verify}): each event costs what
     * it changed, not the size of the state. It finds what {@link #check} finds for every change
     * the reducer makes through its tables and {@code Ctx.phase}; a property test holds the
     * tracking to that.
     */
    static List<Violation> checkSinceLast(NodeState s) {
        RequestSlots slots = s.slots;
        Memo m = s.invariantsMemo;
        if (!slots.tracking) {
            slots.tracking = true;
            slots.drainTouched();
            m.remember(s);
            return check(s);
        }
        Found f = new Found();
        boolean deferralsKept = !s.config.on(Switch.NO_CONNECTOR_OUTPUT_HOOK);
        boolean fow = s.config.on(Switch.MAP_FIRST_OWNER_WINS);
        for (int i = 0; i < slots.touchedCount; i++) {
            RequestSlots.Slot sl = slots.touched[i];
            if (sl.released || sl.members == 0) {
                continue; // in no table: nothing to check
            }
            if (s.requests.has(sl)) {
                request(s, sl, s.requests.get(sl), deferralsKept, f);
            }
            if (s.scheduler.reqsNeedRecv().has(sl)) {
                stage(sl, s.scheduler.reqsNeedRecv().get(sl), "reqs_need_recv", f);
            }
            if (s.scheduler.reqsNeedSave().has(sl)) {
                stage(sl, s.scheduler.reqsNeedSave().get(sl), "reqs_need_save", f);
            }
            if (s.scheduler.reqsNeedPendingSave().has(sl)) {
                stage(sl, s.scheduler.reqsNeedPendingSave().get(sl), "reqs_need_pending_save", f);
            }
            if (s.scheduler.deferredSendDeadlines().has(sl)) {
                deferral(sl, s.scheduler.deferredSendDeadlines().get(sl), f);
            }
            if (s.scheduler.pendingSentAcks().has(sl) && s.scheduler.pendingSentAcks().get(sl) == null) {
                f.add(Check.PARKED_ACK_HAS_TTL, "pending_sent_acks[" + sl.rid + "] has no deadline");
            }
        }
        slots.drainTouched();
        if (fow && m.mappingVersion != s.scheduler.mappingVersion()) {
            mapping(s, f);
        }
        if (m.workerChanged(s)) {
            worker(s, f);
        }
        ackCounts(s, f); // small, and a count changes in place
        pendingUnmapped(s, f);
        bounds(s, f);
        m.remember(s);
        return f.list == null ? List.of() : f.list;
    }

    /**
     * What {@link #checkSinceLast} compares to know whether a table it does not track entry by
     * entry changed. Not state: a memo of the checker, kept by the state it checks.
     */
    static final class Memo {
        long mappingVersion = -1;
        long nextStatusId = -1;
        int statuses = -1;
        int recving = -1;
        int writes = -1;
        long transfersPut = -1;

        boolean workerChanged(NodeState s) {
            return nextStatusId != s.worker.nextStatusId() || statuses != s.worker.statuses().size() || recving != s.worker.recvingTransfers().size()
                    || writes != s.worker.writes().size() || transfersPut != s.worker.transfersPut();
        }

        void remember(NodeState s) {
            mappingVersion = s.scheduler.mappingVersion();
            nextStatusId = s.worker.nextStatusId();
            statuses = s.worker.statuses().size();
            recving = s.worker.recvingTransfers().size();
            writes = s.worker.writes().size();
            transfersPut = s.worker.transfersPut();
        }
    }

    /** The violations found so far (the list only made for the first). */
    private static final class Found {
        List<Violation> list;

        void add(Check check, String detail) {
            if (list == null) {
                list = new ArrayList<>(2);
            }
            list.add(new Violation(check, detail));
        }
    }

    /** Every entry of the request-keyed tables. */
    private static void requestKeyed(NodeState s, Found f) {
        // without update_connector_output nothing is deferred: a DEFERRED_FREE request waits for finished_sending
        boolean deferralsKept = !s.config.on(Switch.NO_CONNECTOR_OUTPUT_HOOK);
        RequestSlots.Table<NodeState.Req> t = s.requests;
        for (RequestSlots.Slot sl = t.first(); sl != null; sl = t.next(sl)) {
            request(s, sl, t.get(sl), deferralsKept, f);
        }
        stages(s.scheduler.reqsNeedRecv(), "reqs_need_recv", f);
        stages(s.scheduler.reqsNeedSave(), "reqs_need_save", f);
        stages(s.scheduler.reqsNeedPendingSave(), "reqs_need_pending_save", f);
        RequestSlots.View<NodeState.Deferral> d = s.scheduler.deferredSendDeadlines();
        for (RequestSlots.Slot sl = d.first(); sl != null; sl = d.next(sl)) {
            deferral(sl, d.get(sl), f);
        }
    }

    /** A held request: keyed by its id through its slot, not terminal, mirrored, deferred with a deferral. */
    private static void request(NodeState s, RequestSlots.Slot sl, NodeState.Req r, boolean deferralsKept, Found f) {
        if (r == null) {
            f.add(Check.REQUEST_KEYED_BY_ID, "requests[" + sl.rid + "] holds no request");
            return;
        }
        if (!sl.rid.equals(r.requestId) || (r.slot != null && r.slot != sl)) {
            f.add(Check.REQUEST_KEYED_BY_ID, "requests[" + sl.rid + "] holds request " + r.requestId
                    + (r.slot != null && r.slot != sl ? " whose slot is " + r.slot.rid : ""));
        }
        if (r.phase.terminal()) {
            f.add(Check.REQUEST_KEYED_BY_ID, "request " + r.requestId + " is held in terminal phase " + r.phase);
        }
        if (!s.phases.mirrors(r)) {
            f.add(Check.PHASE_MIRRORED, "request " + r.requestId + " is " + r.phase + ", its phase entry "
                    + s.phases.phaseOfEntry(r) + (s.phases.containsKey(r.requestId) ? "" : " under another id"));
        }
        if (deferralsKept && r.phase == RequestPhase.DEFERRED_FREE && !s.scheduler.deferredSendDeadlines().has(sl)) {
            f.add(Check.DEFERRAL_HAS_DEADLINE, "request " + sl.rid + " is DEFERRED_FREE without a deferral");
        }
    }

    private static void stages(RequestSlots.View<NodeState.Stage> t, String name, Found f) {
        for (RequestSlots.Slot sl = t.first(); sl != null; sl = t.next(sl)) {
            stage(sl, t.get(sl), name, f);
        }
    }

    /** A staged entry names the request whose id keys it (or was its id before a rename at finish). */
    private static void stage(RequestSlots.Slot sl, NodeState.Stage st, String name, Found f) {
        if (st == null || st.req() == null || st.blocks() == null) {
            f.add(Check.BLOCKS_OWNED_ONCE, name + "[" + sl.rid + "] stages " + st);
            return;
        }
        NodeState.Req r = st.req();
        if (!sl.rid.equals(r.requestId) && !sl.rid.equals(r.admittedAs)) {
            f.add(Check.BLOCKS_OWNED_ONCE, name + "[" + sl.rid + "] stages the blocks " + st.blocks()
                    + " of request " + r.requestId);
        }
    }

    private static void deferral(RequestSlots.Slot sl, NodeState.Deferral d, Found f) {
        if (d == null || d.deadlineNs() == Long.MIN_VALUE) {
            f.add(Check.DEFERRAL_HAS_DEADLINE, "deferred_send_deadlines[" + sl.rid + "] = " + d);
        }
    }

    private static void worker(NodeState s, Found f) {
        for (Map.Entry<String, NodeState.RecvTransfer> e : s.worker.recvingTransfers().entrySet()) {
            NodeState.RecvTransfer rt = e.getValue();
            if (rt == null || rt.localBlocks() == null || rt.statusIds() == null) {
                f.add(Check.BLOCKS_OWNED_ONCE, "recving_transfers[" + e.getKey() + "] is " + rt);
                continue;
            }
            List<Long> ids = rt.statusIds();
            for (int i = 0; i < ids.size(); i++) {
                status(s, ids.get(i), e.getKey(), false, f);
            }
        }
        for (Map.Entry<String, NodeState.WriteTransfer> e : s.worker.writes().entrySet()) {
            NodeState.WriteTransfer w = e.getValue();
            if (w == null || !e.getKey().equals(w.transferId)) {
                f.add(Check.BLOCKS_OWNED_ONCE, "writes[" + e.getKey() + "] holds transfer " + (w == null ? null : w.transferId));
                continue;
            }
            for (int i = 0; i < w.statusIds.size(); i++) {
                status(s, w.statusIds.get(i), w.transferId, true, f);
            }
        }
    }

    /**
     * A status id an in-flight transfer waits for: issued (below {@code next_status_id}), and,
     * while it has a record, the record of that transfer (a READ's by request id, a WRITE's by
     * transfer id) and kind. A record may be gone before the transfer (its completion arrived).
     */
    private static void status(NodeState s, long id, String owner, boolean write, Found f) {
        if (id <= 0 || id >= s.worker.nextStatusId()) {
            f.add(Check.BLOCKS_OWNED_ONCE, (write ? "write " : "read of ") + owner + " waits for status " + id
                    + ", never issued (next " + s.worker.nextStatusId() + ")");
            return;
        }
        NodeState.StatusRecord st = s.worker.statuses().get(id);
        if (st != null && (st.write != write || !owner.equals(write ? st.transferId : st.requestId))) {
            f.add(Check.BLOCKS_OWNED_ONCE, (write ? "write " : "read of ") + owner + " waits for status " + id
                    + ", which is " + st);
        }
    }

    private static void parkedAcks(NodeState s, Found f) {
        RequestSlots.View<Long> t = s.scheduler.pendingSentAcks();
        for (RequestSlots.Slot sl = t.first(); sl != null; sl = t.next(sl)) {
            if (t.get(sl) == null) {
                f.add(Check.PARKED_ACK_HAS_TTL, "pending_sent_acks[" + sl.rid + "] has no deadline");
            }
        }
        pendingUnmapped(s, f);
    }

    /** The worker's buffer of ACKs waiting for its mapping (replaced whole by each get_finished: checked each time). */
    private static void pendingUnmapped(NodeState s, Found f) {
        List<NodeState.PendingAck> pending = s.worker.pendingUnmappedAcks();
        if (pending.isEmpty()) {
            return;
        }
        if (!s.config.on(Switch.RETRY_UNMAPPED_ACKS)) {
            f.add(Check.PARKED_ACK_HAS_TTL, pending.size() + " unmapped ACK(s) buffered, but unmapped ACKs are not retried");
        }
        if (s.config.on(Switch.UNMAPPED_ACK_BOUNDS) && pending.size() > s.config.unmappedAckCap()) {
            f.add(Check.PARKED_ACK_HAS_TTL, pending.size() + " unmapped ACK(s) buffered over the cap of "
                    + s.config.unmappedAckCap());
        }
        for (int i = 0; i < pending.size(); i++) {
            NodeState.PendingAck pa = pending.get(i);
            if (pa == null || pa.ack == null || pa.ack.transferId() == null) {
                f.add(Check.PARKED_ACK_HAS_TTL, "unmapped ACK #" + i + " names no transfer: " + pa);
            }
        }
    }

    private static void mapping(NodeState s, Found f) {
        if (!s.config.on(Switch.MAP_FIRST_OWNER_WINS)) {
            return;
        }
        RequestSlots.View<String> t = s.scheduler.requestIdToTransferId();
        for (RequestSlots.Slot sl = t.first(); sl != null; sl = t.next(sl)) {
            String tid = t.get(sl);
            String owner = s.scheduler.transferIdToRequestId().get(tid);
            if (!sl.rid.equals(owner)) {
                f.add(Check.MAPPING_INVERSE, "request " + sl.rid + " maps to " + tid + ", owned by " + owner);
            }
        }
    }

    private static void ackCounts(NodeState s, Found f) {
        if (s.worker.ackCounts().isEmpty()) {
            return;
        }
        for (Map.Entry<String, Integer> e : s.worker.ackCounts().entrySet()) {
            Integer n = e.getValue();
            if (n == null || n < 1 || s.worker.completedTransfers().contains(e.getKey())) {
                f.add(Check.ACK_COUNTS_OPEN, "ack count of " + e.getKey() + " is " + n
                        + (s.worker.completedTransfers().contains(e.getKey()) ? " after it completed" : ""));
            }
        }
    }

    private static void bounds(NodeState s, Found f) {
        int cap = ExtraConfig.MAX_TERMINAL_TRANSFER_IDS;
        bound(s.scheduler.reapedRequests().size(), cap, "reaped requests", f);
        bound(s.worker.terminalTransfers().size(), cap, "terminal transfers", f);
        bound(s.worker.reportedUnmatched().size(), cap, "reported unmatched ids", f);
        int slots = s.slots.slotCount();
        table(s.requests, slots, f);
        table(s.scheduler.reqsNeedRecv(), slots, f);
        table(s.scheduler.reqsNeedSave(), slots, f);
        table(s.scheduler.reqsNeedPendingSave(), slots, f);
        table(s.scheduler.reqKvParams(), slots, f);
        table(s.scheduler.reqsNeedSend(), slots, f);
        table(s.scheduler.deferredSendDeadlines(), slots, f);
        table(s.scheduler.pendingSentAcks(), slots, f);
        table(s.scheduler.requestIdToTransferId(), slots, f);
        int idle = s.slots.idleSlots();
        if (idle != 0) {
            f.add(Check.TABLES_BOUNDED, idle + " of " + slots + " request slots live in no table (a slot must go with its last entry)");
        }
    }

    /** A request-keyed table's size, checked against the live slots. */
    private static void table(RequestSlots.View<?> t, int slots, Found f) {
        bound(t.size(), slots, "entries of a request-keyed table", f);
    }

    private static void bound(int size, int cap, String what, Found f) {
        if (size > cap) {
            f.add(Check.TABLES_BOUNDED, size + " " + what + ", over the bound of " + cap);
        }
    }
}
