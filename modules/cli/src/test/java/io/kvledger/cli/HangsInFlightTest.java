package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.cli.SimJournals.Outcome;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.TransferMode;
import io.kvledger.journal.json.Json;
import io.kvledger.sim.SimOptions;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code hangs} on fault-free journals that end while work is in flight: long decodes still
 * generating (scheduled every step, in RUNNING for longer than --stuck-after) and younger requests.
 * None of them is a finding, and every one of them is counted and explained.
 */
class HangsInFlightTest {

    @TempDir
    static Path root;

    static Path cut;

    @BeforeAll
    static void journals() {
        cut = root.resolve("cut");
        // 4,000 output tokens at 5 to 20 ms a step: each decode runs for about 50 s; arrivals every 3 s
        // on average; the journals stop at 45 s, while the run goes on to its end.
        SimOptions o = SimOptions.builder(5, TransferMode.READ).requests(12).decodeTokens(4_000, 4_000)
                .meanInterArrivalNs(NodeConfig.seconds(3)).keepLog(false).build();
        SimJournals.writeUntil(cut, o, NodeConfig.seconds(45));
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> json(Outcome o) {
        return (Map<String, Object>) Json.parse(o.out().strip());
    }

    @Test
    void generating_decodes_are_in_flight_not_stuck_and_every_one_is_counted() {
        Outcome j = SimJournals.run("hangs", cut.toString(), "--json");
        assertThat(j.code()).as(j.out()).isZero();
        Map<String, Object> m = json(j);
        assertThat(m.get("count")).as("findings").isEqualTo(0L);
        @SuppressWarnings("unchecked")
        Map<String, Object> in = (Map<String, Object>) m.get("in_flight");
        long count = (Long) in.get("count");
        long young = (Long) in.get("young");
        long progressing = (Long) in.get("progressing");
        assertThat(in.get("stuck")).isEqualTo(0L);
        assertThat(young).as("requests younger than 30 s in their phase").isPositive();
        assertThat(progressing).as("decodes in RUNNING for longer than 30 s, still scheduled").isPositive();
        assertThat(young + progressing).isEqualTo(count);
        List<?> requests = (List<?>) in.get("requests");
        assertThat(requests).hasSize((int) count);
        long lastAt = (Long) m.get("last_at_ns");
        long bound = (Long) m.get("stuck_after_ns");
        for (Object r : requests) {
            Map<?, ?> rm = (Map<?, ?>) r;
            if ("progressing".equals(rm.get("status"))) {
                assertThat(rm.get("node")).isEqualTo("D0");
                assertThat(rm.get("phase")).isEqualTo("RUNNING");
                assertThat(lastAt - (Long) rm.get("since_ns")).as("in its phase longer than the bound").isGreaterThan(bound);
                assertThat(lastAt - (Long) rm.get("last_event_ns")).as("but scheduled within it").isLessThanOrEqualTo(bound);
            }
        }

        Outcome o = SimJournals.run("hangs", cut.toString());
        assertThat(o.code()).as(o.out()).isZero();
        assertThat(o.out())
                .containsPattern("(?m)^in flight: " + count + " requests in a non-terminal phase \\(the journals end at "
                        + "t\\+4\\d\\.\\d{6} s\\): " + young + " in (its|their) phase for less than --stuck-after 30 s, "
                        + progressing + " in (its|their) phase longer, but still progressing \\(a lifecycle event within "
                        + "30 s of the end\\)$")
                .containsPattern("(?m)^  D0: .*RUNNING \\d+")
                .contains("no findings: " + count + " requests still in flight are not stuck (see above); every other "
                        + "request reached a terminal phase without a serious anomaly")
                .doesNotContain("stuck  class");

        Outcome listed = SimJournals.run("hangs", cut.toString(), "--in-flight");
        assertThat(listed.code()).isZero();
        Matcher lines = Pattern.compile("(?m)^  [PD]0  \\S+  [A-Z_]+  (young|progressing)  in its phase since t\\+\\d+\\.\\d{6} s, "
                + "last event at t\\+\\d+\\.\\d{6} s$").matcher(listed.out());
        assertThat(lines.results().count()).as(listed.out()).isEqualTo(count);
    }

    @Test
    void a_journal_that_ends_with_nothing_in_flight_says_so() {
        Path clean = root.resolve("clean");
        SimJournals.write(clean, 7, TransferMode.WRITE, 20, "none");
        Outcome o = SimJournals.run("hangs", clean.toString());
        assertThat(o.code()).as(o.out()).isZero();
        assertThat(o.out())
                .containsPattern("(?m)^in flight: none; every request the journals saw reached a terminal phase "
                        + "\\(the journals end at t\\+\\d+\\.\\d{6} s\\)$")
                .contains("no findings: every request reached a terminal phase without a serious anomaly");
        assertThat(json(SimJournals.run("hangs", clean.toString(), "--json")).get("in_flight"))
                .isEqualTo(Map.of("count", 0L, "stuck", 0L, "young", 0L, "progressing", 0L, "requests", List.of()));
    }
}
