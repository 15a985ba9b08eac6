package io.kvledger.cli;

import static io.kvledger.cli.CliRun.run;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code kvledger journal export|import}: JSON lines out and in, all or nothing. */
class JournalImportExportTest {

    @TempDir
    static Path shared;
    static Path sim;

    @TempDir
    Path tmp;

    @BeforeAll
    static void simulate() {
        sim = shared.resolve("sim");
        assertThat(CliRun.simulate(sim, "write", 1, 1, "drop=0.5").code()).isZero();
    }

    @Test
    void export_then_import_gives_the_same_journal() throws IOException {
        CliRun.Outcome out = run("journal", "export", sim.resolve("P0").toString());
        assertThat(out.code()).isZero();
        assertThat(out.lines().get(0)).startsWith("{\"seq\":0,\"kind\":\"header\",\"type\":\"header\"");
        Path file = tmp.resolve("p0.jsonl");
        CliRun.Outcome toFile = run("journal", "export", sim.resolve("P0").toString(), "--out", file.toString());
        assertThat(toFile.code()).isZero();
        assertThat(toFile.err()).contains("exported " + out.lines().size() + " entries of P0 to " + file);
        assertThat(Files.readString(file)).isEqualTo(out.out());
        CliRun.Outcome imp = run("journal", "import", file.toString(), tmp.resolve("P0").toString());
        assertThat(imp.code()).as(imp.err()).isZero();
        assertThat(imp.out()).contains("imported " + (out.lines().size() - 1) + " entries from p0.jsonl")
                .contains("P0 kv_producer WRITE");
        assertThat(run("journal", "export", tmp.resolve("P0").toString()).out()).isEqualTo(out.out());
        assertThat(run("journal", "export", sim.resolve("P0").toString(), "--out", file.toString()).err())
                .contains("exists; use --force");
    }

    @Test
    void a_directory_of_node_journals_exports_one_file_per_node() {
        CliRun.Outcome need = run("journal", "export", sim.toString());
        assertThat(need.code()).isEqualTo(2);
        assertThat(need.err()).contains("holds 2 journals: give --out DIR");
        Path out = tmp.resolve("fixture");
        assertThat(run("journal", "export", sim.toString(), "--out", out.toString()).code()).isZero();
        assertThat(out.resolve("P0/journal.jsonl")).exists();
        assertThat(out.resolve("D0/journal.jsonl")).exists();
    }

    @Test
    void malformed_lines_are_reported_with_their_numbers_and_nothing_is_written() throws IOException {
        Path file = tmp.resolve("bad.jsonl");
        List<String> lines = run("journal", "export", sim.resolve("D0").toString()).lines();
        Files.writeString(file, String.join("\n", lines.get(0), lines.get(1),
                "{\"kind\":\"input\",\"type\":\"tick\"}",
                "{\"kind\":\"input\",\"type\":\"layer_saved\",\"at_ns\":5}",
                "not json", lines.get(2)) + "\n");
        Path dir = tmp.resolve("never");
        CliRun.Outcome o = run("journal", "import", file.toString(), dir.toString());
        assertThat(o.code()).isEqualTo(2);
        assertThat(o.err()).contains("3 bad lines, nothing imported")
                .contains("line 3: missing \"at_ns\"")
                .contains("line 4: missing field \"layer_name\"")
                .contains("line 5: ");
        assertThat(dir).doesNotExist();
        assertThat(o.out()).isEmpty();
    }

