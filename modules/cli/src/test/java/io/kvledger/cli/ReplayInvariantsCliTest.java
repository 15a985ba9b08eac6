package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.node.Invariants;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * {@code replay --verify} checks the replayed state against the reducer's invariants after every
 * input: a broken state fails the node (exit 1), named with the input's seq. A fixture's journal is
 * replayed with a stand-in check that finds every state broken (no journal breaks the real one:
 * FixtureGoldenTest replays every fixture with it and no divergence).
 */
class ReplayInvariantsCliTest {

    private static final Path JOURNAL = FixtureGoldenTest.fixturesDir().resolve("11-early-ack").resolve("P0")
            .resolve("inputs.jsonl");

    private record Outcome(int code, String out) {}

    private static Outcome replay(boolean broken, String... args) {
        ReplayCommand cmd = new ReplayCommand();
        Invariants.Violation v = new Invariants.Violation(Invariants.Check.DEFERRAL_HAS_DEADLINE, "stand-in for request r");
        if (broken) {
            cmd.invariantCheck = s -> List.of(v);
        }
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = Main.configure(new CommandLine(cmd), new PrintWriter(out), new PrintWriter(err)).execute(args);
        return new Outcome(code, out.toString() + err);
    }

    @Test
    void a_sound_replay_verifies_with_the_real_check() {
        Outcome o = replay(false, "--verify", JOURNAL.toString());
        assertThat(o.code()).as(o.out()).isZero();
        assertThat(o.out()).contains("verify: no divergence").doesNotContain("break the reducer's invariants");
    }

    @Test
    void a_broken_state_fails_verify_naming_the_first_input_after_which_it_broke() {
        Outcome o = replay(true, "--verify", JOURNAL.toString());
        assertThat(o.code()).as(o.out()).isEqualTo(1);
        assertThat(o.out()).contains("verify: 1 of 1 node(s) diverge");
        Matcher m = Pattern.compile("P0: (\\d+) of (\\d+) inputs break the reducer's invariants; the first at seq (\\d+) "
                + "\\(([a-z_]+)\\)\\n      DEFERRAL_HAS_DEADLINE: stand-in for request r").matcher(o.out());
        assertThat(m.find()).as(o.out()).isTrue();
        assertThat(m.group(1)).isEqualTo(m.group(2));
        assertThat(Long.parseLong(m.group(3))).isPositive();
    }

    @Test
    void without_verify_nothing_is_checked() {
        Outcome o = replay(true, JOURNAL.toString());
        assertThat(o.code()).as(o.out()).isZero();
        assertThat(o.out()).doesNotContain("break the reducer's invariants");
    }

    @Test
    void json_names_the_broken_input_only_when_there_is_one() {
        Outcome sound = replay(false, "--verify", "--json", JOURNAL.toString());
        assertThat(sound.out()).doesNotContain("invariants_broken");
        Outcome o = replay(true, "--verify", "--json", JOURNAL.toString());
        assertThat(o.code()).isEqualTo(1);
        assertThat(o.out()).contains("\"diverging_nodes\":1").contains("\"invariants_broken\":")
                .contains("\"first_invariants_broken\":{\"seq\":")
                .contains("\"violations\":[\"DEFERRAL_HAS_DEADLINE: stand-in for request r\"]");
    }
}
