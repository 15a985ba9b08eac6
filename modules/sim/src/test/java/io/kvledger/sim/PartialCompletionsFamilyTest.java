package io.kvledger.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.RequestPhase;
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
 * Class 33 (READ WideEP partial completions, #45749) on simulated families: a decode engine whose
 * reader waits for every posted read without a deadline ({@link SimOptions#unboundedReadWait()}),
 * and a few reads that never complete ({@code stall}), among healthy traffic, over 1P1D to 3P2D and
 * prefill DP 2, decode TP 1. The damage is read off the journal, not from the detector: the
 * transfers with a read that never completed, every decode request left in a non-terminal phase and
 * every prefill request reaped. Each must be named class 33, and nothing else may be named. The clean
 * family is the same shapes with the same reader and no fault: no finding at all.
 */
class PartialCompletionsFamilyTest {

    /** Feeds the ledger and notes what the fault damaged, from the events and effects alone. */
    static final class Damage implements Recorder {
        final Ledger ledger = new Ledger();
        final Map<String, NodeConfig> configs = new TreeMap<>();
        final Map<String, String> prefillRequest = new TreeMap<>();
        final Map<String, String> prefillNode = new TreeMap<>();
        /** Per node, the read statuses posted and not completed, with their transfer ids. */
        final Map<String, Map<Long, String>> pendingReads = new TreeMap<>();
        /** Per node, each request's latest phase. */
        final Map<String, Map<String, RequestPhase>> phases = new TreeMap<>();
        /** "node|request" of every prefill request reaped. */
        final Set<String> reaped = new TreeSet<>();

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
                    && a.params().get("transfer_id") instanceof String tid && c.role() == Role.PRODUCER && c.tpRank() == 0) {
                prefillRequest.put(tid, a.requestId());
                prefillNode.put(tid, node);
            }
            if (event instanceof NodeEvent.TransferCompleted t) {
                pendingReads.getOrDefault(node, new TreeMap<>()).remove(t.statusId());
            }
            for (Effect e : effects) {
                switch (e) {
                    case Effect.PostRead r -> pendingReads.computeIfAbsent(node, k -> new TreeMap<>()).put(r.statusId(), r.transferId());
                    case Effect.PhaseChanged p -> phases.computeIfAbsent(node, k -> new TreeMap<>()).put(p.requestId(), p.to());
                    case Effect.Anomaly a when a.kind() == AnomalyKind.DEFERRAL_REAPED -> reaped.add(node + "|" + a.requestId());
                    default -> { }
                }
            }
        }

        Set<String> stalled() {
            Set<String> out = new TreeSet<>();
            pendingReads.values().forEach(m -> out.addAll(m.values()));
            return out;
        }

        /** "node|request" of every request damaged: reaped prefills and decodes left non-terminal. */
        Set<String> damaged() {
            Set<String> out = new TreeSet<>(reaped);
            phases.forEach((node, m) -> m.forEach((rid, p) -> {
                if (configs.get(node).role() == Role.CONSUMER && !p.terminal()) {
                    out.add(node + "|" + rid);
                }
            }));
            return out;
        }
    }

    record Shape(int prefill, int decode, int prefillDp) {}

    static final List<Shape> SHAPES = List.of(new Shape(1, 1, 1), new Shape(2, 3, 1), new Shape(3, 2, 1), new Shape(2, 2, 2));

    static Damage run(Shape s, long seed, String faults) {
        Damage d = new Damage();
        Simulation.run(SimOptions.builder(seed, TransferMode.READ).requests(30).nodes(s.prefill(), s.decode())
                .prefillDp(s.prefillDp()).faults(faults).unboundedReadWait(true).keepLog(false).build(), d);
        return d;
    }

    @Test
    void every_request_a_stopped_reader_damaged_is_named_class_33_and_nothing_else_is() {
        int stalledTotal = 0;
        int heldTotal = 0;
        List<String> problems = new ArrayList<>();
        for (Shape s : SHAPES) {
            for (long seed = 500; seed < 504; seed++) {
                Damage d = run(s, seed, "stall=0.01");
                List<Finding> findings = HangDetectors.run(d.ledger, Bounds.defaults());
                String what = s + " seed " + seed;
                Set<String> stalled = d.stalled();
                stalledTotal += stalled.size();
                for (String tid : stalled) {
                    String prid = d.prefillRequest.get(tid);
                    boolean prefillNamed = findings.stream().anyMatch(f -> f.bugClass() == 33
                            && f.node().equals(d.prefillNode.get(tid)) && f.requestId().equals(prid));
                    boolean decodeNamed = findings.stream().anyMatch(f -> f.bugClass() == 33 && f.node().startsWith("D")
                            && tid.equals(f.transferId()) && f.detector().equals("partial-completions"));
                    if (!prefillNamed || !decodeNamed) {
                        problems.add(what + ": stalled " + tid + " prefill named " + prefillNamed + ", decode named " + decodeNamed);
                    }
                }
                Set<String> damaged = d.damaged();
                for (String key : damaged) {
                    boolean named = findings.stream().anyMatch(f -> f.bugClass() == 33
                            && key.equals(f.node() + "|" + f.requestId()));
                    if (!named) {
                        problems.add(what + ": damaged " + key + " not named class 33");
                    }
                    if (findings.stream().noneMatch(f -> key.equals(f.node() + "|" + f.requestId())
                            && stalled.contains(f.transferId()))) {
                        heldTotal++;
                    }
                }
                for (Finding f : findings) {
                    if (f.requestId() == null || f.detector().equals("reaped-warning")) {
                        continue;
                    }
                    if (!damaged.contains(f.node() + "|" + f.requestId()) && !stalled.contains(f.transferId())) {
                        problems.add(what + ": finding on a request the fault did not damage: " + f);
                    } else if (f.bugClass() != 33) {
                        problems.add(what + ": a damaged request named with class " + f.bugClass() + ": " + f);
                    }
                }
            }
        }
        assertThat(problems).isEmpty();
        assertThat(stalledTotal).as("reads stalled").isGreaterThan(10);
        assertThat(heldTotal).as("requests held behind another's partial completions").isGreaterThan(10);
    }

    @Test
    void the_same_shapes_and_reader_without_the_fault_give_no_finding() {
        for (Shape s : SHAPES) {
            for (long seed = 500; seed < 504; seed++) {
                Damage d = run(s, seed, "none");
                assertThat(d.stalled()).isEmpty();
                assertThat(HangDetectors.run(d.ledger, Bounds.defaults())).as(s + " seed " + seed).isEmpty();
            }
        }
    }
}
