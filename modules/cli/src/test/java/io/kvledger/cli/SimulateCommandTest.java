package io.kvledger.cli;

import static io.kvledger.cli.CliRun.run;
import static io.kvledger.cli.CliRun.simulate;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.journal.json.Json;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code kvledger simulate}: journals per node, a summary, and usage errors. */
class SimulateCommandTest {

    @TempDir
    Path tmp;

    @Test
    void writes_one_journal_per_node_and_prints_a_summary() {
        CliRun.Outcome o = simulate(tmp.resolve("out"), "read", 2, 1, "drop=0.5");
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(o.out())
                .contains("simulate: seed 2, READ mode, 1 requests, 1 prefill + 1 decode node(s), faults drop=0.5, profile newest")
                .contains("rerun: ./kvledger simulate --seed 2 --requests 1 --faults drop=0.5 --mode read --profile newest "
                        + "--defer-timeout-s 31 --time-limit-s 5 --idle-step-ms 5000 --tick-ms 5000")
                .containsPattern("(?m)^  P0   kv_producer +\\d+ entries   1 requests: 1 terminal, 0 hung$")
                .containsPattern("(?m)^  D0   kv_consumer +\\d+ entries")
                .contains("anomalies: 1 in 1 kind(s): DEFERRAL_REAPED x1")
                .contains("next: ./kvledger hangs " + tmp.resolve("out"))
                .containsPattern("(?m)^virtual time \\d+\\.\\d{6} s, stopped: ");
        assertThat(JournalDirs.isJournal(tmp.resolve("out/P0"))).isTrue();
        assertThat(JournalDirs.isJournal(tmp.resolve("out/D0"))).isTrue();
        // the header records the command that reproduces the run
        CliRun.Outcome dump = run("dump", tmp.resolve("out/P0").toString(), "--type", "header");
        assertThat(dump.out()).contains("origin=\"kvledger simulate --seed 2 --requests 1 --faults drop=0.5 --mode read");
    }

    @Test
    void the_same_options_write_the_same_journals() {
        simulate(tmp.resolve("a"), "write", 3, 2, "drop=0.2");
        simulate(tmp.resolve("b"), "write", 3, 2, "drop=0.2");
        for (String node : List.of("P0", "D0")) {
            String a = run("journal", "export", tmp.resolve("a").resolve(node).toString()).out();
            String b = run("journal", "export", tmp.resolve("b").resolve(node).toString()).out();
            assertThat(b).as("seed 3 " + node).isEqualTo(a).isNotEmpty();
        }
    }

    @Test
    void json_summary_names_each_node_and_the_anomalies() {
        CliRun.Outcome o = run("simulate", "--seed", "2", "--requests", "1", "--faults", "drop=0.5", "--mode", "read",
                "--time-limit-s", "5", "--defer-timeout-s", "31", "--idle-step-ms", "5000", "--tick-ms", "5000",
                "--out", tmp.resolve("j").toString(), "--json");
        assertThat(o.code()).as(o.err()).isZero();
        Map<?, ?> m = (Map<?, ?>) Json.parse(o.out().strip());
        assertThat(m.get("mode")).isEqualTo("READ");
        assertThat((List<?>) m.get("nodes")).hasSize(2);
        assertThat(((Map<?, ?>) m.get("anomalies")).get("DEFERRAL_REAPED")).isEqualTo(1L);
    }

