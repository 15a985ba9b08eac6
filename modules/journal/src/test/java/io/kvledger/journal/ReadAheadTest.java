package io.kvledger.journal;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The scanner with its read-ahead ({@link ReadAhead}) against the scanner reading for itself, over
 * a journal of several read-ahead chunks with entries of every size (some larger than the room in
 * front of a chunk, some larger than a chunk), intact and damaged across chunk boundaries: the
 * same entries, byte for byte, and the same damage reports.
 */
class ReadAheadTest {

    @TempDir
    static Path shared;

    @TempDir
    Path tmp;

    static Path pristine;
    static List<Damage.Excerpt> entries;

    @BeforeAll
    static void writeJournal() {
        pristine = shared.resolve("pristine");
        SplittableRandom rnd = new SplittableRandom(20261203);
        try (JournalWriter w = JournalWriter.open(pristine, Samples.header())) {
            for (int i = 1; i <= 3_000; i++) {
                int len = i % 700 == 0 ? ReadAhead.SLACK + rnd.nextInt(ReadAhead.CHUNK) // beyond the slack, or a chunk
                        : i % 50 == 0 ? rnd.nextInt(ReadAhead.SLACK / 2) : 1 + rnd.nextInt(3_000);
                w.appendApplied(new NodeEvent.LayerSaved(i * 1_000L, "layer-" + i + "-" + "x".repeat(len)),
                        List.of(new Effect.StaleAckDropped("r" + i)));
            }
        }
        entries = Damage.entries(Damage.queueFile(pristine));
        assertThat(entries.getLast().end()).as("several chunks of data").isGreaterThan(6L * ReadAhead.CHUNK);
    }

    /** What a scanner hands out and reports over a journal. */
    record Scan(List<String> entries, List<JournalDamage> damage, long checked, long chunks) {}

    static Scan scan(Path dir, boolean readAhead) {
        try (QueueScanner s = new QueueScanner(dir, false, readAhead)) {
            Queues.Buffer buf = Queues.Buffer.inPlace();
            List<String> out = new ArrayList<>();
            while (s.next(buf)) {
                out.add(HexFormat.of().formatHex(Arrays.copyOfRange(buf.bytes, buf.offset, buf.offset + buf.length)));
            }
            return new Scan(out, List.copyOf(s.damage()), s.checked(), s.chunksReadAhead());
        }
    }

    static void assertSame(Path dir) {
        Scan own = scan(dir, false);
        Scan ahead = scan(dir, true);
        assertThat(own.chunks()).isZero();
        System.out.println(dir.getFileName() + ": " + ahead.chunks() + " chunks read ahead, " + ahead.damage().size() + " damaged regions");
        // (after damage the scanner's own reads take over until the walk goes on past them: a
        // file damaged all over may never use the read-ahead)
        assertThat(ahead.chunks() > 0 || ahead.damage().size() > 100).as("the read-ahead was used").isTrue();
        assertThat(ahead.entries().size()).isEqualTo(own.entries().size());
        assertThat(ahead.entries()).isEqualTo(own.entries());
        assertThat(ahead.damage()).isEqualTo(own.damage());
        assertThat(ahead.checked()).isEqualTo(own.checked());
    }

    @Test
    void an_intact_journal_reads_the_same_entries_and_the_reader_checks_them_all() {
        assertSame(pristine);
        Scan s = scan(pristine, true);
        assertThat(s.chunks()).isGreaterThan(5);
        assertThat(s.entries()).hasSize(entries.size());
        assertThat(s.damage()).isEmpty();
        try (JournalReader r = JournalReader.open(pristine)) {
            long n = 0;
            for (JournalEntry e : r) {
                n++;
            }
            assertThat(n).isEqualTo(entries.size());
            assertThat(r.integrity().damage()).isEmpty();
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 20, 500})
    void bit_flips_read_the_same_with_and_without_it(int count) {
        long seed = 0xA11EADL + count;
        System.out.println("read-ahead bit flips: " + count + ", seed " + seed);
        Path dir = Damage.copyJournal(pristine, tmp.resolve("J"));
        Damage.flip(Damage.queueFile(dir), entries.get(1).pos(), entries.getLast().end(), count, seed);
        assertSame(dir);
    }

    @Test
    void zeroed_pages_across_chunk_boundaries_read_the_same() {
        Path dir = Damage.copyJournal(pristine, tmp.resolve("J"));
        Path f = Damage.queueFile(dir);
        Damage.zero(f, 2L * ReadAhead.CHUNK - 8192, 16384);
        Damage.zero(f, 4L * ReadAhead.CHUNK + 100, 3000);
        assertSame(dir);
        assertThat(scan(dir, true).damage()).isNotEmpty();
    }

    @Test
    void a_file_cut_short_reads_the_same() {
        Path dir = Damage.copyJournal(pristine, tmp.resolve("J"));
        Damage.truncate(Damage.queueFile(dir), 5L * ReadAhead.CHUNK + 4096 + 13);
        assertSame(dir);
    }
}
