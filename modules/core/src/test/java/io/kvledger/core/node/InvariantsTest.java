package io.kvledger.core.node;

import io.kvledger.core.model.TransferId;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.Switch;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.moriio.ExtraConfig;
import io.kvledger.core.node.Invariants.Check;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Each {@link Invariants.Check} catches a state that breaks it: a state the reducer reached is
 * corrupted the one way the check is about, and the check names it (and no other). The healthy
 * state it started from passes every check.
 */
class InvariantsTest {

    private static final long S = NodeConfig.NS_PER_S;

    private static NodeState producer(Behaviour b) {
        return NodeState.initial(NodeConfig.builder(Role.PRODUCER, TransferMode.READ).behaviour(b).build());
    }

    /** Admits and allocates {@code rid} (mapped to {@code tid}); with {@code defer}, finishes it length-capped. */
    private static NodeState.Req admitted(NodeState s, String rid, String tid, boolean defer) {
        NodeReducer.apply(s, new NodeEvent.RequestAdmitted(S, rid, 32, 32,
                KvParams.of("do_remote_decode", true, "transfer_id", tid)));
        NodeReducer.apply(s, new NodeEvent.BlocksAllocated(2 * S, rid, BlockGroups.single(new int[] {1, 2}), 0));
        if (defer) {
            NodeReducer.apply(s, new NodeEvent.RequestFinished(3 * S, rid, FinishStatus.FINISHED_LENGTH_CAPPED,
                    BlockGroups.single(new int[] {1, 2})));
        }
        return s.requests.get(rid);
    }

    private static List<Check> checks(NodeState s) {
        return s.checkInvariants().stream().map(Invariants.Violation::check).distinct().toList();
    }

    @Test
    void a_state_the_reducer_reached_holds_every_invariant() {
        NodeState s = producer(Behaviour.newest().with(Switch.MAP_FIRST_OWNER_WINS, true));
        admitted(s, "a", "ta", true);
        admitted(s, "b", "tb", false);
        NodeReducer.apply(s, new NodeEvent.ConnectorOutputReceived(4 * S, List.of("c"), List.of()));
        assertThat(s.deferredDeadlines()).containsKey("a");
        assertThat(s.parkedAcks()).containsKey("c");
        assertThat(s.checkInvariants()).isEmpty();
        assertThat(s.checkInvariants()).isSameAs(List.of()); // nothing allocated when all hold
    }

    @Test
    void a_held_request_in_a_terminal_phase_or_under_another_id_is_caught() {
        NodeState s = producer(Behaviour.newest());
        NodeState.Req a = admitted(s, "a", "ta", false);
        a.phase = RequestPhase.REAPED;
        s.phases.set(a, RequestPhase.REAPED);
        assertThat(checks(s)).containsExactly(Check.REQUEST_KEYED_BY_ID);

        NodeState t = producer(Behaviour.newest());
        NodeState.Req b = admitted(t, "b", "tb", false);
        t.requests.put("x", b);
        assertThat(checks(t)).containsExactly(Check.REQUEST_KEYED_BY_ID);
        assertThat(t.checkInvariants().get(0).detail()).contains("requests[x] holds request b");
    }

    @Test
    void a_phase_entry_that_disagrees_with_its_request_is_caught() {
        NodeState s = producer(Behaviour.newest());
        admitted(s, "a", "ta", false);
        s.phases.put("a", RequestPhase.RUNNING);
        assertThat(checks(s)).containsExactly(Check.PHASE_MIRRORED);
    }

    @Test
    void blocks_staged_under_another_request_are_caught() {
        NodeState s = NodeState.initial(NodeConfig.builder(Role.CONSUMER, TransferMode.READ).build());
        NodeReducer.apply(s, new NodeEvent.RequestAdmitted(S, "a", 32, 32, KvParams.of("do_remote_prefill", true)));
        NodeState.Req a = s.requests.get("a");
        assertThat(s.checkInvariants()).isEmpty();
        s.scheduler.tamperForTests().reqsNeedRecv().put("b", new NodeState.Stage(a, BlockGroups.single(new int[] {7})));
        assertThat(checks(s)).containsExactly(Check.BLOCKS_OWNED_ONCE);
        assertThat(s.checkInvariants().get(0).detail()).contains("reqs_need_recv[b]").contains("of request a");
    }

