package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Runs commands in-process through picocli and checks exit codes and captured output. */
class MainTest {

    private record Outcome(int code, String out, String err) {}

    /** Where demos that are not about their journals write them. */
    @TempDir
    Path scratch;

    private static Outcome run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = Main.run(new PrintWriter(out), new PrintWriter(err), args);
        return new Outcome(code, out.toString(), err.toString());
    }

    @Test
    void demo_prints_configuration_phase_table_requests_and_anomalies() {
        Outcome o = run("demo", "--seed", "42", "--requests", "60", "--read-requests", "20",
                "--out", scratch.resolve("j").toString());
        assertThat(o.code()).as("seed 42; stderr: %s", o.err()).isZero();
        assertThat(o.out())
                .contains("kvledger demo: seed 42")
                .contains("== run 1 of 2: WRITE mode, 60 requests")
                .contains("== run 2 of 2: READ mode, 20 requests")
                .contains("configuration")
                .containsPattern("(?m)^phases \\(requests per node")
                .containsPattern("(?m)^  phase +P0 +D0$")
                .containsPattern("(?m)^  FREED_AFTER_ACK +\\d+ +0$")
                .containsPattern("(?m)^  terminal +\\d+ +\\d+$")
                .containsPattern("(?m)^  completed \\d+, hung \\d+")
                .containsPattern("(?m)^anomalies: \\d+ in \\d+ kind\\(s\\)$")
                .contains("state hashes P0=");
    }

    @Test
    void demo_is_deterministic_for_a_seed(@TempDir Path tmp) {
        Path a = tmp.resolve("a");
        Path b = tmp.resolve("b");
        Outcome x = run("demo", "--seed", "9", "--requests", "40", "--read-requests", "10", "--faults", "drop=0.05,abort=0.05",
                "--out", a.toString());
        Outcome y = run("demo", "--seed", "9", "--requests", "40", "--read-requests", "10", "--faults", "drop=0.05,abort=0.05",
                "--out", b.toString());
        assertThat(x.code()).as("seed 9; stderr: %s", x.err()).isZero();
        assertThat(y.out().replace(b.toString(), "DIR")).as("seed 9").isEqualTo(x.out().replace(a.toString(), "DIR"));
    }

    @Test
    void demo_journals_both_runs_and_ends_with_the_hangs_reports_and_an_inspect_command(@TempDir Path tmp) {
        Path dir = tmp.resolve("journals");
        Outcome o = run("demo", "--seed", "42", "--requests", "120", "--read-requests", "10", "--out", dir.toString());
        assertThat(o.code()).as("seed 42; stderr: %s", o.err()).isZero();
        assertThat(Files.isDirectory(dir.resolve("write").resolve("P0"))).isTrue();
        assertThat(Files.isDirectory(dir.resolve("read").resolve("D0"))).isTrue();
        assertThat(o.out())
                .contains("journals: " + dir + " (one directory per node: write/D0 P0, read/D0 P0)")
                .contains("== ./kvledger hangs " + dir.resolve("write") + " ==")
                .contains("== ./kvledger hangs " + dir.resolve("read") + " ==")
                .containsPattern("(?m)^stuck-waiting: \\d+ findings?$")
                .containsPattern("(?m)^summary: \\d+ findings? ");
        Matcher m = Pattern.compile("(?m)^  \\./kvledger inspect (\\S+) --request ([0-9a-f]{32})$").matcher(o.out());
        assertThat(m.find()).as(o.out()).isTrue();
        assertThat(m.group(1)).isEqualTo(dir.resolve("write").toString());
        Outcome inspect = run("inspect", m.group(1), "--request", m.group(2));
        assertThat(inspect.code()).as(inspect.err()).isZero();
        assertThat(inspect.out()).contains("(not terminal)");
    }

    @Test
    void demo_refuses_an_out_directory_that_is_not_empty(@TempDir Path tmp) throws Exception {
        Files.writeString(tmp.resolve("x"), "keep me");
        Outcome o = run("demo", "--requests", "5", "--read-requests", "0", "--out", tmp.toString());
        assertThat(o.code()).isEqualTo(2);
        assertThat(o.err()).contains("is not empty").contains("see 'kvledger help demo'");
        assertThat(Files.readString(tmp.resolve("x"))).isEqualTo("keep me");
    }

    @Test
    void demo_groups_anomalies_by_kind_with_a_count_and_truncates_long_groups() {
        Outcome o = run("demo", "--seed", "5", "--requests", "10", "--read-requests", "40", "--faults", "drop=0.5",
                "--out", scratch.resolve("j").toString(),
                "--per-kind", "2");
        assertThat(o.code()).as("seed 5; stderr: %s", o.err()).isZero();
        assertThat(o.out())
                .containsPattern("(?m)^  DEFERRAL_REAPED x\\d+  \\[HANG_RISK, code 25")
                .containsPattern("(?m)^    P0 +t=\\d+\\.\\d+ s  cmpl-\\.\\.\\._[0-9a-f]{32}-0-[0-9a-f]{8}  tx-")
                .containsPattern("(?m)^    \\.\\.\\. \\d+ more$");
    }

    @Test
    void demo_with_full_ids_prints_the_embedded_addresses() {
        Outcome o = run("demo", "--seed", "5", "--requests", "5", "--read-requests", "20", "--faults", "drop=0.5",
                "--out", scratch.resolve("j").toString(),
                "--full-ids");
        assertThat(o.code()).isZero();
        assertThat(o.out()).contains("cmpl-___prefill_addr_host:10.0.0.1,handshake:6301,notify:61005___decode_addr_");
    }

    @Test
    void unknown_option_exits_2_with_usage() {
        Outcome o = run("demo", "--bogus");
        assertThat(o.code()).isEqualTo(2);
        assertThat(o.err()).contains("Unknown option: '--bogus'").contains("see 'kvledger help demo'").doesNotContain("--seed=N");
        assertThat(o.out()).isEmpty();
    }

    @Test
    void bad_fault_spec_exits_2_naming_the_token() {
        Outcome o = run("demo", "--faults", "drop=0.1,lose=0.2");
        assertThat(o.code()).isEqualTo(2);
        assertThat(o.err()).contains("'lose=0.2'").contains("unknown fault 'lose'").contains("see 'kvledger help demo'");
    }

    @Test
    void invalid_values_exit_2() {
        assertThat(run("demo", "--requests", "0").err()).contains("--requests must be at least 1");
        assertThat(run("demo", "--requests", "0").code()).isEqualTo(2);
        assertThat(run("demo", "--profile", "oldest").code()).isEqualTo(2);
        assertThat(run("demo", "--seed", "x").code()).isEqualTo(2);
    }

    @Test
    void no_command_or_an_unknown_command_exits_2_with_usage() {
        Outcome none = run();
        assertThat(none.code()).isEqualTo(2);
        assertThat(none.err()).contains("Missing command").contains("demo");
        Outcome unknown = run("replay-everything");
        assertThat(unknown.code()).isEqualTo(2);
        assertThat(unknown.err()).contains("Unmatched argument at index 0: 'replay-everything'");
    }

    /** Every command, nested ones too: a usage error is one line naming it and a hint where its help is, not the help. */
    @Test
    void a_usage_error_of_every_command_is_one_line_and_a_hint() {
        List<List<String>> commands = new ArrayList<>();
        for (Main.NamedCommand c : Main.COMMANDS) {
            commands.add(List.of(c.name()));
        }
        commands.add(List.of("journal", "import"));
        commands.add(List.of("journal", "export"));
        for (List<String> c : commands) {
            List<String> args = new ArrayList<>(c);
            args.add("--no-such-option");
            Outcome o = run(args.toArray(String[]::new));
            String name = "kvledger " + String.join(" ", c);
            String hint = c.size() == 1 ? "see 'kvledger help " + c.get(0) + "'" : "see '" + name + " --help'";
            assertThat(o.code()).as(name).isEqualTo(2);
            assertThat(o.err().lines().toList()).as(name).hasSizeBetween(2, 3)
                    .first().asString().startsWith(name + ": ");
            assertThat(o.err().lines().toList()).as(name).last().isEqualTo(hint);
            assertThat(o.err()).as(name).doesNotContain("Usage:");
            assertThat(o.out()).as(name).isEmpty();
        }
        assertThat(run("hangs", "--no-such-option", "DIR").err().lines().toList())
                .containsExactly("kvledger hangs: Unknown option: '--no-such-option'", "see 'kvledger help hangs'");
        Outcome none = run();
        assertThat(none.err().lines().toList()).containsExactly(
                "kvledger: Missing command: choose one of " + String.join(", ", Main.COMMANDS.stream().map(Main.NamedCommand::name).toList()),
                "see 'kvledger --help'");
    }

    /**
     * A command named first is run from a command line holding only that command (a shorter
     * start): its help, its usage errors and its exit codes are those it has in the whole table.
     */
    @Test
    void a_command_alone_behaves_as_in_the_whole_table() {
        for (Main.NamedCommand c : Main.COMMANDS) {
            for (List<String> args : List.of(List.of(c.name(), "--help"), List.of(c.name(), "--no-such-option"))) {
                String[] a = args.toArray(String[]::new);
                StringWriter out = new StringWriter();
                StringWriter err = new StringWriter();
                picocli.CommandLine alone = Main.commandLine(new PrintWriter(out), new PrintWriter(err), a);
                assertThat(alone.getSubcommands().keySet()).as(String.join(" ", args)).containsExactly("help", c.name());
                int code = alone.execute(a);
                StringWriter wholeOut = new StringWriter();
                StringWriter wholeErr = new StringWriter();
                int wholeCode = Main.commandLine(new PrintWriter(wholeOut), new PrintWriter(wholeErr)).execute(a);
                assertThat(code).as(String.join(" ", args)).isEqualTo(wholeCode);
                assertThat(out.toString()).as(String.join(" ", args)).isEqualTo(wholeOut.toString());
                assertThat(err.toString()).as(String.join(" ", args)).isEqualTo(wholeErr.toString());
                assertThat(out.toString() + err.toString()).as(String.join(" ", args)).isNotEmpty();
            }
        }
        for (String[] a : new String[][] {{}, {"help"}, {"help", "replay"}, {"--help"}, {"replay-everything"}, {"--version"}}) {
            assertThat(Main.commandLine(new PrintWriter(new StringWriter()), new PrintWriter(new StringWriter()), a)
                    .getSubcommands().keySet()).as(String.join(" ", a)).contains("help", "replay", "hangs", "demo");
        }
    }

    @picocli.CommandLine.Command(name = "boom")
    static final class Boom implements java.util.concurrent.Callable<Integer> {
        final RuntimeException thrown;

        Boom(RuntimeException thrown) {
            this.thrown = thrown;
        }

        @Override
        public Integer call() {
            throw thrown;
        }
    }

    /** An exception out of a command is one line naming the command, never a stack trace. */
    @Test
    void an_exception_out_of_a_command_is_one_line_without_a_stack_trace() {
        for (RuntimeException e : List.of(new io.kvledger.journal.JournalException("the journal in J is damaged"),
                new IllegalStateException("a bug"))) {
            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            picocli.CommandLine cl = Main.commandLine(new PrintWriter(out), new PrintWriter(err));
            cl.addSubcommand("boom", new Boom(e));
            Main.configure(cl, new PrintWriter(out), new PrintWriter(err));
            int code = cl.execute("boom");
            boolean ours = e instanceof io.kvledger.journal.JournalException;
            assertThat(code).isEqualTo(ours ? 2 : 1);
            assertThat(err.toString().lines().toList()).containsExactly(ours ? "kvledger boom: the journal in J is damaged"
                    : "kvledger boom: internal error: java.lang.IllegalStateException: a bug");
        }
    }

    @Test
    void help_lists_the_command_table() {
        Outcome o = run("--help");
        assertThat(o.code()).isZero();
        assertThat(o.out()).contains("demo").contains("help");
        Outcome h = run("help", "demo");
        assertThat(h.code()).isZero();
        assertThat(h.out()).contains("--faults=SPEC").contains("--read-requests=N");
    }
}
