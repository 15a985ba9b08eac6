package io.kvledger.ledger.diagnosis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.moriio.RequestIds;
import io.kvledger.core.moriio.ZmqAddress;
import io.kvledger.ledger.diagnosis.CrossNodeDiagnosisTest.Cluster;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Classes 4 and 21 on a WRITE prefill whose writes wait on a handshake with the decode that is
 * never answered, over prefill instances, TP ranks and requests per instance. The scheduler's steps
 * tell them apart: none after the handshake began (the engine spins inside save_kv_layer) is a
 * busy-spin (4); steps going on is the unanswered handshake (21). A handshake answered in time is
 * neither.
 */
class BusySpinFamilyTest {

    private static final long S = 1_000_000_000L;

    enum Steps { NONE_AFTER, GOING_ON, ANSWERED }

    private static List<Finding> run(int instances, int tp, int requests, Steps steps) {
        Cluster c = new Cluster();
        for (int i = 0; i < instances; i++) {
            for (int t = 0; t < tp; t++) {
                String node = "P" + i + (t == 0 ? "" : "-tp" + t);
                c.node(node, NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).hostIp("10.0.0." + (i + 1)).tp(t, tp)
                        .build());
                for (int k = 0; k < requests; k++) {
                    String rid = "cmpl-" + RequestIds.proxyRequestId(new ZmqAddress("10.0.0." + (i + 1), 6301, 61005),
                            new ZmqAddress("10.0.1.1", 6301, 62005), String.format("%032x", 100 * i + k)) + "-0-aaaaaaaa";
                    c.on(node, new NodeEvent.RequestAdmitted(S, rid, 32, 32, KvParams.of("do_remote_decode", true,
                            "do_remote_prefill", false, "transfer_id", "tx-" + i + "-" + k, "remote_dp_size", 1L,
                            "remote_engine_id", null, "remote_block_ids", null)));
                    c.on(node, new NodeEvent.MatchedTokensQueried(S, rid, 0));
                    c.on(node, new NodeEvent.BlocksAllocated(S, rid, BlockGroups.single(4 + 2 * k, 5 + 2 * k), 0));
                }
                c.on(node, new NodeEvent.StepScheduled(2 * S, 1, List.of())); // the step whose metadata stages the saves
                c.on(node, new NodeEvent.LoadStarted(2 * S));
                List<Effect> fx = new ArrayList<>(c.on(node, new NodeEvent.LayerSaved(3 * S, "model.layers.0.self_attn.attn")));
                List<Effect.StartHandshake> hs = c.only(fx, Effect.StartHandshake.class);
                assertThat(hs).as(node).isNotEmpty();
                if (steps == Steps.ANSWERED) {
                    for (Effect.StartHandshake h : hs) {
                        c.on(node, new NodeEvent.HandshakeCompleted(4 * S, h.key()));
                    }
                }
                if (steps == Steps.GOING_ON || steps == Steps.ANSWERED) {
                    for (long at = 10; at <= 60; at += 10) {
                        c.on(node, new NodeEvent.StepScheduled(at * S, at, List.of()));
                    }
                }
                c.on(node, new NodeEvent.Tick(61 * S));
            }
        }
        return HangDetectors.run(c.ledger, Bounds.defaults());
    }

    @Test
    void the_steps_tell_a_busy_spin_from_an_unanswered_handshake() {
        for (int instances : new int[] {1, 2}) {
            for (int tp : new int[] {1, 2}) {
                for (int requests : new int[] {1, 3}) {
                    String what = "instances " + instances + " tp " + tp + " requests " + requests;
                    int n = instances * tp * requests;
                    List<Finding> spin = run(instances, tp, requests, Steps.NONE_AFTER);
                    assertThat(spin).as(what + ": " + spin).hasSize(n).allSatisfy(x -> {
                        assertThat(x.detector()).isEqualTo("busy-spin");
                        assertThat(x.bugClass()).isEqualTo(4);
                        assertThat(x.message()).contains("scheduled no step since").contains("save_kv_layer");
                    });
                    List<Finding> waiting = run(instances, tp, requests, Steps.GOING_ON);
                    assertThat(waiting).as(what + ": " + waiting).hasSize(n).allSatisfy(x -> {
                        assertThat(x.detector()).isEqualTo("handshake-incomplete");
                        assertThat(x.bugClass()).isEqualTo(21);
                        assertThat(x.message()).doesNotContain("one of 4 or 21");
                    });
                }
            }
        }
    }

    @Test
    void a_handshake_answered_in_time_is_neither() {
        for (int tp : new int[] {1, 2}) {
            List<Finding> f = run(2, tp, 3, Steps.ANSWERED);
            assertThat(f).as("tp " + tp + ": " + f).noneSatisfy(x -> assertThat(x.bugClass()).isIn(4, 21));
        }
    }
}