    @Test
    void a_status_never_issued_or_owned_by_another_transfer_is_caught() {
        NodeState s = NodeState.initial(NodeConfig.builder(Role.CONSUMER, TransferMode.READ).build());
        s.worker.tamperForTests().recvingTransfers().put("q", new NodeState.RecvTransfer(TransferId.of("tq"), 0, BlockGroups.single(new int[] {3}), "h", 1,
                List.of(5L)));
        assertThat(checks(s)).containsExactly(Check.BLOCKS_OWNED_ONCE); // status 5 was never issued

        s.worker.skipStatusIdsTo(6);
        assertThat(s.checkInvariants()).isEmpty(); // issued, and its record gone (completed)
        s.worker.tamperForTests().statuses().put(5L, new NodeState.StatusRecord("tz", "z", false));
        assertThat(checks(s)).containsExactly(Check.BLOCKS_OWNED_ONCE);
        assertThat(s.checkInvariants().get(0).detail()).contains("read of q waits for status 5, which is tz/z");

        NodeState w = NodeState.initial(NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).build());
        w.worker.tamperForTests().writes().put("t1", new NodeState.WriteTransfer("t2", null));
        assertThat(checks(w)).containsExactly(Check.BLOCKS_OWNED_ONCE);
    }

    @Test
    void a_deferral_without_a_deadline_or_a_deferred_request_without_a_deferral_is_caught() {
        NodeState s = producer(Behaviour.newest());
        admitted(s, "a", "ta", true);
        assertThat(s.requests.get("a").phase).isEqualTo(RequestPhase.DEFERRED_FREE);
        s.scheduler.tamperForTests().deferredSendDeadlines().put("a", new NodeState.Deferral(Long.MIN_VALUE, "ta"));
        assertThat(checks(s)).containsExactly(Check.DEFERRAL_HAS_DEADLINE);
        s.scheduler.tamperForTests().deferredSendDeadlines().remove("a");
        assertThat(checks(s)).containsExactly(Check.DEFERRAL_HAS_DEADLINE);
        assertThat(s.checkInvariants().get(0).detail()).contains("DEFERRED_FREE without a deferral");
    }

    @Test
    void a_parked_ack_without_a_ttl_is_caught() {
        NodeState s = producer(Behaviour.newest());
        s.scheduler.tamperForTests().pendingSentAcks().put("r", null);
        assertThat(checks(s)).containsExactly(Check.PARKED_ACK_HAS_TTL);

        NodeState noRetry = producer(Behaviour.newest().with(Switch.RETRY_UNMAPPED_ACKS, false));
        noRetry.worker.tamperForTests().pendingUnmappedAcks().add(new NodeState.PendingAck(new NodeState.Ack("t", 1), 0));
        assertThat(checks(noRetry)).containsExactly(Check.PARKED_ACK_HAS_TTL);

        NodeState capped = NodeState.initial(NodeConfig.builder(Role.PRODUCER, TransferMode.READ)
                .behaviour(Behaviour.newest().with(Switch.RETRY_UNMAPPED_ACKS, true).with(Switch.UNMAPPED_ACK_BOUNDS, true))
                .unmappedAckBounds(S, 2).build());
        for (int i = 0; i < 2; i++) {
            capped.worker.tamperForTests().pendingUnmappedAcks().add(new NodeState.PendingAck(new NodeState.Ack("t" + i, 1), 0));
        }
        assertThat(capped.checkInvariants()).isEmpty();
        capped.worker.tamperForTests().pendingUnmappedAcks().add(new NodeState.PendingAck(new NodeState.Ack("t2", 1), 0));
        assertThat(checks(capped)).containsExactly(Check.PARKED_ACK_HAS_TTL);
        capped.worker.tamperForTests().pendingUnmappedAcks().remove(2);
        capped.worker.tamperForTests().pendingUnmappedAcks().add(new NodeState.PendingAck(new NodeState.Ack(null, 1), 0));
        assertThat(checks(capped)).containsExactly(Check.PARKED_ACK_HAS_TTL);
    }

    @Test
    void a_request_mapped_to_an_id_it_does_not_own_is_caught_under_first_owner_wins() {
        NodeState s = producer(Behaviour.newest().with(Switch.MAP_FIRST_OWNER_WINS, true));
        admitted(s, "a", "ta", false);
        assertThat(s.requestIdMap()).containsEntry("a", "ta");
        s.scheduler.tamperForTests().transferIdToRequestId().put("ta", "other");
        assertThat(checks(s)).containsExactly(Check.MAPPING_INVERSE);

        // last write wins (upstream) leaves exactly this state on a collision: not a violation there
        NodeState lww = producer(Behaviour.newest().with(Switch.MAP_FIRST_OWNER_WINS, false));
        admitted(lww, "a", "ta", false);
        admitted(lww, "b", "ta", false);
        assertThat(lww.requestIdMap()).containsEntry("a", "ta").containsEntry("b", "ta");
        assertThat(lww.checkInvariants()).isEmpty();
    }

    @Test
    void an_ack_count_that_is_not_positive_or_outlived_its_transfer_is_caught() {
        NodeState s = producer(Behaviour.newest());
        s.worker.tamperForTests().ackCounts().put("t", 0);
        assertThat(checks(s)).containsExactly(Check.ACK_COUNTS_OPEN);
        s.worker.tamperForTests().ackCounts().put("t", 1);
        assertThat(s.checkInvariants()).isEmpty();
        s.worker.tamperForTests().completedTransfers().add("t");
        assertThat(checks(s)).containsExactly(Check.ACK_COUNTS_OPEN);
    }

    @Test
    void an_idle_slot_or_an_unbounded_id_set_is_caught() throws ReflectiveOperationException {
        NodeState s = producer(Behaviour.newest());
        admitted(s, "a", "ta", false);
        s.slots.obtain("idle");
        assertThat(checks(s)).containsExactly(Check.TABLES_BOUNDED);

        NodeState t = producer(Behaviour.newest());
        for (int i = 0; i <= ExtraConfig.MAX_TERMINAL_TRANSFER_IDS; i++) {
            t.scheduler.tamperForTests().reapedRequests().add("r" + i); // the bounded set forgets the eldest
        }
        assertThat(t.scheduler.reapedRequests()).hasSize(ExtraConfig.MAX_TERMINAL_TRANSFER_IDS);
        assertThat(t.checkInvariants()).isEmpty();
        // a plain set in its place (as if the bound were lost) breaks the invariant
        LinkedHashSet<String> plain = new LinkedHashSet<>(t.scheduler.reapedRequests());
        plain.add("one more");
        Field f = SchedulerSide.class.getDeclaredField("reapedRequests");
        f.setAccessible(true);
        f.set(t.scheduler, plain);
        Field view = SchedulerSide.class.getDeclaredField("reapedRequestsView"); // the readers' view follows
        view.setAccessible(true);
        view.set(t.scheduler, java.util.Collections.unmodifiableSet(plain));
        assertThat(checks(t)).containsExactly(Check.TABLES_BOUNDED);
    }

    @Test
    void the_check_since_the_last_one_checks_everything_first_then_what_changed() {
        NodeState s = producer(Behaviour.newest());
        NodeState.Req a = admitted(s, "a", "ta", false);
        a.phase = RequestPhase.REAPED; // a change no table saw: only a full check finds it
        s.phases.set(a, RequestPhase.REAPED);
        assertThat(s.checkInvariantsSinceLastCheck().stream().map(Invariants.Violation::check))
                .containsExactly(Check.REQUEST_KEYED_BY_ID); // the first call is the full check

        NodeState t = producer(Behaviour.newest());
        NodeState.Req b = admitted(t, "b", "tb", false);
        assertThat(t.checkInvariantsSinceLastCheck()).isEmpty();
        t.scheduler.tamperForTests().reqsNeedRecv().put("x", new NodeState.Stage(b, BlockGroups.single(new int[] {9}))); // through a table: tracked
        assertThat(t.checkInvariantsSinceLastCheck().stream().map(Invariants.Violation::check))
                .containsExactly(Check.BLOCKS_OWNED_ONCE);
        assertThat(t.checkInvariantsSinceLastCheck()).as("reported once, by the change that made it").isEmpty();
        assertThat(checks(t)).as("the full check still finds it").containsExactly(Check.BLOCKS_OWNED_ONCE);
    }

    @Test
    void every_check_has_a_test_here() {
        List<Check> tested = new ArrayList<>(List.of(Check.REQUEST_KEYED_BY_ID, Check.PHASE_MIRRORED,
                Check.BLOCKS_OWNED_ONCE, Check.DEFERRAL_HAS_DEADLINE, Check.PARKED_ACK_HAS_TTL, Check.MAPPING_INVERSE,
                Check.ACK_COUNTS_OPEN, Check.TABLES_BOUNDED));
        assertThat(tested).containsExactlyInAnyOrder(Check.values());
    }
}
