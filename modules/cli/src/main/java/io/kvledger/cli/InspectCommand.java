package io.kvledger.cli;

import io.kvledger.ledger.replay.ConfigOverrides;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.ledger.replay.Replayer;
import io.kvledger.ledger.replay.Timeline;
import io.kvledger.ledger.report.InspectReport;
import io.kvledger.ledger.trace.ChromeTrace;
import io.kvledger.journal.json.Json;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code kvledger inspect DIR... --request ID | --transfer ID}: the timeline of one request or
 * transfer across the journals of several nodes, one line per input event or recomputed effect
 * that names it (its request ids, its transfer ids, or a data-plane status posted for it), with
 * the time relative to the first line, and every phase change with its reason.
 *
 * <p>Two passes over the journals: the first finds which request ids and transfer ids belong to
 * the one asked for (an id prefix, a {@code cmpl-..._<uuid>-...} abbreviation, or the uuid hex of
 * a proxy request id finds every leg of that request; the transfer ids the legs carry link the
 * other nodes' legs), the second prints the lines. The text, JSON and HTML forms are the
 * ledger's {@link InspectReport}.
 */
@Command(name = "inspect", mixinStandardHelpOptions = true, sortOptions = false,
        description = {
            "Prints the timeline of one request or transfer across node journals: one line per event or decision "
                    + "that names it (request id, transfer id, or a status id posted for it), with the time relative "
                    + "to the first line, the node, the journal seq, the dissected entry, and phase changes with "
                    + "their reasons.",
            "ID may be a whole id, a prefix, the 32-hex uuid of a proxy request id (finds every leg), or an "
                    + "abbreviation as other commands print it (cmpl-..._<uuid>-0-<suffix>).",
            "Exit status: 0 found; 1 no such request or transfer, or a journal is damaged or breaks the order rules verify checks (what was skipped or doubted is on standard error); 2 usage error (also: ID matches several)."})
final class InspectCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Parameters(paramLabel = "DIR", arity = "1..*", description = Journals.DIRS_HELP)
    List<String> dirs = new ArrayList<>();

    @ArgGroup(exclusive = true, multiplicity = "1")
    Target target;

    static final class Target {
        @Option(names = "--request", paramLabel = "ID", required = true, description = "a request id (or part of one)")
        String request;

        @Option(names = "--transfer", paramLabel = "ID", required = true, description = "a transfer id (or a prefix)")
        String transfer;
    }

    @Option(names = "--json", description = "print one JSON object")
    boolean json;

    @Option(names = "--html", paramLabel = "FILE",
            description = "also write the timeline as one self-contained HTML page (the web page's swimlane view, "
                    + "with the hang findings that name the request), to attach to a bug report")
    String html;

    @Option(names = "--chrome-trace", paramLabel = "FILE",
            description = "also write the timeline as Chrome trace-event JSON, which Perfetto (ui.perfetto.dev) and "
                    + "chrome://tracing open: a process per node, a thread per side, the phases with their durations, "
                    + "a flow arrow per ZMQ frame between nodes, each hang finding as an instant marker")
    String chromeTrace;

    @Option(names = "--full-ids", description = "print proxy request ids whole instead of cmpl-..._<uuid>-...")
    boolean fullIds;

    @Option(names = "--max-candidates", paramLabel = "N", defaultValue = "10", hidden = true)
    int maxCandidates;

    @Override
    public Integer call() {
        boolean byRequest = target.request != null;
        if (html != null && html.isBlank()) {
            throw new ParameterException(spec.commandLine(), "--html needs a file name");
        }
        if (chromeTrace != null && chromeTrace.isBlank()) {
            throw new ParameterException(spec.commandLine(), "--chrome-trace needs a file name");
        }
        String query = (byRequest ? target.request : target.transfer).strip();
        Timeline.Kind kind = byRequest ? Timeline.Kind.REQUEST : Timeline.Kind.TRANSFER;
        String what = kind.word();
        if (query.isEmpty()) {
            throw new ParameterException(spec.commandLine(), "--" + what + " needs a non-empty id");
        }
        List<NodeJournal> journals = Journals.resolve(spec, dirs);
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        Timeline.Result result;
        ProgressLine scanning = ProgressLine.forTerminal(err, "inspect (1/2)");
        ProgressLine collecting = ProgressLine.forTerminal(err, "inspect (2/2)");
        try {
            result = Timeline.of(journals, query, kind, json || html != null || chromeTrace != null, List.of(scanning, collecting));
        } catch (JournalInputs.InputException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        } finally {
            scanning.done();
            collecting.done();
        }
        switch (result) {
            case Timeline.NotFound nf -> {
                // a journal that was not read whole may hold the id in what is missing
                Journals.warnings(spec, nf.warnings());
                err.println("inspect: no " + what + " id in " + nf.journals() + " journal(s) matches '" + query + "'"
                        + (byRequest ? " (give a whole request id, a prefix, or the 32-hex uuid of a proxy request id)"
                                : " (give a whole transfer id or a prefix)"));
                err.flush();
                return 1;
            }
            case Timeline.Ambiguous amb -> {
                Journals.warnings(spec, amb.warnings());
                throw new ParameterException(spec.commandLine(),
                        InspectReport.candidates(query, amb, maxCandidates, fullIds));
            }
            case Timeline.Found found -> {
                boolean doubted = Journals.warnings(spec, found.warnings());
                if (html != null) {
                    writeHtml(err, journals, found);
                }
                if (chromeTrace != null) {
                    writeChromeTrace(err, journals, found);
                }
                if (json) {
                    InspectReport.printJson(out, found);
                } else {
                    InspectReport.print(out, found, fullIds);
                }
                out.flush();
                return doubted ? 1 : 0;
            }
        }
    }

    /** {@code --html FILE}: the web page's view of the request, with its findings, as one file. */
    private void writeHtml(PrintWriter err, List<NodeJournal> journals, Timeline.Found found) {
        InspectReport.Page page;
        try (Replayer r = Journals.openResolved(spec, journals, ConfigOverrides.none())) {
            page = InspectReport.html(r, found);
        }
        try {
            Files.writeString(Path.of(html), page.html(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new ParameterException(spec.commandLine(), "cannot write --html " + html + ": " + e.getMessage());
        }
        err.println("inspect: wrote " + html + " (" + found.lines().size() + " line(s), " + page.findings()
                + " finding(s)); open it in a browser");
        err.flush();
    }

    /** {@code --chrome-trace FILE}: the timeline as Chrome trace-event JSON, with its findings. */
    private void writeChromeTrace(PrintWriter err, List<NodeJournal> journals, Timeline.Found found) {
        ChromeTrace.Trace trace;
        try (Replayer r = Journals.openResolved(spec, journals, ConfigOverrides.none())) {
            trace = InspectReport.chromeTrace(r, found);
        }
        try {
            Files.writeString(Path.of(chromeTrace), Json.write(trace.json()), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new ParameterException(spec.commandLine(), "cannot write --chrome-trace " + chromeTrace + ": "
                    + e.getMessage());
        }
        err.println("inspect: wrote " + chromeTrace + " (" + trace.events() + " trace event(s), " + trace.flows()
                + " frame flow(s), " + trace.unreceived() + " frame(s) never received, " + trace.findings()
                + " finding(s)); open it in ui.perfetto.dev or chrome://tracing");
        err.flush();
    }
}
