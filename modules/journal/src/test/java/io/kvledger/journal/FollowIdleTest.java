package io.kvledger.journal;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.format.EntryKind;
import io.kvledger.journal.format.EntryType;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import net.openhft.chronicle.core.time.SetTimeProvider;
import net.openhft.chronicle.queue.ExcerptAppender;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueue;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueueBuilder;
import net.openhft.chronicle.wire.DocumentContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a follower ({@link QueueScanner} in follow mode, under {@code kvledger tail -f} and
 * {@code /v1/events}) costs while the journal is idle, and that it still sees new entries and a
 * roll to a new file.
 */
class FollowIdleTest {

    @TempDir
    Path tmp;

    /** Bounds a wait for a condition (a failure, not a speed target). */
    private static final long GIVE_UP_NS = TimeUnit.SECONDS.toNanos(60);
    private static final long DAY_MS = TimeUnit.DAYS.toMillis(1);

    @Test
    void an_idle_poll_reads_a_few_bytes_and_still_sees_the_next_entry() {
        Path dir = tmp.resolve("P0");
        try (JournalWriter w = JournalWriter.open(dir, Samples.header());
             QueueScanner s = new QueueScanner(dir, true)) {
            for (int i = 1; i <= 100; i++) {
                w.appendInput(new NodeEvent.Tick(i));
            }
            Queues.Buffer buf = new Queues.Buffer();
            int n = 0;
            while (s.next(buf)) {
                n++;
            }
            assertThat(n).isEqualTo(101);
            long bytes = s.bytesRead();
            long listings = s.listings();
            int polls = 100;
            for (int i = 0; i < polls; i++) {
                assertThat(s.next(buf)).isFalse();
            }
            long perPoll = (s.bytesRead() - bytes) / polls;
            assertThat(perPoll).as("bytes read per idle poll").isLessThanOrEqualTo(8 * 1024);
            assertThat(s.listings() - listings).as("directory listings in %d idle polls", polls)
                    .isLessThan(polls / 2);
            w.appendApplied(new NodeEvent.Tick(101), List.of(new Effect.StaleAckDropped("r")));
            assertThat(s.next(buf)).as("the next entry, seen at the first poll after it was written").isTrue();
            assertThat(EntryCodec.seq(buf.bytes, buf.offset)).isEqualTo(101);
            assertThat(s.next(buf)).isTrue();
            assertThat(EntryCodec.seq(buf.bytes, buf.offset)).isEqualTo(102);
            assertThat(s.next(buf)).isFalse();
            assertThat(s.damage()).isEmpty();
        }
    }

    /** Chronicle rolls to the next day's file, ending the old one with its end marker. */
    @Test
    void a_follower_goes_on_into_the_next_days_file_when_the_writer_rolls() {
        Path dir = tmp.resolve("P0");
        SetTimeProvider clock = new SetTimeProvider(TimeUnit.DAYS.toNanos(20_000) + 1);
        try (SingleChronicleQueue q = queue(dir, clock); ExcerptAppender a = q.createAppender();
             QueueScanner s = new QueueScanner(dir, true)) {
            append(a, 1, 10);
            Queues.Buffer buf = new Queues.Buffer();
            assertThat(drain(s, buf, 10)).containsExactly(seqs(1, 10));
            idle(s, buf);
            clock.advanceMillis(DAY_MS);
            append(a, 11, 20);
            assertThat(QueueScanner.listFiles(dir)).hasSize(2);
            assertThat(endsWithMarker(QueueScanner.listFiles(dir).getFirst())).as("the old file's end marker").isTrue();
            assertThat(drain(s, buf, 10)).containsExactly(seqs(11, 20));
            assertThat(s.fileName()).isEqualTo(QueueScanner.listFiles(dir).get(1).getFileName().toString());
            idle(s, buf);
            assertThat(s.damage()).isEmpty();
        }
    }

    /**
     * A new file appears while the current one has no end marker (a writer that died and a new one
     * that started the next day): the follower goes on into it once it lists the directory again.
     */
    @Test
    void a_follower_goes_on_into_a_new_file_after_one_left_without_an_end_marker() throws Exception {
        Path dir = tmp.resolve("P0");
        Path other = tmp.resolve("other");
        SetTimeProvider clock = new SetTimeProvider(TimeUnit.DAYS.toNanos(20_000) + 1);
        try (SingleChronicleQueue q = queue(dir, clock); ExcerptAppender a = q.createAppender()) {
            append(a, 1, 10);
        }
        clock.advanceMillis(DAY_MS);
        try (SingleChronicleQueue q = queue(other, clock); ExcerptAppender a = q.createAppender()) {
            append(a, 11, 20);
        }
        Path first = QueueScanner.listFiles(dir).getFirst();
        Path next = QueueScanner.listFiles(other).getFirst();
        assertThat(next.getFileName().toString()).isGreaterThan(first.getFileName().toString());
        assertThat(endsWithMarker(first)).as("the first file's end marker").isFalse();
        try (QueueScanner s = new QueueScanner(dir, true)) {
            Queues.Buffer buf = new Queues.Buffer();
            assertThat(drain(s, buf, 10)).containsExactly(seqs(1, 10));
            idle(s, buf);
            Path part = dir.resolve("incoming.part");
            Files.copy(next, part);
            Files.move(part, dir.resolve(next.getFileName()), StandardCopyOption.ATOMIC_MOVE);
            assertThat(drain(s, buf, 10)).containsExactly(seqs(11, 20));
            assertThat(s.fileName()).isEqualTo(next.getFileName().toString());
            assertThat(s.damage()).isEmpty();
        }
    }

