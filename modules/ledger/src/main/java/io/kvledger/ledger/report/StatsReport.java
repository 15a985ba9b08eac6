package io.kvledger.ledger.report;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.json.Json;
import io.kvledger.ledger.diagnosis.Ledger;
import io.kvledger.ledger.replay.Replayer;
import io.kvledger.ledger.text.Seconds;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.HdrHistogram.Histogram;

/**
 * What {@code kvledger stats} prints: per node, the requests in each phase at the end, anomalies
 * by kind, and latency percentiles (p50/p90/p99/max, HdrHistogram with 3 significant digits) of
 * the time spent in each phase and of each request's admission-to-terminal duration; across
 * nodes, the end-to-end duration of each client request (its legs joined by the uuid of the proxy
 * request id).
 *
 * <p>{@link #run} replays (without the recorded derived entries); {@link #print} prints, as text
 * or one JSON object (durations in nanoseconds).
 */
public final class StatsReport {

    /** One node's statistics. */
    private static final class NodeStats {
        final NodeTally tally = new NodeTally();
        final EnumMap<RequestPhase, Histogram> phases = new EnumMap<>(RequestPhase.class);
        final Histogram requests = histogram();
        final HashMap<String, Long> admittedAt = new HashMap<>();
    }

    /** A client request across nodes: first admission, last terminal phase, legs still open. */
    private static final class Client {
        long firstNs = Long.MAX_VALUE;
        long lastNs = Long.MIN_VALUE;
        int open;
    }

    private static Histogram histogram() {
        Histogram h = new Histogram(3);
        h.setAutoResize(true);
        return h;
    }

    private final List<Replayer.Node> nodes;
    private final Map<String, NodeStats> stats;
    private final Histogram endToEnd;
    private final long unfinished;
    private final long first;
    private final long last;

    private StatsReport(List<Replayer.Node> nodes, Map<String, NodeStats> stats, Histogram endToEnd,
                        long unfinished, long first, long last) {
        this.nodes = nodes;
        this.stats = stats;
        this.endToEnd = endToEnd;
        this.unfinished = unfinished;
        this.first = first;
        this.last = last;
    }

    /** Replays the opened journals of {@code r} and gathers the statistics. */
    public static StatsReport run(Replayer r) {
        Map<String, NodeStats> stats = new LinkedHashMap<>();
        Map<String, Client> clients = new HashMap<>();
        Ledger ledger = new Ledger();
        ledger.onPhaseLeft((node, rid, phase, durationNs) ->
                stats.get(node).phases.computeIfAbsent(phase, p -> histogram()).recordValue(Math.max(0, durationNs)));
        List<Replayer.Node> nodes = r.nodes();
        for (Replayer.Node n : nodes) {
            stats.put(n.name(), new NodeStats());
        }
        r.recorded(false);
        r.run(new Replayer.Listener() {
            @Override
            public void started(Replayer.Node node, List<Effect> startup, List<JournalEntry.Derived> recorded) {
                ledger.nodeStarted(node.name(), node.config(), startup);
                if (node.header().origin().startsWith(JournalHeader.SIM_WORKER_ORIGIN)) {
                    ledger.schedulerReplica(node.name());
                }
                stats.get(node.name()).tally.effects(startup);
            }

            @Override
            public void applied(Replayer.Node node, JournalEntry.Input in, List<Effect> fx,
                                List<JournalEntry.Derived> recorded) {
                NodeStats s = stats.get(node.name());
                s.tally.input(in.seq(), in.atNs());
                for (int i = 0; i < fx.size(); i++) {
                    Effect e = fx.get(i);
                    s.tally.effect(e);
                    if (e instanceof Effect.PhaseChanged p) {
                        phase(s, clients, p, in.atNs());
                    }
                }
                ledger.observe(node.name(), in.event(), fx);
            }
        });
        Histogram endToEnd = histogram();
        long unfinished = 0;
        for (Client c : clients.values()) {
            if (c.open == 0 && c.lastNs != Long.MIN_VALUE) {
                endToEnd.recordValue(Math.max(0, c.lastNs - c.firstNs));
            } else {
                unfinished++;
            }
        }
        return new StatsReport(nodes, stats, endToEnd, unfinished, ledger.firstAtNs(), ledger.lastAtNs());
    }

    /** Prints the statistics as text, or as one JSON object when {@code json}. */
    public void print(PrintWriter out, boolean json) {
        if (json) {
            printJson(out, nodes, stats, endToEnd, unfinished, first, last);
        } else {
            print(out, nodes, stats, endToEnd, unfinished, first, last);
        }
    }

    private static void phase(NodeStats s, Map<String, Client> clients, Effect.PhaseChanged p, long atNs) {
        String rid = p.requestId();
        String uuid = ReportText.uuidOf(rid);
        String key = uuid == null ? rid : uuid;
        if (p.to() == RequestPhase.ADMITTED) {
            s.admittedAt.put(rid, atNs);
            Client c = clients.computeIfAbsent(key, k -> new Client());
            c.firstNs = Math.min(c.firstNs, atNs);
            c.open++;
        } else if (p.to().terminal()) {
            Long at = s.admittedAt.remove(rid);
            if (at != null) {
                s.requests.recordValue(Math.max(0, atNs - at));
                Client c = clients.get(key);
                if (c != null) {
                    c.open--;
                    c.lastNs = Math.max(c.lastNs, atNs);
                }
            }
        }
    }

