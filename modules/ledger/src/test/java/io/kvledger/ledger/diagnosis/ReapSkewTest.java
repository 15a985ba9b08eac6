package io.kvledger.ledger.diagnosis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.model.TransferId;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A READ 1P1D run whose decode clock is ahead of the prefill's, built as journals and fed in
 * stamp order as {@code hangs} merges them: clean transfers (the decode's releases, received by
 * the prefill before they are stamped sent, measure the skew), then one the prefill reaps. A read
 * that completed just before the reap but is stamped after it by the decode's clock is no use
 * after free (class 7, the finding says it is within the measured skew); a read completing well
 * after the reap is class 8 whatever the skew. Likewise a notify stamped after its receiver's
 * journal ended, but within the skew, is not called sent to a dead receiver.
 */
class ReapSkewTest {

    private static final long MS = 1_000_000L;
    private static final long S = 1_000 * MS;

    record Line(String node, NodeEvent event, List<Effect> effects) {}

    private final List<Line> lines = new ArrayList<>();
    private long status;

    private void at(String node, NodeEvent e, Effect... fx) {
        lines.add(new Line(node, e, List.of(fx)));
    }

    /** {@code clean} clean transfers, then one reaped at 30 ms whose read completes {@code readAfterReap} after it (true time). */
    private List<Finding> run(long skew, int clean, long readAfterReap) {
        lines.clear();
        Ledger l = new Ledger();
        NodeConfig p = NodeConfig.builder(Role.PRODUCER, TransferMode.READ).hostIp("10.0.0.1").build();
        l.nodeStarted("P0", p, List.of());
        l.nodeStarted("D0", NodeConfig.builder(Role.CONSUMER, TransferMode.READ).hostIp("10.0.1.1").build(), List.of());
        int port = Ledger.listenPort(p);
        for (int i = 0; i <= clean; i++) {
            boolean reaped = i == clean;
            String tid = "tx-" + i;
            String pr = "p-" + i;
            String dr = "d-" + i;
            long t = S + i * 100 * MS;
            at("P0", new NodeEvent.RequestAdmitted(t, pr, 32, 32, KvParams.of("do_remote_decode", true, "transfer_id", tid)),
                    new Effect.PhaseChanged(pr, null, RequestPhase.ADMITTED, "admitted"));
            at("P0", new NodeEvent.Tick(t + MS), new Effect.PhaseChanged(pr, RequestPhase.ADMITTED, RequestPhase.DEFERRED_FREE,
                    "deferred"));
            at("D0", new NodeEvent.RequestAdmitted(t + 2 * MS + skew, dr, 32, 32,
                    KvParams.of("do_remote_prefill", true, "transfer_id", tid)),
                    new Effect.PhaseChanged(dr, null, RequestPhase.WAITING_FOR_REMOTE_KVS, "waiting"));
            long id = ++status;
            at("D0", new NodeEvent.Tick(t + 3 * MS + skew), new Effect.PostRead(id, dr, tid, "l0", "10.0.0.1:6301",
                    new int[] {1, 2}, new int[] {5, 6}));
            long reapAt = t + 30 * MS;
            long done = reaped ? reapAt + readAfterReap : t + 5 * MS;
            at("D0", new NodeEvent.TransferCompleted(done + skew, id, true, 0, ""));
            if (reaped) {
                at("P0", new NodeEvent.Tick(reapAt), new Effect.Anomaly(AnomalyKind.DEFERRAL_REAPED, pr, tid, "no ACK"),
                        new Effect.AckSurfaced(pr, tid, Effect.SurfaceReason.REAPED),
                        new Effect.PhaseChanged(pr, RequestPhase.DEFERRED_FREE, RequestPhase.REAPED, "reaped"));
                continue;
            }
            at("D0", new NodeEvent.Tick(done + 100_000 + skew), new Effect.SendRelease(Effect.Sender.WORKER, "10.0.0.1", port,
                    TransferId.of(tid), 1));
            at("D0", new NodeEvent.RequestFinished(done + MS + skew, dr, FinishStatus.FINISHED_LENGTH_CAPPED,
                    BlockGroups.single(5, 6)), new Effect.PhaseChanged(dr, RequestPhase.WAITING_FOR_REMOTE_KVS,
                    RequestPhase.FINISHED, "finished"));
            // the release reaches the prefill 100 us after it was sent, on the prefill's clock
            at("P0", new NodeEvent.ReleaseReceived(done + 200_000, tid, 1), new Effect.AckSurfaced(pr, tid,
                    Effect.SurfaceReason.ACKED), new Effect.PhaseChanged(pr, RequestPhase.DEFERRED_FREE, RequestPhase.FINISHED,
                    "acked"));
        }
        long end = S + (clean + 1) * 100 * MS + S;
        at("P0", new NodeEvent.Tick(end));
        at("D0", new NodeEvent.Tick(end + skew));
        lines.sort(Comparator.comparingLong(x -> x.event().atNs()));
        for (Line x : lines) {
            l.observe(x.node(), x.event(), x.effects());
        }
        return HangDetectors.run(l, Bounds.defaults()).stream().filter(x -> x.detector().equals("reaped-without-ack")).toList();
    }