    /**
     * The deployment: a WRITE prefill at TP 2, a decode at TP 1. Every TP rank journals,
     * the rerun line keeps the TP sizes, hangs finds the un-notified prefill rank as class 22
     * (never class 27) and replay --verify agrees with every journal.
     */
    @Test
    void a_write_prefill_at_tp_2_over_a_decode_at_tp_1_is_class_22_and_replays_clean() {
        Path out = tmp.resolve("tp");
        CliRun.Outcome o = run("simulate", "--seed", "4", "--requests", "2", "--mode", "write", "--prefill-tp", "2",
                "--time-limit-s", "5", "--defer-timeout-s", "31", "--idle-step-ms", "5000", "--tick-ms", "5000",
                "--out", out.toString());
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(o.out()).contains("--prefill-tp 2 --decode-tp 1")
                .containsPattern("(?m)^  P0-tp1 kv_producer +\\d+ entries   2 requests: 2 terminal, 0 hung$")
                .contains("WRITE_RANK_NOT_NOTIFIED x2");
        CliRun.Outcome hangs = run("hangs", out.toString());
        assertThat(hangs.out()).as(hangs.err()).contains("class 22").doesNotContain("class 27")
                .contains("the decode (TP 1) sends remote_blocks to prefill TP ranks 0..0 only");
        CliRun.Outcome header = run("dump", out.resolve("P0-tp1").toString(), "--type", "header");
        assertThat(header.out()).contains("origin=\"kvledger node --engine sim-worker (TP rank 1 of a simulated engine");
        // a decode at TP 2 over a prefill at TP 1: only TP rank 0's node sends remote_blocks, one per decode TP rank
        Path wide = tmp.resolve("wide");
        assertThat(run("simulate", "--seed", "4", "--requests", "1", "--mode", "write", "--decode-tp", "2",
                "--time-limit-s", "5", "--defer-timeout-s", "31", "--idle-step-ms", "5000", "--tick-ms", "5000",
                "--out", wide.toString()).code()).isZero();
        CliRun.Outcome wideHangs = run("hangs", wide.toString());
        assertThat(wideHangs.out()).contains("class 22").doesNotContain("class 27")
                .containsPattern("(?m)^  D0  .*notify-no-listener  class 22")
                .doesNotContainPattern("(?m)^  D0-tp1  .*notify-no-listener");
        CliRun.Outcome verify = run("replay", "--verify", out.toString());
        assertThat(verify.code()).as(verify.out() + verify.err()).isZero();
        assertThat(verify.out()).contains("verify: no divergence");
        assertThat(run("simulate", "--decode-tp", "0", "--out", tmp.resolve("y").toString()).err())
                .contains("--prefill-tp and --decode-tp must be at least 1");
    }

    @Test
    void multi_pod_write_with_the_older_workers_pod_hosts_is_class_32_and_without_it_is_clean() {
        Path race = tmp.resolve("race");
        CliRun.Outcome o = run("simulate", "--seed", "1", "--requests", "3", "--mode", "write", "--decode", "2", "--multi-pod",
                "--set", "write-done-worker-pod-hosts=true", "--time-limit-s", "5", "--defer-timeout-s", "10",
                "--idle-step-ms", "5000", "--tick-ms", "5000", "--out", race.toString());
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(o.out()).contains("--prefill 1 --decode 2 --multi-pod --set write-done-worker-pod-hosts=true");
        CliRun.Outcome hangs = run("hangs", race.toString());
        assertThat(hangs.code()).isEqualTo(1);
        assertThat(hangs.out()).contains("switches write-done-worker-pod-hosts=true").contains("write-done-wrong-pod  class 32");
        assertThat(run("replay", "--verify", race.toString()).code()).isZero();

        Path clean = tmp.resolve("clean");
        assertThat(run("simulate", "--seed", "1", "--requests", "3", "--mode", "write", "--decode", "2", "--multi-pod",
                "--time-limit-s", "5", "--defer-timeout-s", "10", "--idle-step-ms", "5000", "--tick-ms", "5000",
                "--out", clean.toString()).code()).isZero();
        CliRun.Outcome cleanHangs = run("hangs", clean.toString());
        assertThat(cleanHangs.code()).as(cleanHangs.out()).isZero();
        assertThat(cleanHangs.out()).doesNotContain("class 32");

        assertThat(run("simulate", "--mode", "read", "--multi-pod", "--prefill-tp", "2", "--out", tmp.resolve("x").toString())
                .err()).contains("a multi-pod READ deployment puts each prefill DP rank on a pod of its own");
        assertThat(run("simulate", "--set", "no-such-switch=true", "--out", tmp.resolve("x").toString()).err())
                .contains("reducer switch's key, got 'no-such-switch=true'");
        CliRun.Outcome badValue = run("simulate", "--set", "write-done-worker-pod-hosts=yes", "--out", tmp.resolve("x").toString());
        assertThat(badValue.code()).isEqualTo(2);
        assertThat(badValue.err()).contains("the value must be true or false");
    }

