package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every bug-class fixture of journal/fixtures: imports its JSON lines ({@code <node>/journal.jsonl}
 * as recorded, {@code <node>/inputs.jsonl} with {@code --derive}) through {@code kvledger journal
 * import}, runs the command on the first line of each golden file ({@code expected-hangs.txt},
 * {@code expected-inspect.txt}) and compares its standard output with the rest of the file. The
 * import directory is written as {@code DIR} in the golden files.
 *
 * <p>Run with {@code -Dkvledger.regenerate=true} to rewrite the golden files from the current
 * output instead (their first line, the command, is kept).
 *
 * <p>Each fixture's hangs output must name its bug class (the folder's number; a {@code 00-<detector>}
 * folder, for a finding no section-7 class matches, must have findings of that detector), unless the folder
 * holds a {@code DETECTOR-GAP.md} explaining why today's detectors miss it: then the test checks
 * that the gap is still there, so that fixing the detector makes it fail until the note is removed
 * and the golden file regenerated.
 */
class FixtureGoldenTest {

    private static final boolean REGENERATE = Boolean.getBoolean("kvledger.regenerate");
    private static final Pattern NAME = Pattern.compile("(\\d{2})-[a-z0-9-]+");
    static final String GAP_NOTE = "DETECTOR-GAP.md";

    static Path fixturesDir() {
        String p = System.getProperty("kvledger.fixtures");
        return p != null ? Path.of(p) : Path.of("..", "..", "journal", "fixtures");
    }

    static Stream<Path> fixtures() throws IOException {
        try (Stream<Path> s = Files.list(fixturesDir())) {
            return s.filter(Files::isDirectory).filter(p -> NAME.matcher(p.getFileName().toString()).matches())
                    .sorted().toList().stream();
        }
    }

    private record Outcome(int code, String out, String err) {}

    private static Outcome run(List<String> args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = Main.run(new PrintWriter(out), new PrintWriter(err), args.toArray(String[]::new));
        return new Outcome(code, out.toString(), err.toString());
    }

    @Test
    void there_are_at_least_twelve_fixtures_and_the_seed_pr_is_one_of_them() throws IOException {
        List<String> names = fixtures().map(p -> p.getFileName().toString()).toList();
        assertThat(names).hasSizeGreaterThanOrEqualTo(12).contains("01-completion-id-mismatch");
        long detected = fixtures().filter(p -> !Files.exists(p.resolve(GAP_NOTE))).count();
        assertThat(detected).as("fixtures whose class the detectors name").isGreaterThanOrEqualTo(12);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("fixtures")
    void fixture_reproduces_its_golden_hangs_and_inspect_output(Path fixture, @TempDir Path tmp) throws IOException {
        String name = fixture.getFileName().toString();
        Matcher m = NAME.matcher(name);
        assertThat(m.matches()).isTrue();
        int bugClass = Integer.parseInt(m.group(1));
        assertThat(fixture.resolve("README.md")).as(name + " has a README").exists();
        Path dir = tmp.resolve("journals");
        importNodes(fixture, dir);

        String hangs = golden(fixture.resolve("expected-hangs.txt"), dir, name, 1);
        boolean gap = Files.exists(fixture.resolve(GAP_NOTE));
        Pattern classToken = Pattern.compile("\\bclass " + bugClass + "\\b");
        if (gap) {
            assertThat(classToken.matcher(hangs).find())
                    .as(name + ": the detectors now name class " + bugClass + ": delete " + GAP_NOTE
                            + " and regenerate the golden files (-Dkvledger.regenerate=true)")
                    .isFalse();
        } else if (bugClass == 0) {
            // no section-7 class: the folder's short name is the detector that must report it
            String detector = name.substring(name.indexOf('-') + 1);
            assertThat(Pattern.compile("(?m)^" + Pattern.quote(detector) + ": \\d+ findings?$").matcher(hangs).find())
                    .as(name + ": hangs has findings of detector " + detector + ":\n" + hangs).isTrue();
        } else {
            assertThat(classToken.matcher(hangs).find()).as(name + ": hangs names bug class " + bugClass + ":\n" + hangs)
                    .isTrue();
        }
        golden(fixture.resolve("expected-inspect.txt"), dir, name, 0);
    }

    /**
     * The replay corpus: every node of every fixture, recorded or derived on import, replays with
     * {@code replay --verify} and no divergence (a recorded journal whose reducer decisions a later
     * reducer no longer takes fails here until it is re-derived, see the fixtures' README).
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("fixtures")
    void every_node_of_the_fixture_replays_with_no_divergence(Path fixture, @TempDir Path tmp) throws IOException {
        Path dir = tmp.resolve("DIR");
        importNodes(fixture, dir);
        List<Path> nodes;
        try (Stream<Path> s = Files.list(dir)) {
            nodes = s.filter(Files::isDirectory).sorted().toList();
        }
        for (Path n : nodes) {
            Outcome o = run(List.of("replay", "--verify", n.toString()));
            assertThat(o.code()).as(n.getFileName() + ": " + o.out() + o.err()).isZero();
            assertThat(o.out()).as(n.getFileName().toString()).contains("verify: no divergence");
        }
    }

    /** Imports every node's JSON lines of the fixture into {@code dir/<node>}. */
    private static void importNodes(Path fixture, Path dir) throws IOException {
        List<Path> nodes;
        try (Stream<Path> s = Files.list(fixture)) {
            nodes = s.filter(Files::isDirectory).sorted().toList();
        }
        assertThat(nodes).as(fixture + " has node journals").isNotEmpty();
        for (Path n : nodes) {
            Path recorded = n.resolve("journal.jsonl");
            Path inputs = n.resolve("inputs.jsonl");
            List<String> args = new ArrayList<>(List.of("journal", "import"));
            if (Files.exists(recorded)) {
                args.add(recorded.toString());
            } else {
                assertThat(inputs).as(n + " holds journal.jsonl or inputs.jsonl").exists();
                args.add("--derive");
                args.add(inputs.toString());
            }
            args.add(dir.resolve(n.getFileName().toString()).toString());
            Outcome o = run(args);
            assertThat(o.code()).as("import " + n + ": " + o.err()).isZero();
        }
    }

    /**
     * Runs the command on the golden file's first line and compares (or, regenerating, rewrites).
     *
     * @return the command's output, with the journal directory written as DIR
     */
    private static String golden(Path file, Path dir, String fixture, int expectedCode) throws IOException {
        assertThat(file).as(fixture + " has " + file.getFileName()).exists();
        String text = Files.readString(file, StandardCharsets.UTF_8);
        int nl = text.indexOf('\n');
        String command = nl < 0 ? text : text.substring(0, nl);
        assertThat(command).as(file + ": the first line is the command").startsWith("$ kvledger ");
        List<String> args = new ArrayList<>();
        for (String a : Arrays.asList(command.substring("$ kvledger ".length()).strip().split("\\s+"))) {
            args.add(a.equals("DIR") ? dir.toString() : a);
        }
        Outcome o = run(args);
        String got = o.out().replace(dir.toString(), "DIR");
        if (REGENERATE) {
            Files.writeString(file, command + "\n" + got, StandardCharsets.UTF_8);
        } else {
            assertThat(got).as(fixture + ": " + command + " (regenerate with -Dkvledger.regenerate=true); stderr: " + o.err())
                    .isEqualTo(nl < 0 ? "" : text.substring(nl + 1));
        }
        assertThat(o.code()).as(fixture + ": exit status of " + command + "; stderr: " + o.err()).isEqualTo(expectedCode);
        return got;
    }
}
