package io.kvledger.ledger.report;

import io.kvledger.ledger.diagnosis.Bounds;
import io.kvledger.ledger.diagnosis.Finding;
import io.kvledger.ledger.diagnosis.HangDetectors;
import io.kvledger.ledger.diagnosis.InFlight;
import io.kvledger.ledger.diagnosis.Ledger;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.journal.json.Json;
import io.kvledger.ledger.replay.ConfigOverrides;
import io.kvledger.ledger.replay.Hangs;
import io.kvledger.ledger.text.Seconds;
import io.kvledger.ledger.web.TimelineJson;
import io.kvledger.ledger.replay.Replayer;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * What {@code kvledger hangs} prints of what {@link Hangs#analyse} (the ledger replay and
 * {@link HangDetectors}) finds: one line per finding (node, request, phase, detector, bug class,
 * message), grouped by detector in the detectors' documented order, and a summary. It always says
 * how many requests were still in a non-terminal phase when the journals end and why each is, or
 * is not, a finding. Used by {@code hangs} and by the demo.
 *
 * <p>Deterministic: times are relative to the first event of the journals, journals are named by
 * their node ids and display names, never by the paths given.
 */
public final class HangsReport {

    private HangsReport() {}

    /** The human report. */
    public static void print(PrintWriter out, Hangs.Result res, boolean fullIds) {
        print(out, res, fullIds, false);
    }

    /** The human report; {@code listInFlight} also lists every in-flight request that is not stuck. */
    public static void print(PrintWriter out, Hangs.Result res, boolean fullIds, boolean listInFlight) {
        long span = res.inputs() == 0 ? 0 : res.lastAtNs() - res.firstAtNs();
        out.println("hangs: " + res.nodes().size() + " journal(s) (" + ReportText.names(res.nodes()) + ")"
                + (res.proxies().isEmpty() ? "" : " and proxy journal(s) " + String.join(", ", res.proxies())) + ", " + res.inputs()
                + " events over " + Seconds.duration(span) + "; stuck after " + Seconds.exact(res.bounds().stuckAfterNs(), 0)
                + " in one phase");
        for (Replayer.Node n : res.nodes()) {
            out.println("  " + n.name() + ": " + ReportText.node(n.config()) + "; "
                    + ConfigOverrides.describe(n.recordedConfig(), n.config()));
        }
        printInFlight(out, res, fullIds, listInFlight);
        printOpen(out, res);
        printUnclean(out, res);
        Map<String, List<Finding>> groups = Hangs.byDetector(res.findings());
        if (groups.isEmpty() && !res.unclean().isEmpty()) {
            out.println("no findings in what could be read, but not clean: the journal" + (res.unclean().size() == 1 ? " of " : "s of ")
                    + String.join(", ", res.unclean()) + (res.unclean().size() == 1 ? " was" : " were")
                    + " not read whole (see the warnings), and what is missing may hold findings");
            return;
        }
        if (groups.isEmpty()) {
            long notStuck = res.inFlight().size() - res.count(InFlight.Status.STUCK);
            out.println(notStuck == 0 ? "no findings: every request reached a terminal phase without a serious anomaly"
                    : "no findings: " + requests(notStuck) + " still in flight " + (notStuck == 1 ? "is" : "are")
                            + " not stuck (see above); every other request reached a terminal phase without a serious anomaly");
            return;
        }
        TreeSet<Integer> classes = new TreeSet<>();
        for (Map.Entry<String, List<Finding>> g : groups.entrySet()) {
            out.println();
            out.println(g.getKey() + ": " + g.getValue().size() + " finding" + (g.getValue().size() == 1 ? "" : "s"));
            for (Finding f : g.getValue()) {
                if (f.bugClass() > 0) {
                    classes.add(f.bugClass());
                }
                out.println("  " + line(f, fullIds));
            }
        }
        out.println();
        List<String> parts = new ArrayList<>();
        groups.forEach((d, l) -> parts.add(d + " " + l.size()));
        long onProxies = res.findings().stream().filter(f -> f.detector().startsWith("proxy-")).map(Finding::node)
                .distinct().count();
        long onNodes = res.findings().stream().filter(f -> !f.detector().startsWith("proxy-")).map(Finding::node)
                .distinct().count();
        out.println("summary: " + res.findings().size() + " finding" + (res.findings().size() == 1 ? "" : "s") + " ("
                + String.join(", ", parts) + ") on " + onNodes + " of " + res.nodes().size() + " node(s)"
                + (res.proxies().isEmpty() ? "" : " and " + onProxies + " of " + res.proxies().size() + " proxy journal(s)"));
        if (!classes.isEmpty()) {
            out.println("bug classes (moriio-protocol.md section 7):");
            for (int c : classes) {
                out.println("  " + c + "  " + BugClasses.title(c));
            }
        }
    }

