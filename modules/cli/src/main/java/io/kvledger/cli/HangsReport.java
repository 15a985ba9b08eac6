package io.kvledger.cli;

import io.kvledger.journal.replay.ConfigOverrides;
import io.kvledger.journal.replay.Hangs;
import io.kvledger.journal.replay.Replayer;
import io.kvledger.core.diagnosis.Bounds;
import io.kvledger.core.diagnosis.Finding;
import io.kvledger.core.diagnosis.HangDetectors;
import io.kvledger.journal.json.Json;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * Prints what {@link Hangs#analyse} (the library's ledger replay and {@link HangDetectors}) finds:
 * one line per finding (node, request, phase, detector, bug class, message), grouped by detector
 * in the detectors' documented order, and a summary. Used by {@code hangs} and by the demo.
 *
 * <p>Deterministic: times are relative to the first event of the journals, journals are named by
 * their node ids and display names, never by the paths given.
 */
final class HangsReport {

    private HangsReport() {}

    /** The human report. */
    static void print(PrintWriter out, Hangs.Result res, boolean fullIds) {
        long span = res.inputs() == 0 ? 0 : res.lastAtNs() - res.firstAtNs();
        out.println("hangs: " + res.nodes().size() + " journal(s) (" + Journals.names(res.nodes()) + "), " + res.inputs()
                + " events over " + Text.seconds3(span) + "; stuck after " + ConfigOverrides.seconds(res.bounds().stuckAfterNs())
                + " in one phase");
        for (Replayer.Node n : res.nodes()) {
            out.println("  " + n.name() + ": " + Text.node(n.config()) + "; "
                    + ConfigOverrides.describe(n.recordedConfig(), n.config()));
        }
        Map<String, List<Finding>> groups = Hangs.byDetector(res.findings());
        if (groups.isEmpty()) {
            out.println("no findings: every request reached a terminal phase without a serious anomaly");
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
        TreeSet<String> nodes = new TreeSet<>();
        for (Finding f : res.findings()) {
            nodes.add(f.node());
        }
        out.println("summary: " + res.findings().size() + " finding" + (res.findings().size() == 1 ? "" : "s") + " ("
                + String.join(", ", parts) + ") on " + nodes.size() + " of " + res.nodes().size() + " node(s)");
        if (!classes.isEmpty()) {
            out.println("bug classes (moriio-protocol.md section 7):");
            for (int c : classes) {
                out.println("  " + c + "  " + Text.bugClass(c));
            }
        }
    }

    /** One finding: node, request (or transfer), phase, detector, bug class, message. */
    static String line(Finding f, boolean fullIds) {
        String who = f.requestId() != null ? Text.ids(f.requestId(), fullIds)
                : f.transferId() != null ? f.transferId() : "-";
        return f.node() + "  " + who + "  " + (f.phase() == null ? "-" : f.phase().name()) + "  " + f.detector()
                + "  class " + (f.bugClass() == 0 ? "-" : Integer.toString(f.bugClass())) + "  "
                + Text.ids(f.message(), fullIds);
    }

    /** The JSON report (one object). */
    static void printJson(PrintWriter out, Hangs.Result res) {
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        m.put("command", "hangs");
        m.put("journals", (long) res.nodes().size());
        List<Object> nodes = new ArrayList<>();
        for (Replayer.Node n : res.nodes()) {
            LinkedHashMap<String, Object> nm = new LinkedHashMap<>();
            nm.put("node", n.name());
            nm.put("journal", n.journal().name());
            nm.put("describe", Text.node(n.config()));
            nm.put("in_effect", ConfigOverrides.describe(n.recordedConfig(), n.config()));
            nodes.add(nm);
        }
        m.put("nodes", nodes);
        m.put("inputs", res.inputs());
        m.put("first_at_ns", res.inputs() == 0 ? null : res.firstAtNs());
        m.put("last_at_ns", res.inputs() == 0 ? null : res.lastAtNs());
        m.put("stuck_after_ns", res.bounds().stuckAfterNs());
        m.put("count", (long) res.findings().size());
        LinkedHashMap<String, Object> by = new LinkedHashMap<>();
        Hangs.byDetector(res.findings()).forEach((d, l) -> by.put(d, (long) l.size()));
        m.put("by_detector", by);
        List<Object> list = new ArrayList<>();
        for (Finding f : res.findings()) {
            LinkedHashMap<String, Object> fm = new LinkedHashMap<>();
            fm.put("detector", f.detector());
            fm.put("node", f.node());
            fm.put("request_id", f.requestId());
            fm.put("transfer_id", f.transferId());
            fm.put("phase", f.phase() == null ? null : f.phase().name());
            fm.put("bug_class", (long) f.bugClass());
            fm.put("bug_class_title", f.bugClass() == 0 ? null : Text.bugClass(f.bugClass()));
            fm.put("at_ns", f.atNs() == Long.MIN_VALUE ? null : f.atNs());
            fm.put("since_ns", f.sinceNs() < 0 || f.sinceNs() == Long.MIN_VALUE ? null : f.sinceNs());
            fm.put("message", f.message());
            list.add(fm);
        }
        m.put("findings", list);
        out.println(Json.write(m));
    }

    /** The first finding with a request id, preferring a stuck request (for an inspect hint). */
    static Finding exampleHung(List<Finding> findings) {
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
