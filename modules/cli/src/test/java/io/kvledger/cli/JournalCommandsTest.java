package io.kvledger.cli;

import static io.kvledger.cli.SimJournals.run;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.cli.SimJournals.Outcome;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalWriter;
import io.kvledger.journal.json.Json;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * replay, inspect, hangs and stats on captured output, over journals the simulator wrote: a WRITE
 * run with the demo's faults (requests stuck in WAITING_FOR_REMOTE_KVS) and a fault-free one.
 */
class JournalCommandsTest {

    @TempDir
    static Path root;

    static Path faulty;
    static Path clean;

    /** A stuck decode request of the faulty run, found by hangs. */
    static String stuckRequestId;

    @TempDir
    Path tmp;

    @BeforeAll
    static void journals() {
        faulty = root.resolve("faulty");
        clean = root.resolve("clean");
        SimJournals.write(faulty, 42, TransferMode.WRITE, 120, SimJournals.FAULTS);
        SimJournals.write(clean, 7, TransferMode.WRITE, 40, "none");
    }

    private static String stuck() {
        if (stuckRequestId == null) {
            Outcome o = run("hangs", faulty.toString(), "--json");
            @SuppressWarnings("unchecked")
            Map<String, Object> m = (Map<String, Object>) Json.parse(o.out().strip());
            for (Object f : (List<?>) m.get("findings")) {
                Map<?, ?> fm = (Map<?, ?>) f;
                if ("stuck-waiting".equals(fm.get("detector"))) {
                    stuckRequestId = (String) fm.get("request_id");
                    break;
                }
            }
            assertThat(stuckRequestId).as("seed 42 WRITE 120 requests has a stuck-waiting finding").isNotNull();
        }
        return stuckRequestId;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> map(Object o) {
        return (Map<String, Object>) o;
    }

    private static String uuid(String rid) {
        Matcher m = Pattern.compile("_([0-9a-f]{32})-").matcher(rid);
        assertThat(m.find()).as("proxy id %s", rid).isTrue();
        return m.group(1);
    }

    // ------------------------------------------------------------------ replay

    @Test
    void replay_prints_per_node_inputs_phases_and_anomalies_with_the_configuration_in_effect() {
        Outcome o = run("replay", faulty.toString());
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(o.out())
                .containsPattern("(?m)^replay: 2 journal\\(s\\) \\(D0, P0\\), \\d+ inputs applied, \\d+ effects recomputed$")
                .containsPattern("(?m)^node D0 \\(journal D0\\): kv_consumer WRITE 10\\.0\\.1\\.1 dp0/1 tp0/1$")
                .containsPattern("(?m)^  in effect: profile newest, defer_timeout 60 s, transfer_timeout 30 s, "
                        + "recv_abort_timeout 120 s \\(as journaled\\)$")
                .containsPattern("(?m)^  inputs \\d+ \\(seq 1\\.\\.\\d+\\), effects \\d+, span \\d+\\.\\d{6} s$")
                .containsPattern("(?m)^  phases at the end: .*WAITING_FOR_REMOTE_KVS \\d+ \\*")
                .containsPattern("(?m)^  phases at the end: .*FREED_AFTER_ACK \\d+")
                .containsPattern("(?m)^  anomalies: ")
                .doesNotContain(root.toString());
    }

    @Test
    void replay_verify_finds_no_divergence_in_a_journal_the_reducer_wrote() {
        Outcome o = run("replay", faulty.toString(), "--verify");
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(o.out()).containsPattern("(?m)^verify: no divergence$")
                .containsPattern("(?m)^  P0: the same \\d+ effects for \\d+ inputs$");
    }

    @Test
    void replay_verify_reports_the_first_divergence_dissected_and_exits_1() {
        Path dir = tmp.resolve("P0");
        NodeConfig cfg = NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).build();
        try (JournalWriter w = JournalWriter.open(dir, JournalHeader.of("P0", cfg, "hand-written"))) {
            long seq = w.appendInput(new NodeEvent.RequestAdmitted(1_000, "req-1", 32, 32, null));
            w.appendDerived(seq, new Effect.PhaseChanged("req-1", null, RequestPhase.ADMITTED, "admitted"));
            seq = w.appendInput(new NodeEvent.MatchedTokensQueried(2_000, "req-1", 0));
            w.appendDerived(seq, new Effect.MatchedTokens("req-1", 5, false));
            w.appendInput(new NodeEvent.Tick(3_000));
        }
        Outcome o = run("replay", dir.toString(), "--verify");
        assertThat(o.code()).as(o.out() + o.err()).isEqualTo(1);
        assertThat(o.out())
                .contains("verify: 1 of 1 node(s) diverge")
                .contains("P0: 1 of 3 inputs diverge; the first at seq 3 (matched_tokens_queried), effect 1 of 1")
                .containsPattern("(?m)^      journal: matched_tokens rid=req-1 count=5 load_async=false$")
                .containsPattern("(?m)^      replay:  matched_tokens rid=req-1 count=0 load_async=false$");
    }

