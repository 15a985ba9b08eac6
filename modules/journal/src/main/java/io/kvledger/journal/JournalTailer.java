package io.kvledger.journal;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

/**
 * Follows a journal while a writer (in this or another process) appends to it, for
 * {@code kvledger tail -f}: {@link #poll} returns the next entry as soon as it is complete, or
 * nothing after the timeout.
 *
 * <p>Threading: one thread at a time. Waiting backs off from a spin to sleeps of at most 5 ms, so
 * an idle tailer costs little CPU and a busy one sees entries within microseconds.
 */
public final class JournalTailer implements AutoCloseable {

    private static final long MAX_PAUSE_NS = 5_000_000;

    private final JournalReader reader;
    private final QueueScanner tailer;
    private final EntryCodec.Decoder decoder;
    private final boolean ownsReader;
    private final EntryRules rules;
    private final Queues.Buffer buf = new Queues.Buffer();

    JournalTailer(JournalReader reader, QueueScanner tailer, EntryCodec.Decoder decoder, boolean ownsReader,
                  EntryRules rules) {
        this.reader = reader;
        this.tailer = tailer;
        this.decoder = decoder;
        this.ownsReader = ownsReader;
        this.rules = rules;
    }

    /**
     * Opens the journal in {@code dir} and tails it.
     *
     * @param fromStart true to start at the header, false after the entries written so far
     */
    public static JournalTailer open(Path dir, boolean fromStart) {
        JournalReader r = JournalReader.open(dir);
        JournalTailer t = r.tail(fromStart);
        return new JournalTailer(r, t.tailer, t.decoder, true, t.rules);
    }

    public JournalHeader header() {
        return reader.header();
    }

    /**
     * The next entry, waiting up to {@code timeout} for it.
     *
     * @return the entry, or {@code null} when none was complete within the timeout
     */
    public JournalEntry poll(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        long pauseNs = 0;
        while (true) {
            if (tailer.next(buf)) {
                if (!rules.admit(buf.bytes, buf.offset, buf.length, tailer.fileName(), tailer.damage())) {
                    continue; // a duplicate, or another journal's file: skipped and counted
                }
                return decoder.decode(buf.bytes, buf.offset, buf.length);
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return null;
            }
            pauseNs = pauseNs == 0 ? 1_000 : Math.min(MAX_PAUSE_NS, pauseNs * 2);
            LockSupport.parkNanos(Math.min(pauseNs, left));
        }
    }

    /**
     * What was skipped so far (see {@link JournalReader#warnings()}), with the damaged regions
     * this tailer read past.
     */
    public List<String> warnings() {
        List<String> out = new ArrayList<>(JournalReader.damageLines(reader.dir().toString(), tailer.damage()));
        out.addAll(rules.warnings(reader.dir().toString()));
        out.addAll(reader.warnings());
        return out;
    }

    @Override
    public void close() {
        tailer.close();
        if (ownsReader) {
            reader.close();
        }
    }
}
