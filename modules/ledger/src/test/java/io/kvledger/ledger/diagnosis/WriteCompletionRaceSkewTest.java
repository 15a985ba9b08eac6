package io.kvledger.ledger.diagnosis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.RequestPhase;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Issue 34's CI flake rebuilt as journals: a TP 2 WRITE run (P0-tp0, P0-tp1 writing to D0-tp0,
 * D0-tp1) whose decode clock is off the prefill's, the ledger fed in stamp order as {@code hangs}
 * merges journals. A healthy run is named nothing whatever the skew's sign and size (a decode
 * 10 ms behind stamps its write_done receipts before the prefill's last writes and its sends);
 * a write_done sent early, or received when the rank sent none, is still named with the skew (on
 * the prefill rank and every decode leg of the transfer, as without skew).
 */
class WriteCompletionRaceSkewTest {

    private static final long MS = 1_000_000L;
    private static final long S = 1_000 * MS;
    private static final String L0 = "model.layers.0.self_attn.attn";
    private static final String L1 = "model.layers.1.self_attn.attn";

    enum Damage { NONE, IN_FLIGHT, NO_SEND_EARLY_RECEIPT, NO_SEND_LATE_RECEIPT }

    record Line(String node, NodeEvent event, List<Effect> effects) {}

    private final List<Line> lines = new ArrayList<>();
    private long status;

    private void at(String node, NodeEvent e, Effect... fx) {
        lines.add(new Line(node, e, List.of(fx)));
    }

