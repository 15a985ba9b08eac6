package io.kvledger.node.sim;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.ledger.text.Seconds;
import io.kvledger.sim.AnomalyRecord;
import io.kvledger.sim.FaultSpec;
import io.kvledger.sim.HungRequest;
import io.kvledger.sim.NodeReport;
import io.kvledger.sim.SimOptions;
import io.kvledger.sim.SimStats;
import io.kvledger.sim.SimulationResult;
import io.kvledger.ledger.report.ReportText;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Prints a simulation run for people: configuration, a phase table (phases by nodes), completed
 * and hung requests, network counters, and the anomalies grouped by kind (worst severity first),
 * at most {@code perKind} lines each. Deterministic: it prints nothing that is not in the result.
 */
public final class DemoReport {

    /** A proxy-built request id, vLLM-wrapped: the embedded addresses are what gets abbreviated. */
    private static final Pattern PROXY_ID =
            Pattern.compile("^(cmpl-)?___prefill_addr_.+?___decode_addr_.+_([0-9a-f]{32}(?:-.*)?)$");

    private final PrintWriter out;
    private final boolean fullIds;
    private final int perKind;

    public DemoReport(PrintWriter out, boolean fullIds, int perKind) {
        this.out = out;
        this.fullIds = fullIds;
        this.perKind = perKind;
    }

    public void header(long seed, Behaviour behaviour, FaultSpec faults, String rerun) {
        out.println("kvledger demo: seed " + seed);
        out.println("  behaviour " + behaviour.profile() + ", faults " + faults.format());
        out.println("  rerun: " + rerun);
        if (!fullIds) {
            out.println("  request ids are shown as cmpl-..._<uuid hex>-0-<suffix>; '...' stands for the embedded");
            out.println("  ___prefill_addr_<P zmq_address>___decode_addr_<D zmq_address> (--full-ids prints them whole)");
        }
    }

    public void run(int index, int of, SimulationResult r) {
        SimOptions o = r.options();
        out.println();
        out.printf(Locale.ROOT, "== run %d of %d: %s mode, %d requests, %d prefill + %d decode node(s), seed %d ==%n",
                index, of, o.mode(), o.requests(), o.prefillNodes(), o.decodeNodes(), o.seed());
        configuration(r);
        phases(r);
        requests(r);
        network(r);
        anomalies(r);
    }

    private void configuration(SimulationResult r) {
        SimOptions o = r.options();
        out.println("configuration");
        out.printf(Locale.ROOT, "  block size %d, %d blocks per node, token budget %d per step, %d layers, "
                        + "prompts %d-%d tokens, decode %d-%d tokens%n",
                o.blockSize(), o.blocksPerNode(), o.tokenBudget(), o.layers(), o.promptMinTokens(),
                o.promptMaxTokens(), o.decodeMinTokens(), o.decodeMaxTokens());
        out.printf(Locale.ROOT, "  defer_timeout %s, transfer_timeout %s, time limit %s, faults %s%n",
                seconds(o.deferTimeoutNs()), seconds(o.transferTimeoutNs()), seconds(o.timeLimitNs()),
                o.faults().format());
        List<String[]> rows = new ArrayList<>();
        rows.add(new String[] {"node", "role", "mode", "host", "notify", "handshake"});
        for (NodeReport n : r.nodes()) {
            NodeConfig c = n.config();
            rows.add(new String[] {n.name(), c.role().name().toLowerCase(Locale.ROOT), c.mode().name(), c.hostIp(),
                    Integer.toString(n.notifyPort()), Integer.toString(n.handshakePort())});
        }
        table(rows, false);
    }

    private void phases(SimulationResult r) {
        out.println("phases (requests per node, by reducer phase at the end)");
        List<String[]> rows = new ArrayList<>();
        String[] head = new String[r.nodes().size() + 1];
        head[0] = "phase";
        for (int i = 0; i < r.nodes().size(); i++) {
            head[i + 1] = r.nodes().get(i).name();
        }
        rows.add(head);
        for (RequestPhase p : RequestPhase.values()) {
            boolean any = false;
            for (NodeReport n : r.nodes()) {
                any |= n.phaseCounts().containsKey(p);
            }
            if (!any) {
                continue;
            }
            String[] row = new String[head.length];
            row[0] = p.name() + (p.terminal() ? "" : " *");
            for (int i = 0; i < r.nodes().size(); i++) {
                row[i + 1] = Integer.toString(r.nodes().get(i).phaseCounts().getOrDefault(p, 0));
            }
            rows.add(row);
        }
        String[] terminal = new String[head.length];
        String[] hung = new String[head.length];
        terminal[0] = "terminal";
        hung[0] = "hung (* not terminal)";
        for (int i = 0; i < r.nodes().size(); i++) {
            terminal[i + 1] = Integer.toString(r.nodes().get(i).terminal());
            hung[i + 1] = Integer.toString(r.nodes().get(i).hung());
        }
        rows.add(terminal);
        rows.add(hung);
        table(rows, true);
    }

