package io.kvledger.node.sim;

import io.kvledger.core.model.AnomalyKind;
import io.kvledger.journal.json.Json;
import io.kvledger.sim.NodeReport;
import io.kvledger.sim.SimOptions;
import io.kvledger.sim.SimulationResult;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What {@code kvledger simulate} prints of a run it journaled: the options, the rerun command,
 * each node's journal with its entries and requests, the requests hung, the anomalies by kind and
 * what to run next ({@link #printText}); or the same as one JSON object ({@link #printJson}).
 * {@code perNode} holds each node's journal entries, its header included, in its first cell.
 */
public final class SimulateReport {

    private SimulateReport() {}

    /**
     * The summary as text: the run, how to rerun it, each node's journal, requests, anomalies and
     * what to run next, the commands with {@code launcher} (the launcher as the user typed it) for
     * the {@code kvledger} of {@code origin}.
     */
    public static void printText(PrintWriter o, SimulationResult r, Map<String, long[]> perNode, String origin, String profile,
                                 Path out, String launcher) {
        SimOptions so = r.options();
        o.printf(Locale.ROOT, "simulate: seed %d, %s mode, %d requests, %d prefill + %d decode node(s), faults %s, profile %s%n",
                so.seed(), so.mode(), so.requests(), so.prefillNodes(), so.decodeNodes(), so.faults().format(), profile);
        o.println("  rerun: " + (origin.startsWith("kvledger ") ? launcher + origin.substring("kvledger".length()) : origin));
        o.println("journals in " + out + ":");
        for (NodeReport n : r.nodes()) {
            long entries = perNode.getOrDefault(n.name(), new long[] {0})[0];
            o.printf(Locale.ROOT, "  %-4s %-11s %,9d entries   %d requests: %d terminal, %d hung%n", n.name(),
                    n.config().isProducer() ? "kv_producer" : "kv_consumer", entries, n.requests(), n.terminal(), n.hung());
        }
        o.printf(Locale.ROOT, "requests: %d client requests, %d decode legs completed; %d node requests hung%n",
                r.stats().clientRequests(), r.stats().decodeCompleted(), r.requestsHung());
        Map<AnomalyKind, Integer> counts = r.anomalyCounts();
        if (counts.isEmpty()) {
            o.println("anomalies: none");
        } else {
            List<String> parts = new ArrayList<>();
            int total = 0;
            for (Map.Entry<AnomalyKind, Integer> e : counts.entrySet()) {
                parts.add(e.getKey() + " x" + e.getValue());
                total += e.getValue();
            }
            o.println("anomalies: " + total + " in " + counts.size() + " kind(s): " + String.join(", ", parts));
        }
        o.printf(Locale.ROOT, "virtual time %s, stopped: %s%n", io.kvledger.ledger.text.Seconds.duration(r.stats().endNs()),
                r.stats().stoppedBy());
        o.println("next: " + launcher + " hangs " + out + "   (or: " + launcher + " dump " + out + " --type anomaly)");
        o.flush();
    }

    /** The summary as one JSON object. */
    public static void printJson(PrintWriter o, SimulationResult r, Map<String, long[]> perNode, String origin, String profile,
                                 Path out) {
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        SimOptions so = r.options();
        m.put("seed", so.seed());
        m.put("mode", so.mode().name());
        m.put("requests", (long) so.requests());
        m.put("faults", so.faults().format());
        m.put("profile", profile);
        m.put("out", out.toString());
        m.put("origin", origin);
        List<Object> nodes = new ArrayList<>();
        for (NodeReport n : r.nodes()) {
            LinkedHashMap<String, Object> nm = new LinkedHashMap<>();
            nm.put("node", n.name());
            nm.put("kv_role", n.config().isProducer() ? "kv_producer" : "kv_consumer");
            nm.put("dir", out.resolve(n.name()).toString());
            nm.put("entries", perNode.getOrDefault(n.name(), new long[] {0})[0]);
            nm.put("requests", (long) n.requests());
            nm.put("terminal", (long) n.terminal());
            nm.put("hung", (long) n.hung());
            nodes.add(nm);
        }
        m.put("nodes", nodes);
        m.put("client_requests", (long) r.stats().clientRequests());
        m.put("decode_completed", (long) r.stats().decodeCompleted());
        m.put("hung", (long) r.requestsHung());
        LinkedHashMap<String, Object> an = new LinkedHashMap<>();
        r.anomalyCounts().forEach((k, v) -> an.put(k.name(), (long) v));
        m.put("anomalies", an);
        m.put("end_ns", r.stats().endNs());
        m.put("stopped_by", r.stats().stoppedBy().name());
        o.println(Json.write(m));
        o.flush();
    }
}
