package io.kvledger.journal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.format.EntryKind;
import io.kvledger.journal.format.EntryType;
import io.kvledger.journal.format.Payloads;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.function.LongPredicate;
import java.util.stream.LongStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Damaged journals: truncation at many offsets, zeroed pages, random bit flips, a deleted or cut
 * metadata file. Each case asserts exactly which entries a reader still reads, which damaged
 * regions it reports (file, byte offset, last good seq, entries lost), and that nothing but a
 * {@link JournalException} ever comes out of the reader. The journal is written once: a header
 * and {@value #PAIRS} (tick, stale_ack_dropped) pairs, so entry i has seq i and known content.
 */
class CorruptionTest {

    static final int PAIRS = 10_000;
    static final long ENTRIES = 1 + 2L * PAIRS;
    static final int ENTRIES_MID = PAIRS;

    @TempDir
    static Path shared;

    @TempDir
    Path tmp;

    static Path pristine;
    static List<Damage.Excerpt> entries;

    @BeforeAll
    static void writeJournal() {
        pristine = shared.resolve("pristine");
        try (JournalWriter w = JournalWriter.open(pristine, Samples.header())) {
            for (int i = 1; i <= PAIRS; i++) {
                w.appendApplied(new NodeEvent.Tick(i * 1_000L), List.of(new Effect.StaleAckDropped("r" + i)));
            }
        }
        entries = Damage.entries(Damage.queueFile(pristine));
        assertThat(entries).hasSize((int) ENTRIES);
    }

    private Path copy() {
        return Damage.copyJournal(pristine, tmp.resolve("P1"));
    }

    /** What one full pass reads: the seqs, each checked against what was written. */
    record Pass(List<Long> seqs, JournalReader.Integrity integrity, List<String> warnings) {}

    static Pass readAll(Path dir) {
        try (JournalReader r = JournalReader.open(dir)) {
            List<Long> seqs = new ArrayList<>();
            for (JournalEntry e : r) {
                seqs.add(e.seq());
                assertIntact(e);
            }
            return new Pass(seqs, r.integrity(), r.warnings());
        }
    }

    /** Every entry a reader hands out is the one written with that seq. */
    static void assertIntact(JournalEntry e) {
        long seq = e.seq();
        if (seq == 0) {
            assertThat(e).isInstanceOf(JournalEntry.Header.class);
            return;
        }
        long i = (seq + 1) / 2;
        if (seq % 2 == 1) {
            assertThat(e).isEqualTo(new JournalEntry.Input(seq, i * 1_000L, new NodeEvent.Tick(i * 1_000L)));
        } else {
            assertThat(e).isEqualTo(new JournalEntry.Derived(seq, seq - 1, i * 1_000L, new Effect.StaleAckDropped("r" + i)));
        }
    }

    static List<Long> seqsExcept(LongPredicate lost) {
        return LongStream.range(0, ENTRIES).filter(s -> !lost.test(s)).boxed().toList();
    }

    static long dataEnd() {
        return entries.getLast().end();
    }

    // ---- truncation ---------------------------------------------------------------------

    /** Truncated inside Chronicle's file header and index: the journal's header is gone, and the reader says where. */
    @ParameterizedTest
    @ValueSource(longs = {1, 64, 512, 4096, 65536})
    void truncated_before_the_header_entry_cannot_be_opened_and_says_where(long size) {
        Path dir = copy();
        Path file = Damage.queueFile(dir);
        Damage.truncate(file, size);
        assertThat(size).isLessThan(entries.getFirst().pos());
        assertThatThrownBy(() -> JournalReader.open(dir)).isInstanceOf(JournalException.class)
                .hasMessageContaining("the journal in " + dir + " is damaged and no entry can be read: "
                        + file.getFileName() + " at byte ");
        JournalReader.Integrity in = JournalReader.check(dir);
        assertThat(in.checked()).isZero();
        assertThat(in.damage()).singleElement().satisfies(d -> {
            assertThat(d.file()).isEqualTo(file.getFileName().toString());
            assertThat(d.lastGoodSeq()).isEqualTo(-1);
            assertThat(d.resumeSeq()).isEqualTo(-1);
            // Chronicle's own file header (193 bytes at 0) says how many excerpts there were, once it survives
            assertThat(d.lostEntries()).isEqualTo(size >= 512 ? ENTRIES : -1);
            assertThat(d.offset()).isEqualTo(size >= 512 ? 200 : 0);
        });
        assertThatThrownBy(() -> JournalWriter.open(dir, Samples.header())).isInstanceOf(JournalException.class)
                .hasMessageContaining("is damaged");
    }

    @Test
    void truncated_to_nothing_names_the_empty_file() {
        Path dir = copy();
        Path file = Damage.queueFile(dir);
        Damage.truncate(file, 0);
        assertThatThrownBy(() -> JournalReader.open(dir)).isInstanceOf(JournalException.class)
                .hasMessageContaining("has an empty queue file").hasMessageContaining(file.getFileName().toString());
        assertThat(JournalReader.check(dir).damage()).singleElement()
                .satisfies(d -> assertThat(d.what()).contains("the file ends at byte 0"));
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, ENTRIES_MID, (int) ENTRIES - 1})
    void truncated_in_the_middle_of_an_entry_reads_every_entry_before_it(int cut) {
        Path dir = copy();
        Path file = Damage.queueFile(dir);
        Damage.Excerpt x = entries.get(cut);
        Damage.truncate(file, x.pos() + 4 + x.len() / 2);
        Pass p = readAll(dir);
        assertThat(p.seqs()).isEqualTo(seqsExcept(s -> s >= cut));
        assertThat(p.integrity().damage()).singleElement().isEqualTo(new JournalDamage(file.getFileName().toString(),
                x.pos(), -1, cut - 1, -1, ENTRIES - cut, "an excerpt of " + String.format(java.util.Locale.ROOT, "%,d", x.len())
                + " bytes runs past the end of the file at byte " + String.format(java.util.Locale.ROOT, "%,d",
                x.pos() + 4 + x.len() / 2) + " (the file was truncated or the excerpt's header is damaged)"));
        assertThat(p.warnings()).first().asString().startsWith(dir + ": journal damaged: " + file.getFileName() + " at byte ")
                .contains(ENTRIES - cut == 1 ? "1 entry after it could not be read" : "entries after it could not be read");
    }

    @Test
    void truncated_7_bytes_before_the_end_of_the_data_loses_the_last_entry() {
        Path dir = copy();
        Damage.truncate(Damage.queueFile(dir), dataEnd() - 7);
        Pass p = readAll(dir);
        assertThat(p.seqs()).isEqualTo(seqsExcept(s -> s == ENTRIES - 1));
        assertThat(p.integrity().damage()).singleElement().satisfies(d -> {
            assertThat(d.offset()).isEqualTo(entries.getLast().pos());
            assertThat(d.lastGoodSeq()).isEqualTo(ENTRIES - 2);
            assertThat(d.lostEntries()).isEqualTo(1);
        });
    }

    @Test
    void truncated_7_bytes_before_the_end_of_the_file_loses_nothing_but_is_reported() throws Exception {
        Path dir = copy();
        Path file = Damage.queueFile(dir);
        long size = Files.size(file);
        Damage.truncate(file, size - 7);
        Pass p = readAll(dir);
        assertThat(p.seqs()).isEqualTo(seqsExcept(s -> false));
        assertThat(p.integrity().damage()).singleElement().satisfies(d -> {
            assertThat(d.offset()).isEqualTo(size - 7);
            assertThat(d.lostEntries()).isZero();
            assertThat(d.what()).contains("not a multiple of 4096").contains("truncated");
        });
    }

    // ---- zeroed pages -------------------------------------------------------------------

    /** The entries whose excerpt (header or bytes) overlaps {@code [from, to)}. */
    static TreeSet<Long> overlapping(long from, long to) {
        TreeSet<Long> out = new TreeSet<>();
        for (int i = 0; i < entries.size(); i++) {
            Damage.Excerpt x = entries.get(i);
            if (x.pos() < to && x.end() > from) {
                out.add((long) i);
            }
        }
        return out;
    }

    @Test
    void a_zeroed_first_page_loses_chronicles_header_but_no_entry() {
        Path dir = copy();
        Damage.zero(Damage.queueFile(dir), 0, 4096);
        Pass p = readAll(dir);
        assertThat(p.seqs()).isEqualTo(seqsExcept(s -> false));
        assertThat(p.integrity().damage()).singleElement().satisfies(d -> {
            assertThat(d.offset()).isZero();
            assertThat(d.length()).isEqualTo(entries.getFirst().pos());
            assertThat(d.lastGoodSeq()).isEqualTo(-1);
            assertThat(d.resumeSeq()).isZero();
            assertThat(d.lostEntries()).isZero();
            assertThat(d.what()).startsWith("the data ends here (zeros), but entries follow at byte ");
        });
    }

    /** The defect of issue 10: one zeroed page in the middle silently ended the journal there. */
    @Test
    void a_zeroed_page_in_the_middle_loses_exactly_the_entries_on_it_and_reading_resumes_after_it() {
        Path dir = copy();
        long page = ((entries.getFirst().pos() + dataEnd()) / 2) & ~4095L;
        Damage.zero(Damage.queueFile(dir), page, 4096);
        TreeSet<Long> lost = overlapping(page, page + 4096);
        assertThat(lost).hasSizeGreaterThan(50);
        Pass p = readAll(dir);
        assertThat(p.seqs()).isEqualTo(seqsExcept(lost::contains));
        assertThat(p.integrity().damage()).singleElement().satisfies(d -> {
            assertThat(d.offset()).isEqualTo(entries.get(lost.first().intValue()).pos());
            assertThat(d.lastGoodSeq()).isEqualTo(lost.first() - 1);
            assertThat(d.resumeSeq()).isEqualTo(lost.last() + 1);
            assertThat(d.lostEntries()).isEqualTo(lost.size());
        });
    }

    @Test
    void a_zeroed_last_page_of_data_loses_the_entries_on_it_and_chronicles_header_counts_them() {
        Path dir = copy();
        long page = (dataEnd() - 1) & ~4095L;
        Damage.zero(Damage.queueFile(dir), page, 4096);
        TreeSet<Long> lost = overlapping(page, page + 4096);
        Pass p = readAll(dir);
        assertThat(p.seqs()).isEqualTo(seqsExcept(lost::contains));
        assertThat(p.integrity().damage()).singleElement().satisfies(d -> {
            assertThat(d.lastGoodSeq()).isEqualTo(lost.first() - 1);
            assertThat(d.resumeSeq()).isEqualTo(-1);
            assertThat(d.lostEntries()).isEqualTo(lost.size());
        });
    }

    /** Readable data after the apparent end: a zeroed or not-complete excerpt header in the middle of the data. */
    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void entries_after_an_apparent_end_are_found_and_the_gap_reported(boolean zeroHeader) {
        Path dir = copy();
        int k = ENTRIES_MID + 1;
        Damage.Excerpt x = entries.get(k);
        int h = zeroHeader ? 0 : (x.len() | 0x8000_0000);
        Damage.write(Damage.queueFile(dir), x.pos(), new byte[] {(byte) h, (byte) (h >>> 8), (byte) (h >>> 16), (byte) (h >>> 24)});
        Pass p = readAll(dir);
        assertThat(p.seqs()).isEqualTo(seqsExcept(s -> s == k));
        assertThat(p.integrity().damage()).singleElement().isEqualTo(new JournalDamage(
                Damage.queueFile(dir).getFileName().toString(), x.pos(), entries.get(k + 1).pos() - x.pos(), k - 1, k + 1, 1,
                (zeroHeader ? "the data ends here (zeros)" : "an excerpt left incomplete")
                        + ", but entries follow at byte " + String.format(java.util.Locale.ROOT, "%,d", entries.get(k + 1).pos())));
    }

    // ---- bit flips ----------------------------------------------------------------------

    /**
     * Random bit flips after the header entry: an entry is lost exactly when a flip landed in its
     * bytes or in its excerpt header (except the metadata bit alone, which the reader sees
     * through); every other entry is read, and the regions account for every lost entry.
     */
    @ParameterizedTest
    @ValueSource(ints = {1, 10, 100, 1_000, 5_000, 10_000})
    void random_bit_flips_lose_exactly_the_entries_they_hit(int count) {
        long seed = 0x5EED_0000L + count;
        System.out.println("bit flips: " + count + ", seed " + seed);
        Path dir = copy();
        long from = entries.get(1).pos();
        long[] flips = Damage.flip(Damage.queueFile(dir), from, dataEnd(), count, seed);
        TreeSet<Long> lost = hit(flips);
        Pass p = readAll(dir);
        TreeSet<Long> readButHit = new TreeSet<>(p.seqs());
        readButHit.retainAll(lost);
        TreeSet<Long> missing = new TreeSet<>(seqsExcept(lost::contains));
        p.seqs().forEach(missing::remove);
        assertThat(readButHit).as("seed %d: entries read although a flip hit them", seed).isEmpty();
        assertThat(missing).as("seed %d: intact entries not read", seed).isEmpty();
        assertThat(p.seqs()).as("seed %d", seed).isEqualTo(seqsExcept(lost::contains));
        assertThat(p.integrity().lostEntries()).as("seed %d", seed).isEqualTo(lost.size());
        assertThat(p.integrity().lossUnknown()).isFalse();
        if (!lost.isEmpty()) {
            assertThat(p.warnings()).first().asString().contains(": journal damaged: ");
        }
    }

    /** Which entries the flips destroy (see above). */
    static TreeSet<Long> hit(long[] flips) {
        TreeSet<Long> bits = Damage.netFlips(flips);
        TreeSet<Long> lost = new TreeSet<>();
        for (int i = 0; i < entries.size(); i++) {
            if (Damage.destroys(bits, entries.get(i).pos(), entries.get(i).end())) {
                lost.add((long) i);
            }
        }
        return lost;
    }

    /** Flips anywhere in the file, Chronicle's header and index included: never more than a JournalException. */
    @ParameterizedTest
    @ValueSource(ints = {1, 50, 5_000})
    void flips_anywhere_never_crash_a_reader_and_never_yield_a_wrong_entry(int count) {
        long seed = 0xF11E_0000L + count;
        System.out.println("bit flips anywhere: " + count + ", seed " + seed);
        Path dir = copy();
        Damage.flip(Damage.queueFile(dir), 0, dataEnd() + 4096, count, seed);
        try {
            Pass p = readAll(dir);
            assertThat(p.seqs()).isSorted().doesNotHaveDuplicates();
            if (p.seqs().size() < ENTRIES) {
                assertThat(p.integrity().damage()).as("seed %d", seed).isNotEmpty();
            }
        } catch (JournalException e) {
            assertThat(e.getMessage()).contains("is damaged");
            assertThat(JournalReader.check(dir).damage()).isNotEmpty();
        }
    }

    // ---- metadata.cq4t ------------------------------------------------------------------

    @Test
    void a_deleted_metadata_file_loses_nothing_and_a_writer_recreates_it() throws Exception {
        Path dir = copy();
        Files.delete(dir.resolve("metadata.cq4t"));
        assertThat(JournalReader.metadataMissing(dir)).isTrue();
        Pass p = readAll(dir);
        assertThat(p.seqs()).isEqualTo(seqsExcept(s -> false));
        assertThat(p.integrity().damage()).isEmpty();
        try (JournalWriter w = JournalWriter.open(dir, Samples.header())) {
            assertThat(w.appendInput(new NodeEvent.Tick(99_000_000L))).isEqualTo(ENTRIES);
        }
        assertThat(Files.exists(dir.resolve("metadata.cq4t"))).isTrue();
        try (JournalReader r = JournalReader.open(dir)) {
            assertThat(r.stream().count()).isEqualTo(ENTRIES + 1);
            assertThat(r.integrity().damage()).isEmpty();
        }
    }

    @Test
    void a_truncated_metadata_file_is_reported_and_refused_by_a_writer() {
        Path dir = copy();
        Damage.truncate(dir.resolve("metadata.cq4t"), 1000);
        Pass p = readAll(dir);
        assertThat(p.seqs()).isEqualTo(seqsExcept(s -> false));
        assertThat(p.integrity().damage()).singleElement().satisfies(d -> {
            assertThat(d.file()).isEqualTo("metadata.cq4t");
            assertThat(d.lostEntries()).isZero();
            assertThat(d.what()).contains("metadata.cq4t is 1000 bytes").contains("truncated");
        });
        assertThatThrownBy(() -> JournalWriter.open(dir, Samples.header())).isInstanceOf(JournalException.class)
                .hasMessageContaining("metadata.cq4t is 1000 bytes").hasMessageContaining("move metadata.cq4t away");
    }

    // ---- writers, tailers, version 1 ----------------------------------------------------

    @Test
    void a_writer_does_not_append_to_a_damaged_journal() {
        Path dir = copy();
        Damage.zero(Damage.queueFile(dir), ((entries.getFirst().pos() + dataEnd()) / 2) & ~4095L, 4096);
        assertThatThrownBy(() -> JournalWriter.open(dir, Samples.header())).isInstanceOf(JournalException.class)
                .hasMessageContaining("is damaged (1 region, the first: ").hasMessageContaining("nothing is appended");
    }

    /**
     * Chronicle's file header records where its last excerpt starts, and its appender resumes
     * there. Pointed inside an entry, a writer reopening the journal would take the entry's bytes
     * for an excerpt header and append far from the data (tried: 800 MB past it, behind a hole of
     * zeros). Every entry still reads; the header is reported, and a writer refuses the journal.
     * Pointed at an earlier excerpt's start, the appender walks on to the end: not damage.
     */
    @Test
    void a_write_position_inside_an_entry_is_reported_and_refused_by_a_writer() {
        Path dir = copy();
        Path file = Damage.queueFile(dir);
        long last = entries.getLast().pos();
        long at = Damage.longAfter(file, "writePosition", last);
        assertThat(at).as("Chronicle's header records the last excerpt's start").isPositive();
        assertThat(JournalReader.check(pristine).damage()).isEmpty();

        Damage.writeLong(file, at, entries.get(entries.size() - 2).pos());
        assertThat(readAll(dir).integrity().damage()).isEmpty();

        long inside = last + 8;
        Damage.writeLong(file, at, inside);
        Pass p = readAll(dir);
        assertThat(p.seqs()).isEqualTo(seqsExcept(s -> false));
        assertThat(p.integrity().damage()).singleElement().satisfies(d -> {
            assertThat(d.offset()).isZero();
            assertThat(d.lostEntries()).isZero();
            assertThat(d.lastGoodSeq()).isEqualTo(ENTRIES - 1);
            assertThat(d.what()).contains("records its last excerpt at byte "
                    + String.format(java.util.Locale.ROOT, "%,d", inside) + ", where no excerpt starts (the last one starts at byte "
                    + String.format(java.util.Locale.ROOT, "%,d", last) + ")");
        });
        assertThatThrownBy(() -> JournalWriter.open(dir, Samples.header())).isInstanceOf(JournalException.class)
                .hasMessageContaining("is damaged (1 region").hasMessageContaining("where no excerpt starts")
                .hasMessageContaining("nothing is appended");
    }

    /**
     * Chronicle's appender writes the index entry of every 128th excerpt into an index array it
     * finds through two positions: the file header's {@code index2Index} (where the index2index
     * array is) and that array's entries (where each index array is). Either one pointing where no
     * metadata excerpt starts makes a writer reopening the journal fail at its next index entry
     * (tried: "expecting index2index", "Meta data not ready"). Every entry still reads; the
     * position is reported, and a writer refuses the journal.
     */
    @Test
    void an_index_position_where_no_metadata_excerpt_starts_is_reported_and_refused_by_a_writer() {
        List<Damage.Excerpt> meta = Damage.excerpts(Damage.queueFile(pristine)).stream()
                .filter(Damage.Excerpt::meta).toList();
        long index2index = meta.get(1).pos();
        long index = meta.get(2).pos();

        Path dir = copy();
        Path file = Damage.queueFile(dir);
        long at = Damage.longAfter(file, "index2Index", index2index);
        assertThat(at).as("the header records the index2index array's position").isPositive();
        Damage.writeLong(file, at, index2index + 4);
        assertIndexDamage(dir, 0, "Chronicle's file header records its index2index array at byte "
                + String.format(java.util.Locale.ROOT, "%,d", index2index + 4));

        Path dir2 = Damage.copyJournal(pristine, tmp.resolve("P2"));
        Path file2 = Damage.queueFile(dir2);
        long at2 = Damage.longAfter(file2, "index2index", index);
        assertThat(at2).as("the index2index array records the index array's position").isPositive();
        Damage.writeLong(file2, at2, index + 256);
        assertIndexDamage(dir2, index2index, "Chronicle's index2index array records an index array at byte "
                + String.format(java.util.Locale.ROOT, "%,d", index + 256));
    }

    private static void assertIndexDamage(Path dir, long offset, String what) {
        Pass p = readAll(dir);
        assertThat(p.seqs()).isEqualTo(seqsExcept(s -> false));
        assertThat(p.integrity().damage()).singleElement().satisfies(d -> {
            assertThat(d.offset()).isEqualTo(offset);
            assertThat(d.lostEntries()).isZero();
            assertThat(d.what()).startsWith(what + ", where no metadata excerpt starts");
        });
        assertThatThrownBy(() -> JournalWriter.open(dir, Samples.header())).isInstanceOf(JournalException.class)
                .hasMessageContaining("is damaged (1 region").hasMessageContaining(what);
    }

    @Test
    void a_tailer_reads_past_damage_and_reports_it() {
        Path dir = copy();
        long page = ((entries.getFirst().pos() + dataEnd()) / 2) & ~4095L;
        Damage.zero(Damage.queueFile(dir), page, 4096);
        TreeSet<Long> lost = overlapping(page, page + 4096);
        List<Long> seqs = new ArrayList<>();
        try (JournalTailer t = JournalTailer.open(dir, true)) {
            JournalEntry e;
            while ((e = t.poll(java.time.Duration.ZERO)) != null) {
                seqs.add(e.seq());
            }
            assertThat(t.warnings()).anySatisfy(w -> assertThat(w).contains("journal damaged").contains(
                    lost.size() + " entries after it could not be read"));
        }
        assertThat(seqs).isEqualTo(seqsExcept(lost::contains));
    }

    /** Version 1 entries carry no checksum: they still read, and the pass says how many were unchecked. */
    @Test
    void a_version_1_journal_reads_unchecked_and_resumes_after_a_zeroed_page() {
        Path dir = tmp.resolve("v1");
        JournalTest.appendRaw(dir, JournalTest.rawEntry(1, EntryKind.HEADER, 0, 0, 0,
                EntryCodec.headerPayload(Samples.header().withFormatVersion(1))));
        int n = 400;
        for (int i = 1; i <= n; i++) {
            JournalTest.appendRaw(dir, JournalTest.rawEntry(1, EntryKind.INPUT, EntryType.TICK.id(), i, i,
                    Payloads.encode(new NodeEvent.Tick(i))));
        }
        Pass clean = readAll1(dir);
        assertThat(clean.seqs()).hasSize(n + 1);
        assertThat(clean.integrity().checked()).isZero();
        assertThat(clean.integrity().unchecked()).isEqualTo(n + 1);
        assertThat(clean.integrity().damage()).isEmpty();

        List<Damage.Excerpt> v1 = Damage.entries(Damage.queueFile(dir));
        long page = ((v1.get(1).pos() + v1.getLast().end()) / 2) & ~4095L;
        Damage.zero(Damage.queueFile(dir), page, 4096);
        TreeSet<Long> lost = new TreeSet<>();
        for (int i = 0; i < v1.size(); i++) {
            if (v1.get(i).pos() < page + 4096 && v1.get(i).end() > page) {
                lost.add((long) i);
            }
        }
        Pass p = readAll1(dir);
        assertThat(p.seqs()).isEqualTo(LongStream.rangeClosed(0, n).filter(s -> !lost.contains(s)).boxed().toList());
        assertThat(p.integrity().damage()).singleElement().satisfies(d -> assertThat(d.lostEntries()).isEqualTo(lost.size()));
    }

    private static Pass readAll1(Path dir) {
        try (JournalReader r = JournalReader.open(dir)) {
            List<Long> seqs = new ArrayList<>();
            for (JournalEntry e : r) {
                seqs.add(e.seq());
                assertThat(e).isNotInstanceOf(JournalEntry.Unknown.class);
            }
            return new Pass(seqs, r.integrity(), r.warnings());
        }
    }
}
