package io.kvledger.ledger.report;

import io.kvledger.journal.JournalDamage;
import io.kvledger.journal.JournalException;
import io.kvledger.journal.JsonLinesException;
import io.kvledger.journal.json.Json;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import io.kvledger.ledger.replay.JournalVerify;
import io.kvledger.ledger.replay.JournalVerify.Problem;
import io.kvledger.ledger.replay.JournalVerify.Report;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.function.Consumer;

/**
 * What {@code kvledger verify} prints: per journal its counts, time span, damage and problems
 * ({@link JournalVerify}'s reports), the problems across journals, and the total; as text or one
 * JSON object ({@link #print}). A JSON-lines file is verified by importing it first: the reports
 * of a file that did not import ({@link #importFailed}) or did, perhaps with its last line cut
 * short ({@link #imported}), are made here too.
 */
public final class VerifyReport {

    private final List<Report> reports;
    private final List<Problem> across;
    private final long total;
    private final int bad;

    private VerifyReport(List<Report> reports) {
        this.reports = List.copyOf(reports);
        this.across = JournalVerify.acrossJournals(this.reports);
        long t = across.size();
        int b = 0;
        for (Report r : this.reports) {
            t += r.problemCount();
            b += r.problemCount() > 0 ? 1 : 0;
        }
        this.total = t;
        this.bad = b;
    }

    /** The verdict over the reports of every journal verified, with the checks across journals. */
    public static VerifyReport of(List<Report> reports) {
        return new VerifyReport(reports);
    }

    /** Problems found, in the journals and across them; 0 when everything is clean. */
    public long problemCount() {
        return total;
    }

    /** A JSON-lines file of {@code node} whose lines did not import: every bad line is a problem with its number. */
    public static Report importFailed(String file, String node, JsonLinesException e, int maxProblems) {
        Report rep = new Report(file, maxProblems);
        rep.node(node);
        for (JsonLinesException.LineError le : e.errors()) {
            rep.problem(-1, le.toString());
        }
        rep.countUnlisted(e.total() - e.errors().size());
        return rep;
    }

    /** A JSON-lines file of {@code node} that could not be imported for another reason: one problem. */
    public static Report importFailed(String file, String node, JournalException e, int maxProblems) {
        Report rep = new Report(file, maxProblems);
        rep.node(node);
        rep.problem(-1, e.getMessage());
        return rep;
    }

    /**
     * A JSON-lines file imported into the journal {@code imported}, checked as a journal (its seqs
     * are the imported journal's; an import writes no metadata file, so its absence is no note),
     * with {@code cutTail}, when not null, the problem of a last line cut short.
     */
    public static Report imported(NodeJournal imported, int maxProblems, JournalVerify.Progress progress,
                                  Consumer<String> warnings, String cutTail) {
        Report rep = JournalVerify.verify(imported, maxProblems, progress, warnings);
        rep.metadataMissing(false);
        if (cutTail != null) {
            rep.problem(-1, cutTail);
        }
        return rep;
    }

    /** Prints the reports as text or as one JSON object. */
    public void print(PrintWriter out, boolean json) {
        if (json) {
            printJson(out);
        } else {
            printText(out);
        }
    }