    /**
     * The journals of live processes that end without a shutdown: what happened after their last
     * event is not in them.
     */
    private static void printOpen(PrintWriter out, Hangs.Result res) {
        if (res.open().isEmpty()) {
            return;
        }
        List<String> parts = new ArrayList<>();
        for (Hangs.Open o : res.open()) {
            parts.add(o.node() + (o.lastEventNs() == 0 ? " (no event)" : " (last event at " + rel(res, o.lastEventNs()) + ")"));
        }
        out.println("no shutdown at the end of " + String.join(", ", parts) + ": "
                + (res.open().size() == 1 ? "its process was" : "their processes were") + " killed, or "
                + (res.open().size() == 1 ? "is" : "are") + " still running; what happened after is not in the journal"
                + (res.open().size() == 1 ? "" : "s"));
    }

    /**
     * The journals not read clean (damaged, cut short, against the order rules), with the requests
     * of each that were in flight when its journal ends: young at the cut says nothing.
     */
    private static void printUnclean(PrintWriter out, Hangs.Result res) {
        for (String node : res.unclean()) {
            long inFlight = res.inFlight().stream().filter(f -> f.node().equals(node)).count();
            out.println("not read whole: " + node + "'s journal is damaged, cut short, or breaks the order rules (see the "
                    + "warnings)" + (inFlight == 0 ? "" : "; " + requests(inFlight) + " in flight at its end may have "
                    + "hung in what is missing"));
        }
    }

    /**
     * How many requests were in a non-terminal phase when the journals end and why each is or is
     * not a finding, then their count per node and phase (and, when asked, one line each).
     */
    private static void printInFlight(PrintWriter out, Hangs.Result res, boolean fullIds, boolean list) {
        String end = res.inputs() == 0 ? "" : " (the journals end at " + rel(res, res.lastAtNs()) + ")";
        if (res.inFlight().isEmpty()) {
            out.println("in flight: none; every request the journals saw reached a terminal phase" + end);
            return;
        }
        String bound = Seconds.exact(res.bounds().stuckAfterNs(), 0);
        List<String> why = new ArrayList<>();
        long young = res.count(InFlight.Status.YOUNG);
        long progressing = res.count(InFlight.Status.PROGRESSING);
        long stuck = res.count(InFlight.Status.STUCK);
        if (young > 0) {
            why.add(young + " in " + its(young) + " phase for less than --stuck-after " + bound);
        }
        if (progressing > 0) {
            why.add(progressing + " in " + its(progressing) + " phase longer, but still progressing (a lifecycle event "
                    + "within " + bound + " of the end)");
        }
        if (stuck > 0) {
            why.add(stuck + " stuck (findings below)");
        }
        out.println("in flight: " + requests(res.inFlight().size()) + " in a non-terminal phase" + end + ": "
                + String.join(", ", why));
        LinkedHashMap<String, LinkedHashMap<RequestPhase, Long>> byNode = new LinkedHashMap<>();
        for (InFlight f : res.inFlight()) {
            byNode.computeIfAbsent(f.node(), k -> new LinkedHashMap<>()).merge(f.phase(), 1L, Long::sum);
        }
        List<String> nodes = new ArrayList<>();
        byNode.forEach((node, phases) -> {
            List<String> parts = new ArrayList<>();
            for (RequestPhase p : RequestPhase.values()) {
                if (phases.containsKey(p)) {
                    parts.add(p.name() + " " + phases.get(p));
                }
            }
            nodes.add(node + ": " + String.join(", ", parts));
        });
        out.println("  " + String.join("; ", nodes));
        if (list) {
            for (InFlight f : res.inFlight()) {
                if (f.status() != InFlight.Status.STUCK) {
                    out.println("  " + f.node() + "  " + ReportText.ids(f.requestId(), fullIds) + "  " + f.phase().name() + "  "
                            + f.status().name().toLowerCase(java.util.Locale.ROOT) + "  in its phase since "
                            + rel(res, f.sinceNs()) + ", last event at " + rel(res, f.lastEventNs()));
                }
            }
        }
    }

