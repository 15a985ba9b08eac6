package io.kvledger.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.config.TransferMode;
import io.kvledger.core.node.Invariants;
import io.kvledger.core.node.NodeState;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The simulator checks every node's state after every event, and a violation fails the run. */
class InvariantCheckTest {

    private static final String FAULTS = "drop=0.02,dup=0.02,delay=0.02,reorder=0.02,fail=0.01,stall=0.01,abort=0.02";

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void the_check_runs_after_every_event_of_every_node(TransferMode mode) {
        AtomicLong checked = new AtomicLong();
        SimOptions opts = SimOptions.builder(77, mode).requests(40).faults(FAULTS).build();
        SimulationResult r = Simulation.run(opts, Recorder.NONE, s -> {
            checked.incrementAndGet();
            return s.checkInvariants();
        });
        long applied = 0;
        for (NodeReport n : r.nodes()) {
            applied += n.eventsApplied();
        }
        assertThat(applied).as("seed 77 %s: events applied", mode).isPositive();
        assertThat(checked.get()).as("seed 77 %s: one check per event applied", mode).isEqualTo(applied);
    }

    @Test
    void a_violation_fails_the_run_naming_seed_node_and_event() {
        Invariants.Violation v = new Invariants.Violation(Invariants.Check.TABLES_BOUNDED, "made up by the test");
        SimOptions opts = SimOptions.builder(5, TransferMode.WRITE).requests(10).faults("none").build();
        assertThatThrownBy(() -> Simulation.run(opts, Recorder.NONE,
                (NodeState s) -> s.liveRequests() > 0 ? List.of(v) : List.of()))
                .isInstanceOf(InvariantBroken.class)
                .hasMessageStartingWith("seed 5: node ")
                .hasMessageContaining("after event #")
                .hasMessageContaining("TABLES_BOUNDED: made up by the test")
                .satisfies(e -> assertThat(((InvariantBroken) e).violations()).containsExactly(v));
    }
}
