package io.kvledger.cli;

import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import io.kvledger.ledger.replay.JournalVerify;
import io.kvledger.ledger.replay.JournalVerify.Problem;
import io.kvledger.ledger.replay.JournalVerify.Report;
import io.kvledger.journal.JournalDamage;
import io.kvledger.journal.JournalException;
import io.kvledger.journal.JsonLines;
import io.kvledger.journal.JsonLinesException;
import io.kvledger.journal.json.Json;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvledger verify DIR...}: checks that journals are well formed. Per journal: the header
 * comes first (and only there) in a format version this build reads; every entry has a type id
 * this version knows and decodes; sequence numbers go up by exactly one; event times never go
 * back (over the inputs and the derived entries of an input; start-up checks, whose cause is the
 * header, carry no time of their own); every derived entry's cause is the header or an earlier
 * input. Integrity: every entry's checksum (format version 2) and the framing of the queue files;
 * each damaged region is a problem naming the file, the byte offset, the last good seq and the
 * entries lost, so verify never says "ok" about a journal it could not read completely; entries
 * without checksums (format version 1) are counted. Across journals: node ids are unique. Exit 0
 * when everything is clean, 1 when a problem was found (each listed with its seq or region), 2 for
 * a DIR that holds no journal. The checks are the ledger's {@link JournalVerify}; this command
 * finds the journals (and imports JSON lines), prints and sets the exit status.
 */
@Command(name = "verify", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Checks the format of journals: header first, known type ids, sequence numbers up by one, "
                + "event times that never go back, derived entries caused by an earlier input, unique node ids; "
                + "and their integrity: every entry's checksum, every damaged region (file, byte offset, last good "
                + "seq, entries lost), data after the apparent end. JSON lines (a vLLM bridge recorder's directory, "
                + "journal export --out's, or one .jsonl file): every bad line with its number, and a last line cut "
                + "short.",
            "Exit status: 0 clean, 1 when a problem was found (each printed with its seq), 2 usage error."})
final class VerifyCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Parameters(paramLabel = "DIR", arity = "1..*", description = "journals, or directories of node journals, or JSON "
            + "lines as the reading commands take them")
    List<Path> dirs;

    @Option(names = "--max-problems", paramLabel = "N", defaultValue = "20",
            description = "problems listed per journal; the rest are counted (default: ${DEFAULT-VALUE})")
    int maxProblems;

    @Option(names = "--json", description = "one JSON object: every journal with its counts and problems")
    boolean json;

    @Override
    public Integer call() {
        if (maxProblems < 0) {
            throw usage("--max-problems must not be negative, got " + maxProblems);
        }
        List<Path> queues = new ArrayList<>();
        List<JsonLinesTrees.NodeFile> jsonLines = new ArrayList<>();
        for (Path d : dirs) {
            List<JsonLinesTrees.NodeFile> files = JsonLinesTrees.files(d.toString()).nodes();
            if (files.isEmpty()) {
                queues.add(d);
            } else {
                jsonLines.addAll(files);
            }
        }
        List<NodeJournal> journals;
        try {
            journals = queues.isEmpty() ? List.of() : JournalDirs.resolve(queues);
        } catch (JournalInputs.InputException e) {
            throw usage(e.getMessage());
        }
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        Progress line = new Progress(err, "verify");
        JournalVerify.Progress progress = new JournalVerify.Progress() {
            @Override
            protected void at(String node, long entries) {
                if (line.due()) {
                    line.update(-1, String.format(Locale.ROOT, "%s: %,d entries", node, entries));
                }
            }
        };
        List<Report> reports = new ArrayList<>();
        for (NodeJournal j : journals) {
            reports.add(JournalVerify.verify(j, maxProblems, progress, err::println));
        }
        Path root = jsonLines.isEmpty() ? null : JsonLinesTrees.temporaryRoot("verify");
        for (JsonLinesTrees.NodeFile f : jsonLines) {
            reports.add(verifyJsonLines(f, root.resolve(f.node() + "-" + reports.size()), progress, err));
        }
        line.done(String.format(Locale.ROOT, "%,d entries", progress.entries()));
        List<Problem> across = JournalVerify.acrossJournals(reports);
        long total = across.size();
        int bad = 0;
        for (Report r : reports) {
            total += r.problemCount();
            bad += r.problemCount() > 0 ? 1 : 0;
        }
        if (json) {
            printJson(out, reports, across, total);
        } else {
            printText(out, reports, across, total, bad);
        }
        out.flush();
        return total == 0 ? 0 : 1;
    }

    /**
     * A node's JSON-lines file (a vLLM bridge recording, an export): every bad line is a problem
     * with its line number, and so is a last line cut short; a file that imports is then checked as
     * a journal (its seqs are the imported journal's).
     */
    private Report verifyJsonLines(JsonLinesTrees.NodeFile f, Path dir, JournalVerify.Progress progress, PrintWriter err) {
        JsonLines.CutTail cut;
        try {
            cut = JsonLinesTrees.importNode(f, dir);
        } catch (JsonLinesException e) {
            Report rep = new Report(f.jsonl().toString(), maxProblems);
            rep.node(f.node());
            for (JsonLinesException.LineError le : e.errors()) {
                rep.problem(-1, le.toString());
            }
            rep.countUnlisted(e.total() - e.errors().size());
            return rep;
        } catch (JournalException e) {
            Report rep = new Report(f.jsonl().toString(), maxProblems);
            rep.node(f.node());
            rep.problem(-1, e.getMessage());
            return rep;
        }
        Report rep = JournalVerify.verify(new NodeJournal(dir, f.jsonl().toString(), f.jsonl().toString()), maxProblems,
                progress, err::println);
        rep.metadataMissing(false);
        if (cut != null) {
            rep.problem(-1, cut.describe(f.jsonl()));
        }
        return rep;
    }

    private static void printText(PrintWriter out, List<Report> reports, List<Problem> across, long total, int bad) {
        for (Report r : reports) {
            StringBuilder b = new StringBuilder();
            b.append(r.node()).append(r.node().equals(r.dir()) ? "" : " (journal " + r.dir() + ")").append(": ")
                    .append(String.format(Locale.ROOT, "%,d entries (%,d inputs, %,d derived)", r.entries(), r.inputs(), r.derived()));
            if (r.firstAtNs() <= r.lastAtNs()) {
                b.append(", t ").append(EntryFormat.time(r.firstAtNs())).append("..").append(EntryFormat.time(r.lastAtNs())).append(" s");
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

    private static void printJson(PrintWriter out, List<Report> reports, List<Problem> across, long total) {
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

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }
}
