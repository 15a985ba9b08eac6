package io.kvledger.journal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import net.openhft.chronicle.bytes.Bytes;
import net.openhft.chronicle.queue.ExcerptAppender;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueue;
import net.openhft.chronicle.wire.DocumentContext;

/**
 * Writes a journal from entries given as bytes, each exactly as journal/FORMAT.md defines an entry
 * (as {@link RawEntryTailer} hands them out, or as a Kafka topic carries them), one plain excerpt
 * per entry, nothing re-encoded: a reader of the copy sees the bytes the original journal held,
 * checksums included, and checks them as it would there. For a reader that rebuilds node journals
 * from elsewhere (a topic) into a new directory; never for a live node's journal.
 *
 * <p>Threading: one thread.
 */
public final class RawJournalWriter implements AutoCloseable {

    private final Path dir;
    private final SingleChronicleQueue queue;
    private final ExcerptAppender appender;
    private long entries;

    private RawJournalWriter(Path dir, SingleChronicleQueue queue) {
        this.dir = dir;
        this.queue = queue;
        this.appender = queue.createAppender();
    }

    /**
     * Creates a journal in {@code dir}, which must not hold one yet.
     *
     * @throws JournalException when {@code dir} already holds queue files or cannot be created
     */
    public static RawJournalWriter create(Path dir) {
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new JournalException("cannot create " + dir + ": " + e.getMessage(), e);
        }
        if (Queues.hasQueueFiles(dir)) {
            throw new JournalException(dir + " already holds a journal");
        }
        return new RawJournalWriter(dir, Queues.open(dir, false));
    }

    /**
     * Appends one entry's bytes as one excerpt. The first entry should be the journal's header;
     * what the bytes hold is checked by whoever reads the journal, as for any journal.
     *
     * @throws IllegalArgumentException for fewer bytes than an entry's fixed prefix
     */
    public void append(byte[] entry) {
        if (entry.length < JournalFormat.FIXED_PREFIX) {
            throw new IllegalArgumentException("an entry of " + entry.length + " bytes (at least "
                    + JournalFormat.FIXED_PREFIX + " expected)");
        }
        try (DocumentContext dc = appender.writingDocument()) {
            Bytes<?> b = dc.wire().bytes();
            b.write(entry, 0, entry.length);
        }
        entries++;
    }

    /** Entries appended so far. */
    public long entries() {
        return entries;
    }

    public Path dir() {
        return dir;
    }

    @Override
    public void close() {
        try {
            appender.close();
        } finally {
            queue.close();
        }
    }
}
