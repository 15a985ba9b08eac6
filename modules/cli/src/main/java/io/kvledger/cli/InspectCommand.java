package io.kvledger.cli;

import io.kvledger.cli.replay.ConfigOverrides;
import io.kvledger.cli.replay.JournalInputs.NodeJournal;
import io.kvledger.cli.replay.Mentions;
import io.kvledger.cli.replay.Replayer;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.format.EntryType;
import io.kvledger.journal.json.Json;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
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
            "Exit status: 0 found; 1 no such request or transfer; 2 usage error (also: ID matches several)."})
final class InspectCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Parameters(paramLabel = "DIR", arity = "1..*", description = "journal directories")
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

    @Option(names = "--full-ids", description = "print proxy request ids whole instead of cmpl-..._<uuid>-...")
    boolean fullIds;

    @Option(names = "--max-candidates", paramLabel = "N", defaultValue = "10", hidden = true)
    int maxCandidates;

    /** What the first pass learned. */
    private static final class Scan implements Mentions.Sink {
        final String query;
        final boolean byRequest;
        final LinkedHashSet<String> matched = new LinkedHashSet<>();
        final LinkedHashSet<String> exact = new LinkedHashSet<>();
        final HashMap<String, LinkedHashSet<String>> tidsOfRid = new HashMap<>();
        final HashMap<String, LinkedHashSet<String>> ridsOfTid = new HashMap<>();
        long requestIdsSeen;
        final HashSet<String> seen = new HashSet<>();

        Scan(String query, boolean byRequest) {
            this.query = query;
            this.byRequest = byRequest;
        }

        @Override
        public void requestId(String rid) {
            if (byRequest) {
                consider(rid);
            }
        }

        @Override
        public void transferId(String tid) {
            if (!byRequest) {
                consider(tid);
            }
        }

        private void consider(String id) {
            if (id.equals(query)) {
                exact.add(id);
            } else if (matches(query, id)) {
                matched.add(id);
            }
        }

        @Override
        public void bind(String rid, String tid) {
            tidsOfRid.computeIfAbsent(rid, k -> new LinkedHashSet<>()).add(tid);
            ridsOfTid.computeIfAbsent(tid, k -> new LinkedHashSet<>()).add(rid);
        }

        /** The ids the query names (exact ones win over partial matches). */
        Set<String> hits() {
            return exact.isEmpty() ? matched : exact;
        }
    }

    /** Whether a partial id {@code q} (prefix, abbreviation with "...", uuid hex) names {@code id}. */
    static boolean matches(String q, String id) {
        if (q.isEmpty()) {
            return false;
        }
        if (id.startsWith(q)) {
            return true;
        }
        int dots = q.indexOf("...");
        if (dots >= 0) {
            String head = q.substring(0, dots);
            String tail = q.substring(dots + 3);
            return id.startsWith(head) && id.indexOf(tail, head.length()) >= 0;
        }
        if (q.length() >= 8 && q.chars().allMatch(c -> (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            String uuid = Text.uuidOf(id);
            return uuid != null && uuid.startsWith(q);
        }
        return false;
    }

    /** Ids that belong to the same client request: the uuid of a proxy id, else the id. */
    private static String groupKey(String id, boolean byRequest) {
        String uuid = byRequest ? Text.uuidOf(id) : null;
        return uuid == null ? id : uuid;
    }

    /** One line of the timeline. */
    private record Line(long atNs, String node, long seq, boolean input, String cause, EntryType type, String text,
                        Effect.PhaseChanged phase, Map<String, Object> fields) {}

    @Override
    public Integer call() {
        boolean byRequest = target.request != null;
        String query = (byRequest ? target.request : target.transfer).strip();
        String what = byRequest ? "request" : "transfer";
        if (query.isEmpty()) {
            throw new ParameterException(spec.commandLine(), "--" + what + " needs a non-empty id");
        }
        List<NodeJournal> journals = Journals.resolve(spec, dirs);
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();

        // Pass 1: which ids belong to the one asked for.
        Scan scan = new Scan(query, byRequest);
        try (Replayer r = open(journals)) {
            r.progress(ProgressLine.forTerminal(err, "inspect (1/2)"));
            r.run((node, in, fx, recorded) -> {
                Mentions.of(in.event(), scan);
                for (int i = 0; i < fx.size(); i++) {
                    Mentions.of(fx.get(i), scan);
                }
            });
        }
        Set<String> hits = scan.hits();
        if (hits.isEmpty()) {
            err.println("inspect: no " + what + " id in " + journals.size() + " journal(s) matches '" + query + "'"
                    + (byRequest ? " (give a whole request id, a prefix, or the 32-hex uuid of a proxy request id)"
                            : " (give a whole transfer id or a prefix)"));
            err.flush();
            return 1;
        }
        LinkedHashMap<String, List<String>> groups = new LinkedHashMap<>();
        for (String id : hits) {
            groups.computeIfAbsent(groupKey(id, byRequest), k -> new ArrayList<>()).add(id);
        }
        if (groups.size() > 1) {
            StringBuilder b = new StringBuilder("'" + query + "' matches " + groups.size() + " " + what + "s; give more of "
                    + "the id. Candidates:");
            int shown = 0;
            for (Map.Entry<String, List<String>> g : groups.entrySet()) {
                if (shown++ == maxCandidates) {
                    b.append("\n  ... ").append(groups.size() - maxCandidates).append(" more");
                    break;
                }
                b.append("\n  ").append(Text.ids(g.getValue().get(0), fullIds));
            }
            throw new ParameterException(spec.commandLine(), b.toString());
        }
        LinkedHashSet<String> rids = new LinkedHashSet<>();
        LinkedHashSet<String> tids = new LinkedHashSet<>();
        if (byRequest) {
            rids.addAll(hits);
            for (String rid : hits) {
                tids.addAll(scan.tidsOfRid.getOrDefault(rid, new LinkedHashSet<>()));
            }
            for (String tid : tids) {
                rids.addAll(scan.ridsOfTid.getOrDefault(tid, new LinkedHashSet<>()));
            }
        } else {
            tids.addAll(hits);
            for (String tid : hits) {
                rids.addAll(scan.ridsOfTid.getOrDefault(tid, new LinkedHashSet<>()));
            }
        }

        // Pass 2: the lines.
        List<Line> lines = new ArrayList<>();
        List<Replayer.Node> nodes;
        try (Replayer r = open(journals)) {
            nodes = r.nodes();
            List<Set<Long>> statuses = new ArrayList<>();
            for (int i = 0; i < nodes.size(); i++) {
                statuses.add(new HashSet<>());
            }
            Match m = new Match(rids, tids);
            r.progress(ProgressLine.forTerminal(err, "inspect (2/2)"));
            r.run((node, in, fx, recorded) -> {
                Set<Long> st = statuses.get(node.index());
                m.reset(st);
                Mentions.of(in.event(), m);
                if (!m.hit && in.event() instanceof NodeEvent.FrameRejected f) {
                    m.hit = m.frameNames(f.frame());
                }
                String cause = in.type().typeName();
                if (m.hit) {
                    lines.add(new Line(in.atNs(), node.name(), in.seq(), true, null, in.type(), in.dissect(), null,
                            json ? in.type().toJson(in.event()) : null));
                }
                for (int i = 0; i < fx.size(); i++) {
                    Effect e = fx.get(i);
                    m.reset(st);
                    Mentions.of(e, m);
                    if (m.hit) {
                        if (e instanceof Effect.PostWrite w) {
                            st.add(w.statusId());
                        } else if (e instanceof Effect.PostRead pr) {
                            st.add(pr.statusId());
                        }
                        EntryType t = EntryType.of(e);
                        lines.add(new Line(in.atNs(), node.name(), in.seq(), false, cause, t, t.dissect(e),
                                e instanceof Effect.PhaseChanged p ? p : null, json ? t.toJson(e) : null));
                    }
                }
            });
            Journals.warnings(spec, r);
        }
        if (json) {
            printJson(out, query, what, nodes, rids, tids, lines);
        } else {
            print(out, query, what, nodes, rids, tids, lines);
        }
        out.flush();
        return 0;
    }

    private Replayer open(List<NodeJournal> journals) {
        return Journals.openResolved(spec, journals, ConfigOverrides.none()).recorded(false);
    }

    /** Whether an event or effect names one of the target ids (or a status posted for them). */
    private static final class Match implements Mentions.Sink {
        final Set<String> rids;
        final Set<String> tids;
        Set<Long> statuses;
        boolean hit;

        Match(Set<String> rids, Set<String> tids) {
            this.rids = rids;
            this.tids = tids;
        }

        void reset(Set<Long> st) {
            statuses = st;
            hit = false;
        }

        @Override
        public void requestId(String rid) {
            hit |= rids.contains(rid);
        }

        @Override
        public void transferId(String tid) {
            hit |= tids.contains(tid);
        }

        @Override
        public void status(long statusId, String tid) {
            hit |= tid == null && statuses.contains(statusId);
        }

        boolean frameNames(byte[] frame) {
            if (frame == null) {
                return false;
            }
            String text = new String(frame, StandardCharsets.ISO_8859_1);
            for (String id : rids) {
                if (text.contains(id)) {
                    return true;
                }
            }
            for (String id : tids) {
                if (text.contains(id)) {
                    return true;
                }
            }
            return false;
        }
    }

    /** The last phase change of each (node, request) among the lines. */
    private static LinkedHashMap<String, Line> ends(List<Line> lines) {
        LinkedHashMap<String, Line> ends = new LinkedHashMap<>();
        for (Line l : lines) {
            if (l.phase() != null) {
                ends.put(l.node() + "\u0000" + l.phase().requestId(), l);
            }
        }
        return ends;
    }

    /** The request ids of the target as each node saw them, in first-seen order. */
    private static LinkedHashMap<String, LinkedHashSet<String>> legs(List<Replayer.Node> nodes, Set<String> rids,
                                                                    List<Line> lines) {
        LinkedHashMap<String, LinkedHashSet<String>> legs = new LinkedHashMap<>();
        for (Line l : lines) {
            if (l.phase() != null && rids.contains(l.phase().requestId())) {
                legs.computeIfAbsent(l.node(), k -> new LinkedHashSet<>()).add(l.phase().requestId());
            }
        }
        return legs;
    }

    private void print(PrintWriter out, String query, String what, List<Replayer.Node> nodes, Set<String> rids,
                       Set<String> tids, List<Line> lines) {
        out.println("inspect: " + what + " " + Text.ids(query, fullIds) + " in " + nodes.size() + " journal(s) ("
                + Journals.names(nodes) + ")");
        LinkedHashMap<String, LinkedHashSet<String>> legs = legs(nodes, rids, lines);
        for (Map.Entry<String, LinkedHashSet<String>> leg : legs.entrySet()) {
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
                if (legs.getOrDefault(l.node(), new LinkedHashSet<>()).size() > 1) {
                    b.append("  [").append(Text.ids(p.requestId(), fullIds)).append(']');
                }
            } else {
                b.append(l.cause()).append(" => ").append(Text.ids(l.text(), fullIds));
            }
            out.println(b);
        }
        out.println("end:");
        for (Line l : ends(lines).values()) {
            Effect.PhaseChanged p = l.phase();
            out.println("  " + l.node() + "  " + Text.ids(p.requestId(), fullIds) + "  " + p.to().name()
                    + (p.to().terminal() ? "" : " (not terminal)") + " since " + Text.rel(l.atNs() - base) + ": " + p.reason());
        }
        out.println("inspect: " + lines.size() + " line(s) over " + Text.seconds3(lines.get(lines.size() - 1).atNs() - base));
    }

    private void printJson(PrintWriter out, String query, String what, List<Replayer.Node> nodes, Set<String> rids,
                           Set<String> tids, List<Line> lines) {
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        m.put("command", "inspect");
        m.put("query", query);
        m.put("kind", what);
        List<Object> journals = new ArrayList<>();
        for (Replayer.Node n : nodes) {
            LinkedHashMap<String, Object> jm = new LinkedHashMap<>();
            jm.put("node", n.name());
            jm.put("journal", n.journal().name());
            journals.add(jm);
        }
        m.put("journals", journals);
        List<Object> legs = new ArrayList<>();
        legs(nodes, rids, lines).forEach((node, ids) -> ids.forEach(id -> {
            LinkedHashMap<String, Object> lm = new LinkedHashMap<>();
            lm.put("node", node);
            lm.put("request_id", id);
            legs.add(lm);
        }));
        m.put("requests", legs);
        m.put("request_ids", new ArrayList<Object>(rids));
        m.put("transfer_ids", new ArrayList<Object>(tids));
        long base = lines.isEmpty() ? 0 : lines.get(0).atNs();
        List<Object> list = new ArrayList<>();
        for (Line l : lines) {
            LinkedHashMap<String, Object> lm = new LinkedHashMap<>();
            lm.put("t", Text.secondsDouble(l.atNs() - base));
            lm.put("at_ns", l.atNs());
            lm.put("node", l.node());
            lm.put("seq", l.seq());
            lm.put("kind", l.input() ? "input" : "effect");
            lm.put("cause", l.cause());
            lm.put("type", l.type().typeName());
            lm.put("text", l.text());
            if (l.phase() != null) {
                lm.put("phase_from", l.phase().from() == null ? null : l.phase().from().name());
                lm.put("phase_to", l.phase().to().name());
                lm.put("reason", l.phase().reason());
            }
            lm.put("fields", l.fields());
            list.add(lm);
        }
        m.put("lines", list);
        List<Object> ends = new ArrayList<>();
        for (Line l : ends(lines).values()) {
            LinkedHashMap<String, Object> em = new LinkedHashMap<>();
            em.put("node", l.node());
            em.put("request_id", l.phase().requestId());
            em.put("phase", l.phase().to().name());
            em.put("terminal", l.phase().to().terminal());
            em.put("reason", l.phase().reason());
            em.put("t", Text.secondsDouble(l.atNs() - base));
            ends.add(em);
        }
        m.put("end", ends);
        out.println(Json.write(m));
    }
}