    /**
     * {@code transfers} transfers 50 ms apart on both TP ranks, the decode's clock {@code skewNs}
     * ahead of the prefill's (negative: behind); transfer {@code damagedAt} on rank 1 damaged.
     */
    private List<Finding> run(long skewNs, int transfers, int damagedAt, Damage damage) {
        Ledger l = new Ledger();
        for (int r = 0; r < 2; r++) {
            l.nodeStarted("P0-tp" + r, NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).hostIp("10.0.0.1").tp(r, 2)
                    .build(), List.of());
            l.nodeStarted("D0-tp" + r, NodeConfig.builder(Role.CONSUMER, TransferMode.WRITE).hostIp("10.0.1.1").tp(r, 2)
                    .build(), List.of());
        }
        for (int i = 0; i < transfers; i++) {
            for (int r = 0; r < 2; r++) {
                transfer(i, r, skewNs, i == damagedAt && r == 1 ? damage : Damage.NONE);
            }
        }
        long end = 2 * S + transfers * 50 * MS + Math.abs(skewNs);
        for (int r = 0; r < 2; r++) {
            at("P0-tp" + r, new NodeEvent.Tick(end));
            at("D0-tp" + r, new NodeEvent.Tick(end + skewNs));
        }
        // hangs reads the journals merged by stamp (the earlier journal first on a tie)
        lines.sort(Comparator.comparingLong(x -> x.event().atNs()));
        for (Line x : lines) {
            l.observe(x.node(), x.event(), x.effects());
        }
        return HangDetectors.run(l, Bounds.defaults());
    }

    /** One transfer on one TP rank; times are the prefill's clock, the decode's events are stamped {@code skew} off. */
    private void transfer(int i, int r, long skew, Damage damage) {
        String tid = "tx-" + i;
        String p = "p-" + i + "-" + r;
        String d = "d-" + i + "-" + r;
        String pn = "P0-tp" + r;
        String dn = "D0-tp" + r;
        long t = S + i * 50 * MS;
        at(dn, new NodeEvent.RequestAdmitted(t - MS + skew, d, 32, 32, KvParams.of("do_remote_prefill", true, "transfer_id", tid)),
                new Effect.PhaseChanged(d, null, RequestPhase.WAITING_FOR_REMOTE_KVS, "waiting for write_done"));
        at(pn, new NodeEvent.RequestAdmitted(t, p, 32, 32, KvParams.of("do_remote_decode", true, "transfer_id", tid)),
                new Effect.PhaseChanged(p, null, RequestPhase.ADMITTED, "admitted"));
        at(pn, new NodeEvent.RemoteBlocksReceived(t + 100_000, d, tid, List.of(5, 6), 0, false));
        long s0 = ++status;
        long s1 = ++status;
        // a slow layer 1 when the damage is a receipt with no send: it is posted 30 ms into the transfer
        long l1 = damage == Damage.NO_SEND_EARLY_RECEIPT ? t + 30 * MS : t + 4 * MS;
        at(pn, new NodeEvent.LayerSaved(t + 2 * MS, L0), post(s0, tid, L0));
        at(pn, new NodeEvent.TransferCompleted(t + 3 * MS, s0, true, 0, ""));
        at(pn, new NodeEvent.LayerSaved(l1, L1), post(s1, tid, L1));
        long sent = switch (damage) {
            case IN_FLIGHT -> {
                at(pn, new NodeEvent.Tick(l1 + 100_000), new Effect.SendWriteDone("10.0.1.1", 61005, tid));
                at(pn, new NodeEvent.TransferCompleted(l1 + MS, s1, true, 0, ""));
                yield l1 + 100_000;
            }
            case NONE -> {
                at(pn, new NodeEvent.TransferCompleted(l1 + MS, s1, true, 0, ""), new Effect.SendWriteDone("10.0.1.1", 61005, tid));
                yield l1 + MS;
            }
            case NO_SEND_EARLY_RECEIPT, NO_SEND_LATE_RECEIPT -> {
                // a recording without the rank's own write_done; the decode got one from elsewhere,
                // in fact 3.5 ms into the transfer (before the slow layer 1's write), or after it
                at(pn, new NodeEvent.TransferCompleted(l1 + MS, s1, true, 0, ""));
                yield damage == Damage.NO_SEND_EARLY_RECEIPT ? t + 3_500_000 : l1 + MS;
            }
        };
        // the decode receives write_done 100 us after it was sent, on its own clock
        long got = sent + 100_000 + skew;
        at(dn, new NodeEvent.WriteDoneReceived(got, tid), new Effect.PhaseChanged(d, RequestPhase.WAITING_FOR_REMOTE_KVS,
                RequestPhase.RUNNING, "write_done"));
        at(dn, new NodeEvent.RequestFinished(got + 20 * MS, d, FinishStatus.FINISHED_LENGTH_CAPPED, BlockGroups.single(5, 6)),
                new Effect.PhaseChanged(d, RequestPhase.RUNNING, RequestPhase.FINISHED, "finished"));
    }

    private static Effect.PostWrite post(long id, String tid, String layer) {
        return new Effect.PostWrite(id, tid, layer, "10.0.1.1:6301_dp0", new int[] {1, 2}, new int[] {5, 6});
    }

    private static List<String> named(List<Finding> f) {
        return f.stream().filter(x -> x.bugClass() == 6).map(x -> x.node() + " " + x.requestId()).toList();
    }

    @Test
    void a_healthy_tp2_write_run_is_named_nothing_with_the_decode_clock_behind_or_ahead() {
        for (long skew : new long[] {-10 * MS, -200 * MS, 10 * MS, 200 * MS, 0, -1, -3 * S}) {
            lines.clear();
            List<Finding> f = run(skew, 12, -1, Damage.NONE);
            assertThat(f).as("skew " + skew + " ns: " + f).isEmpty();
        }
    }

    @Test
    void issue_34s_receipts_stamped_before_the_send_would_have_been_evidence_by_the_raw_stamps() {
        // the situation itself: with the decode 10 ms behind, every receipt is stamped before the
        // rank's last write, which the old rule took as a race
        assertThat(run(-10 * MS, 1, -1, Damage.NONE)).isEmpty();
        long receipt = lines.stream().filter(x -> x.event() instanceof NodeEvent.WriteDoneReceived)
                .mapToLong(x -> x.event().atNs()).min().orElseThrow();
        long lastPost = lines.stream().filter(x -> x.effects().stream().anyMatch(e -> e instanceof Effect.PostWrite))
                .mapToLong(x -> x.event().atNs()).max().orElseThrow();
        assertThat(receipt).isLessThan(lastPost);
    }

    @Test
    void a_write_done_sent_with_a_write_in_flight_is_still_named_whatever_the_skew() {
        for (long skew : new long[] {-10 * MS, -200 * MS, 10 * MS, 200 * MS}) {
            lines.clear();
            List<Finding> f = run(skew, 6, 3, Damage.IN_FLIGHT);
            assertThat(named(f)).as("skew " + skew + ": " + f).containsExactlyInAnyOrder("P0-tp1 p-3-1", "D0-tp1 d-3-1",
                    "D0-tp0 d-3-0");
            assertThat(f).filteredOn(x -> x.node().equals("P0-tp1")).singleElement()
                    .satisfies(x -> assertThat(x.message()).contains("1 write(s) still in flight")
                            .doesNotContain("had received a write_done"));
        }
    }

    @Test
    void a_receipt_the_rank_never_sent_stamped_before_its_write_by_more_than_the_measured_skew_is_named_with_both_stamps() {
        for (long skew : new long[] {-10 * MS, -20 * MS, 0, 10 * MS}) {
            lines.clear();
            List<Finding> f = run(skew, 6, 3, Damage.NO_SEND_EARLY_RECEIPT);
            assertThat(named(f)).as("skew " + skew + ": " + f).containsExactlyInAnyOrder("P0-tp1 p-3-1", "D0-tp1 d-3-1",
                    "D0-tp0 d-3-0");
            long measured = Math.max(0, -skew - 100_000);
            assertThat(f).filteredOn(x -> x.node().equals("P0-tp1")).singleElement().satisfies(x -> assertThat(x.message())
                    .contains("reached the decode while the prefill still wrote it")
                    .contains("D0-tp1's receipt stamped t+")
                    .contains("P0-tp1's write t+")
                    .contains("beyond the " + io.kvledger.ledger.text.Seconds.duration(measured) + " the two clocks were measured apart")
                    .contains("1 write_done(s) received, 0 sent by P0-tp1"));
        }
    }

    @Test
    void a_receipt_the_rank_never_sent_within_the_measured_skew_of_its_writes_is_no_evidence() {
        // in fact after the rank's last write; with the decode 10 ms behind (as measured on the
        // healthy transfers) it is stamped before that write, by less than the skew plus the margin
        List<Finding> f = run(-10 * MS, 6, 3, Damage.NO_SEND_LATE_RECEIPT);
        long receipt = lines.stream().filter(x -> x.node().equals("D0-tp1") && x.event() instanceof NodeEvent.WriteDoneReceived w
                && w.transferId().equals("tx-3")).mapToLong(x -> x.event().atNs()).min().orElseThrow();
        assertThat(receipt).as("stamped before the write").isLessThan(S + 150 * MS + 4 * MS);
        assertThat(named(f)).as(f.toString()).isEmpty();
    }
}