    /**
     * The probe behind the figures quoted for the follower's idle cost (run with
     * {@code -Dkvledger.followProbe=true}): CPU time of the following thread, bytes it read and
     * directory listings, over idle polls of a journal whose writer is open.
     */
    @Test
    @EnabledIfSystemProperty(named = "kvledger.followProbe", matches = "true")
    void probe_the_idle_cost() {
        Path dir = tmp.resolve("P0");
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        try (JournalWriter w = JournalWriter.open(dir, Samples.header())) {
            for (int i = 1; i <= 10_000; i++) {
                w.appendInput(new NodeEvent.Tick(i));
            }
            try (QueueScanner s = new QueueScanner(dir, true)) {
                Queues.Buffer buf = new Queues.Buffer();
                while (s.next(buf)) {
                    // to the end
                }
                int polls = 1_000;
                long hot = mx.getCurrentThreadCpuTime();
                for (int i = 0; i < 10 * polls; i++) {
                    s.next(buf);
                }
                hot = mx.getCurrentThreadCpuTime() - hot;
                System.out.printf("probe scanner: %d idle next() back to back: %.1f us each%n", 10 * polls,
                        hot / 1e4 / polls);
                long floor = mx.getCurrentThreadCpuTime();
                for (int i = 0; i < polls; i++) {
                    LockSupport.parkNanos(5_000_000);
                }
                floor = mx.getCurrentThreadCpuTime() - floor;
                long bytes = s.bytesRead();
                long listings = s.listings();
                long cpu = mx.getCurrentThreadCpuTime();
                for (int i = 0; i < polls; i++) {
                    s.next(buf);
                    LockSupport.parkNanos(5_000_000);
                }
                cpu = mx.getCurrentThreadCpuTime() - cpu;
                System.out.printf("probe scanner: %d idle next() 5 ms apart: cpu %.1f ms (%.1f us/poll; the pauses alone"
                                + " %.1f ms), %d bytes read (%d/poll), %d listings%n", polls, cpu / 1e6, cpu / 1e3 / polls,
                        floor / 1e6, s.bytesRead() - bytes, (s.bytesRead() - bytes) / polls, s.listings() - listings);
            }
            try (JournalTailer t = JournalTailer.open(dir, false)) {
                long cpu = mx.getCurrentThreadCpuTime();
                long wall = System.nanoTime();
                for (int i = 0; i < 50; i++) {
                    assertThat(t.poll(Duration.ofMillis(100))).isNull();
                }
                cpu = mx.getCurrentThreadCpuTime() - cpu;
                wall = System.nanoTime() - wall;
                System.out.printf("probe tailer: 50 idle poll(100 ms): cpu %.1f ms in %.0f ms wall (%.1f %% of a core)%n",
                        cpu / 1e6, wall / 1e6, 100.0 * cpu / wall);
            }
        }
    }

    private static SingleChronicleQueue queue(Path dir, SetTimeProvider clock) {
        return SingleChronicleQueueBuilder.single(dir.toFile()).rollCycle(JournalFormat.ROLL_CYCLE)
                .timeProvider(clock).build();
    }

    private static void append(ExcerptAppender a, long from, long to) {
        for (long seq = from; seq <= to; seq++) {
            byte[] e = JournalTest.rawEntry(2, EntryKind.INPUT, EntryType.TICK.id(), seq, seq, new byte[] {(byte) 0x91, 1});
            try (DocumentContext dc = a.writingDocument()) {
                dc.wire().bytes().write(e);
            }
        }
    }

    /** The seqs of the next {@code n} entries, waiting for each (a writer may still be writing). */
    private static List<Long> drain(QueueScanner s, Queues.Buffer buf, int n) {
        List<Long> out = new ArrayList<>();
        long giveUp = System.nanoTime() + GIVE_UP_NS;
        while (out.size() < n && System.nanoTime() < giveUp) {
            if (s.next(buf)) {
                out.add(EntryCodec.seq(buf.bytes, buf.offset));
            } else {
                LockSupport.parkNanos(1_000_000);
            }
        }
        return out;
    }

    /** A few polls at the end: nothing new. */
    private static void idle(QueueScanner s, Queues.Buffer buf) {
        for (int i = 0; i < 3; i++) {
            assertThat(s.next(buf)).isFalse();
        }
    }

    /** Whether the excerpts of an intact queue file end with Chronicle's end marker (not zeros). */
    private static boolean endsWithMarker(Path file) {
        java.nio.ByteBuffer b;
        try {
            b = java.nio.ByteBuffer.wrap(Files.readAllBytes(file)).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        int pos = 0;
        while (pos + 4 <= b.limit()) {
            int h = b.getInt(pos);
            if (h == 0 || h == QueueScanner.END_OF_DATA) {
                return h == QueueScanner.END_OF_DATA;
            }
            pos = (pos + 4 + (h & QueueScanner.LENGTH_MASK) + 3) & ~3;
        }
        return false;
    }

    private static Long[] seqs(long from, long to) {
        Long[] out = new Long[(int) (to - from + 1)];
        for (int i = 0; i < out.length; i++) {
            out[i] = from + i;
        }
        return out;
    }
}