    @Test
    void a_read_completing_just_before_the_reap_stamped_after_it_by_a_decode_ahead_is_no_use_after_free() {
        for (long skew : new long[] {10 * MS, 200 * MS}) {
            List<Finding> f = run(skew, 4, -500_000);
            assertThat(f).as("skew " + skew + ": " + f).singleElement().satisfies(x -> {
                assertThat(x.node()).isEqualTo("P0");
                assertThat(x.requestId()).isEqualTo("p-4");
                assertThat(x.bugClass()).isEqualTo(7);
                assertThat(x.message()).contains("within the two clocks' measured skew").doesNotContain("use after free)");
            });
            // the raw stamps put the read after the reap: the old rule took it as class 8
            long reap = lines.stream().filter(x -> x.effects().stream().anyMatch(e -> e instanceof Effect.AckSurfaced a
                    && a.reason() == Effect.SurfaceReason.REAPED)).mapToLong(x -> x.event().atNs()).max().orElseThrow();
            long read = lines.stream().filter(x -> x.event() instanceof NodeEvent.TransferCompleted)
                    .mapToLong(x -> x.event().atNs()).max().orElseThrow();
            assertThat(read).isGreaterThan(reap);
        }
    }

    @Test
    void a_read_completing_well_after_the_reap_is_a_use_after_free_whatever_the_skew() {
        for (long skew : new long[] {0, 10 * MS, 200 * MS}) {
            List<Finding> f = run(skew, 4, 50 * MS);
            assertThat(f).as("skew " + skew + ": " + f).singleElement().satisfies(x -> {
                assertThat(x.bugClass()).isEqualTo(8);
                assertThat(x.message()).contains("use after free").doesNotContain("measured skew");
            });
        }
    }

    @Test
    void without_skew_a_read_completing_before_the_reap_is_class_7_without_a_skew_note() {
        List<Finding> f = run(0, 4, -500_000);
        assertThat(f).singleElement().satisfies(x -> {
            assertThat(x.bugClass()).isEqualTo(7);
            assertThat(x.message()).doesNotContain("measured skew");
        });
    }

    @Test
    void the_skew_is_measured_from_releases_received_before_they_were_stamped_sent() {
        ClockSkew c = new ClockSkew();
        c.received("tx", "release", "P0", 100);
        c.sent("tx", "release", "D0", "P0", 10_000_100);
        assertThat(c.ahead("D0", "P0")).isEqualTo(10_000_000);
        assertThat(c.ahead("P0", "D0")).isZero();
        // a receipt stamped after its send measures nothing; a second send with one receipt explains nothing
        c.sent("tx", "release", "D0", "P0", 90_000_000);
        c.sent("ty", "release", "D0", "P0", 5);
        c.received("ty", "release", "P0", 6);
        assertThat(c.ahead("D0", "P0")).isEqualTo(10_000_000);
        assertThat(c.certainlyBefore("P0", 0, "D0", 11_000_000)).isFalse();
        assertThat(c.certainlyBefore("P0", 0, "D0", 11_000_001)).isTrue();
        assertThat(c.certainlyBefore("D0", 0, "P0", 1_000_001)).isTrue();
        assertThat(c.certainlyBefore("D0", 0, "D0", 1)).isTrue();
    }

