package io.kvledger.journal;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.journal.format.EntryKind;
import io.kvledger.journal.format.EntryType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import net.openhft.chronicle.queue.ExcerptAppender;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueue;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueueBuilder;
import net.openhft.chronicle.wire.DocumentContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The search after damage reads the file about once: a word of an entry's payload that reads as
 * the header of a long excerpt is not followed by a read of that length, and a window grown for
 * one is not read whole at every step after it.
 */
class DamagedSearchReadsTest {

    @TempDir
    Path tmp;

    @Test
    void a_pass_over_a_damaged_journal_reads_the_file_about_once() {
        Path dir = tmp.resolve("P0");
        int n = 12_000;
        SplittableRandom rnd = new SplittableRandom(34);
        try (SingleChronicleQueue q = SingleChronicleQueueBuilder.single(dir.toFile())
                .rollCycle(JournalFormat.ROLL_CYCLE).build();
             ExcerptAppender a = q.createAppender()) {
            for (int seq = 1; seq <= n; seq++) {
                byte[] payload = new byte[1_000 + rnd.nextInt(1_000)];
                rnd.nextBytes(payload);
                payload[0] = (byte) 0x91;
                byte[] e = JournalTest.rawEntry(2, EntryKind.INPUT, EntryType.TICK.id(), seq, seq, payload);
                try (DocumentContext dc = a.writingDocument()) {
                    dc.wire().bytes().write(e);
                }
            }
        }
        Path file = Damage.queueFile(dir);
        var entries = Damage.entries(file);
        long dataEnd = entries.getLast().pos() + 4 + entries.getLast().len();
        // a bit flipped in every 100th entry's payload: each is searched past
        for (int k = 100; k < entries.size(); k += 100) {
            Damage.flip(file, entries.get(k).pos() + 4 + 40, entries.get(k).pos() + 4 + 41, 1, k);
        }
        long size;
        try {
            size = Files.size(file);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        try (QueueScanner s = new QueueScanner(dir, false, false)) {
            Queues.Buffer buf = Queues.Buffer.inPlace();
            int good = 0;
            while (s.next(buf)) {
                good++;
            }
            assertThat(good).isEqualTo(n - (entries.size() - 1) / 100);
            assertThat(s.damage()).hasSize((entries.size() - 1) / 100);
            System.out.printf("damaged search: %,d bytes read over a file of %,d (data %,d)%n", s.bytesRead(), size,
                    dataEnd);
            assertThat(s.bytesRead()).as("bytes read over a file of %,d bytes of data", dataEnd)
                    .isLessThan(2 * dataEnd + (4 << 20));
        }
    }
}
