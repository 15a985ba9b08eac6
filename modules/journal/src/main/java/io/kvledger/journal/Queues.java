package io.kvledger.journal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import net.openhft.chronicle.bytes.Bytes;
import net.openhft.chronicle.queue.ExcerptTailer;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueue;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueueBuilder;
import net.openhft.chronicle.wire.DocumentContext;

/** Chronicle Queue plumbing shared by the writer, reader and tailer. */
final class Queues {

    private Queues() {}

    /** Whether {@code dir} holds queue files (a journal, possibly empty). */
    static boolean hasQueueFiles(Path dir) {
        if (!Files.isDirectory(dir)) {
            return false;
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.anyMatch(p -> p.getFileName().toString().endsWith(".cq4"));
        } catch (IOException e) {
            throw new JournalException("cannot list " + dir + ": " + e.getMessage(), e);
        }
    }

    /**
     * The {@code .cq4} files of {@code dir} that are empty (0 bytes), sorted. Chronicle creates
     * its files at full size, so an empty one is a file a crash or a copy left behind; opening it
     * makes Chronicle wait about 12 s for a header that never comes.
     */
    static List<Path> emptyQueueFiles(Path dir) {
        try (Stream<Path> s = Files.list(dir)) {
            List<Path> out = new ArrayList<>();
            for (Path p : (Iterable<Path>) s::iterator) {
                if (p.getFileName().toString().endsWith(".cq4") && Files.isRegularFile(p) && Files.size(p) == 0) {
                    out.add(p);
                }
            }
            out.sort(null);
            return out;
        } catch (IOException e) {
            throw new JournalException("cannot list " + dir + ": " + e.getMessage(), e);
        }
    }

    static SingleChronicleQueue open(Path dir, boolean readOnly) {
        try {
            return SingleChronicleQueueBuilder.single(dir.toFile())
                    .rollCycle(JournalFormat.ROLL_CYCLE)
                    .readOnly(readOnly)
                    .build();
        } catch (RuntimeException e) {
            throw new JournalException("cannot open the journal in " + dir + ": " + e.getMessage(), e);
        }
    }

    /** A reusable buffer for reading excerpts. */
    static final class Buffer {
        byte[] bytes = new byte[1024];
        int length;

        /**
         * Reads the next complete excerpt into this buffer.
         *
         * @return false when there is none (end of the journal, or an excerpt still being written)
         */
        boolean next(ExcerptTailer tailer) {
            try (DocumentContext dc = tailer.readingDocument()) {
                if (!dc.isPresent()) {
                    return false;
                }
                Bytes<?> b = dc.wire().bytes();
                int n = (int) b.readRemaining();
                if (n > bytes.length) {
                    bytes = new byte[Math.max(n, bytes.length * 2)];
                }
                b.read(bytes, 0, n);
                length = n;
                return true;
            }
        }
    }
}
