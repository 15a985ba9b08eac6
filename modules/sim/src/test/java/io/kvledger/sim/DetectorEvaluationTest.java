package io.kvledger.sim;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A bounded run of {@link DetectorEvaluation}: two seeds per family, each on one cluster shape in
 * turn. {@code benchmarks/detector-evaluation.sh} runs the long one (every shape, more seeds) by
 * setting {@code kvledger.eval.seeds} and {@code kvledger.eval.every-shape}.
 */
class DetectorEvaluationTest {

    @Test
    void detectors_name_the_damaged_requests_of_simulated_fault_families_and_nothing_else() {
        int seeds = Integer.getInteger("kvledger.eval.seeds", 2);
        int requests = Integer.getInteger("kvledger.eval.requests", 30);
        boolean everyShape = Boolean.getBoolean("kvledger.eval.every-shape");
        long first = Long.getLong("kvledger.eval.first-seed", 1000);
        Map<String, DetectorEvaluation.Tally> tallies = DetectorEvaluation.evaluate(first, seeds, requests, everyShape);
        String report = DetectorEvaluation.report(tallies);
        System.out.println("detector evaluation: seeds " + first + ".." + (first + seeds - 1) + ", "
                + (everyShape ? "every shape" : "one shape per family and seed") + ", " + requests
                + " requests per run (rerun one with -Dkvledger.eval.first-seed=N -Dkvledger.eval.seeds=1)\n" + report);
        int damaged = 0;
        for (Map.Entry<String, DetectorEvaluation.Tally> e : tallies.entrySet()) {
            DetectorEvaluation.Tally t = e.getValue();
            damaged += t.damaged;
            assertThat(t.falseAlarms).as(e.getKey() + " false alarms\n" + report).isZero();
            assertThat(t.missed).as(e.getKey() + " damaged requests no finding names\n" + report).isZero();
            assertThat(t.misnamed).as(e.getKey() + " damaged requests named with a class their fault cannot cause\n"
                    + report).isZero();
        }
        assertThat(damaged).as("the fault families damage some requests\n" + report).isPositive();
    }
}
