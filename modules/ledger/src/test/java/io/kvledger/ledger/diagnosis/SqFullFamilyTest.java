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
import io.kvledger.ledger.diagnosis.CrossNodeDiagnosisTest.Cluster;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * Class 24 (#47495): a READ whose layer read fails with mori's "SQ full" among healthy reads, over
 * decode TP, prefill instances, the number of requests and which one fails, with and without the
 * release reaching the prefill. Every leg of the failed transfer is named class 24 and no other
 * request is named; the same journals with another failure message name no class 24, and with no
 * failure name nothing. Without delivery, the failed transfer's release is lost (the others arrive).
 * A WRITE's failure is followed by its own rank's write_done or by none.
 */
class SqFullFamilyTest {

    /** {@code message}: the failed read's message, or null for no failure; returns the findings. */
    private static List<Finding> run(int prefills, int decodeTp, int requests, int failing, String message, boolean deliver) {
        Cluster c = new Cluster();
        c.readDeployment(prefills, decodeTp, requests, (node, reads) -> {
            boolean failed = false;
            for (Effect.PostRead r : reads) {
                boolean fail = message != null && node.equals("D0") && !failed && r.transferId().equals("tx-" + failing);
                failed |= fail;
                c.on(node, new NodeEvent.TransferCompleted(10, r.statusId(), !fail, fail ? -1 : 0, fail ? message : "ok"));
            }
            for (Effect.SendRelease r : c.only(c.on(node, new NodeEvent.FinishedPolled(11)), Effect.SendRelease.class)) {
                int i = Integer.parseInt(r.transferId().toString().substring(3));
                if (deliver || i != failing) {
                    c.on("P" + (i % prefills), new NodeEvent.ReleaseReceived(12, r.transferId().toString(), decodeTp));
                }
            }
            for (int i = 0; i < requests; i++) {
                c.on(node, new NodeEvent.RequestFinished(20, "d-" + i, FinishStatus.FINISHED_STOPPED,
                        BlockGroups.single(8 + 2 * i, 9 + 2 * i)));
            }
        });
        c.settlePrefills(Math.min(prefills, requests));
        return HangDetectors.run(c.ledger, Bounds.defaults());
    }

    @Test
    void an_sq_full_read_failure_is_class_24_on_every_leg_of_its_transfer_and_nothing_else() {
        for (int prefills : new int[] {1, 2}) {
            for (int tp : new int[] {1, 2}) {
                for (int requests : new int[] {1, 4}) {
                    for (boolean deliver : new boolean[] {true, false}) {
                        int failing = requests - 1;
                        String what = "prefills " + prefills + " tp " + tp + " requests " + requests + " deliver " + deliver;
                        List<Finding> f = run(prefills, tp, requests, failing, "SQ full", deliver);
                        Set<String> named = new TreeSet<>();
                        f.stream().filter(x -> x.bugClass() == 24).forEach(x -> named.add(x.node() + " " + x.requestId()));
                        assertThat(named).as(what + ": " + f).contains("D0 d-" + failing, "P" + (failing % prefills) + " p-" + failing);
                        assertThat(f).as(what).allSatisfy(x -> assertThat(x.requestId()).endsWith("-" + failing));
                        assertThat(f).as(what).filteredOn(x -> x.bugClass() == 24).allSatisfy(x ->
                                assertThat(x.message()).contains("SQ full").contains("back-off"));
                    }
                }
            }
        }
    }

    @Test
    void another_failure_is_not_class_24_and_no_failure_is_no_finding() {
        for (int tp : new int[] {1, 2}) {
            List<Finding> other = run(2, tp, 4, 3, "ibv_post_send: ENOMEM", true);
            assertThat(other).as("tp " + tp + ": " + other).noneSatisfy(x -> assertThat(x.bugClass()).isEqualTo(24));
            List<Finding> none = run(2, tp, 4, 3, null, true);
            assertThat(none).as("tp " + tp + ": " + none).isEmpty();
        }
    }

    /**
     * A TP 2 WRITE whose rank-1 write fails with SQ full; rank 0 sends its write_done after, on
     * another clock, and rank 1 sends one or not: only rank 1's own says a write_done followed.
     */
    private static List<Finding> writeTp2(boolean rank1Sends) {
        Ledger l = new Ledger();
        for (int r = 0; r < 2; r++) {
            l.nodeStarted("P0-tp" + r, NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).hostIp("10.0.0.1").tp(r, 2)
                    .build(), List.of());
        }
        long t = 1_000_000_000L;
        for (int r = 0; r < 2; r++) {
            String node = "P0-tp" + r;
            l.observe(node, new NodeEvent.RequestAdmitted(t, "p-0", 32, 32, KvParams.of("do_remote_decode", true,
                    "transfer_id", "tx-0")), List.of(new Effect.PhaseChanged("p-0", null, RequestPhase.ADMITTED, "admitted")));
            l.observe(node, new NodeEvent.LayerSaved(t + 1_000, "model.layers.0.self_attn.attn"), List.of(new Effect.PostWrite(
                    7, "tx-0", "model.layers.0.self_attn.attn", "10.0.1.1:6301_dp0", new int[] {1}, new int[] {5})));
        }
        l.observe("P0-tp1", new NodeEvent.TransferCompleted(t + 3_000_000, 7, false, -1, "SQ full"), List.of());
        l.observe("P0-tp0", new NodeEvent.TransferCompleted(t + 4_000_000, 7, true, 0, "ok"),
                List.of(new Effect.SendWriteDone("10.0.1.1", 61005, "tx-0")));
        if (rank1Sends) {
            l.observe("P0-tp1", new NodeEvent.Tick(t + 5_000_000), List.of(new Effect.SendWriteDone("10.0.1.1", 61006, "tx-0")));
        }
        return HangDetectors.run(l, Bounds.defaults());
    }

    @Test
    void a_write_failing_with_sq_full_is_followed_only_by_its_own_ranks_write_done_not_another_ranks() {
        assertThat(writeTp2(false)).filteredOn(x -> x.bugClass() == 24 && x.node().equals("P0-tp1")).singleElement()
                .satisfies(x -> assertThat(x.message()).contains("failed on P0-tp1").contains("no write_done followed"));
        assertThat(writeTp2(true)).filteredOn(x -> x.bugClass() == 24 && x.node().equals("P0-tp1")).singleElement()
                .satisfies(x -> assertThat(x.message()).contains("failed on P0-tp1").doesNotContain("no write_done followed"));
    }
}
