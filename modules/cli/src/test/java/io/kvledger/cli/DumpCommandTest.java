package io.kvledger.cli;

import static io.kvledger.cli.CliRun.run;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.journal.json.Json;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code kvledger dump}: one line per entry, filters, several journals interleaved by time. */
class DumpCommandTest {

    @TempDir
    static Path tmp;
    static Path sim;

    @BeforeAll
    static void simulate() {
        sim = tmp.resolve("sim");
        assertThat(CliRun.simulate(sim, "read", 2, 1, "drop=0.5").code()).isZero();
    }

    @Test
    void prints_every_entry_of_a_journal_with_seq_time_kind_and_fields() {
        CliRun.Outcome o = run("dump", sim.resolve("P0").toString());
        assertThat(o.code()).as(o.err()).isZero();
        List<String> lines = o.lines();
        assertThat(lines.get(0)).matches(" +0 +- +header +header P0 kv_producer READ 10\\.0\\.0\\.1 .*");
        assertThat(lines.get(1)).matches(" +1 +t\\+\\d+\\.\\d{6} s +input +request_admitted rid=cmpl-.*");
        assertThat(lines.get(2)).matches(" +2 +t\\+\\d+\\.\\d{6} s +derived<-1 +phase_changed .*ADMITTED.*");
        assertThat(o.out()).containsPattern("(?m)derived<-\\d+ +anomaly DEFERRAL_REAPED \\[HANG_RISK, bug class 7\\]");
        CliRun.Outcome verify = run("verify", sim.resolve("P0").toString());
        assertThat(verify.out()).contains("P0: " + lines.size() + " entries");
    }

    /** Times since the first entry by default, the journal's own with --absolute: the same instants either way. */
    @Test
    void times_are_since_the_first_entry_and_absolute_on_request() {
        List<String> rel = run("dump", sim.resolve("P0").toString(), "--from", "1").lines();
        List<String> abs = run("dump", sim.resolve("P0").toString(), "--from", "1", "--absolute").lines();
        assertThat(rel).hasSameSizeAs(abs).hasSizeGreaterThan(2);
        assertThat(rel.get(0)).matches(" +1 +t\\+0\\.000000 s +input +request_admitted .*");
        java.math.BigDecimal origin = new java.math.BigDecimal(abs.get(0).strip().split(" +")[1]);
        for (int i = 0; i < rel.size(); i++) {
            String[] r = rel.get(i).strip().split(" +");
            String[] a = abs.get(i).strip().split(" +");
            assertThat(a[1]).matches("\\d+\\.\\d{9}");
            assertThat(r[1]).matches("t\\+\\d+\\.\\d{6}");
            assertThat(r[2]).isEqualTo("s");
            java.math.BigDecimal since = new java.math.BigDecimal(a[1]).subtract(origin)
                    .setScale(6, java.math.RoundingMode.DOWN);
            assertThat(r[1]).as(rel.get(i)).isEqualTo("t+" + since.toPlainString());
            assertThat(String.join(" ", java.util.Arrays.copyOfRange(r, 3, r.length)))
                    .isEqualTo(String.join(" ", java.util.Arrays.copyOfRange(a, 2, a.length)));
        }
        // a later range keeps the journal's origin, not its own first line
        List<String> later = run("dump", sim.resolve("P0").toString(), "--from", "3", "--to", "3").lines();
        assertThat(later).containsExactly(rel.get(2));
    }

    @Test
    void type_filter_takes_names_and_ids_and_from_to_select_seqs() {
        CliRun.Outcome byName = run("dump", sim.resolve("D0").toString(), "--type", "send_release");
        assertThat(byName.code()).isZero();
        assertThat(byName.lines()).isNotEmpty().allMatch(l -> l.contains(" send_release WORKER -> 10.0.0.1:61005"));
        CliRun.Outcome byId = run("dump", sim.resolve("D0").toString(), "--type", "121");
        assertThat(byId.out()).isEqualTo(byName.out());
        CliRun.Outcome two = run("dump", sim.resolve("P0").toString(), "--type", "header,anomaly");
        assertThat(two.lines()).hasSize(2);
        CliRun.Outcome range = run("dump", sim.resolve("P0").toString(), "--from", "3", "--to", "5");
        assertThat(range.lines()).extracting(l -> l.strip().split(" +")[0]).containsExactly("3", "4", "5");
    }

    @Test
    void several_journals_are_interleaved_by_event_time_with_the_node_first() {
        CliRun.Outcome o = run("dump", sim.toString(), "--type", "request_admitted,send_release,anomaly");
        assertThat(o.code()).isZero();
        List<String> lines = o.lines();
        assertThat(lines).extracting(l -> l.substring(0, 2)).containsExactly("P0", "D0", "D0", "P0");
        double last = -1;
        for (String l : lines) {
            double t = Double.parseDouble(l.substring(4).strip().split(" +")[1].substring("t+".length()));
            assertThat(t).isGreaterThanOrEqualTo(last);
            last = t;
        }
        CliRun.Outcome onlyD = run("dump", sim.toString(), "--node", "D0", "--type", "request_admitted");
        assertThat(onlyD.lines()).hasSize(1).allMatch(l -> l.contains("request_admitted") && !l.startsWith("D0 "));
    }

    @Test
    void json_lines_follow_the_export_format() {
        CliRun.Outcome one = run("dump", sim.resolve("P0").toString(), "--json", "--to", "2");
        assertThat(one.lines()).hasSize(3);
        Map<?, ?> first = (Map<?, ?>) Json.parse(one.lines().get(0));
        assertThat(first.get("kind")).isEqualTo("header");
        assertThat(one.lines().get(1)).isEqualTo(run("journal", "export", sim.resolve("P0").toString()).lines().get(1));
        CliRun.Outcome both = run("dump", sim.toString(), "--json", "--type", "header");
        assertThat(both.lines()).hasSize(2).allMatch(l -> l.startsWith("{\"node\":\""));
    }

    @Test
    void usage_errors_exit_2() {
        CliRun.Outcome badType = run("dump", sim.toString(), "--type", "remote_blocks");
        assertThat(badType.code()).isEqualTo(2);
        assertThat(badType.err()).contains("unknown type 'remote_blocks'").contains("did you mean remote_blocks_received?")
                .contains("see 'kvledger help dump'");
        CliRun.Outcome missing = run("dump", tmp.resolve("nothing-here").toString());
        assertThat(missing.code()).isEqualTo(2);
        assertThat(missing.err()).contains("no such directory");
        assertThat(run("dump", tmp.toString()).code()).as("a directory without journals").isEqualTo(2);
        assertThat(run("dump", sim.toString(), "--node", "P7").err()).contains("no journal of node P7 here (nodes: D0, P0)");
        assertThat(run("dump", sim.toString(), "--from", "9", "--to", "3").code()).isEqualTo(2);
        assertThat(run("dump").code()).isEqualTo(2);
    }
}
