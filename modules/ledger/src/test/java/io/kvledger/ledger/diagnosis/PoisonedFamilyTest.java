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
 * Class 9 (RDMA notification poisoning, #40344) across topologies: READ decodes (TP 1 or 2, every
 * rank's engine poisoned) whose first read fails with ENOMEM and whose later reads never
 * complete, over prefill instances and request counts. Every other request, its reads still in flight,
 * is named class 9 on the decode ranks and on its prefill leg (held, then reaped), instead of a
 * stuck decode and a reap; the same traffic with the failure followed by completions (not
 * poisoned) names no class 9, and with no failure names nothing.
 */
class PoisonedFamilyTest {

    private static final long S = 1_000_000_000L;

    /** {@code message}: the first read's failure, or null for none; {@code poisoned}: no read after it completes on any decode rank. */
    private static List<Finding> run(int prefills, int decodeTp, int requests, String message, boolean poisoned) {
        Cluster c = new Cluster();
        c.readDeployment(prefills, decodeTp, requests, (node, reads) -> {
            for (int k = 0; k < reads.size(); k++) {
                // the first read fails; with the engine poisoned, no later one completes
                boolean fail = message != null && k == 0;
                if (fail || !poisoned || message == null) {
                    c.on(node, new NodeEvent.TransferCompleted(10, reads.get(k).statusId(), !fail, fail ? -12 : 0,
                            fail ? message : "ok"));
                }
            }
            for (Effect.SendRelease r : c.only(c.on(node, new NodeEvent.FinishedPolled(11)), Effect.SendRelease.class)) {
                int i = Integer.parseInt(r.transferId().toString().substring(3));
                c.on("P" + (i % prefills), new NodeEvent.ReleaseReceived(12, r.transferId().toString(), decodeTp));
            }
            for (int i = 0; i < requests && !poisoned; i++) {
                c.on(node, new NodeEvent.RequestFinished(20, "d-" + i, FinishStatus.FINISHED_STOPPED,
                        BlockGroups.single(8 + 2 * i, 9 + 2 * i)));
            }
        });
        c.settlePrefills(Math.min(prefills, requests));
        for (int t = 0; t < decodeTp; t++) {
            c.on(Cluster.decodeRank(t), new NodeEvent.StepScheduled(61 * S, 2, List.of()));
        }
        return HangDetectors.run(c.ledger, Bounds.defaults());
    }

    @Test
    void every_request_on_a_poisoned_engine_is_class_9_on_each_of_its_legs() {
        for (int prefills : new int[] {1, 2}) {
            for (int tp : new int[] {1, 2}) {
                for (int requests : new int[] {2, 4}) {
                    String what = "prefills " + prefills + " tp " + tp + " requests " + requests;
                    List<Finding> f = run(prefills, tp, requests, "ibv_post_send: ENOMEM", true);
                    Set<String> nine = new TreeSet<>();
                    f.stream().filter(x -> x.bugClass() == 9).forEach(x -> nine.add(x.node() + " " + x.requestId()));
                    for (int i = 1; i < requests; i++) { // d-0's failed read ends it with a release
                        assertThat(nine).as(what + ": " + f).contains("D0 d-" + i, "P" + (i % prefills) + " p-" + i);
                    }
                    assertThat(f).as(what).noneSatisfy(x -> assertThat(x.detector()).isIn("stuck", "reaped-without-ack"));
                }
            }
        }
    }

    @Test
    void a_failure_the_engine_recovers_from_is_not_class_9_and_no_failure_is_no_finding() {
        for (int tp : new int[] {1, 2}) {
            List<Finding> recovered = run(2, tp, 4, "ibv_post_send: ENOMEM", false);
            assertThat(recovered).as("tp " + tp + ": " + recovered).noneSatisfy(x -> assertThat(x.bugClass()).isEqualTo(9));
            List<Finding> none = run(2, tp, 4, null, false);
            assertThat(none).as("tp " + tp + ": " + none).isEmpty();
        }
    }

}