    @Test
    void multi_pod_read_with_each_prefill_dp_rank_a_pod_stops_the_decode_in_its_eager_handshake_class_37() {
        Path pods = tmp.resolve("pods");
        CliRun.Outcome o = run("simulate", "--seed", "5", "--requests", "4", "--mode", "read", "--prefill-dp", "2", "--multi-pod",
                "--time-limit-s", "5", "--defer-timeout-s", "10", "--idle-step-ms", "5000", "--tick-ms", "5000",
                "--out", pods.toString());
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(o.out()).contains("--prefill-dp 2 --multi-pod");
        CliRun.Outcome hangs = run("hangs", pods.toString());
        assertThat(hangs.code()).isEqualTo(1);
        assertThat(hangs.out()).contains("eager-handshake-wrong-pod  class 37").doesNotContain("reaped-without-ack")
                .doesNotContain("class 21").doesNotContain("class 7 ");
        assertThat(run("replay", "--verify", pods.toString()).code()).isZero();
    }

    @Test
    void prefill_dp_2_journals_each_dp_rank_and_a_decode_told_the_other_rank_is_class_30() {
        Path clean = tmp.resolve("dp");
        CliRun.Outcome o = run("simulate", "--seed", "5", "--requests", "4", "--mode", "read", "--prefill-dp", "2",
                "--time-limit-s", "5", "--defer-timeout-s", "10", "--idle-step-ms", "5000", "--tick-ms", "5000",
                "--out", clean.toString());
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(o.out()).contains("--mode read --profile newest --prefill-dp 2 --defer-timeout-s 10")
                .containsPattern("(?m)^  P0-dp1 kv_producer +\\d+ entries   2 requests: 2 terminal, 0 hung$");
        assertThat(JournalDirs.isJournal(clean.resolve("P0-dp1"))).isTrue();
        CliRun.Outcome cleanHangs = run("hangs", clean.toString());
        assertThat(cleanHangs.code()).as(cleanHangs.out()).isZero();
        assertThat(run("replay", "--verify", clean.toString()).code()).isZero();

        Path alias = tmp.resolve("alias");
        assertThat(run("simulate", "--seed", "5", "--requests", "4", "--mode", "read", "--prefill-dp", "2", "--faults",
                "dp-alias=1", "--time-limit-s", "5", "--defer-timeout-s", "10", "--idle-step-ms", "5000", "--tick-ms", "5000",
                "--out", alias.toString()).code()).isZero();
        CliRun.Outcome hangs = run("hangs", alias.toString());
        assertThat(hangs.code()).isEqualTo(1);
        assertThat(hangs.out()).contains("dp-rank-aliased  class 30");

        CliRun.Outcome zero = run("simulate", "--prefill-dp", "0", "--out", tmp.resolve("x").toString());
        assertThat(zero.code()).isEqualTo(2);
        assertThat(zero.err()).contains("prefillDp must be positive, got 0");
        CliRun.Outcome both = run("simulate", "--prefill-dp", "2", "--prefill-tp", "2", "--out", tmp.resolve("x").toString());
        assertThat(both.code()).isEqualTo(2);
        assertThat(both.err()).contains("prefill DP 2 with prefill TP 2").contains("collide on ports");
        CliRun.Outcome decodeBoth = run("simulate", "--decode-dp", "2", "--decode-tp", "2", "--out", tmp.resolve("x").toString());
        assertThat(decodeBoth.code()).isEqualTo(2);
        assertThat(decodeBoth.err()).contains("decode DP 2 with decode TP 2");

        Path ddp = tmp.resolve("ddp");
        CliRun.Outcome d = run("simulate", "--seed", "5", "--requests", "4", "--mode", "write", "--decode-dp", "2",
                "--time-limit-s", "5", "--defer-timeout-s", "10", "--idle-step-ms", "5000", "--tick-ms", "5000",
                "--out", ddp.toString());
        assertThat(d.code()).as(d.err()).isZero();
        assertThat(d.out()).contains("--decode-dp 2")
                .containsPattern("(?m)^  D0-dp1 kv_consumer +\\d+ entries   2 requests: 2 terminal, 0 hung$");
        assertThat(run("hangs", ddp.toString()).code()).isZero();
        assertThat(tmp.resolve("x")).doesNotExist();
    }

