package io.kvledger.ledger.diagnosis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.RequestPhase;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Class 32 (WRITE multi-pod host race) on journals recorded from an engine that has the race (the
 * reducer carries the pod hosts per WriteTask, so the ledger is fed the recorded effects directly):
 * decode DP ranks on several pods (hosts), prefill instances, several requests in flight, and one
 * request whose write_done the prefill sends to a decode rank on another pod. That request is named
 * class 32 on the prefill and on its waiting decode; the healthy requests around it and the same
 * journals with every write_done at its own decode are named nothing of class 32.
 */
class WriteDoneWrongPodFamilyTest {

    private static final long S = 1_000_000_000L;

    private static List<Finding> run(int pods, int prefills, int requests, boolean race) {
        Ledger l = new Ledger();
        for (int p = 0; p < prefills; p++) {
            l.nodeStarted("P" + p, NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).hostIp("10.0.0." + (p + 1)).build(),
                    List.of());
        }
        List<NodeConfig> decodes = new ArrayList<>();
        for (int d = 0; d < pods; d++) {
            NodeConfig c = NodeConfig.builder(Role.CONSUMER, TransferMode.WRITE).hostIp("10.0.1." + (d + 1)).dp(d, pods, 1)
                    .build();
            decodes.add(c);
            l.nodeStarted("D" + d, c, List.of());
        }
        for (int i = 0; i < requests; i++) {
            String tid = "tx-" + i;
            int d = i % pods;
            String p = "P" + (i % prefills);
            KvParams kv = KvParams.of("do_remote_decode", true, "transfer_id", tid);
            l.observe(p, new NodeEvent.RequestAdmitted(S, "p-" + i, 32, 32, kv),
                    List.of(new Effect.PhaseChanged("p-" + i, null, RequestPhase.ADMITTED, "admitted")));
            l.observe("D" + d, new NodeEvent.RequestAdmitted(S, "d-" + i, 32, 32, KvParams.of("do_remote_prefill", true,
                    "transfer_id", tid)), List.of(new Effect.PhaseChanged("d-" + i, null, RequestPhase.WAITING_FOR_REMOTE_KVS,
                    "waiting for the prefill's writes")));
            // the last request's write_done goes to the next pod's decode when the worker races
            int to = race && i == requests - 1 ? (d + 1) % pods : d;
            NodeConfig target = decodes.get(to);
            l.observe(p, new NodeEvent.Tick(2 * S), List.of(new Effect.SendWriteDone(target.hostIp(),
                    Ledger.listenPort(target), tid)));
            if (to == d) {
                l.observe("D" + d, new NodeEvent.WriteDoneReceived(3 * S, tid), List.of(new Effect.PhaseChanged("d-" + i,
                        RequestPhase.WAITING_FOR_REMOTE_KVS, RequestPhase.RUNNING, "write_done")));
            } else {
                l.observe("D" + to, new NodeEvent.WriteDoneReceived(3 * S, tid), List.of());
            }
        }
        for (int d = 0; d < pods; d++) {
            l.observe("D" + d, new NodeEvent.Tick(61 * S), List.of());
        }
        return HangDetectors.run(l, Bounds.defaults());
    }

    @Test
    void a_write_done_sent_to_another_pods_decode_is_class_32_on_both_legs() {
        for (int pods : new int[] {2, 3}) {
            for (int prefills : new int[] {1, 2}) {
                for (int requests : new int[] {1, 4, 7}) {
                    String what = "pods " + pods + " prefills " + prefills + " requests " + requests;
                    int last = requests - 1;
                    List<Finding> f = run(pods, prefills, requests, true);
                    List<String> named = f.stream().filter(x -> x.bugClass() == 32).map(x -> x.node() + " " + x.requestId())
                            .toList();
                    assertThat(named).as(what + ": " + f).containsExactlyInAnyOrder("P" + (last % prefills) + " p-" + last,
                            "D" + (last % pods) + " d-" + last);
                    assertThat(f).as(what).filteredOn(x -> x.bugClass() == 32).allSatisfy(x ->
                            assertThat(x.message()).contains("another pod").contains("multi_pod_hosts"));
                    assertThat(f).as(what).noneSatisfy(x -> assertThat(x.detector() + " " + x.requestId())
                            .isEqualTo("stuck-waiting d-" + last));
                }
            }
        }
    }

    @Test
    void every_write_done_at_its_own_decode_is_no_class_32() {
        for (int pods : new int[] {2, 3}) {
            List<Finding> f = run(pods, 2, 7, false);
            assertThat(f).as("pods " + pods + ": " + f).noneSatisfy(x -> assertThat(x.bugClass()).isEqualTo(32));
        }
    }
}