    private static void print(PrintWriter out, List<Replayer.Node> nodes, Map<String, NodeStats> stats, Histogram e2e,
                              long unfinished, long first, long last) {
        long inputs = 0;
        for (NodeStats s : stats.values()) {
            inputs += s.tally.inputs;
        }
        out.println("stats: " + nodes.size() + " journal(s) (" + ReportText.names(nodes) + "), " + inputs + " events over "
                + Seconds.duration(inputs == 0 ? 0 : last - first));
        for (Replayer.Node n : nodes) {
            NodeStats s = stats.get(n.name());
            NodeTally t = s.tally;
            out.println();
            out.println("node " + n.name() + " (journal " + n.journal().name() + "): " + ReportText.node(n.config()) + ", "
                    + t.inputs + " events, profile " + n.config().behaviour().profile());
            out.println("  requests at the end: " + (t.requestsAtEnd(true) + t.requestsAtEnd(false)) + " ("
                    + t.requestsAtEnd(true) + " terminal, " + t.requestsAtEnd(false) + " not)");
            List<String[]> rows = new ArrayList<>();
            rows.add(new String[] {"phase", "requests"});
            t.phaseCounts().forEach((p, c) -> rows.add(new String[] {p.name() + (p.terminal() ? "" : " *"), Long.toString(c)}));
            if (rows.size() > 1) {
                table(out, rows);
            }
            Map<AnomalyKind, Long> an = t.anomalyCounts();
            if (an.isEmpty()) {
                out.println("  anomalies: none");
            } else {
                List<String[]> ar = new ArrayList<>();
                ar.add(new String[] {"anomaly", "count", "severity", "code", "bug class"});
                an.forEach((k, c) -> ar.add(new String[] {k.name(), Long.toString(c), k.label(),
                        Integer.toString(k.code()), k.bugClass() == 0 ? "-" : Integer.toString(k.bugClass())}));
                table(out, ar);
            }
            List<String[]> lr = new ArrayList<>();
            lr.add(new String[] {"time in phase", "count", "p50", "p90", "p99", "max"});
            for (RequestPhase p : RequestPhase.values()) {
                Histogram h = s.phases.get(p);
                if (h != null && h.getTotalCount() > 0) {
                    lr.add(row(p.name(), h));
                }
            }
            lr.add(row("admission to terminal", s.requests));
            table(out, lr);
        }
        out.println();
        out.println("client requests across nodes (first admission to last terminal phase, legs joined by request uuid):");
        List<String[]> rows = new ArrayList<>();
        rows.add(new String[] {"end to end", "count", "p50", "p90", "p99", "max"});
        rows.add(row("finished", e2e));
        table(out, rows);
        out.println("  unfinished (a leg never reached a terminal phase): " + unfinished);
    }

    private static String[] row(String name, Histogram h) {
        if (h.getTotalCount() == 0) {
            return new String[] {name, "0", "-", "-", "-", "-"};
        }
        return new String[] {name, Long.toString(h.getTotalCount()), Seconds.duration(h.getValueAtPercentile(50)),
            Seconds.duration(h.getValueAtPercentile(90)), Seconds.duration(h.getValueAtPercentile(99)),
            Seconds.duration(h.getMaxValue())};
    }

    /** First column left-aligned, the others right-aligned. */
    private static void table(PrintWriter out, List<String[]> rows) {
        ReportText.columns(rows, true).forEach(out::println);
    }

    private static Map<String, Object> histJson(Histogram h) {
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        m.put("count", h.getTotalCount());
        if (h.getTotalCount() > 0) {
            m.put("p50", h.getValueAtPercentile(50));
            m.put("p90", h.getValueAtPercentile(90));
            m.put("p99", h.getValueAtPercentile(99));
            m.put("max", h.getMaxValue());
        }
        return m;
    }

    private static void printJson(PrintWriter out, List<Replayer.Node> nodes, Map<String, NodeStats> stats,
                                  Histogram e2e, long unfinished, long first, long last) {
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        m.put("command", "stats");
        List<Object> list = new ArrayList<>();
        long inputs = 0;
        for (Replayer.Node n : nodes) {
            NodeStats s = stats.get(n.name());
            inputs += s.tally.inputs;
            LinkedHashMap<String, Object> nm = new LinkedHashMap<>();
            nm.put("node", n.name());
            nm.put("journal", n.journal().name());
            nm.put("describe", ReportText.node(n.config()));
            nm.put("profile", n.config().behaviour().profile());
            nm.put("inputs", s.tally.inputs);
            nm.put("effects", s.tally.effects);
            nm.put("phases", s.tally.phasesJson());
            nm.put("anomalies", s.tally.anomaliesJson());
            LinkedHashMap<String, Object> lat = new LinkedHashMap<>();
            for (RequestPhase p : RequestPhase.values()) {
                Histogram h = s.phases.get(p);
                if (h != null && h.getTotalCount() > 0) {
                    lat.put(p.name(), histJson(h));
                }
            }
            nm.put("phase_latency_ns", lat);
            nm.put("request_duration_ns", histJson(s.requests));
            list.add(nm);
        }
        m.put("inputs", inputs);
        m.put("first_at_ns", inputs == 0 ? null : first);
        m.put("last_at_ns", inputs == 0 ? null : last);
        m.put("nodes", list);
        LinkedHashMap<String, Object> e = new LinkedHashMap<>(histJson(e2e));
        e.put("unfinished", unfinished);
        m.put("end_to_end_ns", e);
        out.println(Json.write(m));
    }
}
