package io.kvledger.journal;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;

/**
 * Reads one node's journal: its {@link #header()} and its entries, in order, from the header to
 * the last complete entry (an entry a crashed writer left half-written is not part of the
 * journal). Opening is read-only: it never changes the files, and it works while a writer appends
 * in another process or thread (an iteration then ends at the entries written so far, and does
 * not chase a writer that goes on appending; use {@link #tail(boolean)} to follow).
 *
 * <p>The queue files are read with plain file reads ({@link QueueScanner}), not through
 * Chronicle's memory mappings, so a damaged file (truncated, zeroed, flipped bits, a missing or
 * cut {@code metadata.cq4t}) can never fault the JVM. Each entry's checksum (format version 2) is
 * checked before it is decoded; a damaged region is skipped, reading resumes at the next good
 * entry, and the region (file, byte offset, last good seq, entries lost) is reported by
 * {@link #integrity()} and in {@link #warnings()}.
 *
 * <p>Entries this version cannot decode come back as {@link JournalEntry.Unknown} and are
 * summarised in {@link #warnings()}; a reader never throws for the content of an entry.
 *
 * <p>Every pass applies {@link EntryRules} as it reads, the order rules {@code verify} checks: an
 * entry whose seq does not go up (a duplicate, an entry out of order) and the rest of a file that
 * holds a second header (another journal's file, or a copy) are skipped; a seq jump, an event time
 * that goes back and a derived entry whose cause is not an earlier input are read and doubted.
 * Each kind of problem is one line of {@link #warnings()} with its count, so that no analysis
 * answers from such entries quietly: a command exits non-zero when {@link #clean()} is false.
 *
 * <p>Threading: one thread per reader (each iteration may run on another thread, one at a time).
 */
public final class JournalReader implements AutoCloseable, Iterable<JournalEntry> {

    /** Damaged regions listed one per line in {@link #warnings()}; the rest are counted. */
    static final int MAX_DAMAGE_WARNINGS = 20;

    /**
     * What the latest complete pass found about the journal's integrity.
     *
     * @param damage    every damaged region, in file order
     * @param checked   entries read whose checksum matched
     * @param unchecked entries read that carry no checksum (format versions 0 and 1)
     * @param groups    group excerpts read (excerpts holding several entries, as the node loop's
     *                  journaller writes them; their entries are among {@code checked})
     */
    public record Integrity(List<JournalDamage> damage, long checked, long unchecked, long groups) {

        /** Entries known to be lost in all regions (a region that cannot know counts 0 here). */
        long lostEntries() {
            long n = 0;
            for (JournalDamage d : damage) {
                n += Math.max(0, d.lostEntries());
            }
            return n;
        }

        /** Whether some region could not say how many entries it lost. */
        boolean lossUnknown() {
            return damage.stream().anyMatch(d -> d.lostEntries() < 0);
        }
    }

    private final Path dir;
    private final JournalHeader header;
    private final Warnings warnings;
    private final int headerWarnings;
    private Integrity integrity;
    private QueueScanner current;
    /** The order rules of the latest pass (null before the first). */
    private EntryRules rules;