    @Test
    void an_unbounded_read_wait_with_a_stalled_read_is_class_33_on_the_decode_and_its_prefill() {
        Path out = tmp.resolve("wideep");
        CliRun.Outcome o = run("simulate", "--seed", "3", "--requests", "4", "--mode", "read", "--faults", "stall=0.2",
                "--unbounded-read-wait", "--time-limit-s", "40", "--defer-timeout-s", "10", "--idle-step-ms", "5000",
                "--tick-ms", "5000", "--out", out.toString());
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(o.out()).contains("--faults stall=0.2 --mode read --profile newest --unbounded-read-wait --defer-timeout-s 10");
        CliRun.Outcome hangs = run("hangs", out.toString());
        assertThat(hangs.code()).isEqualTo(1);
        assertThat(hangs.out()).containsPattern("(?m)^  D0 .*partial-completions  class 33")
                .containsPattern("(?m)^  P0 .*partial-completions  class 33")
                .doesNotContain("class 7").doesNotContain("class 26").doesNotContain("class -");
        assertThat(run("replay", "--verify", out.toString()).code()).isZero();
        CliRun.Outcome write = run("simulate", "--mode", "write", "--unbounded-read-wait", "--out", tmp.resolve("x").toString());
        assertThat(write.code()).isEqualTo(2);
        assertThat(write.err()).contains("needs READ mode");
    }

    @Test
    void usage_errors_exit_2() throws Exception {
        CliRun.Outcome noOut = run("simulate", "--seed", "1");
        assertThat(noOut.code()).isEqualTo(2);
        assertThat(noOut.err()).contains("Missing required option: '--out=DIR'").contains("see 'kvledger help simulate'");
        assertThat(run("simulate", "--requests", "0", "--out", tmp.resolve("x").toString()).err())
                .contains("--requests must be at least 1");
        CliRun.Outcome badMode = run("simulate", "--mode", "push", "--out", tmp.resolve("x").toString());
        assertThat(badMode.code()).isEqualTo(2);
        assertThat(badMode.err()).contains("--mode must be read or write, got 'push'");
        assertThat(run("simulate", "--faults", "lose=1", "--out", tmp.resolve("x").toString()).code()).isEqualTo(2);
        assertThat(run("simulate", "--defer-timeout-s", "0", "--out", tmp.resolve("x").toString()).err())
                .contains("--defer-timeout-s must be positive");
        Files.createDirectories(tmp.resolve("full"));
        Files.writeString(tmp.resolve("full/notes.txt"), "keep me");
        CliRun.Outcome notEmpty = run("simulate", "--out", tmp.resolve("full").toString());
        assertThat(notEmpty.code()).isEqualTo(2);
        assertThat(notEmpty.err()).contains("is not empty");
        assertThat(tmp.resolve("full/notes.txt")).hasContent("keep me");
    }
}
