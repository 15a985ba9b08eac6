package io.kvledger.cli;

import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import io.kvledger.ledger.replay.JournalVerify;
import io.kvledger.ledger.replay.JournalVerify.Report;
import io.kvledger.ledger.replay.JsonLinesInputs;
import io.kvledger.ledger.report.VerifyReport;
import io.kvledger.journal.JournalException;
import io.kvledger.journal.JsonLines;
import io.kvledger.journal.JsonLinesException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
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
 * a DIR that holds no journal. The checks are the ledger's {@link JournalVerify}, the text and
 * JSON it prints its {@link VerifyReport}; this command finds the journals (and imports JSON
 * lines), shows progress and sets the exit status.
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
            + "lines as the reading commands take them, or a Kafka topic: kafka://HOST:PORT/TOPIC[?since=10m]")
    List<String> dirs;

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
        List<JsonLinesInputs.NodeFile> jsonLines = new ArrayList<>();
        List<String> topics = new ArrayList<>();
        for (String d : dirs) {
            if (io.kvledger.ledger.kafka.KafkaUri.isKafka(d)) {
                topics.add(d);
                continue;
            }
            List<JsonLinesInputs.NodeFile> files = JsonLinesInputs.files(d).nodes();
            if (files.isEmpty()) {
                queues.add(Path.of(d));
            } else {
                jsonLines.addAll(files);
            }
        }
        List<NodeJournal> journals;
        try {
            journals = new ArrayList<>(queues.isEmpty() ? List.of() : JournalDirs.resolve(queues));
            for (String t : topics) {
                journals.addAll(KafkaTopics.read(t, spec.commandLine().getErr(), "verify"));
            }
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
        Path root = jsonLines.isEmpty() ? null : JsonLinesInputs.temporaryRoot("verify");
        for (JsonLinesInputs.NodeFile f : jsonLines) {
            reports.add(verifyJsonLines(f, root.resolve(f.node() + "-" + reports.size()), progress, err));
        }
        line.done(String.format(Locale.ROOT, "%,d entries", progress.entries()));
        VerifyReport verdict = VerifyReport.of(reports);
        verdict.print(out, json);
        out.flush();
        return verdict.problemCount() == 0 ? 0 : 1;
    }

    /**
     * A node's JSON-lines file (a vLLM bridge recording, an export): every bad line is a problem
     * with its line number, and so is a last line cut short; a file that imports is then checked as
     * a journal (its seqs are the imported journal's).
     */
    private Report verifyJsonLines(JsonLinesInputs.NodeFile f, Path dir, JournalVerify.Progress progress, PrintWriter err) {
        String file = f.jsonl().toString();
        JsonLines.CutTail cut;
        try {
            cut = JsonLinesInputs.importNode(f, dir);
        } catch (JsonLinesException e) {
            return VerifyReport.importFailed(file, f.node(), e, maxProblems);
        } catch (JournalException e) {
            return VerifyReport.importFailed(file, f.node(), e, maxProblems);
        }
        return VerifyReport.imported(new NodeJournal(dir, file, file), maxProblems, progress, err::println,
                cut == null ? null : cut.describe(f.jsonl()));
    }

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }
}