    private void printText(PrintWriter out) {
        for (Report r : reports) {
            StringBuilder b = new StringBuilder();
            b.append(r.node()).append(r.node().equals(r.dir()) ? "" : " (journal " + r.dir() + ")").append(": ")
                    .append(String.format(Locale.ROOT, "%,d entries (%,d inputs, %,d derived)", r.entries(), r.inputs(), r.derived()));
            if (r.firstAtNs() <= r.lastAtNs()) {
                b.append(", t ").append(ReportText.time(r.firstAtNs())).append("..").append(ReportText.time(r.lastAtNs()))
                        .append(" s");
            }
            b.append(r.problemCount() == 0 ? ": ok" : ": " + r.problemCount() + (r.problemCount() == 1 ? " problem" : " problems"));
            if (r.damaged() > 0) {
                b.append(" (").append(r.damaged()).append(r.damaged() == 1 ? " damaged region, " : " damaged regions, ")
                        .append(r.lossUnknown() && r.lost() == 0 ? "an unknown number of"
                                : (r.lossUnknown() ? "at least " : "") + String.format(Locale.ROOT, "%,d", r.lost()))
                        .append(r.lost() == 1 && !r.lossUnknown() ? " entry" : " entries").append(" could not be read)");
            }
            if (r.unchecked() > 0) {
                b.append(String.format(Locale.ROOT, " [%,d entries without checksums (format version 1): damage inside "
                        + "them cannot be detected]", r.unchecked()));
            }
            out.println(b);
            if (r.metadataMissing()) {
                out.println("  note: metadata.cq4t is missing (readers do not need it; a writer recreates it)");
            }
            for (Problem p : r.problems()) {
                out.println("  " + p.line());
            }
            if (r.problemCount() > r.problems().size()) {
                out.println("  ... and " + (r.problemCount() - r.problems().size()) + " more");
            }
        }
        for (Problem p : across) {
            out.println("across journals: " + p.what());
        }
        if (total == 0) {
            out.println("verify: " + reports.size() + (reports.size() == 1 ? " journal" : " journals") + ", no problems");
        } else {
            out.println("verify: " + total + (total == 1 ? " problem" : " problems") + " in " + bad + " of " + reports.size()
                    + (reports.size() == 1 ? " journal" : " journals") + (across.isEmpty() ? "" : " and across journals"));
        }
    }

    private void printJson(PrintWriter out) {
        List<Object> js = new ArrayList<>();
        for (Report r : reports) {
            LinkedHashMap<String, Object> m = new LinkedHashMap<>();
            m.put("node", r.node());
            m.put("journal", r.dir());
            m.put("entries", r.entries());
            m.put("inputs", r.inputs());
            m.put("derived", r.derived());
            m.put("last_seq", r.lastSeq());
            m.put("first_at_ns", r.firstAtNs() <= r.lastAtNs() ? r.firstAtNs() : null);
            m.put("last_at_ns", r.firstAtNs() <= r.lastAtNs() ? r.lastAtNs() : null);
            m.put("checked_entries", r.checked());
            m.put("unchecked_entries", r.unchecked());
            m.put("damaged_regions", r.damaged());
            m.put("lost_entries", r.lossUnknown() ? null : r.lost());
            m.put("metadata_missing", r.metadataMissing());
            m.put("problem_count", r.problemCount());
            m.put("problems", problems(r.problems()));
            js.add(m);
        }
        LinkedHashMap<String, Object> top = new LinkedHashMap<>();
        top.put("ok", total == 0);
        top.put("problem_count", total);
        top.put("journals", js);
        top.put("across_journals", problems(across));
        out.println(Json.write(top));
    }

    private static List<Object> problems(List<Problem> ps) {
        List<Object> out = new ArrayList<>();
        for (Problem p : ps) {
            LinkedHashMap<String, Object> m = new LinkedHashMap<>();
            m.put("seq", p.seq() < 0 ? null : p.seq());
            m.put("problem", p.what());
            if (p.runEntries() > 1) {
                m.put("last_seq", p.lastSeq());
                m.put("run_entries", p.runEntries());
            }
            if (p.damage() != null) {
                JournalDamage d = p.damage();
                LinkedHashMap<String, Object> dm = new LinkedHashMap<>();
                dm.put("file", d.file());
                dm.put("offset", d.offset());
                dm.put("length", d.length() < 0 ? null : d.length());
                dm.put("last_good_seq", d.lastGoodSeq() < 0 ? null : d.lastGoodSeq());
                dm.put("resume_seq", d.resumeSeq() < 0 ? null : d.resumeSeq());
                dm.put("lost_entries", d.lostEntries() < 0 ? null : d.lostEntries());
                m.put("damage", dm);
            }
            out.add(m);
        }
        return out;
    }
}
