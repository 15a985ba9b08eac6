package io.kvledger.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.LongRange;

/**
 * Properties over whole simulated runs with faults: whatever the seed, the fault mix, the mode and
 * the preset, the reducer keeps its lifecycle invariants across both nodes.
 */
class SimulationProperties {

    private static final String FAULTS = "drop=0.03,dup=0.03,delay=0.03,reorder=0.02,fail=0.02,stall=0.01,abort=0.03";

    /** Collects, per node, the requests each lifecycle decision named. */
    private static final class Invariants implements Recorder {
        final Map<String, LinkedHashSet<String>> deferred = new LinkedHashMap<>();
        final Map<String, LinkedHashSet<String>> surfaced = new LinkedHashMap<>();
        final List<String> violations = new ArrayList<>();
        final Map<String, Long> lastAt = new LinkedHashMap<>();

        @Override
        public void applied(String node, long seq, NodeEvent event, List<Effect> effects) {
            Long last = lastAt.put(node, event.atNs());
            if (last != null && event.atNs() < last) {
                violations.add(node + " #" + seq + ": time went backwards " + last + " -> " + event.atNs());
            }
            if (event instanceof NodeEvent.RequestAdmitted a) {
                surfaced.computeIfAbsent(node, k -> new LinkedHashSet<>()).remove(a.requestId());
            }
            for (Effect e : effects) {
                if (e instanceof Effect.DeferralStarted d) {
                    deferred.computeIfAbsent(node, k -> new LinkedHashSet<>()).add(d.requestId());
                } else if (e instanceof Effect.FinishedSendingRewritten f) {
                    LinkedHashSet<String> seen = surfaced.computeIfAbsent(node, k -> new LinkedHashSet<>());
                    for (String rid : f.safe()) {
                        if (!seen.add(rid)) {
                            violations.add(node + " #" + seq + ": " + rid + " surfaced twice in finished_sending");
                        }
                    }
                }
            }
        }
    }

    @Property(tries = 12)
    void every_deferral_ends_and_no_request_is_freed_twice(
            @ForAll @LongRange(min = 1, max = 1_000_000) long seed, @ForAll TransferMode mode, @ForAll boolean seedPreset) {
        Invariants inv = new Invariants();
        SimOptions options = SimOptions.builder(seed, mode).requests(60).faults(FAULTS)
                .behaviour(seedPreset ? Behaviour.seed() : Behaviour.newest()).build();
        SimulationResult result = Simulation.run(options, inv);
        String context = "seed " + seed + " mode " + mode + (seedPreset ? " preset seed" : " preset newest");
        assertThat(inv.violations).as(context).isEmpty();
        assertThat(inv.deferred).as(context + ": the run deferred no free at all").isNotEmpty();
        // Every deferred free on a producer ends surfaced: acked, released from a park, or reaped.
        inv.deferred.forEach((node, rids) -> {
            if (node.startsWith("P")) {
                assertThat(inv.surfaced.getOrDefault(node, new LinkedHashSet<>()))
                        .as(context + ": deferrals of " + node + " that never ended").containsAll(rids);
            }
        });
        // Producers end with every request terminal (decode legs may hang: WRITE has no D timeout).
        for (NodeReport n : result.nodes()) {
            if (n.name().startsWith("P")) {
                assertThat(n.hungRequests()).as(context + ": hung requests on " + n.name()).isEmpty();
            }
        }
    }

    @Property(tries = 6)
    void the_same_seed_gives_the_same_state_hashes(@ForAll @LongRange(min = 1, max = 1_000_000) long seed,
                                                   @ForAll TransferMode mode) {
        SimOptions options = SimOptions.builder(seed, mode).requests(40).faults(FAULTS).build();
        assertThat(Simulation.run(options).stateHashes()).as("seed " + seed + " mode " + mode)
                .isEqualTo(Simulation.run(options).stateHashes());
    }
}
