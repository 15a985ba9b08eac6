package io.kvledger.journal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.KvParams;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Group excerpts ({@link JournalWriter#beginGroup}): several entries in one Chronicle excerpt, as
 * the node loop's journaller writes them. A grouped journal reads back entry for entry as the same
 * entries appended one excerpt each; a writer reopens it and continues its sequence; and damage
 * costs exactly the members it hits, because a member is framed as an excerpt with its own
 * checksum and the search after a damaged group finds the intact ones.
 */
class GroupedJournalTest {

    /** Inputs in the shared journal; group k holds {@code k % 13 + 1} of them. */
    static final int INPUTS = 6_000;

    @TempDir
    static Path shared;

    @TempDir
    Path tmp;

    static Path pristine;
    /** What was written, by seq. */
    static List<JournalEntry> written;
    /** Where each seq lies in the queue file (by seq; the header's too). */
    static List<Place> places;

    /** The bytes of one entry: from its length word (or excerpt header) to its end; whether a group holds it. */
    record Place(long seq, long pos, long end, boolean member) {}

    @BeforeAll
    static void writeJournal() {
        pristine = shared.resolve("pristine");
        written = new ArrayList<>();
        try (JournalWriter w = JournalWriter.open(pristine, Samples.header())) {
            int i = 0;
            for (int g = 0; i < INPUTS; g++) {
                w.beginGroup();
                for (int k = 0; k <= g % 13 && i < INPUTS; k++, i++) {
                    appendInput(w, i);
                }
                w.endGroup();
            }
        }
        try (JournalReader r = JournalReader.open(pristine)) {
            written.add(r.iterator().next());
        }
        written.sort(java.util.Comparator.comparingLong(JournalEntry::seq));
        places = layout(Damage.queueFile(pristine));
        assertThat(places).extracting(Place::seq).isEqualTo(java.util.stream.LongStream.range(0, written.size()).boxed().toList());
    }

    /** Input i: a tick, then i % 3 derived entries (so groups mix sizes and kinds). */
    private static void appendInput(JournalWriter w, int i) {
        long at = (i + 1) * 1_000L;
        long seq = w.appendInput(new NodeEvent.Tick(at));
        written.add(new JournalEntry.Input(seq, at, new NodeEvent.Tick(at)));
        for (int d = 0; d < i % 3; d++) {
            Effect e = new Effect.StaleAckDropped("r" + i + "-" + d);
            long ds = w.appendDerived(seq, e);
            written.add(new JournalEntry.Derived(ds, seq, at, e));
        }
    }

    /** Walks an intact queue file as journal/FORMAT.md describes it, members of groups included. */
    static List<Place> layout(Path file) {
        byte[] d;
        try {
            d = Files.readAllBytes(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        ByteBuffer b = ByteBuffer.wrap(d).order(ByteOrder.LITTLE_ENDIAN);
        List<Place> out = new ArrayList<>();
        for (Damage.Excerpt x : Damage.entries(file)) {
            int at = (int) x.pos() + 4;
            if (d[at] != JournalFormat.GROUP_LAYOUT) {
                out.add(new Place(b.getLong(at + 4), x.pos(), x.end(), false));
                continue;
            }
            int m = at + JournalFormat.ENVELOPE_V2;
            while (m < x.end()) {
                int len = b.getInt(m);
                out.add(new Place(b.getLong(m + 4 + 4), m, m + 4 + len, true));
                m = (m + 4 + len + 3) & ~3;
            }
        }
        return out;
    }

    private Path copy() {
        return Damage.copyJournal(pristine, tmp.resolve("P1"));
    }

    record Pass(List<JournalEntry> entries, JournalReader.Integrity integrity) {
        List<Long> seqs() {
            return entries.stream().map(JournalEntry::seq).toList();
        }
    }

    static Pass readAll(Path dir) {
        try (JournalReader r = JournalReader.open(dir)) {
            List<JournalEntry> out = new ArrayList<>();
            for (JournalEntry e : r) {
                out.add(e);
            }
            return new Pass(out, r.integrity());
        }
    }

    static List<Long> seqsExcept(java.util.Set<Long> lost) {
        return written.stream().map(JournalEntry::seq).filter(s -> !lost.contains(s)).toList();
    }

    static long dataEnd() {
        return places.getLast().end();
    }

    // ---- intact ---------------------------------------------------------------------------

    @Test
    void a_grouped_journal_reads_back_every_entry_as_written_and_checks_clean() {
        assertThat(places.stream().filter(Place::member).count()).as("most entries are in groups")
                .isGreaterThan(written.size() * 9L / 10);
        Pass p = readAll(pristine);
        assertThat(p.entries()).isEqualTo(written);
        JournalReader.Integrity check = JournalReader.check(pristine);
        assertThat(check.damage()).isEmpty();
        assertThat(check.checked()).isEqualTo(written.size());
        byte[] file = Damage.read(Damage.queueFile(pristine));
        assertThat(check.groups()).isEqualTo(Damage.entries(Damage.queueFile(pristine)).stream()
                .filter(x -> file[(int) x.pos() + 4] == JournalFormat.GROUP_LAYOUT).count())
                .isGreaterThan(400);
    }

    @Test
    void a_group_holds_the_same_entry_bytes_as_one_excerpt_per_entry() {
        Path plain = tmp.resolve("plain");
        Path grouped = tmp.resolve("grouped");
        try (JournalWriter a = JournalWriter.open(plain, Samples.header());
             JournalWriter g = JournalWriter.open(grouped, Samples.header())) {
            g.beginGroup();
            for (Object o : Samples.all()) {
                if (o instanceof NodeEvent e) {
                    a.appendInput(e);
                    g.appendInput(e);
                } else if (o instanceof Effect e) {
                    a.appendDerived(a.lastInputSeq(), e);
                    g.appendDerived(g.lastInputSeq(), e);
                }
            }
            g.endGroup();
        }
        assertThat(rawEntries(grouped)).containsExactlyElementsOf(rawEntries(plain));
        assertThat(Damage.entries(Damage.queueFile(grouped))).as("the header and one group").hasSize(2);
    }

    /** Each entry's bytes as a reader hands them out, as hex. */
    private static List<String> rawEntries(Path dir) {
        List<String> out = new ArrayList<>();
        Queues.Buffer buf = new Queues.Buffer();
        try (QueueScanner s = new QueueScanner(dir, false)) {
            while (s.next(buf)) {
                out.add(java.util.HexFormat.of().formatHex(buf.bytes, buf.offset, buf.length));
            }
        }
        return out;
    }

    @Test
    void a_group_of_one_entry_is_a_plain_excerpt_and_an_empty_group_writes_nothing() {
        Path dir = tmp.resolve("P0");
        try (JournalWriter w = JournalWriter.open(dir, Samples.header())) {
            w.beginGroup();
            w.endGroup();
            w.beginGroup();
            assertThat(w.appendInput(new NodeEvent.Tick(5))).isEqualTo(1);
            assertThat(w.groupEntries()).isEqualTo(1);
            w.endGroup();
            assertThatThrownBy(w::endGroup).isInstanceOf(IllegalStateException.class);
        }
        List<Damage.Excerpt> xs = Damage.entries(Damage.queueFile(dir));
        assertThat(xs).hasSize(2);
        assertThat(Damage.read(Damage.queueFile(dir))[(int) xs.get(1).pos() + 4]).isEqualTo((byte) JournalFormat.FORMAT_VERSION);
        assertThat(readAll(dir).seqs()).containsExactly(0L, 1L);
    }

    @Test
    void a_refused_value_inside_a_group_leaves_the_group_and_its_other_entries_intact() {
        Path dir = tmp.resolve("P0");
        try (JournalWriter w = JournalWriter.open(dir, Samples.header())) {
            w.beginGroup();
            w.appendInput(new NodeEvent.Tick(1));
            var bad = new NodeEvent.RequestAdmitted(2, "r", 1, 1, KvParams.of(Map.of("k", new Object())));
            int before = w.groupBytes();
            assertThatThrownBy(() -> w.appendInput(bad)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("java.lang.Object");
            assertThat(w.groupBytes()).isEqualTo(before);
            assertThat(w.appendInput(new NodeEvent.Tick(3))).isEqualTo(2);
            w.appendDerived(2, new Effect.StaleAckDropped("r"));
            w.endGroup();
        }
        Pass p = readAll(dir);
        assertThat(p.seqs()).containsExactly(0L, 1L, 2L, 3L);
        assertThat(p.integrity().damage()).isEmpty();
    }

    @Test
    void a_writer_reopens_a_grouped_journal_and_continues_its_sequence() {
        Path dir = copy();
        long next = written.getLast().seq() + 1;
        try (JournalWriter w = JournalWriter.open(dir, Samples.header())) {
            assertThat(w.nextSeq()).isEqualTo(next);
            assertThat(w.lastInputSeq()).isEqualTo(written.stream()
                    .filter(e -> e instanceof JournalEntry.Input).mapToLong(JournalEntry::seq).max().orElseThrow());
            w.beginGroup();
            w.appendInput(new NodeEvent.Tick(1));
            w.appendInput(new NodeEvent.Tick(2));
            w.endGroup();
        }
        Pass p = readAll(dir);
        assertThat(p.seqs()).endsWith(next, next + 1);
        assertThat(p.integrity().damage()).isEmpty();
    }

    // ---- damage ---------------------------------------------------------------------------

    /**
     * Random bit flips from the first group on: an entry is lost exactly when a flip landed in its
     * bytes or its length word (except that word's metadata bit alone); a flip in a group's own
     * envelope, excerpt header or padding loses no entry, because the intact members are found
     * by their own checksums.
     */
    @ParameterizedTest
    @ValueSource(ints = {1, 10, 100, 1_000})
    void random_bit_flips_lose_exactly_the_members_they_hit(int count) {
        long seed = 0x6_5EEDL + count;
        Path dir = copy();
        long from = places.get(1).pos();
        long[] flips = Damage.flip(Damage.queueFile(dir), from, dataEnd(), count, seed);
        TreeSet<Long> lost = hit(flips);
        Pass p = readAll(dir);
        assertThat(p.seqs()).as("seed %d", seed).isEqualTo(seqsExcept(lost));
        for (JournalEntry e : p.entries()) {
            assertThat(e).as("seed %d", seed).isEqualTo(written.get((int) e.seq()));
        }
        long last = written.getLast().seq();
        if (lost.contains(last)) {
            // the end of a grouped file says only that entries were lost there, not how many
            assertThat(p.integrity().lossUnknown()).isTrue();
        } else {
            assertThat(p.integrity().lostEntries()).as("seed %d", seed).isEqualTo(lost.size());
            assertThat(p.integrity().lossUnknown()).isFalse();
        }
        if (!lost.isEmpty()) {
            assertThat(p.integrity().damage()).isNotEmpty();
        }
    }

    static TreeSet<Long> hit(long[] flips) {
        TreeSet<Long> bits = Damage.netFlips(flips);
        TreeSet<Long> lost = new TreeSet<>();
        for (Place x : places) {
            if (Damage.destroys(bits, x.pos(), x.end())) {
                lost.add(x.seq());
            }
        }
        return lost;
    }

    @Test
    void a_zeroed_page_in_the_middle_loses_exactly_the_members_on_it() {
        Path dir = copy();
        long page = ((places.get(1).pos() + dataEnd()) / 2) & ~4095L;
        Damage.zero(Damage.queueFile(dir), page, 4096);
        TreeSet<Long> lost = new TreeSet<>();
        for (Place x : places) {
            if (x.pos() < page + 4096 && x.end() > page) {
                lost.add(x.seq());
            }
        }
        assertThat(lost).hasSizeGreaterThan(50);
        Pass p = readAll(dir);
        assertThat(p.seqs()).isEqualTo(seqsExcept(lost));
        assertThat(p.integrity().lostEntries()).isEqualTo(lost.size());
        assertThat(p.integrity().damage()).isNotEmpty().allSatisfy(d -> assertThat(d.resumeSeq()).isPositive());
    }

    @Test
    void a_zeroed_end_of_a_grouped_file_is_reported() {
        Path dir = copy();
        long page = (dataEnd() - 1) & ~4095L;
        Damage.zero(Damage.queueFile(dir), page, 4096);
        TreeSet<Long> lost = new TreeSet<>();
        for (Place x : places) {
            if (x.end() > page) {
                lost.add(x.seq());
            }
        }
        Pass p = readAll(dir);
        assertThat(p.seqs()).isEqualTo(seqsExcept(lost));
        assertThat(p.integrity().damage()).isNotEmpty();
        assertThat(p.integrity().lossUnknown()).isTrue();
        assertThatThrownBy(() -> JournalWriter.open(dir, Samples.header()).close())
                .isInstanceOf(JournalException.class).hasMessageContaining("is damaged");
    }

    @Test
    void a_grouped_file_whose_last_excerpts_are_cut_at_an_excerpt_boundary_is_reported() {
        // zero the last group excerpt whole, header word included: the walk ends cleanly before it,
        // and only Chronicle's record of where its last excerpt starts shows the loss
        Path dir = copy();
        Damage.Excerpt lastGroup = Damage.entries(Damage.queueFile(dir)).getLast();
        Damage.zero(Damage.queueFile(dir), lastGroup.pos(), (int) (lastGroup.end() - lastGroup.pos()));
        Pass p = readAll(dir);
        TreeSet<Long> lost = new TreeSet<>();
        for (Place x : places) {
            if (x.pos() >= lastGroup.pos()) {
                lost.add(x.seq());
            }
        }
        assertThat(p.seqs()).isEqualTo(seqsExcept(lost));
        assertThat(p.integrity().damage()).singleElement().satisfies(d ->
                assertThat(d.what()).contains("records an excerpt at byte"));
    }
}