    private JournalReader(Path dir) {
        this.dir = dir;
        this.warnings = new Warnings(dir.toString());
        Queues.Buffer buf = new Queues.Buffer();
        try (QueueScanner s = new QueueScanner(dir, false)) {
            if (!s.next(buf)) {
                s.close();
                if (!s.damage().isEmpty()) {
                    throw new JournalException("the journal in " + dir + " is damaged and no entry can be read: "
                            + s.damage().getFirst().describe() + "; kvledger verify lists the damage");
                }
                throw new JournalException("the journal in " + dir + " is empty (it has no header)");
            }
            JournalEntry first = new EntryCodec.Decoder(warnings).decode(buf.bytes, buf.length);
            if (!(first instanceof JournalEntry.Header h)) {
                if (!s.damage().isEmpty()) {
                    throw new JournalException("the journal in " + dir + " is damaged: its header (seq 0) cannot be read: "
                            + s.damage().getFirst().describe() + "; kvledger verify lists the damage");
                }
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
     * @throws JournalException when {@code dir} holds no journal, its first entry is not a
     *                          kvledger header, or the header cannot be read (damage, named by file
     *                          and byte offset)
     */
    public static JournalReader open(Path dir) {
        if (!Files.isDirectory(dir)) {
            throw new JournalException("no journal at " + dir + ": not a directory");
        }
        if (!Queues.hasQueueFiles(dir)) {
            throw new JournalException("no journal in " + dir + ": it has no .cq4 queue files");
        }
        java.util.SortedMap<String, String> odd = Queues.oddQueueFiles(dir);
        if (!odd.isEmpty() && QueueScanner.listFiles(dir).isEmpty()) {
            throw new JournalException("no journal in " + dir + ": its .cq4 entries are no queue files: " + oddList(odd));
        }
        List<Path> empty = Queues.emptyQueueFiles(dir);
        if (!empty.isEmpty()) {
            throw new JournalException("the journal in " + dir + " has an empty queue file (0 bytes, not written by "
                    + "Chronicle: a crash while it was being created, or a truncated copy): " + empty.get(0).getFileName()
                    + (empty.size() > 1 ? " and " + (empty.size() - 1) + " more" : "")
                    + "; move it away to read the rest");
        }
        return new JournalReader(dir);
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
        List<String> out = new ArrayList<>();
        if (integrity != null) {
            out.addAll(damageLines(dir.toString(), integrity.damage()));
        }
        if (rules != null) {
            out.addAll(rules.warnings(dir.toString()));
        }
        out.addAll(warnings.list());
        return out;
    }

    /**
     * Whether the latest pass read the journal without skipping or doubting anything: no damaged
     * region, no entry against the order rules, none it could not decode, no warning at all. A
     * command that answers from a journal that is not clean says so and exits non-zero.
     */
    public boolean clean() {
        return warnings().isEmpty();
    }

    /** What the order rules of the latest pass found, by kind (empty before a pass). */
    java.util.Map<EntryRules.Kind, Long> ruleProblems() {
        return rules == null ? java.util.Map.of() : rules.counts();
    }

    /**
     * What the latest complete pass found: damaged regions and how many entries were checked;
     * null before a pass has read to the end.
     */
    public Integrity integrity() {
        return integrity;
    }

    /**
     * The damaged regions the pass under way has found so far: a region is known by the time the
     * entry it resumes at is returned (its {@code resumeSeq}).
     */
    public List<JournalDamage> damageSoFar() {
        QueueScanner s = current;
        return s == null ? (integrity == null ? List.of() : integrity.damage()) : List.copyOf(s.damage());
    }

    /**
     * Checks the integrity of the journal in {@code dir} without decoding it, also when its header
     * is unreadable (so that {@code verify} can list every damaged region of a journal that cannot
     * be opened).
     *
     * @throws JournalException when a file cannot be read at all
     */
    public static Integrity check(Path dir) {
        try (QueueScanner s = new QueueScanner(dir, false)) {
            Queues.Buffer buf = Queues.Buffer.inPlace();
            while (s.next(buf)) {
                // the scanner checks each entry's checksum and records the damage
            }
            return integrity(dir, s);
        }
    }

    /**
     * Whether Chronicle's {@code metadata.cq4t} is missing from {@code dir} (harmless: readers do
     * not use it and a writer recreates it).
     */
    public static boolean metadataMissing(Path dir) {
        return !Files.exists(dir.resolve(Queues.METADATA_FILE));
    }

    /** "a.cq4 is a FIFO (a named pipe); b.cq4 is ..." */
    private static String oddList(java.util.SortedMap<String, String> odd) {
        List<String> parts = new ArrayList<>();
        odd.forEach((name, what) -> parts.add(name + " is " + what));
        return String.join("; ", parts);
    }

    /**
     * What in {@code metadata.cq4t} keeps a writer from opening the journal in {@code dir}, or
     * null: its framing, and a trial on a copy of it, for {@code verify} (a reader needs nothing
     * from it; a node restarted on the journal does). The journal's files are not touched.
     */
    public static String metadataWriterProblem(Path dir) {
        return Queues.metadataWriterProblem(dir);
    }

    private static Integrity integrity(Path dir, QueueScanner s) {
        List<JournalDamage> damage = new ArrayList<>(s.damage());
        try {
            Queues.oddQueueFiles(dir).forEach((name, what) -> damage.add(new JournalDamage(name, 0, -1, -1, -1, -1,
                    "it is " + what + ", no queue file: not read (the entries of a day it held are missing)")));
        } catch (JournalException e) {
            // the pass listed the directory; a listing failing now says nothing about the entries
        }
        String meta = Queues.metadataProblem(dir);
        if (meta != null) {
            long size;
            try {
                size = Files.size(dir.resolve(Queues.METADATA_FILE));
            } catch (java.io.IOException e) {
                size = 0;
            }
            // a file cut short is damaged where it ends; anything else in its framing from its start
            long at = meta.contains(", not a multiple of ") ? size : 0;
            damage.add(new JournalDamage(Queues.METADATA_FILE, at, -1, -1, -1, 0, meta
                    + " (readers do not need it; a writer refuses the journal until it is moved away)"));
        }
        return new Integrity(List.copyOf(damage), s.checked(), s.unchecked(), s.groups());
    }

    /** One line per damaged region (at most {@value #MAX_DAMAGE_WARNINGS}, then a count). */
    static List<String> damageLines(String journal, List<JournalDamage> damage) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < damage.size() && i < MAX_DAMAGE_WARNINGS; i++) {
            out.add(journal + ": journal damaged: " + damage.get(i).describe());
        }
        if (damage.size() > MAX_DAMAGE_WARNINGS) {
            long lost = 0;
            for (JournalDamage d : damage.subList(MAX_DAMAGE_WARNINGS, damage.size())) {
                lost += Math.max(0, d.lostEntries());
            }
            out.add(journal + ": journal damaged: " + (damage.size() - MAX_DAMAGE_WARNINGS) + " more damaged regions ("
                    + lost + " more entries lost); kvledger verify lists them all");
        }
        return out;
    }

    /** Every entry from the header on; each call starts a new pass. */
    @Override
    public Iterator<JournalEntry> iterator() {
        return iterator(null);
    }

    /**
     * Like {@link #iterator()}, handing every problem of the order rules to {@code onProblem} as it
     * is found ({@code verify} lists them); each call starts a new pass.
     */
    public Iterator<JournalEntry> iterator(java.util.function.Consumer<EntryRules.Problem> onProblem) {
        warnings.clearEntryWarnings(headerWarnings);
        return new EntryIterator(this, new EntryCodec.Decoder(warnings), false, new EntryRules(onProblem));
    }

    /**
     * Like {@link #iterator()}, but derived entries are skipped before their payload is decoded:
     * for passes that recompute the effects and never look at the recorded ones (a replay
     * without verification decodes about a third fewer payloads). Header, input and unknown
     * entries come back as from {@link #iterator()}; a derived entry whose type is not a known
     * derived type is decoded (and comes back as unknown, with a warning). The order rules judge
     * the skipped entries too. Each call starts a new pass.
     */
    public Iterator<JournalEntry> inputIterator() {
        warnings.clearEntryWarnings(headerWarnings);
        return new EntryIterator(this, new EntryCodec.Decoder(warnings), true, new EntryRules(null));
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
    JournalTailer tail(boolean fromStart) {
        QueueScanner s = new QueueScanner(dir, true);
        EntryRules r = new EntryRules(null);
        if (!fromStart) {
            Queues.Buffer skip = Queues.Buffer.inPlace();
            while (s.next(skip)) {
                // to the end of what has been written so far (the rules learn where it is)
                r.admit(skip.bytes, skip.offset, skip.length, s.fileName(), s.damage());
            }
        }
        return new JournalTailer(this, s, new EntryCodec.Decoder(warnings), false, r);
    }

    @Override
    public void close() {
        // every pass closes its own files
    }

    private static final class EntryIterator implements Iterator<JournalEntry> {
        private final JournalReader reader;
        private final QueueScanner scanner;
        private final EntryCodec.Decoder decoder;
        private final Queues.Buffer buf = Queues.Buffer.inPlace();
        private final boolean skipDerived;
        private final EntryRules rules;
        private JournalEntry next;
        private boolean done;

        EntryIterator(JournalReader reader, EntryCodec.Decoder decoder, boolean skipDerived, EntryRules rules) {
            this.reader = reader;
            this.scanner = new QueueScanner(reader.dir, false);
            reader.current = scanner;
            reader.rules = rules;
            this.decoder = decoder;
            this.skipDerived = skipDerived;
            this.rules = rules;
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
                if (!scanner.next(buf)) {
                    done = true;
                    scanner.close();
                    reader.integrity = integrity(reader.dir, scanner);
                    reader.current = null;
                    return false;
                }
            } while (!rules.admit(buf.bytes, buf.offset, buf.length, scanner.fileName(), scanner.damage())
                    || (skipDerived && EntryRules.quietlySkippable(buf.bytes, buf.offset, buf.length)));
            next = decoder.decode(buf.bytes, buf.offset, buf.length);
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
                scanner.close();
            }
        }
    }
}
