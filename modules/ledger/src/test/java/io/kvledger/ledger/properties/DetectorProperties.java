package io.kvledger.ledger.properties;

import io.kvledger.core.node.properties.ReducerFixtures;
import io.kvledger.core.node.properties.EventSequences;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.ledger.diagnosis.Bounds;
import io.kvledger.ledger.diagnosis.Finding;
import io.kvledger.ledger.diagnosis.HangDetectors;
import io.kvledger.ledger.diagnosis.InFlight;
import io.kvledger.ledger.diagnosis.Ledger;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.properties.EventSequences.Materialized;
import io.kvledger.core.node.properties.EventSequences.Scenario;
import java.util.List;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Assume;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * The hang detectors over random hook sequences (random configs, hooks in any order, renames at
 * finish, colliding and synthesized transfer ids, early and late ACKs, shutdowns): they are total
 * like the reducer, and every request they call stuck has a finding that names it.
 */
class DetectorProperties {

    @Provide
    Arbitrary<Scenario> scenarios() {
        return EventSequences.scenarios();
    }

    @Property(tries = 200)
    void detectors_are_total_and_every_stuck_request_has_a_finding(@ForAll("scenarios") Scenario scenario) {
        Materialized m = scenario.materialize();
        Assume.that(m.thrown() == null);
        ReducerFixtures.Run run = m.run();
        Ledger ledger = new Ledger();
        ledger.nodeStarted("N0", run.config, NodeReducer.startupChecks(run.config));
        for (int i = 0; i < run.events.size(); i++) {
            ledger.observe("N0", run.events.get(i), run.effects.get(i));
        }
        // a shutdown at the end, and a minute later, so that deadlines and the stuck bound pass
        long end = ledger.lastAtNs() == Long.MIN_VALUE ? 0 : ledger.lastAtNs();
        ledger.observe("N0", new NodeEvent.ShutDown(end, List.of("tcp://x:1: closed")),
                run.apply(new NodeEvent.ShutDown(end, List.of("tcp://x:1: closed"))));
        ledger.observe("N0", new NodeEvent.Tick(end + 61_000_000_000L), run.apply(new NodeEvent.Tick(end + 61_000_000_000L)));
        List<Finding> findings = HangDetectors.run(ledger, Bounds.defaults());
        List<InFlight> inFlight = HangDetectors.inFlight(ledger, Bounds.defaults());
        for (InFlight f : inFlight) {
            assertThat(f.phase().terminal()).isFalse();
            if (f.status() == InFlight.Status.STUCK) {
                assertThat(findings).as("a finding for stuck %s in %s\n%s", f.requestId(), f.phase(), scenario)
                        .anyMatch(x -> x.node().equals("N0") && f.requestId().equals(x.requestId()));
            }
        }
        for (Finding f : findings) {
            assertThat(f.message()).as("%s", f).isNotBlank();
            assertThat(f.bugClass()).isBetween(0, 37);
        }
    }
}