    @Test
    void replay_verify_of_a_journal_without_recorded_effects_says_there_is_nothing_to_compare() {
        Path dir = tmp.resolve("P0");
        NodeConfig cfg = NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).build();
        try (JournalWriter w = JournalWriter.open(dir, JournalHeader.of("P0", cfg, "import"))) {
            w.appendInput(new NodeEvent.RequestAdmitted(1_000, "req-1", 32, 32, null));
        }
        Outcome o = run("replay", dir.toString(), "--verify");
        assertThat(o.code()).isZero();
        assertThat(o.out()).contains("P0: nothing to compare: the journal holds no recorded effects (inputs only)")
                .contains("phases at the end: ADMITTED 1 *");
    }

    @Test
    void replay_effects_prints_one_dissected_line_per_recomputed_effect() {
        Outcome o = run("replay", clean.resolve("P0").toString(), "--effects", "--until", "60");
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(o.out())
                .containsPattern("(?m)^t\\+0\\.000000 s  P0  #1  request_admitted => phase_changed rid=cmpl-\\.\\.\\._[0-9a-f]{32}-0-[0-9a-f]{8} - -> ADMITTED \\(admitted\\)$")
                .containsPattern("(?m)^t\\+\\d+\\.\\d{6} s  P0  #\\d+  layer_saved => post_write status=1 tid=tx-")
                .containsPattern("(?m)^replay: 1 journal\\(s\\) \\(P0\\), \\d+ inputs applied, \\d+ effects recomputed, each journal up to seq 60$");
    }

    @Test
    void replay_under_another_profile_and_values_says_what_is_in_effect() {
        Outcome o = run("replay", faulty.toString(), "--profile", "seed", "--set", "defer_timeout=300",
                "--set", "map-first-owner-wins=true", "--verify");
        assertThat(o.out())
                .contains("in effect: profile seed+custom (journal: newest), switches map-first-owner-wins=true, "
                        + "defer_timeout 300 s (journal: 60 s), transfer_timeout 30 s, recv_abort_timeout 120 s");
        // The recorded deferral deadlines were computed with 60 s: a 300 s replay must diverge there.
        assertThat(o.code()).isEqualTo(1);
        assertThat(o.out()).containsPattern("journal: deferral_started .* deadline_ns=\\d+")
                .containsPattern("replay:  deferral_started .* deadline_ns=\\d+");
    }

    @Test
    void replay_json_is_one_object_with_every_node() {
        Outcome o = run("replay", faulty.toString(), "--json");
        assertThat(o.code()).isZero();
        @SuppressWarnings("unchecked")
        Map<String, Object> m = (Map<String, Object>) Json.parse(o.out().strip());
        assertThat(m.get("command")).isEqualTo("replay");
        List<?> nodes = (List<?>) m.get("nodes");
        assertThat(nodes).hasSize(2);
        Map<String, Object> d0 = map(nodes.get(0));
        assertThat(d0.get("node")).isEqualTo("D0");
        assertThat(map(d0.get("phases"))).containsKey("WAITING_FOR_REMOTE_KVS");
        assertThat(m.get("inputs")).isInstanceOf(Long.class);
    }

    @Test
    void replay_usage_errors_exit_2_with_a_message_and_the_usage() {
        Outcome bogus = run("replay", faulty.toString(), "--set", "bogus=1");
        assertThat(bogus.code()).isEqualTo(2);
        assertThat(bogus.err()).contains("unknown --set key 'bogus'").contains("Valid keys: defer_timeout (seconds)")
                .contains("map-first-owner-wins").contains("see 'kvledger help replay'");
        Outcome bad = run("replay", faulty.toString(), "--set", "map-first-owner-wins=maybe");
        assertThat(bad.code()).isEqualTo(2);
        assertThat(bad.err()).contains("takes true or false");
        Outcome profile = run("replay", faulty.toString(), "--profile", "oldest");
        assertThat(profile.code()).isEqualTo(2);
        assertThat(run("replay", faulty.toString(), "--until", "-1").code()).isEqualTo(2);
        Outcome empty = run("replay", tmp.toString());
        assertThat(empty.code()).isEqualTo(2);
        assertThat(empty.err()).contains(tmp + ": no journal there").contains("see 'kvledger help replay'");
        assertThat(empty.out()).isEmpty();
        assertThat(run("replay").code()).isEqualTo(2);
    }

    // ------------------------------------------------------------------ hangs

    @Test
    void hangs_prints_one_line_per_finding_grouped_by_detector_and_exits_1() {
        Outcome o = run("hangs", faulty.toString());
        assertThat(o.code()).as(o.err()).isEqualTo(1);
        assertThat(o.out())
                .containsPattern("(?m)^hangs: 2 journal\\(s\\) \\(D0, P0\\), \\d+ events over \\d+\\.\\d{6} s; stuck after 30 s in one phase$")
                .containsPattern("(?m)^  D0: kv_consumer WRITE 10\\.0\\.1\\.1 dp0/1 tp0/1; profile newest, defer_timeout 60 s")
                .containsPattern("(?m)^stuck-waiting: \\d+ findings?$")
                .containsPattern("(?m)^  D0  cmpl-\\.\\.\\._[0-9a-f]{32}-0-[0-9a-f]{8}  WAITING_FOR_REMOTE_KVS  stuck-waiting  "
                        + "class 27  in WAITING_FOR_REMOTE_KVS for \\d+\\.\\d{6} s until the journal ends: .*; D0 scheduled "
                        + "\\d+ steps meanwhile, the last at t\\+\\d+\\.\\d{6} s$")
                .containsPattern("(?m)^summary: \\d+ findings? \\(stuck-waiting \\d+.*\\) on \\d of 2 node\\(s\\)$")
                .containsPattern("(?m)^  27  WRITE requests stranded in WAITING_FOR_REMOTE_KVS$")
                .doesNotContain(root.toString());
    }

    @Test
    void hangs_of_a_clean_run_finds_nothing_and_exits_0() {
        Outcome o = run("hangs", clean.toString());
        assertThat(o.code()).as(o.out()).isZero();
        assertThat(o.out()).contains("no findings: every request reached a terminal phase without a serious anomaly");
    }

    @Test
    void hangs_is_deterministic_and_the_same_from_the_node_directories_given_one_by_one() {
        Outcome parent = run("hangs", faulty.toString());
        Outcome again = run("hangs", faulty.toString());
        Outcome each = run("hangs", faulty.resolve("D0").toString(), faulty.resolve("P0").toString());
        assertThat(again.out()).isEqualTo(parent.out());
        assertThat(each.out()).isEqualTo(parent.out());
    }

    @Test
    void hangs_json_lists_every_finding() {
        Outcome o = run("hangs", faulty.toString(), "--json");
        assertThat(o.code()).isEqualTo(1);
        @SuppressWarnings("unchecked")
        Map<String, Object> m = (Map<String, Object>) Json.parse(o.out().strip());
        List<?> findings = (List<?>) m.get("findings");
        assertThat(findings).isNotEmpty();
        assertThat(m.get("count")).isEqualTo((long) findings.size());
        Map<String, Object> f = map(findings.get(0));
        assertThat(f.keySet()).contains("detector", "node", "request_id", "transfer_id", "phase", "bug_class", "message");
    }

    @Test
    void a_longer_stuck_bound_or_a_longer_defer_timeout_changes_the_findings() {
        Outcome longBound = run("hangs", faulty.toString(), "--stuck-after", "100000");
        assertThat(longBound.out()).doesNotContain("stuck-waiting:");
        // a duration with a unit is the same bound as its plain seconds
        assertThat(run("hangs", faulty.toString(), "--stuck-after", "2h").out())
                .isEqualTo(run("hangs", faulty.toString(), "--stuck-after", "7200").out());
        assertThat(run("hangs", faulty.toString(), "--stuck-after", "1500ms").out())
                .isEqualTo(run("hangs", faulty.toString(), "--stuck-after", "1.5").out());
        Outcome longer = run("hangs", faulty.toString(), "--set", "defer_timeout=3600");
        assertThat(longer.out()).contains("defer_timeout 3600 s (journal: 60 s)");
    }

    @Test
    void hangs_usage_errors_exit_2() {
        for (String bad : List.of("0", "-5", "x", "5x", "5 m", "0ms")) {
            Outcome o = run("hangs", faulty.toString(), "--stuck-after", bad);
            assertThat(o.code()).as(bad).isEqualTo(2);
            assertThat(o.err()).contains("see 'kvledger help hangs'");
        }
        assertThat(run("hangs", faulty.toString(), "--stuck-after", "5x").err())
                .contains("'5x' is not a duration: write a number of seconds (30, 0.5) or a number with a unit: "
                        + "250ms, 30s, 5m, 1h");
        Outcome missing = run("hangs", tmp.resolve("nope").toString());
        assertThat(missing.code()).isEqualTo(2);
        assertThat(missing.err()).contains("nope: no such directory");
    }

    // ------------------------------------------------------------------ inspect

    @Test
    void inspect_by_uuid_shows_both_legs_with_relative_times_and_phase_reasons() {
        String rid = stuck();
        Outcome o = run("inspect", faulty.toString(), "--request", uuid(rid));
        assertThat(o.code()).as(o.err()).isZero();
        String out = o.out();
        assertThat(out)
                .containsPattern("(?m)^inspect: request " + uuid(rid) + " in 2 journal\\(s\\) \\(D0, P0\\)$")
                .containsPattern("(?m)^  request D0  cmpl-\\.\\.\\._" + uuid(rid) + "-0-[0-9a-f]{8}$")
                .containsPattern("(?m)^  request P0  cmpl-\\.\\.\\._" + uuid(rid) + "-0-[0-9a-f]{8}$")
                .containsPattern("(?m)^  transfer  tx-[0-9a-f-]{36}$")
                .containsPattern("(?m)^t\\+0\\.000000 s  (D0|P0)  #\\d+  request_admitted rid=")
                .containsPattern("(?m)^t\\+\\d+\\.\\d{6} s  D0  #\\d+  blocks_allocated => phase ADMITTED -> WAITING_FOR_REMOTE_KVS: ")
                .containsPattern("(?m)^t\\+\\d+\\.\\d{6} s  D0  #\\d+  blocks_allocated => send_remote_blocks -> 10\\.0\\.0\\.1:61005 tid=")
                .containsPattern("(?m)^t\\+\\d+\\.\\d{6} s  P0  #\\d+  blocks_allocated => phase ADMITTED -> PREFILLING: ")
                .containsPattern("(?m)^  D0  cmpl-\\.\\.\\._" + uuid(rid) + "-0-[0-9a-f]{8}  WAITING_FOR_REMOTE_KVS \\(not terminal\\) since t\\+")
                .containsPattern("(?m)^inspect: \\d+ line\\(s\\) over \\d+\\.\\d{6} s$")
                .doesNotContain(root.toString());
    }

    @Test
    void inspect_finds_the_request_from_a_whole_id_a_prefix_or_an_abbreviation() {
        String rid = stuck();
        Outcome whole = run("inspect", faulty.toString(), "--request", rid);
        assertThat(whole.code()).as(whole.err()).isZero();
        // The other leg is linked through the transfer id.
        assertThat(whole.out()).containsPattern("(?m)^  request P0  ");
        Outcome prefix = run("inspect", faulty.toString(), "--request", rid.substring(0, rid.length() - 4));
        assertThat(prefix.code()).isZero();
        assertThat(prefix.out().lines().skip(1).toList()).isEqualTo(whole.out().lines().skip(1).toList());
        String abbreviated = "cmpl-..." + rid.substring(rid.indexOf("_" + uuid(rid)));
        Outcome abbr = run("inspect", faulty.toString(), "--request", abbreviated);
        assertThat(abbr.code()).as(abbr.err()).isZero();
        assertThat(abbr.out().lines().skip(1).toList()).isEqualTo(whole.out().lines().skip(1).toList());
    }

    @Test
    void inspect_by_transfer_id_prefix_and_json() {
        String rid = stuck();
        Outcome byRequest = run("inspect", faulty.toString(), "--request", uuid(rid), "--json");
        assertThat(byRequest.code()).isZero();
        @SuppressWarnings("unchecked")
        Map<String, Object> m = (Map<String, Object>) Json.parse(byRequest.out().strip());
        String tid = (String) ((List<?>) m.get("transfer_ids")).get(0);
        List<?> lines = (List<?>) m.get("lines");
        assertThat(lines).isNotEmpty();
        assertThat(((Map<?, ?>) lines.get(0)).get("t")).isEqualTo(0.0);
        assertThat((List<?>) m.get("requests")).hasSize(2);
        Outcome byTransfer = run("inspect", faulty.toString(), "--transfer", tid.substring(0, 16));
        assertThat(byTransfer.code()).as(byTransfer.err()).isZero();
        assertThat(byTransfer.out()).containsPattern("(?m)^inspect: transfer " + tid.substring(0, 16))
                .contains("  transfer  " + tid)
                .containsPattern("(?m)^  request D0  ");
    }

    @Test
    void inspect_of_an_ambiguous_or_unknown_id_and_usage_errors() {
        Outcome ambiguous = run("inspect", faulty.toString(), "--request", "cmpl-");
        assertThat(ambiguous.code()).isEqualTo(2);
        assertThat(ambiguous.err()).containsPattern("'cmpl-' matches \\d+ requests; give more of the id")
                .contains("  ... ");
        Outcome unknown = run("inspect", faulty.toString(), "--request", "no-such-request");
        assertThat(unknown.code()).isEqualTo(1);
        assertThat(unknown.err()).contains("no request id in 2 journal(s) matches 'no-such-request'");
        Outcome neither = run("inspect", faulty.toString());
        assertThat(neither.code()).isEqualTo(2);
        assertThat(neither.err()).contains("see 'kvledger help inspect'");
        Outcome both = run("inspect", faulty.toString(), "--request", "a", "--transfer", "b");
        assertThat(both.code()).isEqualTo(2);
        assertThat(run("inspect", "--request", "a").code()).isEqualTo(2);
    }

    // ------------------------------------------------------------------ stats

    @Test
    void stats_prints_phase_counts_anomalies_and_latency_percentiles() {
        Outcome o = run("stats", faulty.toString());
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(o.out())
                .containsPattern("(?m)^stats: 2 journal\\(s\\) \\(D0, P0\\), \\d+ events over \\d+\\.\\d{6} s$")
                .containsPattern("(?m)^  requests at the end: 120 \\(\\d+ terminal, \\d+ not\\)$")
                .containsPattern("(?m)^  WAITING_FOR_REMOTE_KVS \\* +\\d+$")
                .containsPattern("(?m)^  time in phase +count +p50 +p90 +p99 +max$")
                .containsPattern("(?m)^  WAITING_FOR_REMOTE_KVS +\\d+ +\\d+\\.\\d{6} s +\\d+\\.\\d{6} s +\\d+\\.\\d{6} s +\\d+\\.\\d{6} s$")
                .containsPattern("(?m)^  admission to terminal +\\d+ ")
                .containsPattern("(?m)^  finished +\\d+ +\\d+\\.\\d{6} s ")
                .containsPattern("(?m)^  unfinished \\(a leg never reached a terminal phase\\): [1-9]\\d*$");
    }

    @Test
    void stats_json_and_usage_error() {
        Outcome o = run("stats", faulty.toString(), "--json");
        assertThat(o.code()).isZero();
        @SuppressWarnings("unchecked")
        Map<String, Object> m = (Map<String, Object>) Json.parse(o.out().strip());
        Map<String, Object> p0 = map(((List<?>) m.get("nodes")).get(1));
        assertThat(p0.get("node")).isEqualTo("P0");
        Map<String, Object> lat = map(p0.get("phase_latency_ns"));
        assertThat(lat).containsKey("PREFILLING");
        assertThat(map(lat.get("PREFILLING"))).containsKeys("count", "p50", "p90", "p99", "max");
        assertThat(map(m.get("end_to_end_ns"))).containsKeys("count", "unfinished");
        Outcome bad = run("stats", tmp.toString(), "--json");
        assertThat(bad.code()).isEqualTo(2);
        assertThat(bad.err()).contains("no journal there").contains("see 'kvledger help stats'");
        assertThat(Files.exists(tmp)).isTrue();
    }
}
