package io.kvledger.ledger.diagnosis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.moriio.RequestIds;
import io.kvledger.core.moriio.ZmqAddress;
import io.kvledger.ledger.diagnosis.CrossNodeDiagnosisTest.Cluster;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Classes 14 and 16 from one KeyError: vLLM 239b5ff30's WRITE decode builds {@code reqs_to_recv}
 * from {@code scheduled_new_reqs} with the params the request carries when scheduled, reading
 * {@code transfer_id} and {@code remote_block_ids} by key. A key the admission params carried and
 * the scheduled params lack is class 14 (mutated or cleared between alloc and the meta build); a
 * key never sent is class 16; with no admission journaled the finding says it cannot tell. Over
 * decode instances, TP ranks, the healthy requests scheduled before it and the key; the same
 * journals with the key kept give no finding.
 */
class ParamsKeyMissingFamilyTest {

    private static final long S = 1_000_000_000L;

    private static String rid(int i, String tag) {
        return "cmpl-" + RequestIds.proxyRequestId(new ZmqAddress("10.0.0.1", 6301, 61005),
                new ZmqAddress("10.0.1.1", 6301, 62005), String.format("%032x", i)) + "-0-" + tag;
    }

    private static KvParams full(String tid) {
        return KvParams.of("do_remote_prefill", true, "do_remote_decode", false, "transfer_id", tid,
                "remote_engine_id", null, "remote_block_ids", null, "remote_dp_size", 1L);
    }

    private static KvParams without(KvParams p, String key) {
        Map<String, Object> m = new LinkedHashMap<>(p.asMap());
        m.remove(key);
        return KvParams.of(m);
    }

    /** {@code shape}: "cleared" (admitted with the key, scheduled without), "never" (neither), "unadmitted", "kept". */
    private static List<Finding> run(int instances, int tp, int traffic, String key, String shape) {
        Cluster c = new Cluster();
        for (int i = 0; i < instances; i++) {
            for (int t = 0; t < tp; t++) {
                String node = "D" + i + (t == 0 ? "" : "-tp" + t);
                c.node(node, NodeConfig.builder(Role.CONSUMER, TransferMode.WRITE).hostIp("10.0.1." + (i + 1)).tp(t, tp)
                        .behaviour(Behaviour.vllm239b5ff30()).build());
                List<NodeEvent.NewRequest> step = new ArrayList<>();
                for (int k = 0; k < traffic; k++) {
                    String ok = rid(100 * i + k, "0000000" + k);
                    c.on(node, new NodeEvent.RequestAdmitted(S, ok, 32, 32, full("tx-" + i + "-" + k)));
                    step.add(new NodeEvent.NewRequest(ok, BlockGroups.single(10 + k), 0, full("tx-" + i + "-" + k)));
                }
                String odd = rid(100 * i + 99, "deadbeef");
                KvParams admittedWith = shape.equals("never") ? without(full("tx-odd-" + i), key) : full("tx-odd-" + i);
                if (!shape.equals("unadmitted")) {
                    c.on(node, new NodeEvent.RequestAdmitted(S, odd, 32, 32, admittedWith));
                }
                KvParams scheduledWith = shape.equals("kept") ? admittedWith : without(admittedWith, key);
                step.add(new NodeEvent.NewRequest(odd, BlockGroups.single(90), 0, scheduledWith));
                c.on(node, new NodeEvent.StepScheduled(2 * S, 1, List.of(), step, List.of()));
                c.on(node, new NodeEvent.Tick(5 * S));
            }
        }
        return HangDetectors.run(c.ledger, Bounds.defaults());
    }

    @Test
    void a_key_cleared_after_admission_is_14_a_key_never_sent_is_16_and_no_admission_says_so() {
        for (String key : new String[] {"transfer_id", "remote_block_ids"}) {
            for (int instances : new int[] {1, 2}) {
                for (int tp : new int[] {1, 2}) {
                    for (int traffic : new int[] {0, 2}) {
                        String what = key + " instances " + instances + " tp " + tp + " traffic " + traffic;
                        List<Finding> cleared = run(instances, tp, traffic, key, "cleared");
                        assertThat(cleared).as(what + " cleared: " + cleared).hasSize(instances * tp).allSatisfy(x -> {
                            assertThat(x.detector()).isEqualTo("params-lost-before-meta");
                            assertThat(x.bugClass()).isEqualTo(14);
                            assertThat(x.requestId()).endsWith("-deadbeef");
                            assertThat(x.message()).contains("'" + key + "'").contains("carried");
                        });
                        List<Finding> never = run(instances, tp, traffic, key, "never");
                        assertThat(never).as(what + " never: " + never).hasSize(instances * tp).allSatisfy(x -> {
                            assertThat(x.detector()).isEqualTo("params-key-missing");
                            assertThat(x.bugClass()).isEqualTo(16);
                            assertThat(x.message()).contains("never carried '" + key + "'");
                        });
                        List<Finding> unknown = run(instances, tp, traffic, key, "unadmitted");
                        assertThat(unknown).as(what + " unadmitted: " + unknown).hasSize(instances * tp).allSatisfy(x ->
                                assertThat(x.message()).startsWith("one of 14 or 16: ").contains("lacks the request's admission"));
                    }
                }
            }
        }
    }

    @Test
    void the_same_journals_with_the_key_kept_give_no_finding() {
        for (String key : new String[] {"transfer_id", "remote_block_ids"}) {
            for (int tp : new int[] {1, 2}) {
                List<Finding> f = run(2, tp, 2, key, "kept");
                assertThat(f).as(key + " tp " + tp + ": " + f).isEmpty();
            }
        }
    }
}
