package io.kvledger.ledger.replay;

import io.kvledger.journal.EntryRules;
import io.kvledger.journal.JournalDamage;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalException;
import io.kvledger.journal.JournalFormat;
import io.kvledger.journal.JournalReader;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Checks that journals are well formed ({@code kvledger verify}). Per journal: the header comes
 * first (and only there) in a format version this build reads; every entry has a type id this
 * version knows and decodes; the readers' order rules ({@link EntryRules}: seqs up by one, times
 * that never go back, causes that are the header or an earlier input), consecutive entries with
 * the same problem counted as one run. Integrity: every entry's checksum (format version 2) and the
 * framing of the queue files; each damaged region is a problem naming the file, the byte offset,
 * the last good seq and the entries lost, so a report never says "ok" about a journal that could
 * not be read completely; entries without checksums (format version 1) are counted. Across
 * journals ({@link #acrossJournals}): node ids are unique.
 */
public final class JournalVerify {

    private JournalVerify() {}

    /** Where a verification of several journals stands; override {@link #at} to show it. */
    public static class Progress {
        long entries;

        /** Called every 65,536 entries with the node being read and the entries read so far. */
        protected void at(String node, long entries) {}

        /** The entries read so far, over every journal. */
        public final long entries() {
            return entries;
        }
    }

    /**
     * One problem: the seq of the entry (-1: the journal as a whole) and what is wrong; a damaged
     * region also carries its {@link JournalDamage}.
     */
    public record Problem(long seq, String what, JournalDamage damage, long lastSeq, long runEntries) {
        public Problem(long seq, String what) {
            this(seq, what, null, seq, 1);
        }

        public Problem(long seq, String what, JournalDamage damage) {
            this(seq, what, damage, seq, 1);
        }

        /** The line printed (without its indent). */
        public String line() {
            if (damage != null || seq < 0) {
                return what;
            }
            if (runEntries > 1) {
                return "seq " + seq + " to " + lastSeq + " (" + runEntries + " entries in a row, each like the first): " + what;
            }
            return "seq " + seq + ": " + what;
        }
    }

    /** What was found in one journal. */
    public static final class Report {
        final String dir;
        String node = "?";
        long entries;
        long inputs;
        long derived;
        long lastSeq = -1;
        long firstAtNs = Long.MAX_VALUE;
        long lastAtNs = Long.MIN_VALUE;
        final List<Problem> problems = new ArrayList<>();
        long problemCount;
        final int max;
        long checked;
        long unchecked;
        int damaged;
        long lost;
        boolean lossUnknown;
        boolean metadataMissing;
        int damageSeen;
        /** The run of order-rule problems still growing (one problem, listed once it ends). */
        EntryRules.Problem runFirst;
        EntryRules.Problem runLast;
        long runEntries;

        /**
         * An empty report for the journal or file named {@code dir}, listing at most {@code max}
         * problems (the rest are counted).
         */
        public Report(String dir, int max) {
            this.dir = dir;
            this.max = max;
        }

        /** Adds a problem: the entry's seq (-1: the journal as a whole) and what is wrong. */
        public void problem(long seq, String what) {
            endRun();
            add(new Problem(seq, what));
        }

        /**
         * A problem the order rules found: consecutive entries with the same problem against the
         * same reference (a seq or time every later entry stays behind) are one run, one problem.
         */
        void rule(EntryRules.Problem p) {
            if (runLast != null && p.kind() == runLast.kind() && p.run().equals(runLast.run())
                    && p.index() == runLast.index() + 1) {
                runLast = p;
                runEntries++;
                return;
            }
            endRun();
            runFirst = p;
            runLast = p;
            runEntries = 1;
        }

        void endRun() {
            if (runFirst != null) {
                EntryRules.Problem f = runFirst;
                long last = runLast.seq();
                runFirst = null;
                runLast = null;
                add(new Problem(f.seq(), f.what(), null, last, runEntries));
            }
        }

        void add(Problem p) {
            problemCount++;
            if (problems.size() < max) {
                problems.add(p);
            }
        }

        void damage(JournalDamage d) {
            endRun();
            damaged++;
            if (d.lostEntries() < 0) {
                lossUnknown = true;
            } else {
                lost += d.lostEntries();
            }
            add(new Problem(-1, "damaged: " + d.describe(), d));
        }

        /** Adds the regions of {@code all} not reported yet. */
        void damageUpTo(List<JournalDamage> all) {
            for (int i = damageSeen; i < all.size(); i++) {
                damage(all.get(i));
            }
            damageSeen = Math.max(damageSeen, all.size());
        }

        /** Counts {@code n} more problems that are not listed. */
        public void countUnlisted(long n) {
            problemCount += n;
        }

        public String dir() { return dir; }
        public String node() { return node; }
        public void node(String node) { this.node = node; }
        public long entries() { return entries; }
        public long inputs() { return inputs; }
        public long derived() { return derived; }
        public long lastSeq() { return lastSeq; }
        /** True when the journal held a timed entry ({@link #firstAtNs()} is meaningful). */
        public boolean timed() { return firstAtNs <= lastAtNs; }
        public long firstAtNs() { return firstAtNs; }
        public long lastAtNs() { return lastAtNs; }
        /** The problems listed (at most the report's maximum). */
        public List<Problem> problems() { return problems; }
        /** Every problem found, listed or not. */
        public long problemCount() { return problemCount; }
        /** Entries whose checksum was checked, and entries without one (format version 1). */
        public long checked() { return checked; }
        public long unchecked() { return unchecked; }
        public int damaged() { return damaged; }
        public long lost() { return lost; }
        /** True when a damaged region lost an unknown number of entries ({@link #lost()} is a lower bound). */
        public boolean lossUnknown() { return lossUnknown; }
        public boolean metadataMissing() { return metadataMissing; }
        public void metadataMissing(boolean missing) { this.metadataMissing = missing; }
    }

    /**
     * Verifies one journal.
     *
     * @param j the journal
     * @param maxProblems problems listed; the rest are counted
     * @param progress told the node id and the entries read so far (over every journal this
     *     {@code progress} has seen) every 65,536 entries
     * @param warnings the reader's warnings, but damage (which the report lists)
     */
    public static Report verify(NodeJournal j, int maxProblems, Progress progress, Consumer<String> warnings) {
        Report rep = new Report(j.name(), maxProblems);
        JournalReader reader;
        rep.metadataMissing = JournalReader.metadataMissing(j.dir());
        try {
            reader = JournalReader.open(j.dir());
        } catch (JournalException e) {
            // list every damaged region even when the header is lost
            List<JournalDamage> damage = List.of();
            try {
                damage = JournalReader.check(j.dir()).damage();
            } catch (JournalException | UncheckedIOException ignored) {
                // the open failure says it
            }
            if (damage.isEmpty()) {
                rep.problem(0, e.getMessage());
            } else {
                rep.problem(0, "the header (seq 0) cannot be read: nothing in this journal can be replayed");
                damage.forEach(rep::damage);
            }
            return rep;
        }
        try (reader) {
            verifyEntries(reader, rep, progress, warnings);
        } catch (JournalException | UncheckedIOException e) {
            rep.problem(-1, "reading stopped: " + e.getMessage());
        }
        return rep;
    }

    private static void verifyEntries(JournalReader reader, Report rep, Progress progress, Consumer<String> warnings) {
        rep.node = reader.header().nodeId();
        int version = reader.header().formatVersion();
        if (version > JournalFormat.FORMAT_VERSION) {
            rep.problem(0, "format version " + version + " is newer than this build's " + JournalFormat.FORMAT_VERSION
                    + ": entries it cannot decode are reported as unknown");
        }
        if (rep.node.isEmpty()) {
            rep.problem(0, "the header's node_id is empty");
        }
        // the order rules (seq, time, cause, one header) are the readers' own: every command applies them
        java.util.Iterator<JournalEntry> it = reader.iterator(p -> {
            rep.damageUpTo(reader.damageSoFar());
            rep.rule(p);
        });
        while (it.hasNext()) {
            JournalEntry e = it.next();
            long seq = e.seq();
            rep.entries++;
            rep.lastSeq = seq;
            switch (e) {
                case JournalEntry.Header h -> { }
                case JournalEntry.Input in -> {
                    rep.inputs++;
                    span(rep, in.atNs());
                }
                case JournalEntry.Derived d -> {
                    rep.derived++;
                    if (d.causeSeq() != 0) {
                        span(rep, d.atNs());
                    }
                }
                case JournalEntry.Proxy px -> span(rep, px.atNs());
                case JournalEntry.Unknown u -> rep.problem(seq, "type id " + u.typeId()
                        + (u.kind() == null ? "" : " (" + u.kind().label() + ")") + " cannot be read: " + u.reason());
            }
            if ((++progress.entries & 0xFFFF) == 0) {
                progress.at(rep.node, progress.entries);
            }
        }
        rep.endRun();
        JournalReader.Integrity integrity = reader.integrity();
        if (integrity != null) {
            rep.damageUpTo(integrity.damage());
            // what a writer needs too: a node restarted on this journal opens metadata.cq4t
            boolean metaReported = integrity.damage().stream().anyMatch(d -> d.file().equals("metadata.cq4t"));
            String meta = metaReported ? null : JournalReader.metadataWriterProblem(reader.dir());
            if (meta != null) {
                rep.damage(new JournalDamage("metadata.cq4t", 0, -1, -1, -1, 0, meta
                        + " (readers do not need it; a writer refuses the journal until it is moved away)"));
            }
            rep.checked = integrity.checked();
            rep.unchecked = integrity.unchecked();
        }
        for (String w : reader.warnings()) {
            if (!w.contains(": journal damaged: ")) { // listed as problems on standard output
                warnings.accept(w);
            }
        }
    }

    private static void span(Report rep, long at) {
        rep.firstAtNs = Math.min(rep.firstAtNs, at);
        rep.lastAtNs = Math.max(rep.lastAtNs, at);
    }

    /** The problems across journals: node ids used by more than one journal. */
    public static List<Problem> acrossJournals(List<Report> reports) {
        Map<String, List<Report>> byNode = new LinkedHashMap<>();
        for (Report r : reports) {
            byNode.computeIfAbsent(r.node, k -> new ArrayList<>()).add(r);
        }
        List<Problem> out = new ArrayList<>();
        byNode.forEach((node, rs) -> {
            if (rs.size() > 1 && !node.equals("?")) {
                out.add(new Problem(-1, "node id " + node + " is used by " + rs.size() + " journals ("
                        + String.join(", ", rs.stream().map(r -> r.dir).toList())
                        + "): hangs and inspect cannot tell them apart"));
            }
        });
        return out;
    }
}
