package io.kvledger.cli;

import io.kvledger.ledger.diagnosis.Bounds;
import io.kvledger.core.effect.Effect;
import io.kvledger.journal.json.Json;
import io.kvledger.ledger.replay.ConfigOverrides;
import io.kvledger.ledger.replay.Hangs;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.ledger.replay.Replayer;
import io.kvledger.ledger.replay.Timeline.Line;
import io.kvledger.ledger.replay.Timeline;
import io.kvledger.ledger.text.Seconds;
import io.kvledger.ledger.web.TimelineJson;
import io.kvledger.ledger.web.WebPage;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
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
 * other nodes' legs), the second prints the lines.
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

    @Option(names = "--full-ids", description = "print proxy request ids whole instead of cmpl-..._<uuid>-...")
    boolean fullIds;

    @Option(names = "--max-candidates", paramLabel = "N", defaultValue = "10", hidden = true)
    int maxCandidates;

    /** Whether a partial id {@code q} (prefix, abbreviation with "...", uuid hex) names {@code id}. */
    static boolean matches(String q, String id) {
        return Timeline.matches(q, id);
    }

    @Override
    public Integer call() {
        boolean byRequest = target.request != null;
        if (html != null && html.isBlank()) {
            throw new ParameterException(spec.commandLine(), "--html needs a file name");
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
            result = Timeline.of(journals, query, kind, json || html != null, List.of(scanning, collecting));
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
                List<String> c = amb.candidates();
                StringBuilder b = new StringBuilder("'" + query + "' matches " + c.size() + " " + what + "s; give more of "
                        + "the id. Candidates:");
                for (int i = 0; i < c.size(); i++) {
                    if (i == maxCandidates) {
                        b.append("\n  ... ").append(c.size() - maxCandidates).append(" more");
                        break;
                    }
                    b.append("\n  ").append(Text.ids(c.get(i), fullIds));
                }
                throw new ParameterException(spec.commandLine(), b.toString());
            }
            case Timeline.Found found -> {
                boolean doubted = Journals.warnings(spec, found.warnings());
                if (html != null) {
                    writeHtml(err, journals, found);
                }
                if (json) {
                    printJson(out, found);
                } else {
                    print(out, found);
                }
                out.flush();
                return doubted ? 1 : 0;
            }
        }
    }

    private void print(PrintWriter out, Timeline.Found found) {
        String query = found.query();
        String what = found.kind().word();
        List<Replayer.Node> nodes = found.nodes();
        Set<String> rids = found.requestIds();
        Set<String> tids = found.transferIds();
        List<Line> lines = found.lines();
        Set<String> nodeNames = new HashSet<>();
        nodes.forEach(n -> nodeNames.add(n.name()));
        List<String> proxies = lines.stream().map(Line::node).filter(n -> !nodeNames.contains(n)).distinct().toList();
        out.println("inspect: " + what + " " + Text.ids(query, fullIds) + " in " + nodes.size() + " journal(s) ("
                + Journals.names(nodes) + ")" + (proxies.isEmpty() ? "" : " and proxy journal(s) " + String.join(", ", proxies)));
        Map<String, Set<String>> legs = found.legs();
        for (Map.Entry<String, Set<String>> leg : legs.entrySet()) {
            for (String rid : leg.getValue()) {
                out.println("  request " + leg.getKey() + "  " + Text.ids(rid, fullIds));
            }
        }
        Set<String> legIds = new HashSet<>();
        legs.values().forEach(legIds::addAll);
        for (String rid : rids) {
            if (!legIds.contains(rid)) {
                out.println("  request -  " + Text.ids(rid, fullIds) + " (named, never admitted in these journals)");
            }
        }
        for (String tid : tids) {
            out.println("  transfer  " + tid);
        }
        if (lines.isEmpty()) {
            out.println("no lines");
            return;
        }
        Line first = lines.get(0);
        out.println("  times are relative to the first line (" + first.node() + " #" + first.seq() + ")");
        long base = first.atNs();
        for (Line l : lines) {
            StringBuilder b = new StringBuilder();
            b.append(Text.rel(l.atNs() - base)).append("  ").append(l.node()).append("  #").append(l.seq()).append("  ");
            if (l.input()) {
                b.append(Text.ids(l.text(), fullIds));
            } else if (l.phase() != null) {
                Effect.PhaseChanged p = l.phase();
                b.append(l.cause()).append(" => phase ").append(p.from() == null ? "-" : p.from().name()).append(" -> ")
                        .append(p.to().name()).append(": ").append(p.reason());
                if (legs.getOrDefault(l.node(), Set.of()).size() > 1) {
                    b.append("  [").append(Text.ids(p.requestId(), fullIds)).append(']');
                }
            } else {
                b.append(l.cause()).append(" => ").append(Text.ids(l.text(), fullIds));
            }
            out.println(b);
        }
        out.println("end:");
        for (Line l : found.ends()) {
            Effect.PhaseChanged p = l.phase();
            out.println("  " + l.node() + "  " + Text.ids(p.requestId(), fullIds) + "  " + p.to().name()
                    + (p.to().terminal() ? "" : " (not terminal)") + " since " + Text.rel(l.atNs() - base) + ": " + p.reason());
        }
        out.println("inspect: " + lines.size() + " line(s) over " + Seconds.cut(lines.get(lines.size() - 1).atNs() - base, 3));
    }

    /** {@code --html FILE}: the web page's view of the request, with its findings, as one file. */
    private void writeHtml(PrintWriter err, List<NodeJournal> journals, Timeline.Found found) {
        Map<String, Object> data = TimelineJson.timeline(found);
        Hangs.Result hangs;
        try (Replayer r = Journals.openResolved(spec, journals, ConfigOverrides.none())) {
            hangs = Hangs.analyse(r, Bounds.defaults());
        }
        List<Object> findings = TimelineJson.findingsFor(hangs.findings(), found.requestIds(), found.transferIds());
        data.put("findings", findings);
        Path file = Path.of(html);
        try {
            Files.writeString(file, WebPage.standalone(data), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new ParameterException(spec.commandLine(), "cannot write --html " + html + ": " + e.getMessage());
        }
        err.println("inspect: wrote " + html + " (" + found.lines().size() + " line(s), " + findings.size()
                + " finding(s)); open it in a browser");
        err.flush();
    }

    private void printJson(PrintWriter out, Timeline.Found found) {
        out.println(Json.write(TimelineJson.timeline(found, Integer.MAX_VALUE)));
    }
}
