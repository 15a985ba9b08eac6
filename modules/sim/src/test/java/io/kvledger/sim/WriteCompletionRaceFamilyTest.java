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
 * Class 6 (WRITE completion race) on simulated families: WRITE clusters whose prefill engines'
 * {@code save_kv_layer} hooks sometimes do not fire for a layer, or fire twice ({@code hook-skip},
 * {@code hook-repeat}), under the writer before sealing ({@code write-unsealed-completion}): one write
 * expected per registered layer, every hook call counted. Shapes 1P1D to 3P2D, TP 2, prefill DP 2,
 * decode DP 2, 16 to 40 requests of healthy traffic around the damage.
 *
 * <p>Which transfers were damaged is read from what the simulator delivered, not from the detector's
 * evidence: a decode rank that received write_done before every registered layer's write of its
 * prefill rank had completed (it reads half-written blocks), a decode leg still waiting for write_done
 * at the end, or a prefill rank that wrote a layer of the transfer twice (its count ran past the
 * layers). Every such transfer must be named 6 on its prefill and a decode, and nothing else named. The
 * clean family is the same irregular hooks under the sealed writer, with slow writes and chunked
 * prefill over several save steps: no finding.
 */
class WriteCompletionRaceFamilyTest {

    /** Feeds the ledger and notes, per transfer, what each prefill rank wrote and when each decode rank got write_done. */
    static final class Deliveries implements Recorder {
        final Ledger ledger = new Ledger();
        final Map<String, NodeConfig> configs = new TreeMap<>();
        final Map<String, String> prefillRequest = new TreeMap<>();
        final Map<String, String> prefillNode = new TreeMap<>();
        /** node|status id to transfer id|layer, for writes in flight. */
        final Map<String, String> inFlight = new TreeMap<>();
        /** Per prefill TP rank|tid, the layers whose writes completed, and how often each layer was posted. */
        final Map<String, Set<String>> written = new TreeMap<>();
        final Map<String, Map<String, Integer>> posts = new TreeMap<>();
        final Set<String> damaged = new TreeSet<>();
        final Set<String> decodeLegs = new TreeSet<>();
        final Set<String> writeDoneGot = new TreeSet<>();
        int layers;
        int writeDones;
        SimulationResult result;

        @Override
        public void nodeStarted(String node, NodeConfig config, List<Effect> startupEffects) {
            configs.put(node, config);
            layers = config.layerNames().size();
            ledger.nodeStarted(node, config, startupEffects);
        }

        @Override
        public void applied(String node, long seq, NodeEvent event, List<Effect> effects) {
            ledger.observe(node, event, effects);
            NodeConfig c = configs.get(node);
            switch (event) {
                case NodeEvent.RequestAdmitted a when a.params() != null
                        && a.params().get("transfer_id") instanceof String tid -> {
                    if (c.role() == Role.CONSUMER) {
                        decodeLegs.add(tid);
                    } else if (c.tpRank() == 0) {
                        prefillRequest.put(tid, a.requestId());
                        prefillNode.put(tid, node);
                    }
                }
                case NodeEvent.TransferCompleted t -> {
                    String w = inFlight.remove(node + "|" + t.statusId());
                    if (w != null && t.succeeded()) {
                        int bar = w.indexOf('|');
                        written.computeIfAbsent(c.tpRank() + "|" + w.substring(0, bar), k -> new TreeSet<>())
                                .add(w.substring(bar + 1));
                    }
                }
                case NodeEvent.WriteDoneReceived w -> {
                    writeDones++;
                    writeDoneGot.add(w.transferId());
                    if (written.getOrDefault(c.tpRank() + "|" + w.transferId(), Set.of()).size() < layers) {
                        damaged.add(w.transferId()); // read before its prefill rank finished writing
                    }
                }
                default -> { }
            }
            for (Effect e : effects) {
                if (e instanceof Effect.PostWrite p && p.transferId() != null) {
                    inFlight.put(node + "|" + p.statusId(), p.transferId() + "|" + p.layerName());
                    int n = posts.computeIfAbsent(node + "|" + p.transferId(), k -> new TreeMap<>())
                            .merge(p.layerName(), 1, Integer::sum);
                    if (n > 1) {
                        damaged.add(p.transferId()); // writes_done counted past the layers
                    }
                }
            }
        }

        /** The damaged transfers, once the run is over: also those whose decode leg never got write_done. */
        Set<String> damaged(SimulationResult result) {
            Set<String> out = new TreeSet<>(damaged);
            for (String tid : decodeLegs) {
                if (!writeDoneGot.contains(tid) && prefillRequest.containsKey(tid)) {
                    out.add(tid);
                }
            }
            return out;
        }
    }

    record Shape(int prefill, int decode, int tp, int prefillDp, int decodeDp, int requests) {
        @Override
        public String toString() {
            return prefill + "P" + decode + "D tp" + tp + " dp" + prefillDp + "/" + decodeDp + " " + requests + " requests";
        }
    }

