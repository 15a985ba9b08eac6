package io.kvledger.ledger.trace;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.effect.Effect;
import io.kvledger.ledger.diagnosis.Finding;
import io.kvledger.ledger.replay.Replayer;
import io.kvledger.ledger.replay.Timeline;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * One request or transfer's {@link Timeline} as Chrome trace-event JSON (the "JSON object format"
 * of the Trace Event Format, which Perfetto's UI and {@code chrome://tracing} open).
 *
 * <ul>
 *   <li>One process per journal ({@code process_name}: the node, its role and mode), one thread
 *       per side of it: {@code scheduler} (the phases, as complete events {@code X} with their
 *       durations, and the scheduler side's events), {@code worker}, {@code notify} (the ZMQ
 *       frames sent and received), {@code RDMA transfers} (each post to its completion). A node
 *       with several legs of the request, or overlapping transfers, gets more rows of that side
 *       ({@code scheduler #2}, ...), so that complete events on one thread always nest.</li>
 *   <li>Every other journal line is an instant event ({@code i}) on its side's thread, carrying
 *       the line {@code inspect} prints and the entry's fields.</li>
 *   <li>A flow arrow ({@code s} on the sender, {@code f} with {@code "bp": "e"} on the receiver,
 *       one id per frame) from each notify frame a node sent to the frame the other node
 *       received (same transfer id; the first such frame after it). A frame never received is
 *       marked {@code "received": false}.</li>
 *   <li>Each hang finding is an instant event named {@code missing: <detector>} on the side where
 *       the missing event should have happened (the notify thread for a missing frame), at the
 *       time the finding was made, with the finding's text.</li>
 *   <li>A proxy's journal is a process of its own: its records are instants, each leg (sent to
 *       answered, failed or cancelled) a complete event.</li>
 * </ul>
 *
 * <p>Times ({@code ts}, {@code dur}) are microseconds, as the format requires, with nanosecond
 * decimals, counted from the earliest time in the trace ({@code otherData.time_origin_ns}, in
 * the journals' clock); {@code displayTimeUnit} is {@code ns}.
 */
public final class ChromeTrace {

    /** The trace and what it holds. */
    public record Trace(Map<String, Object> json, int events, int flows, int unreceived, int findings) {}

    // the threads of a node; rows beyond the first of a side get ids from these bases
    static final long SCHEDULER = 1;
    static final long WORKER = 2;
    static final long NOTIFY = 3;
    static final long TRANSFERS = 200;
    static final long LEGS = 100;
    static final long PROXY_LEGS = 300;
    /** A frame is a complete event of 1 ns, so that the flow arrows have a slice to bind to. */
    static final double FRAME_US = 0.001;

    private static final Set<String> NOTIFY_TYPES = Set.of("remote_blocks_received", "write_done_received",
            "release_received", "frame_rejected", "notify_send_failed", "send_remote_blocks", "send_release",
            "send_write_done", "send_write_failed", "raw_completion_received");
    private static final Set<String> WORKER_TYPES = Set.of("load_started", "layer_saved", "save_waited",
            "finished_polled", "handshake_completed", "handshake_failed", "handshake_voted", "transfer_completed",
            "post_write", "post_read", "start_handshake", "finished_reported", "ack_parked", "stale_ack_dropped");
    private static final Set<String> PROXY_TYPES = Set.of("proxy_started", "instance_registered",
            "instance_expired", "registration_rejected", "request_rejected", "request_routed", "leg_sent",
            "leg_answered", "leg_failed", "leg_cancelled", "request_completed", "records_dropped");
    /** The frame a sent notify is received as on the other node. */
    private static final Map<String, String> RECEIVED_AS = Map.of("send_remote_blocks", "remote_blocks_received",
            "send_release", "release_received", "send_write_done", "write_done_received", "send_write_failed",
            "write_done_received");
    private static final Set<String> WIRE_DETECTORS = Set.of("stuck-waiting", "handshake-incomplete",
            "reaped-without-ack", "notify-unhandshaken-rank", "wrong-port-offset-form", "notify-no-listener",
            "empty-remote-blocks", "ack-before-mapping", "failed-read-no-release", "ack-deficit", "ack-before-finish");
    private static final Set<String> WORKER_DETECTORS = Set.of("transfer-status-poisoned", "unknown-completion-id",
            "free-while-in-flight", "listener-death", "handshake-vote-waiting", "handshake-vote-failed");

    private ChromeTrace() {}

    /**
     * The trace of {@code found}, with those of {@code findings} that name one of its request or
     * transfer ids. Lines carry their fields when the timeline was made with them (needed for the
     * flow arrows and the transfers, which match on transfer and status ids).
     */
    public static Trace of(Timeline.Found found, List<Finding> findings) {
        return new Builder(found, relevant(found, findings)).build();
    }

    private static List<Finding> relevant(Timeline.Found found, List<Finding> findings) {
        List<Finding> out = new ArrayList<>();
        for (Finding f : findings) {
            if ((f.requestId() != null && found.requestIds().contains(f.requestId()))
                    || (f.transferId() != null && found.transferIds().contains(f.transferId()))) {
                out.add(f);
            }
        }
        return out;
    }

    private static final class Builder {
        final Timeline.Found found;
        final List<Finding> findings;
        final List<Timeline.Line> lines;
        final Map<String, NodeConfig> configs = new LinkedHashMap<>();
        final Map<String, Long> pids = new LinkedHashMap<>();
        final Set<String> proxies = new HashSet<>();
        final Map<Long, Map<Long, String>> threads = new LinkedHashMap<>();
        final List<Map<String, Object>> events = new ArrayList<>();
        long base;
        long end;
        int flows;
        int unreceived;

        Builder(Timeline.Found found, List<Finding> findings) {
            this.found = found;
            this.findings = findings;
            this.lines = found.lines();
            for (Replayer.Node n : found.nodes()) {
                configs.put(n.name(), n.config());
            }
        }

        Trace build() {
            base = Long.MAX_VALUE;
            end = Long.MIN_VALUE;
            for (Timeline.Line l : lines) {
                base = Math.min(base, l.atNs());
                end = Math.max(end, l.atNs());
                if (PROXY_TYPES.contains(l.type().typeName()) && !configs.containsKey(l.node())) {
                    proxies.add(l.node());
                }
            }
            for (Finding f : findings) {
                if (f.atNs() != Long.MIN_VALUE) {
                    base = Math.min(base, f.atNs());
                    end = Math.max(end, f.atNs());
                }
            }
            if (base == Long.MAX_VALUE) {
                base = 0;
                end = 0;
            }
            // processes: the replayed journals in their order, then proxies and others as they appear
            for (String n : configs.keySet()) {
                pid(n);
            }
            for (Timeline.Line l : lines) {
                pid(l.node());
            }
            phases();
            transfers();
            proxyLegs();
            int[] notifyIndex = lineEvents();
            frameFlows(notifyIndex);
            for (Finding f : findings) {
                finding(f);
            }
            events.sort(Comparator.comparingDouble((Map<String, Object> e) -> (Double) e.get("ts"))
                    .thenComparingInt(e -> order((String) e.get("ph")))
                    .thenComparing(Comparator.comparingDouble(
                            (Map<String, Object> e) -> e.get("dur") instanceof Double d ? d : 0.0).reversed()));
            List<Object> all = new ArrayList<>(metadata());
            int n = events.size();
            all.addAll(events);
            LinkedHashMap<String, Object> json = new LinkedHashMap<>();
            json.put("traceEvents", all);
            json.put("displayTimeUnit", "ns");
            LinkedHashMap<String, Object> other = new LinkedHashMap<>();
            other.put("producer", "kvledger");
            other.put("query", found.query());
            other.put("kind", found.kind().word());
            other.put("request_ids", new ArrayList<Object>(found.requestIds()));
            other.put("transfer_ids", new ArrayList<Object>(found.transferIds()));
            other.put("time_origin_ns", base);
            json.put("otherData", other);
            return new Trace(json, n, flows, unreceived, findings.size());
        }

        /** Complete events first at one time (parents before children), then instants, then flow ends. */
        private static int order(String ph) {
            return switch (ph) {
                case "X" -> 0;
                case "i" -> 1;
                default -> 2;
            };
        }

        long pid(String node) {
            return pids.computeIfAbsent(node, k -> (long) pids.size() + 1);
        }

        double us(long ns) {
            return (ns - base) / 1000.0;
        }

        void thread(long pid, long tid, String name) {
            threads.computeIfAbsent(pid, k -> new LinkedHashMap<>()).putIfAbsent(tid, name);
        }

        Map<String, Object> event(String ph, String name, String cat, long pid, long tid, long atNs) {
            LinkedHashMap<String, Object> e = new LinkedHashMap<>();
            e.put("ph", ph);
            e.put("name", name);
            e.put("cat", cat);
            e.put("pid", pid);
            e.put("tid", tid);
            e.put("ts", us(atNs));
            events.add(e);
            return e;
        }

        Map<String, Object> complete(String name, String cat, long pid, long tid, long fromNs, long toNs) {
            Map<String, Object> e = event("X", name, cat, pid, tid, fromNs);
            e.put("dur", Math.max(0, toNs - fromNs) / 1000.0);
            return e;
        }

        String side(String node) {
            NodeConfig c = configs.get(node);
            if (c == null) {
                return proxies.contains(node) ? "proxy" : "node";
            }
            return c.role().name().equalsIgnoreCase("producer") ? "prefill" : "decode";
        }

        /** The thread of a line: its node's scheduler, worker or notify side (the proxy's own). */
        long tidOf(Timeline.Line l) {
            String t = l.type().typeName();
            long pid = pid(l.node());
            if (proxies.contains(l.node()) || PROXY_TYPES.contains(t)) {
                thread(pid, SCHEDULER, "proxy");
                return SCHEDULER;
            }
            if (NOTIFY_TYPES.contains(t)) {
                thread(pid, NOTIFY, "notify (ZMQ frames)");
                return NOTIFY;
            }
            if (WORKER_TYPES.contains(t) || (!l.input() && l.cause() != null && WORKER_TYPES.contains(l.cause()))) {
                thread(pid, WORKER, "worker");
                return WORKER;
            }
            thread(pid, SCHEDULER, "scheduler");
            return SCHEDULER;
        }

        /** Each leg's phases, as complete events on its node's scheduler (a row per leg that overlaps another). */
        void phases() {
            LinkedHashMap<String, List<Timeline.Line>> byLeg = new LinkedHashMap<>();
            for (Timeline.Line l : lines) {
                if (l.phase() != null) {
                    byLeg.computeIfAbsent(l.node() + "\u0000" + l.phase().requestId(), k -> new ArrayList<>()).add(l);
                }
            }
            Map<String, List<Long>> rowEnds = new HashMap<>();
            for (List<Timeline.Line> leg : byLeg.values()) {
                Timeline.Line first = leg.get(0);
                Timeline.Line last = leg.get(leg.size() - 1);
                long legEnd = last.phase().to().terminal() ? last.atNs() : end;
                int row = row(rowEnds.computeIfAbsent(first.node(), k -> new ArrayList<>()), first.atNs(), legEnd);
                long pid = pid(first.node());
                long tid = row == 0 ? SCHEDULER : LEGS + row;
                thread(pid, tid, row == 0 ? "scheduler" : "scheduler #" + (row + 1));
                for (int i = 0; i < leg.size(); i++) {
                    Timeline.Line l = leg.get(i);
                    Effect.PhaseChanged p = l.phase();
                    Map<String, Object> e;
                    if (i + 1 < leg.size()) {
                        e = complete(p.to().name(), "phase", pid, tid, l.atNs(), leg.get(i + 1).atNs());
                        e.put("args", phaseArgs(l, leg.get(i + 1).phase().reason(), false));
                    } else if (p.to().terminal()) {
                        e = event("i", p.to().name(), "phase", pid, tid, l.atNs());
                        e.put("s", "t");
                        e.put("args", phaseArgs(l, null, false));
                    } else {
                        e = complete(p.to().name(), "phase", pid, tid, l.atNs(), end);
                        e.put("args", phaseArgs(l, null, true));
                    }
                }
            }
        }

        Map<String, Object> phaseArgs(Timeline.Line l, String leftBecause, boolean open) {
            LinkedHashMap<String, Object> a = new LinkedHashMap<>();
            a.put("request_id", l.phase().requestId());
            a.put("from", l.phase().from() == null ? null : l.phase().from().name());
            a.put("reason", l.phase().reason());
            if (leftBecause != null) {
                a.put("left_because", leftBecause);
            }
            if (open) {
                a.put("open", true);
                a.put("note", "still in this phase when the journals end");
            }
            a.put("seq", l.seq());
            return a;
        }

        /** The first row whose last interval ended by {@code from}, taken until {@code to}. */
        static int row(List<Long> ends, long from, long to) {
            for (int i = 0; i < ends.size(); i++) {
                if (ends.get(i) <= from) {
                    ends.set(i, to);
                    return i;
                }
            }
            ends.add(to);
            return ends.size() - 1;
        }

        /** RDMA transfers: each post (post_write, post_read) to the completion of its status id on that node. */
        void transfers() {
            record Post(Timeline.Line line, Object status) {}
            List<Post> posts = new ArrayList<>();
            // per node and status id, its completions in order
            Map<String, java.util.ArrayDeque<Timeline.Line>> done = new HashMap<>();
            for (Timeline.Line l : lines) {
                String t = l.type().typeName();
                Object status = l.fields() == null ? null : l.fields().get("status_id");
                if (status == null) {
                    continue;
                }
                if (t.equals("post_write") || t.equals("post_read")) {
                    posts.add(new Post(l, status));
                } else if (t.equals("transfer_completed")) {
                    done.computeIfAbsent(l.node() + "\u0000" + status, k -> new java.util.ArrayDeque<>()).add(l);
                }
            }
            Map<String, List<Long>> rowEnds = new HashMap<>();
            for (Post p : posts) {
                Timeline.Line l = p.line();
                java.util.ArrayDeque<Timeline.Line> q = done.get(l.node() + "\u0000" + p.status());
                while (q != null && !q.isEmpty() && q.peekFirst().atNs() < l.atNs()) {
                    q.pollFirst();
                }
                Timeline.Line completion = q == null ? null : q.pollFirst();
                long to = completion == null ? end : completion.atNs();
                int row = row(rowEnds.computeIfAbsent(l.node(), k -> new ArrayList<>()), l.atNs(), to);
                long pid = pid(l.node());
                long tid = TRANSFERS + row;
                thread(pid, tid, row == 0 ? "RDMA transfers" : "RDMA transfers #" + (row + 1));
                String kind = l.type().typeName().equals("post_write") ? "WRITE" : "READ";
                Map<String, Object> e = complete(kind + " status " + p.status(), "transfer", pid, tid, l.atNs(), to);
                LinkedHashMap<String, Object> a = new LinkedHashMap<>();
                a.put("posted", l.text());
                if (completion == null) {
                    a.put("completed", false);
                } else {
                    a.put("completed", true);
                    a.put("succeeded", completion.fields().get("succeeded"));
                    a.put("completion", completion.text());
                }
                e.put("args", a);
            }
        }

        /** A proxy's legs: sent to answered, failed or cancelled. */
        void proxyLegs() {
            Map<String, Timeline.Line> open = new LinkedHashMap<>();
            Map<String, List<Long>> rowEnds = new HashMap<>();
            List<Timeline.Line[]> legs = new ArrayList<>();
            for (Timeline.Line l : lines) {
                Map<String, Object> f = l.fields();
                if (f == null || f.get("leg") == null) {
                    continue;
                }
                String k = l.node() + "\u0000" + f.get("request_id") + "\u0000" + f.get("leg");
                String t = l.type().typeName();
                if (t.equals("leg_sent")) {
                    open.put(k, l);
                } else if ((t.equals("leg_answered") || t.equals("leg_failed") || t.equals("leg_cancelled"))
                        && open.containsKey(k)) {
                    legs.add(new Timeline.Line[] {open.remove(k), l});
                }
            }
            for (Timeline.Line l : open.values()) {
                legs.add(new Timeline.Line[] {l, null});
            }
            for (Timeline.Line[] leg : legs) {
                Timeline.Line from = leg[0];
                long to = leg[1] == null ? end : leg[1].atNs();
                int row = row(rowEnds.computeIfAbsent(from.node(), k -> new ArrayList<>()), from.atNs(), to);
                long pid = pid(from.node());
                thread(pid, PROXY_LEGS + row, row == 0 ? "legs" : "legs #" + (row + 1));
                Map<String, Object> e = complete(from.fields().get("leg") + " leg", "proxy", pid, PROXY_LEGS + row,
                        from.atNs(), to);
                LinkedHashMap<String, Object> a = new LinkedHashMap<>();
                a.put("sent", from.text());
                a.put("ended", leg[1] == null ? null : leg[1].text());
                e.put("args", a);
            }
        }

        /** Every line that is not a phase change; returns, per line, the index of its notify frame event (or -1). */
        int[] lineEvents() {
            int[] notify = new int[lines.size()];
            for (int i = 0; i < lines.size(); i++) {
                notify[i] = -1;
                Timeline.Line l = lines.get(i);
                if (l.phase() != null) {
                    continue;
                }
                long tid = tidOf(l);
                long pid = pid(l.node());
                String name = l.type().typeName();
                Map<String, Object> e;
                if (tid == NOTIFY) {
                    e = complete(name, "frame", pid, tid, l.atNs(), l.atNs());
                    e.put("dur", FRAME_US);
                    notify[i] = events.size() - 1;
                } else {
                    e = event("i", name, l.input() ? "input" : "decision", pid, tid, l.atNs());
                    e.put("s", "t");
                }
                LinkedHashMap<String, Object> a = new LinkedHashMap<>();
                a.put("node", l.node());
                a.put("seq", l.seq());
                a.put("kind", l.input() ? "input" : "effect");
                if (!l.input()) {
                    a.put("cause", l.cause());
                }
                a.put("text", l.text());
                if (l.fields() != null) {
                    a.put("fields", l.fields());
                }
                e.put("args", a);
            }
            return notify;
        }

        /** A flow arrow from each sent frame to the first frame the other node received for the same transfer. */
        void frameFlows(int[] notifyIndex) {
            Set<Integer> taken = new HashSet<>();
            for (int i = 0; i < lines.size(); i++) {
                Timeline.Line l = lines.get(i);
                String recv = RECEIVED_AS.get(l.type().typeName());
                if (recv == null || notifyIndex[i] < 0) {
                    continue;
                }
                Object tid = l.fields() == null ? null : l.fields().get("transfer_id");
                int match = -1;
                for (int j = i + 1; tid != null && j < lines.size() && match < 0; j++) {
                    Timeline.Line m = lines.get(j);
                    if (m.type().typeName().equals(recv) && !m.node().equals(l.node()) && !taken.contains(j)
                            && m.fields() != null && Objects.equals(m.fields().get("transfer_id"), tid)
                            && notifyIndex[j] >= 0) {
                        match = j;
                    }
                }
                @SuppressWarnings("unchecked")
                Map<String, Object> args = (Map<String, Object>) events.get(notifyIndex[i]).get("args");
                if (match < 0) {
                    unreceived++;
                    args.put("received", false);
                    continue;
                }
                taken.add(match);
                args.put("received", true);
                Timeline.Line m = lines.get(match);
                long id = ++flows;
                String name = l.type().typeName() + " \u2192 " + recv;
                Map<String, Object> s = event("s", name, "frame", pid(l.node()), NOTIFY, l.atNs());
                s.put("id", id);
                Map<String, Object> f = event("f", name, "frame", pid(m.node()), NOTIFY, m.atNs());
                f.put("id", id);
                f.put("bp", "e");
            }
        }

        /** A finding: an instant where the missing event should have happened. */
        void finding(Finding f) {
            long pid = pid(f.node());
            long tid;
            if (WIRE_DETECTORS.contains(f.detector())) {
                tid = NOTIFY;
                thread(pid, tid, "notify (ZMQ frames)");
            } else if (WORKER_DETECTORS.contains(f.detector())) {
                tid = WORKER;
                thread(pid, tid, "worker");
            } else {
                tid = SCHEDULER;
                thread(pid, tid, proxies.contains(f.node()) ? "proxy" : "scheduler");
            }
            long at = f.atNs() == Long.MIN_VALUE ? end : f.atNs();
            Map<String, Object> e = event("i", "missing: " + f.detector(), "finding", pid, tid, at);
            e.put("s", "t");
            LinkedHashMap<String, Object> a = new LinkedHashMap<>();
            a.put("message", f.message());
            a.put("detector", f.detector());
            a.put("bug_class", (long) f.bugClass());
            a.put("node", f.node());
            a.put("request_id", f.requestId());
            a.put("transfer_id", f.transferId());
            a.put("phase", f.phase() == null ? null : f.phase().name());
            if (f.sinceNs() >= 0 && f.sinceNs() != Long.MIN_VALUE) {
                a.put("waiting_since_us", us(f.sinceNs()));
            }
            e.put("args", a);
        }

        List<Map<String, Object>> metadata() {
            List<Map<String, Object>> out = new ArrayList<>();
            for (Map.Entry<String, Long> p : pids.entrySet()) {
                long pid = p.getValue();
                String node = p.getKey();
                NodeConfig c = configs.get(node);
                String label = c == null ? (proxies.contains(node) ? node + " (proxy)" : node)
                        : node + " (" + side(node) + ", " + c.mode().name().toLowerCase(Locale.ROOT)
                                + ", dp" + c.dpRank() + " tp" + c.tpRank() + ")";
                out.add(meta("process_name", pid, 0, Map.of("name", label)));
                out.add(meta("process_sort_index", pid, 0, Map.of("sort_index", pid)));
                Map<Long, String> ts = threads.getOrDefault(pid, Map.of());
                for (Map.Entry<Long, String> t : ts.entrySet()) {
                    out.add(meta("thread_name", pid, t.getKey(), Map.of("name", t.getValue())));
                    out.add(meta("thread_sort_index", pid, t.getKey(), Map.of("sort_index", t.getKey())));
                }
            }
            return out;
        }

        static Map<String, Object> meta(String name, long pid, long tid, Map<String, Object> args) {
            LinkedHashMap<String, Object> e = new LinkedHashMap<>();
            e.put("ph", "M");
            e.put("name", name);
            e.put("pid", pid);
            e.put("tid", tid);
            e.put("ts", 0.0);
            e.put("args", args);
            return e;
        }
    }
}
