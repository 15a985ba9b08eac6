package io.kvledger.journal;

import io.kvledger.journal.format.EntryKind;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;
import net.openhft.chronicle.queue.ExcerptTailer;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueue;

/**
 * Reads one node's journal: its {@link #header()} and its entries, in order, from the header to
 * the last complete entry (an entry a crashed writer left half-written is not part of the
 * journal). Opening is read-only: it never changes the files, and it works while a writer appends
 * in another process (an iteration then ends at the entries written so far; use
 * {@link #tail(boolean)} to follow).
 *
 * <p>Entries this version cannot decode come back as {@link JournalEntry.Unknown} and are
 * summarised in {@link #warnings()}; a reader never throws for the content of an entry.
 *
 * <p>Threading: one thread per reader (each iteration may run on another thread, one at a time).
 */
public final class JournalReader implements AutoCloseable, Iterable<JournalEntry> {

    private final Path dir;
    private final SingleChronicleQueue queue;
    private final JournalHeader header;
    private final Warnings warnings;
    private final int headerWarnings;

    private JournalReader(Path dir, SingleChronicleQueue queue) {
        this.dir = dir;
        this.queue = queue;
        this.warnings = new Warnings(dir.toString());
        Queues.Buffer buf = new Queues.Buffer();
        try (ExcerptTailer t = queue.createTailer()) {
            if (!buf.next(t)) {
                throw new JournalException("the journal in " + dir + " is empty (it has no header)");
            }
            JournalEntry first = new EntryCodec.Decoder(warnings).decode(buf.bytes, buf.length);
            if (!(first instanceof JournalEntry.Header h)) {
                throw new JournalException("the queue in " + dir + " is not a kvledger journal: its first entry is "
                        + first.dissect());
            }
            this.header = h.header();
        }
        if (header.formatVersion() > JournalFormat.FORMAT_VERSION) {
            warnings.add("format version " + header.formatVersion() + " is newer than this reader's "
                    + JournalFormat.FORMAT_VERSION + "; entries it cannot decode are skipped");
        }
        this.headerWarnings = warnings.size();
    }

    /**
     * Opens the journal in {@code dir}.
     *
     * @throws JournalException when {@code dir} holds no journal or its first entry is not a
     *                          kvledger header
     */
    public static JournalReader open(Path dir) {
        if (!Files.isDirectory(dir)) {
            throw new JournalException("no journal at " + dir + ": not a directory");
        }
        if (!Queues.hasQueueFiles(dir)) {
            throw new JournalException("no journal in " + dir + ": it has no .cq4 queue files");
        }
        List<Path> empty = Queues.emptyQueueFiles(dir);
        if (!empty.isEmpty()) {
            throw new JournalException("the journal in " + dir + " has an empty queue file (0 bytes, not written by "
                    + "Chronicle: a crash while it was being created, or a truncated copy): " + empty.get(0).getFileName()
                    + (empty.size() > 1 ? " and " + (empty.size() - 1) + " more" : "")
                    + "; move it away to read the rest");
        }
        SingleChronicleQueue q = Queues.open(dir, true);
        try {
            return new JournalReader(dir, q);
        } catch (RuntimeException e) {
            q.close();
            throw e;
        }
    }

    public Path dir() {
        return dir;
    }

    public JournalHeader header() {
        return header;
    }

    /**
     * What the latest pass skipped or doubted (unknown type ids with counts, undecodable entries,
     * header keys this version does not know), one line each, each starting with the journal's
     * directory. Callers print them (on stderr).
     */
    public List<String> warnings() {
        return warnings.list();
    }

    /** Every entry from the header on; each call starts a new pass. */
    @Override
    public Iterator<JournalEntry> iterator() {
        warnings.clearEntryWarnings(headerWarnings);
        return new EntryIterator(queue.createTailer(), new EntryCodec.Decoder(warnings), false);
    }

    /**
     * Like {@link #iterator()}, but derived entries are skipped before their payload is decoded:
     * for passes that recompute the effects and never look at the recorded ones (a replay
     * without verification decodes about a third fewer payloads). Header, input and unknown
     * entries come back as from {@link #iterator()}; a derived entry of an unknown type is
     * skipped without a warning. Each call starts a new pass.
     */
    public Iterator<JournalEntry> inputIterator() {
        warnings.clearEntryWarnings(headerWarnings);
        return new EntryIterator(queue.createTailer(), new EntryCodec.Decoder(warnings), true);
    }

    /** {@link #iterator()} as a sequential stream; close it (or the reader) when done early. */
    public Stream<JournalEntry> stream() {
        EntryIterator it = (EntryIterator) iterator();
        return StreamSupport.stream(Spliterators.spliteratorUnknownSize(it,
                Spliterator.ORDERED | Spliterator.NONNULL), false).onClose(it::close);
    }

    /**
     * A tailer over this journal that waits for new entries.
     *
     * @param fromStart true to start at the header, false to start after the last entry written so far
     */
    public JournalTailer tail(boolean fromStart) {
        ExcerptTailer t = queue.createTailer();
        if (!fromStart) {
            t.toEnd();
        }
        t.singleThreadedCheckReset();
        return new JournalTailer(this, t, new EntryCodec.Decoder(warnings), false);
    }

    @Override
    public void close() {
        queue.close();
    }

    private static final class EntryIterator implements Iterator<JournalEntry> {
        private final ExcerptTailer tailer;
        private final EntryCodec.Decoder decoder;
        private final Queues.Buffer buf = new Queues.Buffer();
        private final boolean skipDerived;
        private JournalEntry next;
        private boolean done;

        EntryIterator(ExcerptTailer tailer, EntryCodec.Decoder decoder, boolean skipDerived) {
            this.tailer = tailer;
            this.decoder = decoder;
            this.skipDerived = skipDerived;
            tailer.singleThreadedCheckReset();
        }

        @Override
        public boolean hasNext() {
            if (next != null) {
                return true;
            }
            if (done) {
                return false;
            }
            do {
                if (!buf.next(tailer)) {
                    done = true;
                    tailer.close();
                    return false;
                }
            } while (skipDerived && buf.length >= JournalFormat.FIXED_PREFIX
                    && EntryCodec.kindCode(buf.bytes) == EntryKind.DERIVED.code());
            next = decoder.decode(buf.bytes, buf.length);
            return true;
        }

        @Override
        public JournalEntry next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            JournalEntry e = next;
            next = null;
            return e;
        }

        void close() {
            if (!done) {
                done = true;
                tailer.close();
            }
        }
    }
}
