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

    /**
     * Issue 29 item 3: a line over the entry limit failed late, with a raw Chronicle exception,
     * after a header-only journal was written. It is refused with its number, and nothing is
     * written.
     */
    @Test
    void a_line_over_the_entry_limit_is_refused_with_its_number_and_nothing_is_written() throws IOException {
        Path file = tmp.resolve("big.jsonl");
        List<String> lines = new java.util.ArrayList<>(run("journal", "export", sim.resolve("D0").toString()).lines());
        lines.add("{\"kind\":\"input\",\"type\":\"frame_rejected\",\"at_ns\":9000000000000,\"reason\":\""
                + "z".repeat(io.kvledger.journal.JsonLines.MAX_ENTRY_BYTES) + "\",\"frame\":\"\"}");
        Files.write(file, lines);
        Path dir = tmp.resolve("big");
        CliRun.Outcome o = run("journal", "import", file.toString(), dir.toString());
        assertThat(o.code()).as(o.err()).isEqualTo(2);
        assertThat(o.err()).contains("line " + lines.size() + ": the frame_rejected entry would be")
                .contains("nothing imported")
                .doesNotContain("Exception");
        assertThat(dir).doesNotExist();
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
        assertThat(run("journal", "import", file.toString(), tmp.resolve("y").toString(), "--node", "P3", "--role", "mixed",
                "--mode", "read").err()).contains("--role must be prefill (kv_producer), decode (kv_consumer) or kv_both");
        CliRun.Outcome both = run("journal", "import", file.toString(), tmp.resolve("B3").toString(), "--node", "B3",
                "--role", "kv_both", "--mode", "write");
        assertThat(both.code()).as(both.err()).isZero();
        assertThat(both.out()).contains("B3 kv_both WRITE");
        assertThat(run("journal", "import", file.toString(), tmp.resolve("y").toString(), "--node", "P3", "--role", "prefill",
                "--mode", "read", "--dp", "2/2").err()).contains("--dp: rank 2 is not below size 2");
    }

    /**
     * The import's scratch directories in this JVM's temporary directory, which the build makes its
     * module's target/ (the parent pom's argLine), so that another process's scratch directory in
     * the machine's shared one is not counted.
     */
    private static long scratchDirs() throws IOException {
        try (Stream<Path> s = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
            return s.filter(p -> p.getFileName().toString().startsWith("kvledger-import-")).count();
        }
    }

    @Test
    void the_tests_temporary_directory_is_the_builds_own() throws Exception {
        Path classes = Path.of(JournalImportExportTest.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        assertThat(Path.of(System.getProperty("java.io.tmpdir")).toRealPath()).as("java.io.tmpdir")
                .isEqualTo(classes.getParent().toRealPath());
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

    /** Exports {@code sim/P0} to a file and imports it into {@code dir}; returns the exported lines. */
    private List<String> importP0(Path dir) throws IOException {
        Path file = tmp.resolve("p0-full.jsonl");
        assertThat(run("journal", "export", sim.resolve("P0").toString(), "--out", file.toString(), "--force").code()).isZero();
        CliRun.Outcome imp = run("journal", "import", file.toString(), dir.toString());
        assertThat(imp.code()).as(imp.err()).isZero();
        return Files.readAllLines(file);
    }

    @Test
    void a_journal_already_there_is_refused_unless_append_and_importing_the_same_file_twice_is_refused()
            throws IOException {
        Path dir = tmp.resolve("P0");
        List<String> lines = importP0(dir);
        Path file = tmp.resolve("p0-full.jsonl");
        String before = run("journal", "export", dir.toString()).out();

        CliRun.Outcome again = run("journal", "import", file.toString(), dir.toString());
        assertThat(again.code()).isEqualTo(2);
        assertThat(again.err()).startsWith("kvledger journal import: " + dir + " already holds a journal: give --append");
        CliRun.Outcome twice = run("journal", "import", "--append", file.toString(), dir.toString());
        assertThat(twice.code()).isEqualTo(2);
        assertThat(twice.err()).contains("nothing imported").contains("line 2: seq 1 does not continue the journal in " + dir
                + " (its next seq is " + (lines.size()) + "; these entries may be in it already)");
        assertThat(run("journal", "export", dir.toString()).out()).as("the journal is unchanged").isEqualTo(before);
        assertThat(run("verify", dir.toString()).code()).isZero();

        Path other = tmp.resolve("notes");
        Files.createDirectories(other);
        Files.writeString(other.resolve("readme.txt"), "mine\n");
        CliRun.Outcome notEmpty = run("journal", "import", file.toString(), other.toString());
        assertThat(notEmpty.code()).isEqualTo(2);
        assertThat(notEmpty.err()).contains(other + " is not empty and holds no journal");
        try (Stream<Path> s = Files.list(other)) {
            assertThat(s.toList()).containsExactly(other.resolve("readme.txt"));
        }
    }

    @Test
    void append_adds_a_file_that_continues_the_journal() throws IOException {
        List<String> all = run("journal", "export", sim.resolve("P0").toString()).lines();
        // split before an input in the middle: the second part's derived entries name inputs of its own
        int cut = all.size() / 2;
        while (!all.get(cut).contains("\"kind\":\"input\"")) {
            cut++;
        }
        Path first = tmp.resolve("first.jsonl");
        Path second = tmp.resolve("second.jsonl");
        Files.write(first, all.subList(0, cut));
        List<String> rest = new java.util.ArrayList<>(List.of(all.get(0)));
        rest.addAll(all.subList(cut, all.size()));
        Files.write(second, rest);
        Path dir = tmp.resolve("P0");
        assertThat(run("journal", "import", first.toString(), dir.toString()).code()).isZero();
        CliRun.Outcome app = run("journal", "import", "--append", second.toString(), dir.toString());
        assertThat(app.code()).as(app.err()).isZero();
        assertThat(app.out()).contains("(seq " + cut + ".." + (all.size() - 1) + ", appended)");
        assertThat(run("journal", "export", dir.toString()).out()).isEqualTo(String.join("\n", all) + "\n");
    }

    @Test
    void inputs_whose_time_goes_backwards_are_refused_naming_the_line() throws IOException {
        Path file = tmp.resolve("hooks.jsonl");
        Files.writeString(file, """
                {"type":"tick","at_ns":1000}
                {"type":"tick","at_ns":3000}
                {"type":"tick","at_ns":2000}
                {"type":"tick","at_ns":4000}
                """);
        Path dir = tmp.resolve("P3");
        String[] header = {"--node", "P3", "--role", "prefill", "--mode", "write"};
        CliRun.Outcome o = run(concat(new String[] {"journal", "import", file.toString(), dir.toString()}, header));
        assertThat(o.code()).isEqualTo(2);
        assertThat(o.err()).contains("1 bad line, nothing imported")
                .contains("line 3: time 2000 ns goes backwards: line 2, the input before it, is at 3000 ns");
        assertThat(dir).doesNotExist();

        // appending: the file's first input may not be before the journal's last
        Files.writeString(file, "{\"type\":\"tick\",\"at_ns\":1000}\n{\"type\":\"tick\",\"at_ns\":5000}\n");
        assertThat(run(concat(new String[] {"journal", "import", file.toString(), dir.toString()}, header)).code()).isZero();
        Path later = tmp.resolve("later.jsonl");
        Files.writeString(later, "{\"type\":\"tick\",\"at_ns\":4000}\n");
        CliRun.Outcome back = run(concat(new String[] {"journal", "import", "--append", later.toString(), dir.toString()}, header));
        assertThat(back.code()).isEqualTo(2);
        assertThat(back.err()).contains("line 1: time 4000 ns goes backwards: the journal in " + dir + " ends at 5000 ns");
        Files.writeString(later, "{\"type\":\"tick\",\"at_ns\":5000}\n{\"type\":\"tick\",\"at_ns\":6000}\n");
        CliRun.Outcome ok = run(concat(new String[] {"journal", "import", "--append", later.toString(), dir.toString()}, header));
        assertThat(ok.code()).as(ok.err()).isZero();
        assertThat(ok.out()).contains("imported 2 entries").contains("appended");
    }

    private static String readString(Path p) {
        try {
            return Files.readString(p);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static String[] concat(String[] a, String[] b) {
        String[] all = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, all, a.length, b.length);
        return all;
    }

    @Test
    void the_tree_journal_export_writes_imports_back_node_by_node() throws IOException {
        Path tree = tmp.resolve("tree");
        assertThat(run("journal", "export", sim.toString(), "--out", tree.toString()).code()).isZero();
        Path back = tmp.resolve("back");
        CliRun.Outcome o = run("journal", "import", tree.toString(), back.toString());
        assertThat(o.code()).as(o.err()).isZero();
        assertThat(o.lines()).hasSize(2);
        assertThat(o.out()).contains("from journal.jsonl into " + back.resolve("D0")).contains("into " + back.resolve("P0"));
        for (String node : List.of("P0", "D0")) {
            assertThat(run("journal", "export", back.resolve(node).toString()).out()).as(node)
                    .isEqualTo(run("journal", "export", sim.resolve(node).toString()).out());
        }
        CliRun.Outcome again = run("journal", "import", tree.toString(), back.toString());
        assertThat(again.code()).isEqualTo(2);
        assertThat(again.err()).contains(back.resolve("D0") + " already holds a journal");
        assertThat(run("journal", "import", tmp.toString(), tmp.resolve("x").toString()).err())
                .contains("holds no <node>/journal.jsonl");
    }

    /**
     * A fixture folder imports in one command, its {@code inputs.jsonl} nodes with --derive: the
     * same journals as importing node by node, so hangs says the same.
     */
    @Test
    void a_fixture_folder_imports_in_one_command_and_reads_directly() {
        Path fixtures = Path.of(System.getProperty("kvledger.fixtures", "../../journal/fixtures"));
        for (String f : List.of("07-reaped-without-ack", "23-port-offset-form")) {
            Path folder = fixtures.resolve(f);
            Path whole = tmp.resolve(f + "-tree");
            CliRun.Outcome o = run("journal", "import", folder.toString(), whole.toString());
            assertThat(o.code()).as(o.err()).isZero();
            Path byNode = tmp.resolve(f + "-nodes");
            try (Stream<Path> s = Files.list(folder)) {
                for (Path node : s.filter(Files::isDirectory).toList()) {
                    Path journal = node.resolve("journal.jsonl");
                    CliRun.Outcome one = Files.exists(journal)
                            ? run("journal", "import", journal.toString(), byNode.resolve(node.getFileName().toString()).toString())
                            : run("journal", "import", "--derive", node.resolve("inputs.jsonl").toString(),
                                    byNode.resolve(node.getFileName().toString()).toString());
                    assertThat(one.code()).as(one.err()).isZero();
                }
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
            CliRun.Outcome a = run("hangs", whole.toString());
            CliRun.Outcome b = run("hangs", byNode.toString());
            assertThat(a.code()).as(f).isEqualTo(b.code());
            assertThat(a.out().replace(whole.toString(), "DIR")).as(f).isEqualTo(b.out().replace(byNode.toString(), "DIR"))
                    .contains("hangs: ");
            // and the reading commands take the folder of JSON lines as it is
            CliRun.Outcome direct = run("hangs", folder.toString());
            assertThat(direct.code()).as(f).isEqualTo(b.code());
            assertThat(direct.out().replace(folder.toString(), "DIR")).as(f).isEqualTo(b.out().replace(byNode.toString(), "DIR"));
            assertThat(direct.err()).contains("kvledger hangs: note: " + folder + " holds JSON lines; read through temporary journals");
            assertThat(run("stats", folder.toString()).code()).as(f).isZero();
        }
        CliRun.Outcome again = run("journal", "import", fixtures.resolve("23-port-offset-form").toString(),
                tmp.resolve("23-port-offset-form-tree").toString());
        assertThat(again.code()).isEqualTo(2);
        assertThat(again.err()).contains("D0 already holds a journal; a node's inputs.jsonl is imported with --derive, "
                + "which builds a new one");
        Path folder = fixtures.resolve("07-reaped-without-ack");
        String golden = readString(folder.resolve("expected-inspect.txt"));
        int nl = golden.indexOf('\n');
        String[] args = golden.substring("$ kvledger ".length(), nl).strip().replace("DIR", folder.toString()).split("\\s+");
        CliRun.Outcome inspect = run(args);
        assertThat(inspect.code()).as(inspect.err()).isZero();
        assertThat(inspect.out().replace(folder.toString(), "DIR")).as("inspect on the fixture folder as it is")
                .isEqualTo(golden.substring(nl + 1));
    }

    /** Copies a fixture folder (its node directories' JSON lines) to {@code to}. */
    private static void copyFolder(Path from, Path to) throws IOException {
        try (Stream<Path> s = Files.walk(from)) {
            for (Path p : s.toList()) {
                Path q = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(q);
                } else if (p.getFileName().toString().endsWith(".jsonl")) {
                    Files.copy(p, q);
                }
            }
        }
    }

    /** The file without its last {@code n} bytes. */
    private static void cut(Path file, int n) throws IOException {
        byte[] b = Files.readAllBytes(file);
        Files.write(file, java.util.Arrays.copyOf(b, b.length - n));
    }

    @Test
    void a_recording_cut_short_is_read_up_to_the_cut_and_the_cut_is_said() throws IOException {
        Path fixtures = Path.of(System.getProperty("kvledger.fixtures", "../../journal/fixtures"));
        Path folder = fixtures.resolve("07-reaped-without-ack");
        // what the recorder wrote before its process was killed: the last line half written on P0,
        // zero bytes after D0's data (a crash before its last block reached the disk)
        Path killed = tmp.resolve("killed");
        copyFolder(folder, killed);
        Path p0 = killed.resolve("P0/journal.jsonl");
        List<String> p0Lines = Files.readAllLines(p0);
        cut(p0, p0Lines.getLast().length() / 2 + 1);
        Path d0 = killed.resolve("D0/journal.jsonl");
        Files.write(d0, new byte[8192], java.nio.file.StandardOpenOption.APPEND);
        // the same recording without the cut line: what the reading commands must see
        Path whole = tmp.resolve("whole");
        copyFolder(folder, whole);
        Files.write(whole.resolve("P0/journal.jsonl"), p0Lines.subList(0, p0Lines.size() - 1));

        CliRun.Outcome a = run("hangs", killed.toString());
        CliRun.Outcome b = run("hangs", whole.toString());
        assertThat(a.code()).as(a.err()).isEqualTo(b.code()).isNotEqualTo(2);
        assertThat(a.out().replace(killed.toString(), "DIR")).isEqualTo(b.out().replace(whole.toString(), "DIR"))
                .contains("hangs: ");
        assertThat(a.err()).contains("kvledger hangs: warning: " + p0 + ": left out its last line (line " + p0Lines.size()
                + ", ").contains("kvledger hangs: warning: " + d0 + ": left out 8192 zero bytes at its end");
        assertThat(b.err()).doesNotContain("warning");

        CliRun.Outcome imported = run("journal", "import", p0.toString(), tmp.resolve("P0").toString());
        assertThat(imported.code()).as(imported.err()).isZero();
        assertThat(imported.out()).contains("imported " + (p0Lines.size() - 2) + " entries");
        assertThat(imported.err()).contains("kvledger journal import: warning: " + p0 + ": left out its last line");

        // an inputs-only file cut short, imported with --derive
        Path inputs = tmp.resolve("inputs.jsonl");
        Files.copy(fixtures.resolve("00-negative-matched-tokens/D0/inputs.jsonl"), inputs);
        cut(inputs, 7);
        CliRun.Outcome derived = run("journal", "import", "--derive", inputs.toString(), tmp.resolve("D0").toString());
        assertThat(derived.code()).as(derived.err()).isZero();
        assertThat(derived.err()).contains("kvledger journal import: warning: " + inputs + ": left out its last line");
    }

    @Test
    void the_recorders_layout_of_files_side_by_side_reads_and_imports_as_it_is() throws IOException {
        Path fixtures = Path.of(System.getProperty("kvledger.fixtures", "../../journal/fixtures"));
        Path folder = fixtures.resolve("07-reaped-without-ack");
        // as the vLLM bridge's recorder writes them into one directory: a file per process, the
        // recording of the run before a restart kept as NAME.1.jsonl, and other JSON lines beside
        Path rec = tmp.resolve("var-log-kvledger");
        Files.createDirectories(rec);
        Files.copy(folder.resolve("P0/journal.jsonl"), rec.resolve("prefill-scheduler-dp0-tp0.jsonl"));
        Files.copy(folder.resolve("D0/journal.jsonl"), rec.resolve("decode-scheduler-dp0-tp0.jsonl"));
        List<String> p0 = Files.readAllLines(folder.resolve("P0/journal.jsonl"));
        Files.write(rec.resolve("prefill-scheduler-dp0-tp0.1.jsonl"), p0.subList(0, 3));
        Files.writeString(rec.resolve("notes.jsonl"), "{\"not\":\"a journal\"}\n");

        CliRun.Outcome direct = run("hangs", rec.toString());
        CliRun.Outcome fixture = run("hangs", folder.toString());
        assertThat(direct.code()).as(direct.err()).isEqualTo(fixture.code()).isNotEqualTo(2);
        // the same findings; the nodes are named by their headers (P0, D0) and their files
        assertThat(direct.out()).contains("P0 (prefill-scheduler-dp0-tp0)").contains("D0 (decode-scheduler-dp0-tp0)");
        assertThat(findings(direct.out())).isEqualTo(findings(fixture.out())).isNotEmpty();
        assertThat(direct.err()).contains("kvledger hangs: note: left out the recordings of earlier runs: "
                + "prefill-scheduler-dp0-tp0.1.jsonl (give one as the argument to read it)");

        // an earlier run on its own, given as a file
        CliRun.Outcome earlier = run("stats", rec.resolve("prefill-scheduler-dp0-tp0.1.jsonl").toString());
        assertThat(earlier.code()).as(earlier.err()).isZero();
        assertThat(earlier.err()).contains("prefill-scheduler-dp0-tp0.1.jsonl is JSON lines");

        Path out = tmp.resolve("journals");
        CliRun.Outcome imported = run("journal", "import", rec.toString(), out.toString());
        assertThat(imported.code()).as(imported.err()).isZero();
        try (Stream<Path> s = Files.list(out)) {
            assertThat(s.map(p -> p.getFileName().toString()).sorted().toList())
                    .containsExactly("decode-scheduler-dp0-tp0", "prefill-scheduler-dp0-tp0");
        }
        assertThat(imported.err()).contains("note: left out the recordings of earlier runs: prefill-scheduler-dp0-tp0.1.jsonl");
        CliRun.Outcome journals = run("hangs", out.toString());
        assertThat(findings(journals.out())).isEqualTo(findings(fixture.out()));
    }

    /** The finding lines of a hangs report (those that name a detector's bug class). */
    private static List<String> findings(String hangs) {
        return hangs.lines().filter(l -> l.contains(" class ")).toList();
    }
}
