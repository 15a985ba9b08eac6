package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.journal.JournalFormat;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import picocli.CommandLine;

/**
 * The defect of issue 29 item 1: the analysing commands read duplicated and out-of-order entries
 * without a word and answered wrongly with exit 0, where verify flagged them. Each kind of damage
 * below is made in a real Chronicle queue (a copy of a simulated deployment's journals); every
 * reading command must say what it skipped or doubted, one warning line per kind, and exit 1; and
 * what it skipped must not count (a day copied as the next one does not double the inputs).
 */
class ReaderRulesCliTest {

    @TempDir
    static Path shared;

    @TempDir
    Path tmp;

    static Path sim;
    static String requestId;
    static String intactInputs;

    @BeforeAll
    static void simulate() {
        sim = shared.resolve("sim");
        CliRun.Outcome o = CliRun.simulate(sim, "write", 1, 4, "drop=0.2");
        assertThat(o.code()).as(o.err()).isZero();
        CliRun.Outcome dump = CliRun.run("dump", "--json", sim.resolve("D0").toString());
        Matcher m = Pattern.compile("\"request_id\":\"([^\"]+)\"").matcher(dump.out());
        assertThat(m.find()).as(dump.out()).isTrue();
        requestId = m.group(1);
        CliRun.Outcome replay = CliRun.run("replay", sim.resolve("D0").toString());
        assertThat(replay.code()).as(replay.err()).isZero();
        assertThat(replay.err()).doesNotContain("warning");
        intactInputs = inputsApplied(replay.out());
    }

    /** The damage of the issue, each in D0's journal. */
    enum Kind {
        DAY_COPIED_AS_NEXT_DAY("entries skipped after a header in the middle of the journal"),
        OTHER_NODE_AS_EARLIER_DAY("entries skipped after a header in the middle of the journal"),
        TWO_EXCERPTS_SWAPPED("skipped: its seq does not increase"),
        EXCERPT_DUPLICATED_OVER_ITS_NEIGHBOUR("skipped: its seq does not increase"),
        FORGED_KIND_BYTE("is an input type but the entry is a derived");

        final String warning;

        Kind(String warning) {
            this.warning = warning;
        }
    }

    @ParameterizedTest
    @EnumSource(Kind.class)
    void every_reading_command_says_what_it_skipped_or_doubted_and_exits_1(Kind kind) throws Exception {
        Path dir = tmp.resolve("run");
        CliRun.copyTree(sim, dir);
        Path d0 = dir.resolve("D0");
        damage(kind, dir, d0);

        CliRun.Outcome verify = CliRun.run("verify", d0.toString());
        assertThat(verify.code()).as("verify: %s", verify.out()).isEqualTo(1);

        List<String[]> commands = List.of(
                new String[] {"replay", d0.toString()},
                new String[] {"replay", "--verify", d0.toString()},
                new String[] {"stats", dir.toString()},
                new String[] {"hangs", dir.toString()},
                new String[] {"inspect", dir.toString(), "--request", requestId});
        for (String[] args : commands) {
            CliRun.Outcome o = CliRun.run(args);
            String what = kind + ": " + String.join(" ", args) + "\n" + o.out() + o.err();
            assertThat(o.code()).as(what).isEqualTo(1);
            assertThat(o.err()).as(what).contains(args[0] + ": warning: ").contains(kind.warning);
            assertThat(o.out() + o.err()).as(what).doesNotContain("Exception").doesNotContain("\tat ");
            // one line per kind of problem, not one per entry
            assertThat(o.err().lines().filter(l -> l.contains(kind.warning)).count()).as(what).isEqualTo(1);
        }
        // merge copies what it reads: the copy lacks what was skipped, and it says so
        CliRun.Outcome merge = CliRun.run("merge", d0.toString(), dir.resolve("P0").toString(), "--out",
                tmp.resolve("merged").toString());
        if (kind == Kind.OTHER_NODE_AS_EARLIER_DAY) {
            // D0's directory now reads as P0's journal: merge refuses two journals of one node
            assertThat(merge.code()).as("merge: %s", merge.err()).isEqualTo(2);
            assertThat(merge.err()).contains("node id P0 is used by both");
        } else {
            assertThat(merge.code()).as("merge: %s", merge.err()).isEqualTo(1);
            assertThat(merge.err()).contains(kind.warning).doesNotContain("internal error");
            assertThat(CliRun.run("verify", tmp.resolve("merged").toString()).code()).as("the merged copy verifies").isZero();
        }
        CliRun.Outcome replay = CliRun.run("replay", d0.toString());
        if (kind == Kind.DAY_COPIED_AS_NEXT_DAY) {
            // the copy's entries are skipped: the count is the journal's, not twice it
            assertThat(inputsApplied(replay.out())).isEqualTo(intactInputs);
        }
        if (kind == Kind.OTHER_NODE_AS_EARLIER_DAY) {
            CliRun.Outcome hangs = CliRun.run("hangs", dir.toString());
            assertThat(hangs.err()).contains("node id P0 is used by 2 journals");
            assertThat(hangs.out()).contains("not read whole: ");
        }

        // serve says at its start what its answers lack
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cl = Main.commandLine(new PrintWriter(out, true), new PrintWriter(err, true));
        ServeCommand serve = (ServeCommand) cl.getSubcommands().get("serve").getCommand();
        AtomicInteger code = new AtomicInteger(-1);
        Thread t = new Thread(() -> code.set(cl.execute("serve", dir.toString(), "--http", "127.0.0.1:0")), "serve");
        t.start();
        try {
            assertThat(serve.started.await(60, TimeUnit.SECONDS)).as("%s %s", out, err).isTrue();
            assertThat(err.toString()).as(kind.name()).contains("serve: warning: ").contains(kind.warning)
                    .contains("answers from these journals lack what was skipped");
        } finally {
            t.interrupt();
            t.join(30_000);
        }
        assertThat(code.get()).isEqualTo(1);
    }

