package io.kvledger.ledger.diagnosis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.KvParams;
import io.kvledger.ledger.diagnosis.CrossNodeDiagnosisTest.Cluster;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A READ decode's handshake to a prefill DP rank above 0, never answered: without the peer's pod
 * layout the finding says it is one of 21 or 37 and what the journal lacks; with it (one pod) it
 * is plainly 21. Over decode TP 1 and 2 and prefill DP 2 and 4.
 */
class HandshakePodsUnknownTest {

    private static final long S = 1_000_000_000L;

    private static List<Finding> run(int decodeTp, int remoteDpSize, Integer remoteDpSizeLocal) {
        Cluster c = new Cluster();
        for (int t = 0; t < decodeTp; t++) {
            String node = t == 0 ? "D0" : "D0-tp" + t;
            c.node(node, NodeConfig.builder(Role.CONSUMER, TransferMode.READ).hostIp("10.0.1.1").tp(t, decodeTp).build());
            KvParams p = KvParams.of("do_remote_prefill", true, "do_remote_decode", false, "transfer_id", "tx-hs",
                    "remote_host", "10.0.0.1", "remote_handshake_port", 6301L, "remote_notify_port", 61005L,
                    "remote_engine_id", "10.0.0.1:6301", "remote_block_ids", List.of(List.of(4L, 5L)),
                    "remote_dp_rank", (long) remoteDpSize - 1, "remote_dp_size", (long) remoteDpSize);
            if (remoteDpSizeLocal != null) {
                p.put("remote_dp_size_local", (long) remoteDpSizeLocal);
            }
            c.on(node, new NodeEvent.RequestAdmitted(5, "req", 32, 32, p));
            c.on(node, new NodeEvent.MatchedTokensQueried(6, "req", 0));
            c.on(node, new NodeEvent.BlocksAllocated(7, "req", BlockGroups.single(8, 9), 31));
            c.on(node, new NodeEvent.StepScheduled(8, 1, List.of()));
            // the eager path dials every DP rank of the peer; DP rank 0 (on remote_host in either case) answers
            for (Effect.StartHandshake h : c.only(c.on(node, new NodeEvent.LoadStarted(9)), Effect.StartHandshake.class)) {
                if (h.remoteDpRank() == 0) {
                    c.on(node, new NodeEvent.HandshakeCompleted(10, h.key()));
                }
            }
            c.on(node, new NodeEvent.StepScheduled(61 * S, 2, List.of()));
        }
        return HangDetectors.run(c.ledger, Bounds.defaults()).stream()
                .filter(x -> x.detector().equals("handshake-incomplete")).toList();
    }

    @Test
    void without_the_pod_layout_the_finding_says_one_of_21_or_37_and_with_one_pod_it_is_21() {
        for (int tp : new int[] {1, 2}) {
            for (int dp : new int[] {2, 4}) {
                String what = "decode tp" + tp + " prefill dp" + dp;
                List<Finding> unknown = run(tp, dp, null);
                assertThat(unknown).as(what + ": " + unknown).hasSize(tp).allSatisfy(x -> {
                    assertThat(x.bugClass()).isEqualTo(21);
                    assertThat(x.message()).startsWith("one of 21 or 37: the journal lacks the peer's remote_dp_size_local")
                            .contains("DP rank 1 of " + dp); // the first rank left unanswered
                });
                List<Finding> onePod = run(tp, dp, dp);
                assertThat(onePod).as(what + " one pod: " + onePod).hasSize(tp).allSatisfy(x -> {
                    assertThat(x.bugClass()).isEqualTo(21);
                    assertThat(x.message()).doesNotContain("one of 21 or 37");
                });
            }
        }
    }
}