    private void requests(SimulationResult r) {
        SimStats s = r.stats();
        out.println("requests");
        out.printf(Locale.ROOT, "  completed %d, hung %d (node requests in a terminal / non-terminal phase)%n",
                r.requestsCompleted(), r.requestsHung());
        out.printf(Locale.ROOT, "  client requests %d: decode finished %d, legs aborted %d, decode legs never sent %d%n",
                s.clientRequests(), s.decodeCompleted(), s.abortsInjected(), s.decodeNotDispatched());
        List<HungRequest> hung = r.hungRequests();
        int shown = Math.min(perKind, hung.size());
        for (int i = 0; i < shown; i++) {
            HungRequest h = hung.get(i);
            out.printf(Locale.ROOT, "  hung  %-4s %-24s %s%n", h.node(), h.phase(), id(h.requestId()));
        }
        if (hung.size() > shown) {
            out.printf(Locale.ROOT, "  ... %d more hung%n", hung.size() - shown);
        }
    }

    private void network(SimulationResult r) {
        SimStats s = r.stats();
        out.println("network, data plane and engines");
        out.printf(Locale.ROOT, "  notify frames sent %d, delivered %d, dropped %d, duplicated %d, delayed %d, "
                        + "reordered %d, lost (no listener) %d, unsupported %d%n",
                s.framesSent(), s.framesDelivered(), s.framesDropped(), s.framesDuplicated(), s.framesDelayed(),
                s.framesReordered(), s.framesLost(), s.framesUnsupported());
        out.printf(Locale.ROOT, "  handshakes %d (failed %d), transfers posted %d (failed %d, stalled %d), "
                        + "load-error blocks %d%n",
                s.handshakesStarted(), s.handshakesFailed(), s.transfersPosted(), s.transfersFailed(),
                s.transfersStalled(), s.loadErrorBlocks());
        out.printf(Locale.ROOT, "  engine oddities: frees of requests not held %d, receives of requests not waiting %d, "
                        + "steps that waited out transfer_timeout %d%n",
                s.unexpectedFrees(), s.unexpectedRecvs(), s.stepsBlockedTimeout());
        StringBuilder hashes = new StringBuilder();
        for (NodeReport n : r.nodes()) {
            hashes.append(hashes.isEmpty() ? "" : " ").append(n.name()).append('=')
                    .append(String.format(Locale.ROOT, "%016x", n.stateHash()));
        }
        out.printf(Locale.ROOT, "  virtual time %s, stopped: %s; state hashes %s%n",
                seconds(s.endNs()), stopText(s.stoppedBy()), hashes);
    }

    private void anomalies(SimulationResult r) {
        Map<AnomalyKind, Integer> counts = r.anomalyCounts();
        out.printf(Locale.ROOT, "anomalies: %d in %d kind(s)%n", r.anomalies().size(), counts.size());
        if (counts.isEmpty()) {
            out.println("  none");
            return;
        }
        EnumMap<AnomalyKind, List<AnomalyRecord>> byKind = new EnumMap<>(AnomalyKind.class);
        for (AnomalyRecord a : r.anomalies()) {
            byKind.computeIfAbsent(a.kind(), k -> new ArrayList<>()).add(a);
        }
        List<AnomalyKind> kinds = new ArrayList<>(byKind.keySet());
        kinds.sort(Comparator.comparing((AnomalyKind k) -> k.severity()).reversed()
                .thenComparing(AnomalyKind::code));
        for (AnomalyKind k : kinds) {
            List<AnomalyRecord> list = byKind.get(k);
            out.printf(Locale.ROOT, "  %s x%d  [%s, code %d%s]  %s%n", k.name(), list.size(), k.label(), k.code(),
                    k.bugClass() == 0 ? "" : ", bug class " + k.bugClass(), k.summary());
            int shown = Math.min(perKind, list.size());
            for (int i = 0; i < shown; i++) {
                AnomalyRecord a = list.get(i);
                out.printf(Locale.ROOT, "    %-4s t=%s  %s  %s  %s%n", a.node(), seconds(a.atNs()),
                        a.requestId() == null ? "-" : id(a.requestId()),
                        a.transferId() == null ? "-" : a.transferId(),
                        a.detail() == null ? "" : a.detail());
            }
            if (list.size() > shown) {
                out.printf(Locale.ROOT, "    ... %d more%n", list.size() - shown);
            }
        }
    }

    private static String stopText(SimStats.StopReason reason) {
        return switch (reason) {
            case ALL_TERMINAL -> "every request terminal";
            case TIME_LIMIT -> "time limit, then defer_timeout + 1 s for reaping";
            case QUIESCENT -> "nothing left to happen";
        };
    }

    private String id(String requestId) {
        if (fullIds) {
            return requestId;
        }
        Matcher m = PROXY_ID.matcher(requestId);
        return m.matches() ? (m.group(1) == null ? "" : m.group(1)) + "..._" + m.group(2) : requestId;
    }

    private static String seconds(long ns) {
        return ns % NodeConfig.NS_PER_S == 0 ? Seconds.exact(ns, 0) : Seconds.rounded(ns, 6);
    }

    /** Left-aligned first column, the others right-aligned when {@code numeric}. */
    private void table(List<String[]> rows, boolean numeric) {
        ReportText.columns(rows, numeric).forEach(out::println);
    }
}
