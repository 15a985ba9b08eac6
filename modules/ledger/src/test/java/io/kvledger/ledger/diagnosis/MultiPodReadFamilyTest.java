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
import io.kvledger.ledger.diagnosis.CrossNodeDiagnosisTest.Cluster;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * READ with the prefill's DP ranks spread over pods on several hosts ({@code remote_dp_size_local}
 * below {@code remote_dp_size}, {@code remote_hosts} naming the pods), several decode requests in
 * the first step, over pods, ranks per pod, decode TP and decode instances. Healthy: every eager
 * handshake answered, every read done, every release delivered and every request freed: no
 * finding at all (the dial arithmetic alone is not class 37). Damaged: the handshake of a rank on
 * another pod never answered: class 37 on every waiting decode request and its prefill leg.
 */
class MultiPodReadFamilyTest {

    private static final long S = 1_000_000_000L;

    private static String host(int pod) {
        return "10.0.0." + (pod + 1);
    }

    /** Runs one topology; {@code answerRemotePods}: whether handshakes to ranks on other pods are answered. */
    private static List<Finding> run(int pods, int local, int decodes, int decodeTp, int requests, boolean answerRemotePods) {
        Cluster c = new Cluster();
        int dpSize = pods * local;
        for (int g = 0; g < dpSize; g++) {
            c.node("P" + g, NodeConfig.builder(Role.PRODUCER, TransferMode.READ).hostIp(host(g / local)).dp(g, dpSize, local)
                    .build());
        }
        List<String> remoteHosts = new ArrayList<>();
        for (int p = 0; p < pods; p++) {
            remoteHosts.add(host(p));
        }
        for (int d = 0; d < decodes; d++) {
            for (int t = 0; t < decodeTp; t++) {
                c.node(dnode(d, t), NodeConfig.builder(Role.CONSUMER, TransferMode.READ).hostIp("10.0.1." + (d + 1))
                        .tp(t, decodeTp).build());
            }
        }
        // every request is served by a rank of pod 0 (its remote_host): the release port needs no folding
        List<String> prids = new ArrayList<>();
        List<KvParams> back = new ArrayList<>();
        for (int i = 0; i < requests; i++) {
            String prid = "p-" + i;
            int g = i % local;
            KvParams kv = c.prefillLeg("P" + g, prid, KvParams.of("do_remote_decode", true, "transfer_id", "tx-" + i));
            kv.put("remote_hosts", remoteHosts);
            prids.add(prid);
            back.add(kv);
        }
        for (int g = 0; g < Math.min(local, requests); g++) {
            c.on("P" + g, new NodeEvent.LoadStarted(5)); // the worker maps the transfers it serves
        }
        for (int d = 0; d < decodes; d++) {
            for (int t = 0; t < decodeTp; t++) {
                String node = dnode(d, t);
                List<Effect> load = new ArrayList<>();
                for (int i = d; i < requests; i += decodes) {
                    String drid = "d-" + i;
                    c.on(node, new NodeEvent.RequestAdmitted(5, drid, 32, 32, back.get(i)));
                    c.on(node, new NodeEvent.MatchedTokensQueried(6, drid, 0));
                    c.on(node, new NodeEvent.BlocksAllocated(7, drid, BlockGroups.single(8 + i, 9 + i), 31));
                }
                c.on(node, new NodeEvent.StepScheduled(8, 1, List.of()));
                load.addAll(c.on(node, new NodeEvent.LoadStarted(9)));
                for (Effect.StartHandshake h : c.only(load, Effect.StartHandshake.class)) {
                    if (answerRemotePods || h.remoteDpRank() < local) {
                        load.addAll(c.on(node, new NodeEvent.HandshakeCompleted(10, h.key())));
                    }
                }
                for (Effect.PostRead r : c.only(load, Effect.PostRead.class)) {
                    c.on(node, new NodeEvent.TransferCompleted(11, r.statusId(), true, 0, "ok"));
                }
                for (Effect.SendRelease r : c.only(c.on(node, new NodeEvent.FinishedPolled(12)), Effect.SendRelease.class)) {
                    int i = Integer.parseInt(r.transferId().toString().substring(3));
                    c.on("P" + (i % local), new NodeEvent.ReleaseReceived(13, r.transferId().toString(), decodeTp));
                }
                for (int i = d; i < requests; i += decodes) {
                    if (answerRemotePods) {
                        c.on(node, new NodeEvent.RequestFinished(20, "d-" + i, FinishStatus.FINISHED_STOPPED,
                                BlockGroups.single(8 + i, 9 + i)));
                    }
                }
            }
        }
        for (int g = 0; g < local; g++) {
            List<Effect> polled = c.on("P" + g, new NodeEvent.FinishedPolled(14));
            List<String> done = new ArrayList<>();
            for (Effect.FinishedReported f : c.only(polled, Effect.FinishedReported.class)) {
                if (f.doneSending() != null) {
                    done.addAll(f.doneSending());
                }
            }
            c.on("P" + g, new NodeEvent.ConnectorOutputReceived(15, done, List.of()));
        }
        for (String node : c.states.keySet()) {
            c.on(node, node.startsWith("P") ? new NodeEvent.ConnectorOutputReceived(61 * S, List.of(), List.of())
                    : new NodeEvent.StepScheduled(61 * S, 2, List.of()));
        }
        return HangDetectors.run(c.ledger, Bounds.defaults());
    }

    private static String dnode(int d, int t) {
        return "D" + d + (t == 0 ? "" : "-tp" + t);
    }

    @Test
    void a_healthy_multi_pod_read_deployment_gives_no_finding() {
        for (int pods : new int[] {2, 3}) {
            for (int local : new int[] {1, 2}) {
                for (int decodes : new int[] {1, 2}) {
                    for (int tp : new int[] {1, 2}) {
                        List<Finding> f = run(pods, local, decodes, tp, 4, true);
                        assertThat(f).as("pods " + pods + " local " + local + " decodes " + decodes + " tp " + tp + ": " + f)
                                .isEmpty();
                    }
                }
            }
        }
    }

    @Test
    void a_rank_on_another_pod_never_answering_is_class_37_on_every_waiting_request() {
        for (int pods : new int[] {2, 3}) {
            for (int local : new int[] {1, 2}) {
                for (int decodes : new int[] {1, 2}) {
                    for (int tp : new int[] {1, 2}) {
                        String what = "pods " + pods + " local " + local + " decodes " + decodes + " tp " + tp;
                        List<Finding> f = run(pods, local, decodes, tp, 4, false);
                        List<String> named = f.stream().filter(x -> x.bugClass() == 37)
                                .map(x -> x.node().replaceAll("-tp\\d+$", "") + " " + x.requestId()).distinct().toList();
                        List<String> expected = new ArrayList<>();
                        for (int i = 0; i < 4; i++) {
                            expected.add("D" + (i % decodes) + " d-" + i);
                            expected.add("P" + (i % local) + " p-" + i);
                        }
                        assertThat(named).as(what + ": " + f).containsExactlyInAnyOrderElementsOf(expected);
                        assertThat(f).as(what).noneSatisfy(x -> assertThat(x.detector()).isIn("stuck", "reaped-without-ack",
                                "handshake-incomplete"));
                    }
                }
            }
        }
    }
}
