package io.kvledger.ledger.replay;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.format.EntryType;
import io.kvledger.journal.proxy.ProxyEvent;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The timeline of one request or transfer across node journals, as data ({@code inspect} prints
 * it; the service's HTTP API serves it): every input event and recomputed effect that names it
 * (its request ids, its transfer ids, or a data-plane status posted for it), in merged order.
 *
 * <p>Two passes over the journals: the first finds which request ids and transfer ids belong to
 * the one asked for (an id prefix, a {@code cmpl-..._<uuid>-...} abbreviation, or the uuid hex of
 * a proxy request id finds every leg of that request; the transfer ids the legs carry link the
 * other nodes' legs), the second collects the lines. A proxy's journal among the journals adds
 * its records of the request (routing, each leg sent, answered, failed or cancelled), joined by
 * the proxy request id (which the nodes' request ids wrap) and the transfer id.
 */
public final class Timeline {

    /** What the query names. */
    public enum Kind {
        REQUEST, TRANSFER;

        /** "request" or "transfer". */
        public String word() {
            return this == REQUEST ? "request" : "transfer";
        }
    }

    /**
     * One line of the timeline.
     *
     * @param input  whether it is an input event (else a recomputed effect of {@code cause})
     * @param cause  the type name of the input an effect came from; null for inputs
     * @param text   the dissected entry
     * @param phase  the phase change, when the line is one
     * @param fields the entry's JSON fields, when asked for; else null
     */
    public record Line(long atNs, String node, long seq, boolean input, String cause, EntryType type, String text,
                       Effect.PhaseChanged phase, Map<String, Object> fields) {}

    /** The outcome of a query. */
    public sealed interface Result permits Found, NotFound, Ambiguous {}

    /**
     * The query named one request or transfer.
     *
     * @param nodes       the replayed nodes
     * @param requestIds  the request ids that belong to it (every leg)
     * @param transferIds the transfer ids that belong to it
     * @param lines       the timeline, in merged order
     * @param warnings    what the journal readers skipped or doubted
     */
    public record Found(String query, Kind kind, List<Replayer.Node> nodes, Set<String> requestIds,
                        Set<String> transferIds, List<Line> lines, List<String> warnings) implements Result {

        /** Per node, the target's request ids it admitted (first-seen order, from phase changes). */
        public Map<String, Set<String>> legs() {
            LinkedHashMap<String, Set<String>> legs = new LinkedHashMap<>();
            for (Line l : lines) {
                if (l.phase() != null && requestIds.contains(l.phase().requestId())) {
                    legs.computeIfAbsent(l.node(), k -> new LinkedHashSet<>()).add(l.phase().requestId());
                }
            }
            return legs;
        }

        /** The last phase change of each (node, request) among the lines. */
        public List<Line> ends() {
            LinkedHashMap<String, Line> ends = new LinkedHashMap<>();
            for (Line l : lines) {
                if (l.phase() != null) {
                    ends.put(l.node() + "\u0000" + l.phase().requestId(), l);
                }
            }
            return List.copyOf(ends.values());
        }
    }

    /** No id in the journals matches the query. */
    public record NotFound(String query, Kind kind, int journals, List<String> warnings) implements Result {}

    /**
     * The query matches several requests (or transfers).
     *
     * @param candidates one id per matching group (legs of one proxy request form one group)
     */
    public record Ambiguous(String query, Kind kind, List<String> candidates, List<String> warnings)
            implements Result {}

    private static final Pattern PROXY_UUID = Pattern.compile("___decode_addr_\\S*?_([0-9a-f]{32})(?![0-9a-f])");

    private Timeline() {}

    /**
     * Finds the timeline of {@code query}.
     *
     * @param withFields whether lines carry their JSON fields ({@code inspect --json})
     * @param progress   called with the inputs replayed so far, once per pass (may be null)
     * @throws JournalInputs.InputException when a journal cannot be read
     * @throws IllegalArgumentException when {@code query} is blank
     */
    public static Result of(List<NodeJournal> journals, String query, Kind kind, boolean withFields,
                            List<Replayer.Progress> progress) {
        String q = query == null ? "" : query.strip();
        if (q.isEmpty()) {
            throw new IllegalArgumentException("--" + kind.word() + " needs a non-empty id");
        }
        boolean byRequest = kind == Kind.REQUEST;
        Replayer.Progress p1 = progress == null || progress.isEmpty() ? null : progress.get(0);
        Replayer.Progress p2 = progress == null || progress.size() < 2 ? null : progress.get(1);
        LinkedHashSet<String> warnings = new LinkedHashSet<>();

        // Pass 1: which ids belong to the one asked for.
        Scan scan = new Scan(q, byRequest);
        List<NodeJournal> proxies;
        try (Replayer r = open(journals)) {
            r.progress(p1);
            r.run((node, in, fx, recorded) -> {
                Mentions.of(in.event(), scan);
                for (int i = 0; i < fx.size(); i++) {
                    Mentions.of(fx.get(i), scan);
                }
            });
            warnings.addAll(r.warnings());
            proxies = r.proxyJournals();
        }
        // the proxies' records name the request (its proxy id) and its transfer id
        for (NodeJournal j : proxies) {
            try (JournalReader pr = j.open()) {
                for (JournalEntry e : pr) {
                    if (e instanceof JournalEntry.Proxy px) {
                        String rid = ProxyEvent.requestIdOf(px.event());
                        String tid = ProxyEvent.transferIdOf(px.event());
                        if (rid != null) {
                            scan.requestId(rid);
                        }
                        if (tid != null) {
                            scan.transferId(tid);
                        }
                        if (rid != null && tid != null) {
                            scan.bind(rid, tid);
                        }
                    }
                }
                warnings.addAll(pr.warnings());
            }
        }
        Set<String> hits = scan.hits();
        if (hits.isEmpty()) {
            return new NotFound(q, kind, journals.size(), List.copyOf(warnings));
        }
        LinkedHashMap<String, List<String>> groups = new LinkedHashMap<>();
        for (String id : hits) {
            groups.computeIfAbsent(groupKey(id, byRequest), k -> new ArrayList<>()).add(id);
        }
        if (groups.size() > 1) {
            List<String> candidates = new ArrayList<>();
            for (List<String> g : groups.values()) {
                candidates.add(g.get(0));
            }
            return new Ambiguous(q, kind, List.copyOf(candidates), List.copyOf(warnings));
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
            r.progress(p2);
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
                            withFields ? in.type().toJson(in.event()) : null));
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
                                e instanceof Effect.PhaseChanged p ? p : null, withFields ? t.toJson(e) : null));
                    }
                }
            });
            // the second pass reads the same entries: its warnings are the run's
            warnings.clear();
            warnings.addAll(r.warnings());
        }
        if (!proxies.isEmpty()) {
            // proxy lines are inputs of their proxy (no cause, no phase), merged in by time
            for (ProxyLedger.Line pl : ProxyLedger.read(proxies).lines(rids, tids)) {
                lines.add(new Line(pl.atNs(), pl.proxy(), pl.seq(), true, null, pl.type(), pl.text(), null,
                        withFields ? pl.type().toJson(pl.event()) : null));
            }
            lines.sort(java.util.Comparator.comparingLong(Line::atNs));
        }
        return new Found(q, kind, nodes, Collections.unmodifiableSet(rids), Collections.unmodifiableSet(tids),
                Collections.unmodifiableList(lines), List.copyOf(warnings));
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
            String uuid = uuidOf(id);
            return uuid != null && uuid.startsWith(q);
        }
        return false;
    }

    /** The 32-hex uuid of a proxy request id ({@code ..._decode_addr_..._<uuid>...}), or null. */
    public static String uuidOf(String requestId) {
        if (requestId == null) {
            return null;
        }
        Matcher m = PROXY_UUID.matcher(requestId);
        return m.find() ? m.group(1) : null;
    }

    /** Ids that belong to the same client request: the uuid of a proxy id, else the id. */
    private static String groupKey(String id, boolean byRequest) {
        String uuid = byRequest ? uuidOf(id) : null;
        return uuid == null ? id : uuid;
    }

    private static Replayer open(List<NodeJournal> journals) {
        return Replayer.open(journals, ConfigOverrides.none()).recorded(false);
    }

    /** What the first pass learned. */
    private static final class Scan implements Mentions.Sink {
        final String query;
        final boolean byRequest;
        final LinkedHashSet<String> matched = new LinkedHashSet<>();
        final LinkedHashSet<String> exact = new LinkedHashSet<>();
        final HashMap<String, LinkedHashSet<String>> tidsOfRid = new HashMap<>();
        final HashMap<String, LinkedHashSet<String>> ridsOfTid = new HashMap<>();

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
}