    /**
     * Issue 29 item 4: hangs over a journal cut short said "no findings" with exit 0 while requests
     * were in flight at the cut. A journal not read whole is never reported clean.
     */
    @org.junit.jupiter.api.Test
    void hangs_never_reports_a_journal_cut_short_clean() throws Exception {
        Path dir = tmp.resolve("clean");
        CliRun.Outcome o = CliRun.simulate(dir, "write", 3, 6, "drop=0");
        assertThat(o.code()).as(o.err()).isZero();
        CliRun.Outcome before = CliRun.run("hangs", dir.toString());
        assertThat(before.code()).as(before.out()).isZero();
        assertThat(before.out()).contains("no findings");
        Path file = queueFile(dir.resolve("D0"));
        byte[] d = Files.readAllBytes(file);
        List<long[]> e = entries(d);
        long[] mid = e.get(e.size() / 2);
        // cut inside an entry in the middle: what follows is gone, as a copy cut short leaves it
        try (var f = new java.io.RandomAccessFile(file.toFile(), "rw")) {
            f.setLength(mid[0] + 4 + mid[1] / 2);
        }
        CliRun.Outcome cut = CliRun.run("hangs", dir.toString());
        assertThat(cut.code()).as(cut.out() + cut.err()).isEqualTo(1);
        assertThat(cut.err()).contains("hangs: warning: ").contains("journal damaged: " + file.getFileName());
        assertThat(cut.out()).contains("not read whole: D0's journal is damaged, cut short, or breaks the order rules")
                .doesNotContain("no findings:");
        CliRun.Outcome json = CliRun.run("hangs", "--json", dir.toString());
        assertThat(json.code()).isEqualTo(1);
        assertThat(json.out()).contains("\"not_read_whole\":[\"D0\"]").contains("\"clean\":false");
    }