    /**
     * WRITE 1P1D, the decode's clock {@code skew} ahead, the prefill a live process whose journal
     * ends (no shutdown) at 500 ms: four remote_blocks it received (measuring the skew), then one
     * the decode sends {@code sentAfterEnd} after the prefill's journal ends (true time), which it
     * never receives. The decode's journal goes on 40 s.
     */
    private List<Finding> deadReceiver(long skew, long sentAfterEnd) {
        lines.clear();
        Ledger l = new Ledger();
        NodeConfig p = NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).hostIp("10.0.0.1").build();
        l.nodeStarted("P0", p, List.of());
        l.nodeStarted("D0", NodeConfig.builder(Role.CONSUMER, TransferMode.WRITE).hostIp("10.0.1.1").build(), List.of());
        l.liveNode("P0");
        int port = Ledger.listenPort(p);
        long end = 500 * MS;
        for (int i = 0; i < 5; i++) {
            String tid = "tw-" + i;
            String dr = "w-" + i;
            long t = i < 4 ? 100 * MS + i * 50 * MS : end + sentAfterEnd;
            at("D0", new NodeEvent.RequestAdmitted(t - MS + skew, dr, 32, 32,
                    KvParams.of("do_remote_prefill", true, "transfer_id", tid)),
                    new Effect.PhaseChanged(dr, null, RequestPhase.WAITING_FOR_REMOTE_KVS, "waiting for write_done"));
            at("D0", new NodeEvent.Tick(t + skew), new Effect.SendRemoteBlocks("10.0.0.1", port, dr, TransferId.of(tid),
                    List.of(5, 6), 0));
            if (i < 4) {
                at("P0", new NodeEvent.RemoteBlocksReceived(t + 100_000, dr, tid, List.of(5, 6), 0, false));
            }
        }
        at("P0", new NodeEvent.Tick(end));
        at("D0", new NodeEvent.Tick(40 * S + skew));
        lines.sort(Comparator.comparingLong(x -> x.event().atNs()));
        for (Line x : lines) {
            l.observe(x.node(), x.event(), x.effects());
        }
        return HangDetectors.run(l, Bounds.defaults()).stream().filter(x -> "w-4".equals(x.requestId())).toList();
    }

    @Test
    void a_notify_stamped_after_the_receivers_end_within_the_skew_is_not_called_a_dead_receiver() {
        for (long skew : new long[] {10 * MS, 200 * MS}) {
            // sent 2 ms before the prefill's journal ended, stamped skew - 2 ms after it
            List<Finding> f = deadReceiver(skew, -2 * MS);
            assertThat(f).as("skew " + skew + ": " + f).isNotEmpty().allSatisfy(x -> assertThat(x.message())
                    .contains("remote_blocks sent to P0").contains("within the two clocks' measured skew (D0 measured")
                    .doesNotContain("not a lost notify"));
        }
    }

    @Test
    void a_notify_sent_well_after_the_receivers_journal_ended_is_a_dead_receiver_whatever_the_skew() {
        for (long skew : new long[] {0, 10 * MS, 200 * MS}) {
            List<Finding> f = deadReceiver(skew, 300 * MS);
            assertThat(f).as("skew " + skew + ": " + f).isNotEmpty().allSatisfy(x -> assertThat(x.message())
                    .contains("remote_blocks sent to P0").contains("a dead receiver, not a lost notify"));
        }
    }
}
