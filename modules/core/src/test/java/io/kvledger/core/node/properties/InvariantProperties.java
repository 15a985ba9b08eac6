package io.kvledger.core.node.properties;

import static org.assertj.core.api.Assertions.fail;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.node.Invariants;
import io.kvledger.core.node.properties.EventSequences.Scenario;
import java.util.List;
import java.util.Set;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * {@link io.kvledger.core.node.NodeState#checkInvariants()} holds after every event of random
 * event sequences: under the profiles with a few switches flipped ({@link EventSequences#configs()}),
 * and under switch sets drawn at random, each switch on or off. A failure prints jqwik's seed, the
 * violations and the numbered events up to the one after which they were found.
 */
class InvariantProperties {

    private static final int TRIES = 300;

    @Provide
    Arbitrary<Scenario> scenarios() {
        return EventSequences.scenarios();
    }

    /** Profiles with every switch drawn at random. */
    @Provide
    Arbitrary<Scenario> anySwitches() {
        return Combinators.combine(EventSequences.configs(), EventSequences.anySwitchSet(), EventSequences.scenarios())
                .as((NodeConfig c, Behaviour b, Scenario s) -> new Scenario(c.withBehaviour(b), s.ops()));
    }

    @Property(tries = TRIES)
    void invariants_hold_after_every_event(@ForAll("scenarios") Scenario scenario) {
        check(scenario);
    }

    @Property(tries = TRIES)
    void invariants_hold_after_every_event_under_any_switch_set(@ForAll("anySwitches") Scenario scenario) {
        check(scenario);
    }

    static void check(Scenario scenario) {
        ReducerFixtures.Run run = new ReducerFixtures.Run(scenario.config());
        for (NodeEvent e : scenario.events()) {
            run.apply(e);
            List<Invariants.Violation> v = run.state.checkInvariants();
            if (!v.isEmpty()) {
                int at = run.events.size() - 1;
                fail("after event #" + at + ": " + v + "\nconfig: " + ReducerFixtures.describe(run.config)
                        + "\nevents:\n" + run.trace(Set.of(at)));
            }
            // the loop's wait: the same as a walk over every deadline, before, at and after each one
            java.util.List<Long> after = new java.util.ArrayList<>(java.util.List.of(0L, e.atNs(), Long.MIN_VALUE));
            after.addAll(run.state.deferredDeadlines().values());
            after.addAll(run.state.parkedAcks().values());
            for (long a : after) {
                for (long d = -1; d <= 1; d++) {
                    long at = a + d;
                    if (run.state.nextDeadlineAfter(at) != io.kvledger.core.node.DeadlineWalk.nextDeadlineAfter(run.state, at)) {
                        fail("nextDeadlineAfter(" + at + ") after event #" + (run.events.size() - 1) + ": "
                                + run.state.nextDeadlineAfter(at) + ", a walk over every deadline: "
                                + io.kvledger.core.node.DeadlineWalk.nextDeadlineAfter(run.state, at));
                    }
                }
            }
        }
    }
}