    private static void damage(Kind kind, Path dir, Path d0) throws IOException {
        Path file = queueFile(d0);
        switch (kind) {
            case DAY_COPIED_AS_NEXT_DAY -> Files.copy(file, file.resolveSibling(dayName(file, 1)));
            case OTHER_NODE_AS_EARLIER_DAY -> {
                Path p0 = queueFile(dir.resolve("P0"));
                Files.copy(p0, file.resolveSibling(dayName(file, -1)));
            }
            case TWO_EXCERPTS_SWAPPED -> {
                int i = twinInputs(file);
                byte[] d = Files.readAllBytes(file);
                List<long[]> e = entries(d);
                long[] a = e.get(i);
                long[] b = e.get(i + 1);
                byte[] first = java.util.Arrays.copyOfRange(d, (int) a[0], (int) (a[0] + 4 + a[1]));
                System.arraycopy(d, (int) b[0], d, (int) a[0], (int) (4 + b[1]));
                System.arraycopy(first, 0, d, (int) b[0], first.length);
                Files.write(file, d);
            }
            case EXCERPT_DUPLICATED_OVER_ITS_NEIGHBOUR -> {
                int i = twinInputs(file);
                byte[] d = Files.readAllBytes(file);
                List<long[]> e = entries(d);
                System.arraycopy(d, (int) e.get(i)[0], d, (int) e.get(i + 1)[0], (int) (4 + e.get(i)[1]));
                Files.write(file, d);
            }
            case FORGED_KIND_BYTE -> {
                byte[] d = Files.readAllBytes(file);
                List<long[]> e = entries(d);
                long[] x = e.get(e.size() / 2);
                for (int k = e.size() / 2; d[(int) x[0] + 5] != 1; k++) {
                    x = e.get(k); // the first input from the middle on
                }
                int forged = 0;
                for (long[] y : e) {
                    // every input of its type: input -> derived, and a checksum to match
                    int at = (int) y[0] + 4;
                    if (d[at + 1] == 1 && d[at + 2] == d[(int) x[0] + 6] && d[at + 3] == d[(int) x[0] + 7]) {
                        d[at + 1] = 2;
                        CRC32C crc = new CRC32C();
                        crc.update(d, at, JournalFormat.CRC_OFFSET);
                        crc.update(d, at + JournalFormat.ENVELOPE_V2, (int) y[1] - JournalFormat.ENVELOPE_V2);
                        ByteBuffer.wrap(d).order(ByteOrder.LITTLE_ENDIAN).putInt(at + JournalFormat.CRC_OFFSET,
                                (int) crc.getValue());
                        forged++;
                    }
                }
                assertThat(forged).isGreaterThan(1);
                Files.write(file, d);
            }
        }
    }

    /** The index of the first data excerpt after the header such that it and the next are inputs of one length. */
    private static int twinInputs(Path file) throws IOException {
        byte[] d = Files.readAllBytes(file);
        List<long[]> e = entries(d);
        for (int i = 1; i + 1 < e.size(); i++) {
            if (e.get(i)[1] == e.get(i + 1)[1] && d[(int) e.get(i)[0] + 5] == 1 && d[(int) e.get(i + 1)[0] + 5] == 1) {
                return i;
            }
        }
        throw new AssertionError("no two neighbouring inputs of one length in " + file);
    }

    /** The data excerpts of an intact file: {position, length}; entry i has seq i. */
    private static List<long[]> entries(byte[] d) {
        ByteBuffer b = ByteBuffer.wrap(d).order(ByteOrder.LITTLE_ENDIAN);
        List<long[]> out = new ArrayList<>();
        long pos = 0;
        while (pos + 4 <= d.length && b.getInt((int) pos) != 0) {
            int h = b.getInt((int) pos);
            int len = h & 0x3FFF_FFFF;
            if ((h & 0x4000_0000) == 0) {
                out.add(new long[] {pos, len});
            }
            pos = (pos + 4 + len + 3) & ~3L;
        }
        return out;
    }

    /** The name of the daily queue file {@code days} after (or before) {@code file}'s. */
    private static String dayName(Path file, int days) {
        String name = file.getFileName().toString();
        DateTimeFormatter f = DateTimeFormatter.BASIC_ISO_DATE;
        LocalDate day = LocalDate.parse(name.substring(0, 8), f);
        return day.plusDays(days).format(f) + name.substring(8);
    }

    private static Path queueFile(Path journal) {
        try (var s = Files.list(journal)) {
            return s.filter(p -> p.getFileName().toString().endsWith(".cq4")).findFirst().orElseThrow();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** "123 inputs applied" of a replay's summary (the number as printed). */
    private static String inputsApplied(String out) {
        Matcher m = Pattern.compile("([\\d,]+) inputs? applied").matcher(out);
        assertThat(m.find()).as(out).isTrue();
        return m.group(1);
    }
}
