package io.kvledger.ledger.replay;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalException;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.JournalWriter;
import io.kvledger.journal.JsonLines;
import io.kvledger.journal.JsonLinesException;
import io.kvledger.journal.StagedDir;
import io.kvledger.journal.format.EntryKind;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * What {@code kvledger journal import} checks and computes beyond the journal's own JSON-lines
 * import ({@link JsonLines#importFile}): the directory an import may go to ({@link #target}), the
 * order a file's lines must keep against the journal they are appended to ({@link #check}), a
 * file imported as it is ({@link #importPlain}) or a node's inputs imported with every derived
 * entry recomputed by the reducer ({@link #importDerived}), and the journals a failed import of
 * several nodes created removed again ({@link #removeCreated}). The header a file's lines are
 * imported under, when options replace its fields, is {@link HeaderOptions}'s.
 */
public final class JournalImport {

    private JournalImport() {}

    /** An import refused before anything is written; its message says why (the CLI's usage error). */
    public static final class Refused extends RuntimeException {
        public Refused(String message) {
            super(message);
        }
    }

    /**
     * Where a file goes: refuses a target that is a file, a non-empty directory that holds no
     * journal, or a journal unless {@code append} (never with inputs only, which build a new one);
     * reads where an appended-to journal ends.
     *
     * @param inputsOnly the file holds inputs only (its derived entries are recomputed)
     * @param deriveAsked {@code --derive} was given (rather than a node's {@code inputs.jsonl} found in a tree)
     * @throws Refused naming what is wrong with the target
     */
    public static Target target(Path target, boolean inputsOnly, boolean deriveAsked, boolean append) {
        if (Files.exists(target) && !Files.isDirectory(target)) {
            throw new Refused(target + " is a file, not a directory");
        }
        boolean existed = Files.isDirectory(target);
        boolean journal = JournalInputs.holdsQueueFiles(target);
        if (journal && inputsOnly) {
            throw new Refused(target + " already holds a journal; " + (deriveAsked ? "--derive builds a new one"
                    : "a node's inputs.jsonl is imported with --derive, which builds a new one")
                    + " (import into an empty directory)");
        }
        if (!journal) {
            if (existed && !isEmpty(target)) {
                throw new Refused(target + " is not empty and holds no journal: import into a new or empty directory");
            }
            return Target.fresh(target, existed);
        }
        if (!append) {
            throw new Refused(target + " already holds a journal: give --append to add the file's entries after its last one, "
                    + "or import into a new directory");
        }
        try {
            return Target.journal(target);
        } catch (JournalException e) {
            throw new Refused("cannot read the journal in " + target + " to append to it: " + e.getMessage());
        }
    }

    /** Whether {@code dir} is an empty directory (false when it cannot be listed). */
    static boolean isEmpty(Path dir) {
        try (Stream<Path> s = Files.list(dir)) {
            return s.findAny().isEmpty();
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * A file imported as it is ({@link JsonLines#importFile}), with the imported journal's header
     * described.
     */
    public record Plain(JsonLines.ImportResult result, String describe) {

        /** The line {@code journal import} prints for it: what was imported from {@code jsonl} into {@code target}. */
        public String summary(Path jsonl, Path target) {
            return String.format(Locale.ROOT, "imported %,d entries from %s into %s (seq %d..%d%s): %s", result.entries(),
                    jsonl.getFileName(), target, result.firstSeq(), result.lastSeq(), result.appended() ? ", appended" : "",
                    describe);
        }
    }

    /**
     * Imports {@code jsonl} into {@code target} as the file says, under {@code header} (null: the
     * file's).
     *
     * @throws JsonLinesException when a line is malformed (nothing is written)
     * @throws JournalException when the journal cannot be written
     */
    public static Plain importPlain(Path jsonl, Path target, JournalHeader header) {
        JsonLines.ImportResult r = JsonLines.importFile(jsonl, target, header);
        try (JournalReader reader = JournalReader.open(target)) {
            return new Plain(r, reader.header().describe());
        }
    }

    /**
     * After a failed import of several nodes: removes the journals this run {@code created}, and
     * {@code dir} too when the run created it and it is left empty.
     */
    public static void removeCreated(List<Path> created, Path dir, boolean dirExisted) {
        for (Path c : created) {
            deleteTree(c);
        }
        if (!dirExisted && (!Files.isDirectory(dir) || isEmpty(dir))) {
            deleteTree(dir);
        }
    }

    /**
     * Where an import goes: whether it holds a journal, and where that journal ends.
     *
     * @param nextSeq the seq the file's first entry must have when appended (1 for a new journal)
     * @param lastInputAtNs the time of the journal's last input ({@link Long#MIN_VALUE}: none)
     */
    public record Target(Path dir, boolean existed, boolean journal, long nextSeq, long lastInputAtNs, int lastInputLine) {

        /** A new journal in {@code dir} (which may exist, empty). */
        static Target fresh(Path dir, boolean existed) {
            return new Target(dir, existed, false, 1, Long.MIN_VALUE, 0);
        }

        /**
         * The journal {@code dir} holds, read to its end.
         *
         * @throws JournalException when it cannot be read
         */
        static Target journal(Path dir) {
            long next = 1;
            long lastAt = Long.MIN_VALUE;
            try (JournalReader r = JournalReader.open(dir)) {
                for (JournalEntry e : r) {
                    next = e.seq() + 1;
                    if (e instanceof JournalEntry.Input) {
                        lastAt = e.atNs();
                    }
                }
            }
            return new Target(dir, true, true, next, lastAt, 0);
        }
    }

    /** Told how far a check has read: the fraction of the file's bytes and the line number, every 16,384 lines. */
    @FunctionalInterface
    public interface ScanProgress {
        void at(double fraction, long lines);
    }

    /**
     * What a check found: at most {@link JsonLinesException#MAX_LISTED} problems with their line
     * numbers, and how many there were in all.
     */
    public record Check(List<JsonLinesException.LineError> problems, long total) {
        public boolean ok() {
            return problems.isEmpty();
        }

        /**
         * The refusal of {@code jsonl}, its problems listed with their line numbers; with
         * {@code inputsOnly}, a derived entry found says to drop {@code --derive}.
         */
        public String message(Path jsonl, boolean inputsOnly) {
            String msg = new JsonLinesException(jsonl.toString(), problems, total).getMessage();
            if (inputsOnly && problems.stream().anyMatch(e -> e.reason().startsWith("a derived entry"))) {
                msg = msg.replace("nothing imported", "nothing imported: --derive takes inputs only (drop --derive "
                        + "to import recorded derived entries as they are)");
            }
            return msg;
        }
    }

    /**
     * Checks a file before it is imported into {@code t}: with {@code inputsOnly}, that it holds no
     * derived entry; then what the journal itself does not check: inputs whose time goes back
     * (against the input before them, or the end of the journal appended to) and, when appending, a
     * first seq that does not continue the journal. Lines that do not parse are left to the import,
     * which reports them with their reason.
     */
    public static Check check(Path jsonl, Target t, boolean inputsOnly, ScanProgress progress) {
        List<JsonLinesException.LineError> problems = new ArrayList<>();
        long[] total = {0};
        if (inputsOnly) {
            derivedLines(jsonl, problems, total);
        }
        if (problems.isEmpty()) {
            scan(jsonl, t, problems, total, progress);
        }
        return new Check(problems, total[0]);
    }

    /**
     * A node's inputs imported with their derived entries recomputed.
     *
     * @param cut what a write cut short left at the file's end (left out), or null
     */
    public record Derived(long inputs, long derived, String describe, JsonLines.CutTail cut) {

        /** The line {@code journal import --derive} prints for it: what was imported from {@code jsonl} into {@code target}. */
        public String summary(Path jsonl, Path target) {
            return String.format(Locale.ROOT, "imported %,d inputs from %s into %s with %,d derived entries recomputed by "
                    + "the node reducer: %s", inputs, jsonl.getFileName(), target, derived, describe);
        }
    }

    /**
     * What a failed import of a tree says about the journals it had imported before {@code node}
     * failed ({@code created} of them, removed again by {@link #removeCreated}).
     */
    public static String rolledBack(int created, String node) {
        return created == 0 ? "nothing imported"
                : "the " + created + " journal(s) imported before " + node + " were removed again";
    }

    /**
     * Checks what the journal itself does not: inputs whose time goes back (against the input
     * before them, or the end of the journal appended to), and, with {@code --append}, a first
     * seq that does not continue the journal. Lines that do not parse are left to the import,
     * which reports them with their reason.
     */
    private static void scan(Path jsonl, Target t, List<JsonLinesException.LineError> problems, long[] total, ScanProgress progress) {
        long size;
        try {
            size = Math.max(1, Files.size(jsonl));
        } catch (IOException e) {
            size = 1;
        }
        long lastAt = t.lastInputAtNs();
        long lastAtLine = 0;
        boolean seqChecked = !t.journal();
        long bytes = 0;
        long n = 0;
        JsonLines.Parser parser = new JsonLines.Parser();
        try (JsonLines.LineReader r = new JsonLines.LineReader(jsonl)) {
            String text;
            while ((text = r.nextDecodable()) != null) {
                n = r.lineNo();
                bytes += text.length() + 1;
                if ((n & 0x3FFF) == 0) {
                    progress.at((double) bytes / size, n);
                }
                if (text.isBlank()) {
                    continue;
                }
                List<JsonLines.Line> lines;
                try {
                    lines = parser.parse(text);
                } catch (RuntimeException e) {
                    continue; // reported by the import with its reason
                }
                for (JsonLines.Line line : lines) {
                    if (line.kind() == EntryKind.HEADER) {
                        continue;
                    }
                    if (!seqChecked && line.seq() >= 0) {
                        seqChecked = true;
                        if (line.seq() != t.nextSeq()) {
                            add(problems, total, n, "seq " + line.seq() + " does not continue the journal in " + t.dir()
                                    + " (its next seq is " + t.nextSeq() + (line.seq() < t.nextSeq()
                                            ? "; these entries may be in it already)" : ")"));
                        }
                    }
                    if (line.kind() == EntryKind.INPUT) {
                        if (line.atNs() < lastAt) {
                            add(problems, total, n, "time " + line.atNs() + " ns goes backwards: " + (lastAtLine > 0
                                    ? "line " + lastAtLine + ", the input before it, is at " + lastAt + " ns"
                                    : "the journal in " + t.dir() + " ends at " + lastAt + " ns"));
                        } else {
                            lastAt = line.atNs();
                            lastAtLine = n;
                        }
                    }
                }
            }
        } catch (IOException | java.io.UncheckedIOException e) {
            // not UTF-8 or unreadable: the import reports it line by line
        }
    }

    private static void add(List<JsonLinesException.LineError> problems, long[] total, long line, String reason) {
        total[0]++;
        if (problems.size() < JsonLinesException.MAX_LISTED) {
            problems.add(new JsonLinesException.LineError(line, reason));
        }
    }

    /** The numbers of the lines that hold derived entries (lines that do not parse are left to the import). */
    private static void derivedLines(Path jsonl, List<JsonLinesException.LineError> out, long[] total) {
        JsonLines.Parser parser = new JsonLines.Parser();
        try (JsonLines.LineReader r = new JsonLines.LineReader(jsonl)) {
            String line;
            while ((line = r.nextDecodable()) != null) {
                long n = r.lineNo();
                if (line.isBlank()) {
                    continue;
                }
                try {
                    if (parser.parse(line).stream().anyMatch(l -> l.kind() == EntryKind.DERIVED)) {
                        add(out, total, n, "a derived entry; --derive takes inputs only");
                    }
                } catch (RuntimeException ignored) {
                    // reported by the import with its reason
                }
            }
        } catch (IOException e) {
            // not UTF-8 or unreadable: the import reports it line by line
        }
    }

    /**
     * Validates and imports a node's inputs into a scratch journal, then replays it through the
     * reducer into {@code dir} (built beside it and moved there whole), with every derived entry
     * recomputed.
     *
     * @param header the header to write, or null to take the file's
     * @throws JsonLinesException when a line is malformed (nothing is written)
     * @throws JournalException when the journal cannot be written (nothing is left behind)
     */
    public static Derived importDerived(Path file, Path dir, JournalHeader header) {
        Path scratch;
        try {
            scratch = Files.createTempDirectory("kvledger-import-");
        } catch (IOException e) {
            throw new JournalException("cannot create a scratch directory: " + e.getMessage(), e);
        }
        boolean ok = false;
        // built beside DIR and moved there whole: a killed import leaves DIR as it was
        StagedDir staged = null;
        try {
            JsonLines.CutTail cut = JsonLines.importFile(file, scratch.resolve("j"), header).cut();
            staged = StagedDir.start(dir);
            long inputs = 0;
            long derivedCount = 0;
            String describe;
            try (JournalReader in = JournalReader.open(scratch.resolve("j"));
                 JournalWriter w = JournalWriter.open(staged.work(), in.header())) {
                NodeState state = NodeState.initial(in.header().config());
                for (Effect e : NodeReducer.startupChecks(in.header().config())) {
                    w.appendDerived(0, e);
                    derivedCount++;
                }
                for (JournalEntry e : in) {
                    if (e instanceof JournalEntry.Input input) {
                        List<Effect> fx = NodeReducer.apply(state, input.event()).effects();
                        w.appendApplied(input.event(), fx);
                        inputs++;
                        derivedCount += fx.size();
                    }
                }
                describe = in.header().describe();
            }
            staged.publish();
            ok = true;
            return new Derived(inputs, derivedCount, describe, cut);
        } finally {
            deleteTree(scratch);
            if (!ok && staged != null) {
                staged.abandon();
            }
        }
    }

    /** Removes {@code root} and what it holds, as far as it can (best effort). */
    static void deleteTree(Path root) {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> s = Files.walk(root)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException ignored) {
            // a scratch directory, or the journals an import created
        }
    }
}
