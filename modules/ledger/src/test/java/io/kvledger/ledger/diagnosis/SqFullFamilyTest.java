package io.kvledger.ledger.diagnosis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
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
}