    static final List<Shape> SHAPES = List.of(new Shape(1, 1, 1, 1, 1, 16), new Shape(2, 3, 1, 1, 1, 40),
            new Shape(1, 1, 2, 1, 1, 24), new Shape(1, 2, 1, 2, 1, 30), new Shape(3, 2, 1, 1, 1, 24),
            new Shape(2, 2, 1, 1, 2, 30));

    static Deliveries run(Shape s, long seed, boolean unsealed, String faults, boolean slow) {
        Deliveries d = new Deliveries();
        Behaviour b = unsealed ? Behaviour.newest().with(Switch.WRITE_UNSEALED_COMPLETION, true) : Behaviour.newest();
        SimOptions.Builder o = SimOptions.builder(seed, TransferMode.WRITE).requests(s.requests()).nodes(s.prefill(), s.decode())
                .tp(s.tp(), s.tp()).prefillDp(s.prefillDp()).decodeDp(s.decodeDp()).faults(faults).behaviour(b)
                .keepLog(false);
        if (slow) {
            // writes slower than a layer's share of the step, prompts of several chunks
            o.transferNs(3_000_000L, 20_000L).promptTokens(600, 2000).tokenBudget(256);
        }
        d.result = Simulation.run(o.build(), d);
        return d;
    }

    @Test
    void every_transfer_the_unsealed_writer_damaged_is_named_class_6_on_both_legs_and_nothing_else_is() {
        int damagedTotal = 0;
        int transfers = 0;
        List<String> problems = new ArrayList<>();
        for (Shape s : SHAPES) {
            for (long seed = 600; seed < 603; seed++) {
                Deliveries d = run(s, seed, true, "hook-skip=0.01,hook-repeat=0.02", false);
                List<Finding> findings = HangDetectors.run(d.ledger, Bounds.defaults());
                Set<String> damaged = d.damaged(d.result);
                damagedTotal += damaged.size();
                transfers += d.prefillRequest.size();
                TransferFamilyCheck.check(s + " seed " + seed, 6, "raced", damaged, d.prefillRequest, d.prefillNode,
                        findings, problems);
            }
        }
        assertThat(problems).isEmpty();
        assertThat(damagedTotal).as("the irregular hooks damaged some transfers").isGreaterThan(10);
        assertThat(damagedTotal).as("among healthy ones").isLessThan(transfers / 2);
    }

    /** Feeds a ledger with one side's journals only (prefill or decode nodes). */
    static final class OneSide implements Recorder {
        final Ledger ledger = new Ledger();
        final boolean prefill;
        final Set<String> kept = new TreeSet<>();

        OneSide(boolean prefill) {
            this.prefill = prefill;
        }

        @Override
        public void nodeStarted(String node, NodeConfig config, List<Effect> startupEffects) {
            if ((config.role() == Role.PRODUCER) == prefill) {
                kept.add(node);
                ledger.nodeStarted(node, config, startupEffects);
            }
        }

        @Override
        public void applied(String node, long seq, NodeEvent event, List<Effect> effects) {
            if (kept.contains(node)) {
                ledger.observe(node, event, effects);
            }
        }
    }

    @Test
    void with_only_the_prefill_journals_the_finding_says_the_decode_journal_is_missing_and_the_decode_alone_shows_no_race() {
        Shape s = SHAPES.get(1);
        Deliveries all = run(s, 601, true, "hook-skip=0.01,hook-repeat=0.02", false);
        Set<String> damaged = all.damaged(all.result);
        assertThat(damaged).isNotEmpty();
        Behaviour b = Behaviour.newest().with(Switch.WRITE_UNSEALED_COMPLETION, true);
        SimOptions o = SimOptions.builder(601, TransferMode.WRITE).requests(s.requests()).nodes(s.prefill(), s.decode())
                .faults("hook-skip=0.01,hook-repeat=0.02").behaviour(b).keepLog(false).build();
        OneSide prefills = new OneSide(true);
        Simulation.run(o, prefills);
        List<Finding> p = HangDetectors.run(prefills.ledger, Bounds.defaults()).stream()
                .filter(f -> f.bugClass() == 6).toList();
        assertThat(p).extracting(Finding::transferId).containsExactlyInAnyOrderElementsOf(damaged);
        assertThat(p).allSatisfy(f -> assertThat(f.message()).contains("no decode journal among these holds"));
        OneSide decodes = new OneSide(false);
        Simulation.run(o, decodes);
        assertThat(HangDetectors.run(decodes.ledger, Bounds.defaults())).noneMatch(f -> f.bugClass() == 6);
    }

    @Test
    void the_same_hooks_under_the_sealed_writer_with_slow_writes_and_chunked_prefill_give_no_finding() {
        for (Shape s : SHAPES) {
            for (long seed = 600; seed < 603; seed++) {
                Deliveries d = run(s, seed, false, "hook-skip=0.05,hook-repeat=0.05", seed % 2 == 0);
                assertThat(d.damaged(d.result)).as(s + " seed " + seed).isEmpty();
                assertThat(d.writeDones).isGreaterThan(0);
                assertThat(HangDetectors.run(d.ledger, Bounds.defaults())).as(s + " seed " + seed).isEmpty();
            }
        }
    }
}
