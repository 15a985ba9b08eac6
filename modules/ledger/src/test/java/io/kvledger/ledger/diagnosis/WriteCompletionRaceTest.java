package io.kvledger.ledger.diagnosis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.RequestPhase;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Class 6 (WRITE completion race) on journals recorded from an engine whose writer counts wrong
 * (the ledger is fed the recorded events and effects directly, as a recording's journal holds
 * them): a write_done sent with a write still in flight, a write_done a decode received before the
 * prefill posted its last write (a recording replayed without the prefill's own write_done), and a
 * transfer whose writes all completed with no write_done; each among healthy transfers, which
 * are named nothing. The prefill registers two layers (the default configuration).
 */
class WriteCompletionRaceTest {

    private static final long S = 1_000_000_000L;
    private static final String L0 = "model.layers.0.self_attn.attn";
    private static final String L1 = "model.layers.1.self_attn.attn";

    enum Damage { NONE, IN_FLIGHT, RECEIVED_BEFORE_POST, NEVER }

    private long status;

    private List<Finding> run(int healthy, Damage damage, long endS) {
        Ledger l = new Ledger();
        l.nodeStarted("P0", NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).hostIp("10.0.0.1").build(), List.of());
        l.nodeStarted("D0", NodeConfig.builder(Role.CONSUMER, TransferMode.WRITE).hostIp("10.0.1.1").build(), List.of());
        for (int i = 0; i <= healthy; i++) {
            transfer(l, i, i == healthy ? damage : Damage.NONE);
        }
        l.observe("P0", new NodeEvent.Tick(endS * S), List.of());
        l.observe("D0", new NodeEvent.Tick(endS * S), List.of());
        return HangDetectors.run(l, Bounds.defaults());
    }

    private void transfer(Ledger l, int i, Damage damage) {
        String tid = "tx-" + i;
        String p = "p-" + i;
        String d = "d-" + i;
        long t = S + i * 10_000_000L;
        l.observe("P0", new NodeEvent.RequestAdmitted(t, p, 32, 32, KvParams.of("do_remote_decode", true, "transfer_id", tid)),
                List.of(new Effect.PhaseChanged(p, null, RequestPhase.ADMITTED, "admitted")));
        l.observe("D0", new NodeEvent.RequestAdmitted(t, d, 32, 32, KvParams.of("do_remote_prefill", true, "transfer_id", tid)),
                List.of(new Effect.PhaseChanged(d, null, RequestPhase.WAITING_FOR_REMOTE_KVS, "waiting for write_done")));
        l.observe("P0", new NodeEvent.RemoteBlocksReceived(t + 1, d, tid, List.of(5, 6), 0, false), List.of());
        long s0 = ++status;
        long s1 = ++status;
        l.observe("P0", new NodeEvent.LayerSaved(t + 2, L0), List.of(post(s0, tid, L0)));
        l.observe("P0", new NodeEvent.TransferCompleted(t + 3, s0, true, 0, ""), List.of());
        // the layer-1 write comes 2 ms after the decode's receipt when that is the damage (more than
        // the 1 ms two clocks may differ by when no send of the rank measured them apart)
        long g = damage == Damage.RECEIVED_BEFORE_POST ? 2_000_000L : 0;
        if (damage == Damage.RECEIVED_BEFORE_POST) {
            // the decode had write_done before the prefill's layer-1 write was even posted
            writeDone(l, d, tid, t + 4);
        }
        l.observe("P0", new NodeEvent.LayerSaved(t + g + 5, L1), List.of(post(s1, tid, L1)));
        if (damage == Damage.IN_FLIGHT) {
            l.observe("P0", new NodeEvent.Tick(t + 6), List.of(new Effect.SendWriteDone("10.0.1.1", 61005, tid)));
            writeDone(l, d, tid, t + 7);
        }
        l.observe("P0", new NodeEvent.TransferCompleted(t + g + 8, s1, true, 0, ""),
                damage == Damage.NONE ? List.of(new Effect.SendWriteDone("10.0.1.1", 61005, tid)) : List.of());
        if (damage == Damage.NONE) {
            writeDone(l, d, tid, t + 9);
        }
        if (damage != Damage.NEVER) {
            l.observe("D0", new NodeEvent.RequestFinished(t + 20, d, io.kvledger.core.model.FinishStatus.FINISHED_LENGTH_CAPPED,
                    io.kvledger.core.model.BlockGroups.single(5, 6)), List.of(new Effect.PhaseChanged(d,
                    RequestPhase.RUNNING, RequestPhase.FINISHED, "finished")));
        }
    }

    private static Effect.PostWrite post(long id, String tid, String layer) {
        return new Effect.PostWrite(id, tid, layer, "10.0.1.1:6301_dp0", new int[] {1, 2}, new int[] {5, 6});
    }

    private static void writeDone(Ledger l, String d, String tid, long at) {
        l.observe("D0", new NodeEvent.WriteDoneReceived(at, tid), List.of(new Effect.PhaseChanged(d,
                RequestPhase.WAITING_FOR_REMOTE_KVS, RequestPhase.RUNNING, "write_done")));
    }

    private static List<String> named(List<Finding> f) {
        return f.stream().filter(x -> x.bugClass() == 6).map(x -> x.node() + " " + x.requestId()).toList();
    }

    @Test
    void a_write_done_with_a_write_in_flight_is_class_6_on_both_legs() {
        for (int healthy : new int[] {0, 3, 9}) {
            List<Finding> f = run(healthy, Damage.IN_FLIGHT, 5);
            assertThat(named(f)).as(f.toString()).containsExactlyInAnyOrder("P0 p-" + healthy, "D0 d-" + healthy);
            assertThat(f).filteredOn(x -> x.node().equals("P0")).singleElement()
                    .satisfies(x -> assertThat(x.message()).contains("1 write(s) still in flight"));
        }
    }

    @Test
    void a_write_done_received_before_the_prefill_posted_its_last_write_is_class_6() {
        for (int healthy : new int[] {0, 4}) {
            List<Finding> f = run(healthy, Damage.RECEIVED_BEFORE_POST, 5);
            assertThat(named(f)).as(f.toString()).containsExactlyInAnyOrder("P0 p-" + healthy, "D0 d-" + healthy);
            assertThat(f).filteredOn(x -> x.node().equals("P0")).singleElement()
                    .satisfies(x -> assertThat(x.message()).contains("reached the decode while the prefill still wrote it")
                            .contains("0.002000 s before it, beyond the 0.000000 s the two clocks were measured apart")
                            .contains("1 write_done(s) received, 0 sent by P0"));
        }
    }

    @Test
    void writes_all_completed_without_write_done_are_class_6_once_quiet_past_the_stuck_bound() {
        List<Finding> f = run(5, Damage.NEVER, 61);
        assertThat(named(f)).as(f.toString()).containsExactlyInAnyOrder("P0 p-5", "D0 d-5");
        assertThat(f).filteredOn(x -> x.node().equals("D0")).singleElement().satisfies(x -> {
            assertThat(x.detector()).isEqualTo("write-completion-race");
            assertThat(x.message()).contains("waits in WAITING_FOR_REMOTE_KVS").contains("never sends");
        });
        assertThat(named(run(5, Damage.NEVER, 10))).as("10 s after its writes: not yet").isEmpty();
    }

    @Test
    void healthy_transfers_are_no_class_6() {
        for (int healthy : new int[] {1, 6}) {
            // the prefill requests never finish here (their stuck findings are not this test's business)
            assertThat(run(healthy, Damage.NONE, 61)).noneMatch(x -> x.bugClass() == 6 || x.node().equals("D0"));
        }
    }
}
