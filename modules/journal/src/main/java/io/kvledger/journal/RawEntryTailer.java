package io.kvledger.journal;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

/**
 * Follows a journal from its header and hands out every entry's bytes exactly as the journal holds
 * them (journal/FORMAT.md: the envelope with its checksum, then the msgpack payload; the members of
 * a group excerpt one by one), for a copier that must not re-encode ({@code kvledger ship}). The
 * order rules every reader applies ({@link EntryRules}) apply here too: a duplicate or an entry out
 * of order is skipped and said in {@link #warnings()}, as are damaged regions read past.
 *
 * <p>A separate reader: it opens the queue files with plain file reads, never the writer's lock,
 * so the journal's writer is neither slowed nor blocked by it.
 *
 * <p>Threading: one thread at a time.
 */
public final class RawEntryTailer implements AutoCloseable {

    private static final long MAX_PAUSE_NS = 5_000_000;

    private final Path dir;
    private final JournalHeader header;
    private final QueueScanner scanner;
    private final EntryRules rules = new EntryRules(null);
    private final Queues.Buffer buf = new Queues.Buffer();

    private RawEntryTailer(Path dir, JournalHeader header) {
        this.dir = dir;
        this.header = header;
        this.scanner = new QueueScanner(dir, true);
    }

    /**
     * Opens the journal in {@code dir} (its header must be readable) and follows it from its header.
     *
     * @throws JournalException when {@code dir} holds no readable journal
     */
    public static RawEntryTailer open(Path dir) {
        JournalHeader h;
        try (JournalReader r = JournalReader.open(dir)) {
            h = r.header();
        }
        return new RawEntryTailer(dir, h);
    }

    public JournalHeader header() {
        return header;
    }

    public Path dir() {
        return dir;
    }

    /**
     * The next entry's bytes (a copy the caller keeps), waiting up to {@code timeout} for one.
     *
     * @return the entry, or {@code null} when none was complete within the timeout
     */
    public byte[] poll(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        long pauseNs = 0;
        while (true) {
            if (scanner.next(buf)) {
                if (!rules.admit(buf.bytes, buf.offset, buf.length, scanner.fileName(), scanner.damage())) {
                    continue; // a duplicate, or another journal's file: skipped and counted
                }
                return Arrays.copyOfRange(buf.bytes, buf.offset, buf.offset + buf.length);
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return null;
            }
            pauseNs = pauseNs == 0 ? 1_000 : Math.min(MAX_PAUSE_NS, pauseNs * 2);
            LockSupport.parkNanos(Math.min(pauseNs, left));
        }
    }

    /** The seq of an entry's bytes (as {@link #poll} hands them out). */
    public static long seq(byte[] entry) {
        return EntryCodec.seq(entry);
    }

    /** What was skipped or doubted so far: damaged regions read past, entries the order rules skipped. */
    public List<String> warnings() {
        List<String> out = new ArrayList<>(JournalReader.damageLines(dir.toString(), scanner.damage()));
        out.addAll(rules.warnings(dir.toString()));
        return out;
    }

    @Override
    public void close() {
        scanner.close();
    }
}
