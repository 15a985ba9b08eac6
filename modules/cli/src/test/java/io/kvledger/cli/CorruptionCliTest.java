package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import net.openhft.chronicle.queue.ExcerptAppender;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueue;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueueBuilder;
import net.openhft.chronicle.wire.DocumentContext;
import io.kvledger.journal.JournalFormat;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every reader command on damaged journals, on captured output: the exact outcome of
 * {@code verify} (regions, entries lost, exit status), what {@code dump} and {@code journal
 * export} still read, and that no command prints a stack trace or dies, whatever the damage.
 */
class CorruptionCliTest {

    @TempDir
    static Path shared;

    @TempDir
    Path tmp;

    static Path sim;

    /** A small simulated deployment (P0, D0), written once and copied per test. */
    @BeforeAll
    static void simulate() {
        sim = shared.resolve("sim");
        CliRun.Outcome o = CliRun.simulate(sim, "write", 1, 4, "drop=0.2");
        assertThat(o.code()).as(o.err()).isZero();
    }

    /** One excerpt of an intact queue file. */
    record Excerpt(long pos, int len, boolean meta) {
        long end() {
            return pos + 4 + len;
        }
    }

    static Path queueFile(Path journal) {
        try (Stream<Path> s = Files.list(journal)) {
            return s.filter(p -> p.getFileName().toString().endsWith(".cq4")).findFirst().orElseThrow();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The data excerpts (entries, entry i has seq i) of an intact file, by walking the excerpt headers. */
    static List<Excerpt> entries(Path file) {
        byte[] d = bytes(file);
        ByteBuffer b = ByteBuffer.wrap(d).order(ByteOrder.LITTLE_ENDIAN);
        List<Excerpt> out = new ArrayList<>();
        long pos = 0;
        while (pos + 4 <= d.length && b.getInt((int) pos) != 0) {
            int h = b.getInt((int) pos);
            int len = h & 0x3FFF_FFFF;
            if ((h & 0x4000_0000) == 0) {
                out.add(new Excerpt(pos, len, false));
            }
            pos = (pos + 4 + len + 3) & ~3L;
        }
        return out;
    }

    static byte[] bytes(Path file) {
        try {
            return Files.readAllBytes(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private Path copy() {
        Path to = tmp.resolve("run");
        CliRun.copyTree(sim, to);
        return to;
    }

    static CliRun.Outcome run(String... args) {
        CliRun.Outcome o = CliRun.run(args);
        assertNoStackTrace(o);
        return o;
    }

    static void assertNoStackTrace(CliRun.Outcome o) {
        assertThat(o.out() + o.err()).doesNotContain("Exception").doesNotContain("\tat ").doesNotContain("Error:")
                .doesNotContain("InternalError");
    }

    static String n(long v) {
        return String.format(Locale.ROOT, "%,d", v);
    }

    /** Every reader command runs on the journals without a stack trace; returns their outcomes by name. */
    private static java.util.Map<String, CliRun.Outcome> everyReader(Path dir, Path node) {
        java.util.Map<String, CliRun.Outcome> out = new java.util.LinkedHashMap<>();
        out.put("dump", run("dump", dir.toString()));
        out.put("verify", run("verify", dir.toString()));
        out.put("replay", run("replay", node.toString()));
        out.put("hangs", run("hangs", dir.toString()));
        out.put("inspect", run("inspect", dir.toString(), "--request", "0"));
        out.put("stats", run("stats", dir.toString()));
        out.put("export", run("journal", "export", node.toString()));
        out.put("tail", run("tail", "-n", "3", node.toString()));
        return out;
    }

    @Test
    void a_zeroed_page_in_the_middle_is_reported_by_every_reader_and_the_rest_is_read() {
        Path dir = copy();
        Path d0 = dir.resolve("D0");
        Path file = queueFile(d0);
        List<Excerpt> entries = entries(file);
        long dataStart = entries.getFirst().pos();
        long page = ((dataStart + entries.getLast().end()) / 2) & ~4095L;
        long first = -1;
        long last = -1;
        for (int i = 0; i < entries.size(); i++) {
            if (entries.get(i).pos() < page + 4096 && entries.get(i).end() > page) {
                first = first < 0 ? i : first;
                last = i;
            }
        }
        long lost = last - first + 1;
        assertThat(first).isPositive();
        zero(file, page, 4096);

        CliRun.Outcome v = run("verify", dir.toString());
        assertThat(v.code()).isEqualTo(1);
        String region = "damaged: " + file.getFileName() + " at byte " + n(entries.get((int) first).pos());
        assertThat(v.out()).contains("D0: " + n(entries.size() - lost) + " entries")
                .contains(": 1 problem (1 damaged region, " + n(lost) + (lost == 1 ? " entry" : " entries")
                        + " could not be read)")
                .contains("  " + region)
                .contains("last good seq " + n(first - 1) + "; " + n(lost) + (lost == 1 ? " entry" : " entries")
                        + " after it could not be read (reading resumed at seq " + n(last + 1) + ")")
                .containsPattern("(?m)^P0: .*: ok$")
                .contains("verify: 1 problem in 1 of 2 journals");

        CliRun.Outcome dump = run("dump", d0.toString());
        assertThat(dump.code()).isEqualTo(1);
        assertThat(dump.lines()).hasSize((int) (entries.size() - lost));
        assertThat(dump.err()).contains(d0 + ": journal damaged: " + file.getFileName() + " at byte "
                + n(entries.get((int) first).pos()));

        CliRun.Outcome export = run("journal", "export", d0.toString());
        assertThat(export.code()).isEqualTo(1);
        assertThat(export.lines()).hasSize((int) (entries.size() - lost));
        assertThat(export.err()).contains("journal damaged");

        java.util.Map<String, CliRun.Outcome> all = everyReader(dir, d0);
        for (var e : all.entrySet()) {
            if (!e.getKey().equals("inspect")) {
                assertThat(e.getValue().err() + e.getValue().out()).as(e.getKey())
                        .contains(e.getKey().equals("verify") ? "damaged: " : "journal damaged: ")
                        .contains(file.getFileName() + " at byte " + n(entries.get((int) first).pos()));
            }
        }
    }

    @Test
    void a_journal_cut_inside_chronicles_index_cannot_be_opened_and_every_reader_says_where() {
        Path dir = copy();
        Path d0 = dir.resolve("D0");
        Path file = queueFile(d0);
        int entries = entries(file).size();
        truncate(file, 65_536);

        CliRun.Outcome v = run("verify", dir.toString());
        assertThat(v.code()).isEqualTo(1);
        assertThat(v.out()).contains("(journal D0): 0 entries (0 inputs, 0 derived): 2 problems (1 damaged region, "
                        + n(entries) + " entries could not be read)")
                .contains("  seq 0: the header (seq 0) cannot be read: nothing in this journal can be replayed")
                .contains("  damaged: " + file.getFileName() + " at byte 200: an excerpt of 262,180 bytes runs past the "
                        + "end of the file at byte 65,536");
        for (var e : everyReader(dir, d0).entrySet()) {
            if (!e.getKey().equals("verify")) {
                assertThat(e.getValue().code()).as(e.getKey()).isEqualTo(2);
                assertThat(e.getValue().err()).as(e.getKey()).contains("is damaged and no entry can be read: "
                        + file.getFileName() + " at byte 200");
            }
        }
    }

    /** The defect of issue 10: with 5,000 flipped bits, verify read 26 entries and said "ok". */
    @Test
    void five_thousand_flipped_bits_are_reported_region_by_region() {
        long seed = 5_000;
        System.out.println("bit flips: 5000, seed " + seed);
        Path dir = copy();
        Path d0 = dir.resolve("D0");
        Path file = queueFile(d0);
        List<Excerpt> entries = entries(file);
        flip(file, entries.get(1).pos(), entries.getLast().end(), 5_000, seed);

        CliRun.Outcome v = run("verify", "--json", d0.toString());
        assertThat(v.code()).isEqualTo(1);
        var m = (java.util.Map<?, ?>) io.kvledger.journal.json.Json.parse(v.out().strip());
        var j = (java.util.Map<?, ?>) ((List<?>) m.get("journals")).getFirst();
        long read = (Long) j.get("entries");
        long lost = (Long) j.get("lost_entries");
        assertThat(read + lost).as("seed %d", seed).isEqualTo(entries.size());
        assertThat((Long) j.get("damaged_regions")).isPositive();
        assertThat(m.get("ok")).isEqualTo(false);

        CliRun.Outcome dump = run("dump", d0.toString());
        assertThat(dump.code()).isEqualTo(1);
        assertThat(dump.lines()).hasSize((int) read);
        everyReader(dir, d0);
    }

    @Test
    void bit_flips_anywhere_never_print_a_stack_trace() {
        for (long seed = 1; seed <= 3; seed++) {
            Path dir = tmp.resolve("anywhere" + seed);
            CliRun.copyTree(sim, dir);
            Path d0 = dir.resolve("D0");
            Path file = queueFile(d0);
            flip(file, 0, entries(file).getLast().end() + 4096, 200, seed);
            CliRun.Outcome v = run("verify", d0.toString());
            assertThat(v.code()).as("seed %d: %s", seed, v.out()).isEqualTo(1);
            everyReader(dir, d0);
        }
    }

    @Test
    void truncation_at_many_offsets_exits_cleanly_and_verify_never_says_ok() {
        Path file0 = queueFile(sim.resolve("D0"));
        List<Excerpt> entries = entries(file0);
        Excerpt mid = entries.get(entries.size() / 2);
        long[] cuts = {0, 1, 64, 512, 4096, 65_536, mid.pos() + 4 + mid.len() / 2, entries.getLast().end() - 7};
        for (long cut : cuts) {
            Path dir = tmp.resolve("cut" + cut);
            CliRun.copyTree(sim, dir);
            Path d0 = dir.resolve("D0");
            truncate(queueFile(d0), cut);
            CliRun.Outcome v = run("verify", d0.toString());
            assertThat(v.code()).as("cut at %d: %s", cut, v.out()).isEqualTo(1);
            assertThat(v.out()).as("cut at %d", cut).doesNotContain(": ok").contains("damaged: ");
            CliRun.Outcome dump = run("dump", d0.toString());
            if (cut < entries.getFirst().pos()) {
                assertThat(dump.code()).as("cut at %d", cut).isEqualTo(2);
            } else {
                long kept = entries.stream().filter(x -> x.end() <= cut).count();
                assertThat(dump.code()).isEqualTo(1);
                assertThat(dump.lines()).as("cut at %d", cut).hasSize((int) kept);
                assertThat(dump.err()).contains("journal damaged: " + file0.getFileName() + " at byte ");
            }
        }
    }

    @Test
    void a_deleted_metadata_file_is_a_note_and_a_truncated_one_a_problem() throws Exception {
        Path dir = copy();
        Path d0 = dir.resolve("D0");
        int entries = entries(queueFile(d0)).size();
        Files.delete(d0.resolve("metadata.cq4t"));
        CliRun.Outcome v = run("verify", d0.toString());
        assertThat(v.code()).isZero();
        assertThat(v.out()).contains(": ok").contains("  note: metadata.cq4t is missing");
        assertThat(run("dump", d0.toString()).lines()).hasSize(entries);

        Files.write(d0.resolve("metadata.cq4t"), new byte[1000]);
        v = run("verify", d0.toString());
        assertThat(v.code()).isEqualTo(1);
        assertThat(v.out()).contains("damaged: metadata.cq4t at byte 1,000: metadata.cq4t is 1000 bytes");
        CliRun.Outcome dump = run("dump", d0.toString());
        assertThat(dump.lines()).hasSize(entries);
        assertThat(dump.err()).contains("journal damaged: metadata.cq4t");
    }

    /**
     * Issue 29 item 2: verify passed a metadata.cq4t whose header excerpt was left incomplete; the
     * writer then waited 10 s and said "Unable to claim exclusive exclusive lock".
     */
    @Test
    void a_metadata_file_a_writer_cannot_open_is_a_problem() throws Exception {
        Path dir = copy();
        Path d0 = dir.resolve("D0");
        Path meta = d0.resolve("metadata.cq4t");
        byte[] b = Files.readAllBytes(meta);
        b[3] |= (byte) 0x80;
        Files.write(meta, b);
        CliRun.Outcome v = run("verify", d0.toString());
        assertThat(v.code()).as(v.out()).isEqualTo(1);
        assertThat(v.out()).contains("damaged: metadata.cq4t at byte 0: metadata.cq4t's excerpt at byte 0 is marked incomplete")
                .contains("a writer refuses the journal until it is moved away");
    }

    /** A journal of format version 1 (no checksums) still reads, and verify says what it cannot check. */
    @Test
    void a_version_1_journal_verifies_ok_and_says_it_has_no_checksums() {
        Path v2 = sim.resolve("P0");
        Path v1 = tmp.resolve("v1");
        List<Excerpt> entries = entries(queueFile(v2));
        byte[] d = bytes(queueFile(v2));
        try (SingleChronicleQueue q = SingleChronicleQueueBuilder.single(v1.toFile()).rollCycle(JournalFormat.ROLL_CYCLE).build();
             ExcerptAppender a = q.createAppender()) {
            for (int i = 0; i < entries.size(); i++) {
                Excerpt x = entries.get(i);
                int at = (int) x.pos() + 4;
                byte[] e = new byte[x.len() - 4];
                System.arraycopy(d, at, e, 0, 28);
                System.arraycopy(d, at + 32, e, 28, x.len() - 32);
                e[0] = 1;
                if (i == 0) {
                    e = withFormatVersion1(e);
                }
                try (DocumentContext dc = a.writingDocument()) {
                    dc.wire().bytes().write(e);
                }
            }
        }
        CliRun.Outcome v = run("verify", v1.toString());
        assertThat(v.code()).as(v.out()).isZero();
        assertThat(v.out()).contains("P0 (journal v1): " + n(entries.size()) + " entries").contains(": ok [" + n(entries.size())
                + " entries without checksums (format version 1): damage inside them cannot be detected]");
        assertThat(run("dump", v1.toString()).lines()).hasSize(entries.size());
    }

    /** The header map's {@code format_version} is a positive fixint 2 after its key: make it 1. */
    private static byte[] withFormatVersion1(byte[] header) {
        byte[] key = "format_version".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        for (int i = 28; i + key.length + 1 < header.length; i++) {
            if (java.util.Arrays.equals(header, i, i + key.length, key, 0, key.length)) {
                assertThat(header[i + key.length]).isEqualTo((byte) 2);
                header[i + key.length] = 1;
                return header;
            }
        }
        throw new AssertionError("no format_version in the header");
    }

    static void zero(Path file, long at, int len) {
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.seek(at);
            f.write(new byte[len]);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static void truncate(Path file, long size) {
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.setLength(size);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static void flip(Path file, long from, long to, int count, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            for (int i = 0; i < count; i++) {
                long at = rnd.nextLong(from, to);
                f.seek(at);
                int v = f.read();
                f.seek(at);
                f.write(v ^ (1 << rnd.nextInt(8)));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
