package io.kvledger.core.node.properties;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.kvledger.core.config.Role;
import io.kvledger.core.config.Switch;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import io.kvledger.core.node.properties.EventSequences.Materialized;
import io.kvledger.core.node.properties.EventSequences.Scenario;
import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Assume;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.statistics.Statistics;

/**
 * Properties of the node reducer over random event sequences on one node (random config, hooks in
 * any order, implausible payloads, colliding ids, deadlines firing). A failure prints jqwik's
 * seed and the shrunk scenario, rendered one event per line by {@link Scenario#toString()}.
 */
class ReducerProperties {

    private static final int TRIES = 200;

    @Provide
    Arbitrary<Scenario> scenarios() {
        return EventSequences.scenarios();
    }

    /** (a) The reducer is total: every event of every sequence applies without an exception. */
    @Property(tries = TRIES)
    void reducer_never_throws_on_any_sequence(@ForAll("scenarios") Scenario scenario) {
        List<NodeEvent> events = scenario.events();
        ReducerFixtures.Run run = new ReducerFixtures.Run(scenario.config());
        for (NodeEvent e : events) {
            run.apply(e); // no catch: an exception fails the property
        }
        collectCoverage(run);
    }

    /**
     * (b) Determinism: the same events applied to two fresh states give the same effects, event by
     * event, and the same state hash; the second is applied by a reducer bound to its state (one
     * context reused from event to event, the live loop's form), which must not differ either.
     */
    @Property(tries = TRIES)
    void same_sequence_gives_same_effects_and_state_hash(@ForAll("scenarios") Scenario scenario) {
        Materialized m = scenario.materialize();
        Assume.that(m.thrown() == null); // (a) reports throwing sequences
        List<NodeEvent> events = m.run().events;
        ReducerFixtures.Run first = new ReducerFixtures.Run(scenario.config());
        NodeState second = NodeState.initial(scenario.config());
        NodeReducer.Bound reducer = NodeReducer.bind(second);
        List<Effect> sink = new ArrayList<>();
        for (int i = 0; i < events.size(); i++) {
            String a = ReducerFixtures.canonical(first.apply(events.get(i)));
            sink.clear();
            reducer.applyInto(events.get(i), sink);
            String b = ReducerFixtures.canonical(sink);
            if (!a.equals(b)) {
                fail("effects of event #" + i + " differ between two runs:\n first:\n" + a + " second (bound reducer):\n" + b);
            }
        }
        assertThat(second.stateHash()).as("state hash after two runs of the same %d events", events.size())
                .isEqualTo(first.state.stateHash());
        assertThat(m.run().state.stateHash()).as("state hash of the materializing run").isEqualTo(first.state.stateHash());
    }

    /**
     * (c) No request id is surfaced in finished_sending twice unless it was re-admitted in between,
     * or, for a connector that passes finished_sending through (no-update-connector-output), the
     * reducer names the second with the assertion vLLM's scheduler fails on.
     */
    @Property(tries = TRIES)
    void no_request_surfaced_twice_without_readmission(@ForAll("scenarios") Scenario scenario) {
        Materialized m = scenario.materialize();
        Assume.that(m.thrown() == null);
        report(m.run(), ReducerFixtures.doubleSurfacing(m.run()), "surfaced twice");
    }

    /**
     * (c, regression) The seed that first drew a producer with no-update-connector-output given
     * the same finished_sending twice for a request it never admitted (CI, 2026-12-06): upstream
     * 239b5ff30 passes both through, and the reducer names each with FINISHED_SENDING_UNKNOWN_REQUEST.
     */
    @Property(tries = TRIES, seed = "2399256147482353009")
    void no_request_surfaced_twice_regression_seed(@ForAll("scenarios") Scenario scenario) {
        no_request_surfaced_twice_without_readmission(scenario);
    }

    /**
     * (d) Every deferred free is eventually surfaced (ACKED, PARKED_ACK_RELEASED or REAPED) once a
     * ConnectorOutputReceived with nothing in it arrives at or after the last deferral deadline,
     * unless hold-until-real-ack is on. Producers only: update_connector_output works on P only
     * (seed-vs-newest C.16, protocol 5.2 step 6), so a consumer never reaps.
     */
    @Property(tries = TRIES)
    void every_deferral_is_surfaced_once_its_deadline_passes(@ForAll("scenarios") Scenario scenario) {
        Assume.that(scenario.config().role() == Role.PRODUCER && !scenario.config().on(Switch.HOLD_UNTIL_REAL_ACK));
        Materialized m = scenario.materialize();
        Assume.that(m.thrown() == null);
        ReducerFixtures.Run run = m.run();
        long at = Math.max(run.lastAtNs(), ReducerFixtures.lastDeadline(run));
        run.apply(new NodeEvent.ConnectorOutputReceived(at, List.of(), List.of()));
        Statistics.label("deferrals").collect(ReducerFixtures.lastDeadline(run) > 0 ? "some" : "none");
        report(run, ReducerFixtures.unresolvedDeferrals(run), "deferral never surfaced");
    }

    /**
     * (f, regression) The seed whose scenario first showed a READ request moved back from RUNNING
     * to READS_IN_FLIGHT when a late handshake posted reads from stale receive metadata; now an
     * anomaly (READS_POSTED_OUT_OF_PHASE) and no phase change.
     */
    @Property(tries = TRIES, seed = "4540373373202627319")
    void phases_only_move_forward_regression_seed(@ForAll("scenarios") Scenario scenario) {
        Materialized m = scenario.materialize();
        Assume.that(m.thrown() == null);
        report(m.run(), ReducerFixtures.phaseRegressions(m.run()), "phase regression");
    }

    /** (f) Phases only move forward along the documented lifecycle; nothing leaves a terminal phase unless re-admitted. */
    @Property(tries = TRIES)
    void phases_only_move_forward(@ForAll("scenarios") Scenario scenario) {
        Materialized m = scenario.materialize();
        Assume.that(m.thrown() == null);
        report(m.run(), ReducerFixtures.phaseRegressions(m.run()), "phase regression");
    }

    // ------------------------------------------------------------------ helpers

    static void report(ReducerFixtures.Run run, List<String> violations, String what) {
        if (violations.isEmpty()) {
            return;
        }
        fail(what + " (" + violations.size() + "):\n  " + String.join("\n  ", violations)
                + "\nconfig: " + ReducerFixtures.describe(run.config)
                + "\nevents (effects shown for the offending ones):\n" + run.trace(ReducerFixtures.eventNumbers(violations)));
    }

    private static void collectCoverage(ReducerFixtures.Run run) {
        boolean deferral = false;
        boolean surfaced = false;
        boolean read = false;
        boolean write = false;
        for (List<Effect> l : run.effects) {
            for (Effect e : l) {
                deferral |= e instanceof Effect.DeferralStarted;
                surfaced |= e instanceof Effect.AckSurfaced;
                read |= e instanceof Effect.PostRead;
                write |= e instanceof Effect.PostWrite;
            }
        }
        Statistics.label("deferral").collect(deferral);
        Statistics.label("surfaced").collect(surfaced);
        Statistics.label("post read").collect(read);
        Statistics.label("post write").collect(write);
    }
}
