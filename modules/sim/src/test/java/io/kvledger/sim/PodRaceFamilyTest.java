package io.kvledger.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.Switch;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.ledger.diagnosis.Bounds;
import io.kvledger.ledger.diagnosis.Finding;
import io.kvledger.ledger.diagnosis.HangDetectors;
import io.kvledger.ledger.diagnosis.Ledger;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * Class 32 (WRITE multi-pod host race) on simulated families: multi-pod WRITE deployments (the
 * prefill leg names its decode's pod hosts, each decode instance a pod on a host of its own), two
 * or three decode pods, one or two prefill instances, TP 1 and 2, prefill DP 1 and 2, with the
 * older worker's stashed pod hosts ({@code write-done-worker-pod-hosts}): a prefill that finishes
 * one request's writes after scheduling another's, to another pod, sends the first one's write_done
 * to the other pod. Which transfers raced is read off the journal (the host of each write_done
 * against the host of the decode that admitted the transfer), not from the detector. The clean
 * family is the same shapes with the newest worker (pod hosts per WriteTask): no finding at all.
 */
class PodRaceFamilyTest {

    /** Feeds the ledger and notes, per transfer, its decode's host and the hosts its write_dones went to. */
    static final class Routes implements Recorder {
        final Ledger ledger = new Ledger();
        final Map<String, NodeConfig> configs = new TreeMap<>();
        final Map<String, String> decodeHost = new TreeMap<>();
        final Map<String, Set<String>> writeDoneHosts = new TreeMap<>();
        final Map<String, String> prefillRequest = new TreeMap<>();
        final Map<String, String> prefillNode = new TreeMap<>();
        int multiPodLegs;

        @Override
        public void nodeStarted(String node, NodeConfig config, List<Effect> startupEffects) {
            configs.put(node, config);
            ledger.nodeStarted(node, config, startupEffects);
        }

        @Override
        public void applied(String node, long seq, NodeEvent event, List<Effect> effects) {
            ledger.observe(node, event, effects);
            NodeConfig c = configs.get(node);
            if (event instanceof NodeEvent.RequestAdmitted a && a.params() != null
                    && a.params().get("transfer_id") instanceof String tid) {
                if (c.role() == Role.CONSUMER) {
                    decodeHost.put(tid, c.hostIp());
                } else if (c.tpRank() == 0) {
                    prefillRequest.put(tid, a.requestId());
                    prefillNode.put(tid, node);
                    if (a.params().get("remote_hosts") != null) {
                        multiPodLegs++;
                    }
                }
            }
            for (Effect e : effects) {
                if (e instanceof Effect.SendWriteDone w) {
                    writeDoneHosts.computeIfAbsent(w.transferId(), k -> new TreeSet<>()).add(w.host());
                }
            }
        }

        /** Transfers a write_done of which went to another host than their decode's. */
        Set<String> raced() {
            Set<String> out = new TreeSet<>();
            writeDoneHosts.forEach((tid, hosts) -> {
                String d = decodeHost.get(tid);
                if (d != null && hosts.stream().anyMatch(h -> !h.equals(d))) {
                    out.add(tid);
                }
            });
            return out;
        }
    }

    record Shape(int prefill, int decode, int tp, int dp) {}

    static final List<Shape> SHAPES = List.of(new Shape(1, 2, 1, 1), new Shape(2, 3, 1, 1), new Shape(1, 2, 2, 1),
            new Shape(2, 2, 1, 2));

    static Routes run(Shape s, long seed, boolean race) {
        Routes r = new Routes();
        Behaviour b = race ? Behaviour.newest().with(Switch.WRITE_DONE_WORKER_POD_HOSTS, true) : Behaviour.newest();
        Simulation.run(SimOptions.builder(seed, TransferMode.WRITE).requests(30).nodes(s.prefill(), s.decode())
                .tp(s.tp(), s.tp()).prefillDp(s.dp()).multiPod(true).behaviour(b).keepLog(false).build(), r);
        return r;
    }

    @Test
    void every_raced_transfer_is_named_class_32_on_its_prefill_and_decode_and_nothing_else_is() {
        int racedTotal = 0;
        List<String> problems = new ArrayList<>();
        for (Shape s : SHAPES) {
            for (long seed = 400; seed < 404; seed++) {
                Routes r = run(s, seed, true);
                assertThat(r.multiPodLegs).as("the prefill legs carry remote_hosts").isGreaterThan(0);
                List<Finding> findings = HangDetectors.run(r.ledger, Bounds.defaults());
                Set<String> raced = r.raced();
                racedTotal += raced.size();
                String what = s + " seed " + seed;
                TransferFamilyCheck.check(what, 32, "raced", raced, r.prefillRequest, r.prefillNode, findings, problems);
            }
        }
        assertThat(problems).isEmpty();
        assertThat(racedTotal).as("the stashed pod hosts sent some write_done to another pod").isGreaterThan(5);
    }

    @Test
    void the_same_multi_pod_shapes_with_pod_hosts_per_write_task_give_no_finding() {
        for (Shape s : SHAPES) {
            for (long seed = 400; seed < 404; seed++) {
                Routes r = run(s, seed, false);
                assertThat(r.multiPodLegs).isGreaterThan(0);
                assertThat(r.raced()).isEmpty();
                assertThat(HangDetectors.run(r.ledger, Bounds.defaults())).as(s + " seed " + seed).isEmpty();
            }
        }
    }
}