    @Test
    void header_options_make_the_header_of_a_file_without_one() throws IOException {
        Path file = tmp.resolve("hooks.jsonl");
        Files.writeString(file, """
                {"type":"request_admitted","at_ns":1000,"request_id":"r1","num_prompt_tokens":16,"kv_transfer_params":{"do_remote_decode":true,"transfer_id":"t1"}}
                {"type":"tick","at_ns":2000}
                """);
        CliRun.Outcome none = run("journal", "import", file.toString(), tmp.resolve("x").toString());
        assertThat(none.code()).isEqualTo(2);
        assertThat(none.err()).contains("no header");
        CliRun.Outcome half = run("journal", "import", file.toString(), tmp.resolve("x").toString(), "--node", "P3");
        assertThat(half.code()).isEqualTo(2);
        assertThat(half.err()).contains("give at least --node, --role and --mode");
        CliRun.Outcome ok = run("journal", "import", file.toString(), tmp.resolve("P3").toString(), "--node", "P3",
                "--role", "prefill", "--mode", "read", "--host", "10.0.0.9", "--dp", "1/2", "--tp", "0/2",
                "--set", "defer_timeout_ns=30000000000");
        assertThat(ok.code()).as(ok.err()).isZero();
        assertThat(ok.out()).contains("imported 2 entries").contains("P3 kv_producer READ 10.0.0.9 dp1/2(local 2) tp0/2");
        CliRun.Outcome head = run("dump", tmp.resolve("P3").toString(), "--type", "header", "--json");
        assertThat(head.out()).contains("\"defer_timeout_ns\":30000000000").contains("\"origin\":\"import hooks.jsonl\"");
        assertThat(run("journal", "import", file.toString(), tmp.resolve("y").toString(), "--node", "P3", "--role", "both",
                "--mode", "read").err()).contains("--role must be prefill (kv_producer) or decode (kv_consumer)");
        assertThat(run("journal", "import", file.toString(), tmp.resolve("y").toString(), "--node", "P3", "--role", "prefill",
                "--mode", "read", "--dp", "2/2").err()).contains("--dp: rank 2 is not below size 2");
    }

    private static long scratchDirs() throws IOException {
        try (Stream<Path> s = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
            return s.filter(p -> p.getFileName().toString().startsWith("kvledger-import-")).count();
        }
    }

    @Test
    void derive_recomputes_the_decisions_of_an_inputs_only_file() throws IOException {
        long scratchBefore = scratchDirs();
        List<String> all = run("journal", "export", sim.resolve("P0").toString()).lines();
        List<String> inputs = all.stream().filter(l -> !l.contains("\"kind\":\"derived\"")).toList();
        Path file = tmp.resolve("inputs.jsonl");
        Files.write(file, inputs);
        Path dir = tmp.resolve("P0");
        CliRun.Outcome o = run("journal", "import", "--derive", file.toString(), dir.toString());
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(o.out()).contains("imported " + (inputs.size() - 1) + " inputs")
                .contains((all.size() - inputs.size()) + " derived entries recomputed by the node reducer");
        // the reducer decides exactly what the simulated node journaled
        assertThat(run("journal", "export", dir.toString()).out()).isEqualTo(String.join("\n", all) + "\n");

        Path withDerived = tmp.resolve("all.jsonl");
        Files.write(withDerived, all);
        CliRun.Outcome refused = run("journal", "import", "--derive", withDerived.toString(), tmp.resolve("z").toString());
        assertThat(refused.code()).isEqualTo(2);
        assertThat(refused.err()).containsPattern("line 3: a derived entry; --derive takes inputs only");
        assertThat(tmp.resolve("z")).doesNotExist();
        assertThat(run("journal", "import", "--derive", file.toString(), dir.toString()).err())
                .contains("already holds a journal");
        assertThat(scratchDirs()).as("no scratch directory left behind").isEqualTo(scratchBefore);
    }

    @Test
    void usage_errors_exit_2() {
        CliRun.Outcome noSub = run("journal");
        assertThat(noSub.code()).isEqualTo(2);
        assertThat(noSub.err()).contains("Missing subcommand: choose export or import").contains("see 'kvledger help journal'");
        CliRun.Outcome missing = run("journal", "import", tmp.resolve("none.jsonl").toString(), tmp.resolve("d").toString());
        assertThat(missing.code()).isEqualTo(2);
        assertThat(missing.err()).contains("no such file").contains("see 'kvledger journal import --help'");
        assertThat(run("journal", "export", tmp.resolve("none").toString()).code()).isEqualTo(2);
        assertThat(run("journal", "import", "only-one-arg.jsonl").code()).isEqualTo(2);
    }
}
