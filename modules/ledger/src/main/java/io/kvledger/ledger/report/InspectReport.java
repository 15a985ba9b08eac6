package io.kvledger.ledger.report;

import io.kvledger.core.effect.Effect;
import io.kvledger.journal.json.Json;
import io.kvledger.ledger.diagnosis.Bounds;
import io.kvledger.ledger.replay.Hangs;
import io.kvledger.ledger.replay.Replayer;
import io.kvledger.ledger.replay.Timeline;
import io.kvledger.ledger.replay.Timeline.Line;
import io.kvledger.ledger.text.Seconds;
import io.kvledger.ledger.trace.ChromeTrace;
import io.kvledger.ledger.web.TimelineJson;
import io.kvledger.ledger.web.WebPage;
import java.io.PrintWriter;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What {@code kvledger inspect} prints of a request or transfer {@link Timeline} found: its legs
 * per node, its transfer ids, one line per event or decision with the time relative to the first
 * line, and where each leg ended ({@link #print}); the same as one JSON object ({@link #printJson});
 * or the web page's view of it with the hang findings that name it, as one self-contained HTML
 * page ({@link #html}).
 */
public final class InspectReport {

    private InspectReport() {}

    /** The candidates of an ambiguous id, as the usage error lists them: at most {@code max}, then how many more. */
    public static String candidates(String query, Timeline.Ambiguous amb, int max, boolean fullIds) {
        List<String> c = amb.candidates();
        StringBuilder b = new StringBuilder("'" + query + "' matches " + c.size() + " " + amb.kind().word()
                + "s; give more of the id. Candidates:");
        for (int i = 0; i < c.size(); i++) {
            if (i == max) {
                b.append("\n  ... ").append(c.size() - max).append(" more");
                break;
            }
            b.append("\n  ").append(ReportText.ids(c.get(i), fullIds));
        }
        return b.toString();
    }

    /** Prints the timeline found as text. */
    public static void print(PrintWriter out, Timeline.Found found, boolean fullIds) {
        String query = found.query();
        String what = found.kind().word();
        List<Replayer.Node> nodes = found.nodes();
        Set<String> rids = found.requestIds();
        Set<String> tids = found.transferIds();
        List<Line> lines = found.lines();
        Set<String> nodeNames = new HashSet<>();
        nodes.forEach(n -> nodeNames.add(n.name()));
        List<String> proxies = lines.stream().map(Line::node).filter(n -> !nodeNames.contains(n)).distinct().toList();
        out.println("inspect: " + what + " " + ReportText.ids(query, fullIds) + " in " + nodes.size() + " journal(s) ("
                + ReportText.names(nodes) + ")"
                + (proxies.isEmpty() ? "" : " and proxy journal(s) " + String.join(", ", proxies)));
        Map<String, Set<String>> legs = found.legs();
        for (Map.Entry<String, Set<String>> leg : legs.entrySet()) {
            for (String rid : leg.getValue()) {
                out.println("  request " + leg.getKey() + "  " + ReportText.ids(rid, fullIds));
            }
        }
        Set<String> legIds = new HashSet<>();
        legs.values().forEach(legIds::addAll);
        for (String rid : rids) {
            if (!legIds.contains(rid)) {
                out.println("  request -  " + ReportText.ids(rid, fullIds) + " (named, never admitted in these journals)");
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
            b.append(ReportText.rel(l.atNs() - base)).append("  ").append(l.node()).append("  #").append(l.seq()).append("  ");
            if (l.input()) {
                b.append(ReportText.ids(l.text(), fullIds));
            } else if (l.phase() != null) {
                Effect.PhaseChanged p = l.phase();
                b.append(l.cause()).append(" => phase ").append(p.from() == null ? "-" : p.from().name()).append(" -> ")
                        .append(p.to().name()).append(": ").append(p.reason());
                if (legs.getOrDefault(l.node(), Set.of()).size() > 1) {
                    b.append("  [").append(ReportText.ids(p.requestId(), fullIds)).append(']');
                }
            } else {
                b.append(l.cause()).append(" => ").append(ReportText.ids(l.text(), fullIds));
            }
            out.println(b);
        }
        out.println("end:");
        for (Line l : found.ends()) {
            Effect.PhaseChanged p = l.phase();
            out.println("  " + l.node() + "  " + ReportText.ids(p.requestId(), fullIds) + "  " + p.to().name()
                    + (p.to().terminal() ? "" : " (not terminal)") + " since " + ReportText.rel(l.atNs() - base) + ": "
                    + p.reason());
        }
        out.println("inspect: " + lines.size() + " line(s) over " + Seconds.duration(lines.get(lines.size() - 1).atNs() - base));
    }

    /** Prints the timeline found as one JSON object. */
    public static void printJson(PrintWriter out, Timeline.Found found) {
        out.println(Json.write(TimelineJson.timeline(found, Integer.MAX_VALUE)));
    }

    /** A self-contained HTML page of one timeline, and how many hang findings it shows. */
    public record Page(String html, int findings) {}

    /**
     * The web page's view of the timeline found, with the hang findings (default bounds) of the
     * opened journals of {@code r} that name its request or transfer ids.
     */
    public static Page html(Replayer r, Timeline.Found found) {
        Map<String, Object> data = TimelineJson.timeline(found);
        Hangs.Result hangs = Hangs.analyse(r, Bounds.defaults());
        List<Object> findings = TimelineJson.findingsFor(hangs.findings(), found.requestIds(), found.transferIds());
        data.put("findings", findings);
        return new Page(WebPage.standalone(data), findings.size());
    }

    /**
     * The timeline found as Chrome trace-event JSON ({@link ChromeTrace}: Perfetto, chrome://tracing),
     * with the hang findings (default bounds) of the opened journals of {@code r} that name it. The
     * timeline must carry its lines' fields (for the flow arrows).
     */
    public static ChromeTrace.Trace chromeTrace(Replayer r, Timeline.Found found) {
        Hangs.Result hangs = Hangs.analyse(r, Bounds.defaults());
        return ChromeTrace.of(found, hangs.findings());
    }
}