    private static String its(long n) {
        return n == 1 ? "its" : "their";
    }

    private static String requests(long n) {
        return n + (n == 1 ? " request" : " requests");
    }

    private static String rel(Hangs.Result res, long atNs) {
        return Seconds.offset(atNs - res.firstAtNs());
    }

    /** One finding: node, request (or transfer), phase, detector, bug class, message. */
    static String line(Finding f, boolean fullIds) {
        String who = f.requestId() != null ? ReportText.ids(f.requestId(), fullIds)
                : f.transferId() != null ? f.transferId() : "-";
        return f.node() + "  " + who + "  " + (f.phase() == null ? "-" : f.phase().name()) + "  " + f.detector()
                + "  class " + (f.bugClass() == 0 ? "-" : Integer.toString(f.bugClass())) + "  "
                + ReportText.ids(f.message(), fullIds);
    }

    /** The JSON report (one object). */
    public static void printJson(PrintWriter out, Hangs.Result res) {
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        m.put("command", "hangs");
        m.put("journals", (long) res.nodes().size());
        m.put("proxy_journals", new ArrayList<Object>(res.proxies()));
        List<Object> nodes = new ArrayList<>();
        for (Replayer.Node n : res.nodes()) {
            LinkedHashMap<String, Object> nm = new LinkedHashMap<>();
            nm.put("node", n.name());
            nm.put("journal", n.journal().name());
            nm.put("describe", ReportText.node(n.config()));
            nm.put("in_effect", ConfigOverrides.describe(n.recordedConfig(), n.config()));
            nodes.add(nm);
        }
        m.put("nodes", nodes);
        List<Object> open = new ArrayList<>();
        for (Hangs.Open o : res.open()) {
            Map<String, Object> om = new LinkedHashMap<>();
            om.put("node", o.node());
            om.put("last_event_ns", o.lastEventNs());
            open.add(om);
        }
        m.put("without_shutdown", open);
        m.put("not_read_whole", new ArrayList<Object>(res.unclean()));
        m.put("clean", res.clean());
        TimelineJson.putFindings(m, res, BugClasses::title);
        LinkedHashMap<String, Object> in = new LinkedHashMap<>();
        in.put("count", (long) res.inFlight().size());
        for (InFlight.Status st : InFlight.Status.values()) {
            in.put(st.name().toLowerCase(java.util.Locale.ROOT), res.count(st));
        }
        List<Object> reqs = new ArrayList<>();
        for (InFlight f : res.inFlight()) {
            LinkedHashMap<String, Object> fm = new LinkedHashMap<>();
            fm.put("node", f.node());
            fm.put("request_id", f.requestId());
            fm.put("transfer_id", f.transferId());
            fm.put("phase", f.phase().name());
            fm.put("status", f.status().name().toLowerCase(java.util.Locale.ROOT));
            fm.put("since_ns", f.sinceNs());
            fm.put("last_event_ns", f.lastEventNs());
            reqs.add(fm);
        }
        in.put("requests", reqs);
        m.put("in_flight", in);
        out.println(Json.write(m));
    }

    /** The first finding with a request id, preferring a stuck request (for an inspect hint). */
    public static Finding exampleHung(List<Finding> findings) {
        for (String d : List.of("stuck-waiting", "stuck")) {
            for (Finding f : findings) {
                if (f.detector().equals(d) && f.requestId() != null) {
                    return f;
                }
            }
        }
        for (Finding f : findings) {
            if (f.requestId() != null) {
                return f;
            }
        }
        return null;
    }
}
