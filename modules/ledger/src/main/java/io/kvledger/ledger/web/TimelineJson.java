package io.kvledger.ledger.web;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.ledger.diagnosis.Finding;
import io.kvledger.core.effect.Effect;
import io.kvledger.ledger.replay.Hangs;
import io.kvledger.ledger.replay.Replayer;
import io.kvledger.ledger.replay.Timeline;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The JSON objects the web page reads, built from the replay library: one request's timeline
 * (the object {@code kvledger inspect --json} prints, plus each journal's role, mode and
 * timeouts so the page can place events in lanes and draw deadlines) and the findings of
 * {@code hangs}. The live node's admin API serves the same shapes.
 */
public final class TimelineJson {

    /** At most this many lines of one timeline are sent; {@code truncated} says when more matched. */
    static final int MAX_LINES = 10_000;

    private TimelineJson() {}

    /**
     * One journal's entry in a timeline's {@code journals}: node, journal name, and what the page
     * needs of its configuration (role, mode, ranks, the three timeouts in ns).
     */
    static Map<String, Object> journal(String node, String journalName, NodeConfig c) {
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        m.put("node", node);
        m.put("journal", journalName);
        if (c != null) {
            m.put("role", c.role().name().toLowerCase(Locale.ROOT));
            m.put("mode", c.mode().name().toLowerCase(Locale.ROOT));
            m.put("dp_rank", (long) c.dpRank());
            m.put("tp_rank", (long) c.tpRank());
            m.put("defer_timeout_ns", c.deferTimeoutNs());
            m.put("transfer_timeout_ns", c.transferTimeoutNs());
            m.put("recv_abort_timeout_ns", c.recvAbortTimeoutNs());
        }
        return m;
    }

    /** The timeline of a found request or transfer, at most {@link #MAX_LINES} lines of it. */
    public static Map<String, Object> timeline(Timeline.Found found) {
        return timeline(found, MAX_LINES);
    }

    /**
     * The timeline of a found request or transfer, in {@code inspect --json}'s shape: at most
     * {@code maxLines} lines ({@code truncated} says when there were more).
     */
    public static Map<String, Object> timeline(Timeline.Found found, int maxLines) {
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        m.put("command", "inspect");
        m.put("query", found.query());
        m.put("kind", found.kind().word());
        List<Object> journals = new ArrayList<>();
        for (Replayer.Node n : found.nodes()) {
            journals.add(journal(n.name(), n.journal().name(), n.config()));
        }
        m.put("journals", journals);
        List<Object> legs = new ArrayList<>();
        found.legs().forEach((node, ids) -> ids.forEach(id -> {
            LinkedHashMap<String, Object> lm = new LinkedHashMap<>();
            lm.put("node", node);
            lm.put("request_id", id);
            legs.add(lm);
        }));
        m.put("requests", legs);
        m.put("request_ids", new ArrayList<Object>(found.requestIds()));
        m.put("transfer_ids", new ArrayList<Object>(found.transferIds()));
        List<Timeline.Line> lines = found.lines();
        long base = lines.isEmpty() ? 0 : lines.get(0).atNs();
        List<Object> list = new ArrayList<>();
        for (Timeline.Line l : lines) {
            if (list.size() == maxLines) {
                break;
            }
            LinkedHashMap<String, Object> lm = new LinkedHashMap<>();
            lm.put("t", (l.atNs() - base) / 1e9);
            lm.put("at_ns", l.atNs());
            lm.put("node", l.node());
            lm.put("seq", l.seq());
            lm.put("kind", l.input() ? "input" : "effect");
            lm.put("cause", l.cause());
            lm.put("type", l.type().typeName());
            lm.put("text", l.text());
            Effect.PhaseChanged p = l.phase();
            if (p != null) {
                lm.put("phase_from", p.from() == null ? null : p.from().name());
                lm.put("phase_to", p.to().name());
                lm.put("reason", p.reason());
            }
            lm.put("fields", l.fields());
            list.add(lm);
        }
        m.put("lines", list);
        List<Object> ends = new ArrayList<>();
        for (Timeline.Line l : found.ends()) {
            LinkedHashMap<String, Object> em = new LinkedHashMap<>();
            em.put("node", l.node());
            em.put("request_id", l.phase().requestId());
            em.put("phase", l.phase().to().name());
            em.put("terminal", l.phase().to().terminal());
            em.put("reason", l.phase().reason());
            em.put("t", (l.atNs() - base) / 1e9);
            ends.add(em);
        }
        m.put("end", ends);
        m.put("truncated", lines.size() > maxLines);
        return m;
    }

    /** One finding as {@code hangs --json} prints it, without the bug class title. */
    public static Map<String, Object> finding(Finding f) {
        return finding(f, null);
    }

    /**
     * One finding as {@code hangs --json} prints it; with {@code titles}, {@code bug_class_title}
     * follows {@code bug_class} (null for class 0).
     */
    public static Map<String, Object> finding(Finding f, java.util.function.IntFunction<String> titles) {
        LinkedHashMap<String, Object> fm = new LinkedHashMap<>();
        fm.put("detector", f.detector());
        fm.put("node", f.node());
        fm.put("request_id", f.requestId());
        fm.put("transfer_id", f.transferId());
        fm.put("phase", f.phase() == null ? null : f.phase().name());
        fm.put("bug_class", (long) f.bugClass());
        if (titles != null) {
            fm.put("bug_class_title", f.bugClass() == 0 ? null : titles.apply(f.bugClass()));
        }
        fm.put("at_ns", f.atNs() == Long.MIN_VALUE ? null : f.atNs());
        fm.put("since_ns", f.sinceNs() < 0 || f.sinceNs() == Long.MIN_VALUE ? null : f.sinceNs());
        fm.put("message", f.message());
        return fm;
    }

    /** The findings that name one of {@code rids} or {@code tids}. */
    public static List<Object> findingsFor(List<Finding> findings, Set<String> rids, Set<String> tids) {
        List<Object> out = new ArrayList<>();
        for (Finding f : findings) {
            if ((f.requestId() != null && rids.contains(f.requestId()))
                    || (f.transferId() != null && tids.contains(f.transferId()))) {
                out.add(finding(f));
            }
        }
        return out;
    }

    /**
     * Adds what the journals span and the findings of {@code res} to {@code m}: {@code inputs},
     * {@code first_at_ns}, {@code last_at_ns}, {@code stuck_after_ns}, {@code count},
     * {@code by_detector} and {@code findings} (each as {@link #finding(Finding, java.util.function.IntFunction)}
     * with {@code titles}, or {@link #finding(Finding)} when it is null). Shared by {@code /v1/hangs}
     * and {@code kvledger hangs --json}.
     */
    public static void putFindings(Map<String, Object> m, Hangs.Result res, java.util.function.IntFunction<String> titles) {
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
            list.add(titles == null ? finding(f) : finding(f, titles));
        }
        m.put("findings", list);
    }

    /** The object {@code GET /v1/hangs} serves, over a set of journals. */
    static Map<String, Object> hangs(Hangs.Result res) {
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        m.put("command", "hangs");
        m.put("journals", (long) res.nodes().size());
        List<Object> nodes = new ArrayList<>();
        for (Replayer.Node n : res.nodes()) {
            nodes.add(journal(n.name(), n.journal().name(), n.config()));
        }
        m.put("nodes", nodes);
        putFindings(m, res, null);
        return m;
    }
}
