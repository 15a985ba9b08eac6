package io.kvledger.ledger.diagnosis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.KvParams;
import io.kvledger.ledger.diagnosis.CrossNodeDiagnosisTest.Cluster;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Class 19 (#45043): a WRITE prefill instance schedules a request with new blocks that has no
 * pending save. Over prefill instances, TP ranks, the amount of disaggregated traffic
 * around it and how the odd request came (never admitted to the connector, admitted without a
 * transfer): under vLLM 239b5ff30 (which raises) every TP rank's node names it class 19 and
 * nothing else is named; the seed and newest skip unknown ids (the fix), and the same journals
 * give no finding.
 */
class PendingSaveUnknownFamilyTest {

    private static final long S = 1_000_000_000L;

    private static List<Finding> run(Behaviour b, int instances, int tp, int traffic, boolean admitted) {
        Cluster c = new Cluster();
        List<String> nodes = new ArrayList<>();
        for (int i = 0; i < instances; i++) {
            for (int t = 0; t < tp; t++) {
                String node = "P" + i + (t == 0 ? "" : "-tp" + t);
                c.node(node, NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).hostIp("10.0.0." + (i + 1)).tp(t, tp)
                        .cacheBlockSize(16).behaviour(b).build());
                nodes.add(node);
            }
        }
        for (String node : nodes) {
            String instance = node.replaceAll("-tp\\d+$", "");
            List<NodeEvent.CachedRequest> step = new ArrayList<>();
            for (int k = 0; k < traffic; k++) {
                // disaggregated requests admitted and allocated this step, still young when the journal ends
                String rid = instance + "-d" + k;
                c.on(node, new NodeEvent.RequestAdmitted(S, rid, 64, 64, KvParams.of("do_remote_decode", true,
                        "do_remote_prefill", false, "transfer_id", "tx-" + rid, "remote_dp_size", 1L)));
                c.on(node, new NodeEvent.MatchedTokensQueried(S, rid, 0));
                c.on(node, new NodeEvent.BlocksAllocated(S, rid, BlockGroups.single(10 * k + 1), 0));
            }
            String odd = instance + "-plain";
            if (admitted) {
                c.on(node, new NodeEvent.RequestAdmitted(S, odd, 64, 64, KvParams.of("transfer_id", "tx-" + odd)));
                c.on(node, new NodeEvent.MatchedTokensQueried(S, odd, 0));
                c.on(node, new NodeEvent.BlocksAllocated(S, odd, BlockGroups.single(90), 0));
            }
            step.add(new NodeEvent.CachedRequest(odd, BlockGroups.single(91)));
            c.on(node, new NodeEvent.StepScheduled(2 * S, 1, step));
            c.on(node, new NodeEvent.Tick(5 * S));
        }
        return HangDetectors.run(c.ledger, Bounds.defaults());
    }

    @Test
    void a_scheduled_request_without_a_pending_save_is_class_19_on_every_rank_that_raises() {
        for (int instances : new int[] {1, 2}) {
            for (int tp : new int[] {1, 2}) {
                for (int traffic : new int[] {0, 3}) {
                    for (boolean admitted : new boolean[] {false, true}) {
                        String what = "instances " + instances + " tp " + tp + " traffic " + traffic + " admitted " + admitted;
                        List<Finding> f = run(Behaviour.vllm239b5ff30(), instances, tp, traffic, admitted);
                        assertThat(f).as(what + ": " + f).hasSize(instances * tp).allSatisfy(x -> {
                            assertThat(x.detector()).isEqualTo("pending-save-unknown-request");
                            assertThat(x.bugClass()).isEqualTo(19);
                            assertThat(x.requestId()).endsWith("-plain");
                            assertThat(x.message()).contains("KeyError").contains(admitted
                                    ? "a non-disaggregated request" : "never admitted");
                        });
                    }
                }
            }
        }
    }

    @Test
    void the_versions_that_skip_unknown_ids_give_no_finding_on_the_same_journals() {
        for (Behaviour b : List.of(Behaviour.seed(), Behaviour.newest())) {
            for (int tp : new int[] {1, 2}) {
                for (boolean admitted : new boolean[] {false, true}) {
                    List<Finding> f = run(b, 2, tp, 3, admitted);
                    assertThat(f).as(b.profile() + " tp " + tp + " admitted " + admitted + ": " + f).isEmpty();
                }
            }
        }
    }
}
