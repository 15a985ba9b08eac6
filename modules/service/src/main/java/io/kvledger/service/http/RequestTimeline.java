package io.kvledger.service.http;

import io.kvledger.journal.replay.Mentions;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.format.EntryType;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The timeline of one request on a live node ({@code GET /v1/requests/{id}}), in the JSON shape
 * {@code kvledger inspect --json} prints: read from the node's own journal (readable while the
 * loop appends to it), so it holds every journaled input and derived entry that names the
 * request, its transfer ids, or a status id posted for it, up to the last entry written.
 *
 * <p>Where {@code inspect} replays the journals and recomputes the effects, a live node's journal
 * already holds the effects its loop derived, so they are read as they are; startup checks
 * (derived from the header) are left out, as {@code inspect} leaves them out.
 *
 * <p>Two passes, as in {@code inspect}: the first finds which request and transfer ids belong to
 * the one asked for (a whole id, a prefix, or the 32-hex uuid of a proxy request id), the second
 * collects the lines. Blocking (journal I/O): call it off the Netty threads.
 */
final class RequestTimeline {

    /** At most this many lines are returned; {@code truncated} says when more matched. */
    static final int MAX_LINES = 10_000;
    static final int MAX_CANDIDATES = 10;

    private static final Pattern PROXY_UUID = Pattern.compile("___decode_addr_\\S*?_([0-9a-f]{32})(?![0-9a-f])");

    /** What a lookup found. */
    sealed interface Result {
        record Found(Map<String, Object> json) implements Result {}

        record NotFound(String message) implements Result {}

        record Ambiguous(String message, List<String> candidates) implements Result {}
    }

    private RequestTimeline() {}

    /** The timeline of {@code query} in the journal of node {@code node} in {@code dir}. */
    static Result of(Path dir, String node, String query) {
        query = query.strip();
        if (query.isEmpty()) {
            return new Result.NotFound("give a request id");
        }
        Scan scan = new Scan(query);
        try (JournalReader r = JournalReader.open(dir)) {
            for (JournalEntry e : r) {
                switch (e) {
                    case JournalEntry.Input in -> Mentions.of(in.event(), scan);
                    case JournalEntry.Derived d -> Mentions.of(d.effect(), scan);
                    case JournalEntry.Header h -> { }
                    case JournalEntry.Unknown u -> { }
                }
            }
        }
        Set<String> hits = scan.exact.isEmpty() ? scan.matched : scan.exact;
        if (hits.isEmpty()) {
            return new Result.NotFound("no request id in the journal of " + node + " matches '" + query
                    + "' (give a whole request id, a prefix, or the 32-hex uuid of a proxy request id)");
        }
        LinkedHashMap<String, List<String>> groups = new LinkedHashMap<>();
        for (String id : hits) {
            String uuid = uuidOf(id);
            groups.computeIfAbsent(uuid == null ? id : uuid, k -> new ArrayList<>()).add(id);
        }
        if (groups.size() > 1) {
            List<String> candidates = new ArrayList<>();
            for (List<String> g : groups.values()) {
                if (candidates.size() == MAX_CANDIDATES) {
                    break;
                }
                candidates.add(g.get(0));
            }
            return new Result.Ambiguous("'" + query + "' matches " + groups.size() + " requests; give more of the id",
                    candidates);
        }
        LinkedHashSet<String> rids = new LinkedHashSet<>(hits);
        LinkedHashSet<String> tids = new LinkedHashSet<>();
        for (String rid : hits) {
            tids.addAll(scan.tidsOfRid.getOrDefault(rid, new LinkedHashSet<>()));
        }
        for (String tid : tids) {
            rids.addAll(scan.ridsOfTid.getOrDefault(tid, new LinkedHashSet<>()));
        }

        List<Map<String, Object>> lines = new ArrayList<>();
        boolean truncated = false;
        String journalName;
        Match m = new Match(rids, tids);
        try (JournalReader r = JournalReader.open(dir)) {
            journalName = r.dir().getFileName() == null ? node : r.dir().getFileName().toString();
            long causeSeq = -1;
            String causeType = null;
            for (JournalEntry e : r) {
                Map<String, Object> line = null;
                if (e instanceof JournalEntry.Input in) {
                    causeSeq = in.seq();
                    causeType = in.type().typeName();
                    m.hit = false;
                    Mentions.of(in.event(), m);
                    if (!m.hit && in.event() instanceof NodeEvent.FrameRejected f) {
                        m.hit = m.frameNames(f.frame());
                    }
                    if (m.hit) {
                        line = line(in.atNs(), node, in.seq(), true, null, in.type(), in.event(), null);
                    }
                } else if (e instanceof JournalEntry.Derived d && d.causeSeq() != 0) {
                    m.hit = false;
                    Effect fx = d.effect();
                    Mentions.of(fx, m);
                    if (m.hit) {
                        if (fx instanceof Effect.PostWrite w) {
                            m.statuses.add(w.statusId());
                        } else if (fx instanceof Effect.PostRead pr) {
                            m.statuses.add(pr.statusId());
                        }
                        line = line(d.atNs(), node, d.causeSeq(), false, d.causeSeq() == causeSeq ? causeType : null,
                                d.type(), fx, fx instanceof Effect.PhaseChanged p ? p : null);
                    }
                }
                if (line != null) {
                    if (lines.size() == MAX_LINES) {
                        truncated = true;
                        break;
                    }
                    lines.add(line);
                }
            }
        }
        return new Result.Found(json(query, node, journalName, rids, tids, lines, truncated));
    }

    private static Map<String, Object> line(long atNs, String node, long seq, boolean input, String cause,
                                            EntryType type, Object record, Effect.PhaseChanged phase) {
        LinkedHashMap<String, Object> lm = new LinkedHashMap<>();
        lm.put("at_ns", atNs);
        lm.put("node", node);
        lm.put("seq", seq);
        lm.put("kind", input ? "input" : "effect");
        lm.put("cause", cause);
        lm.put("type", type.typeName());
        lm.put("text", type.dissect(record));
        if (phase != null) {
            lm.put("phase_from", phase.from() == null ? null : phase.from().name());
            lm.put("phase_to", phase.to().name());
            lm.put("reason", phase.reason());
            lm.put("request_id", phase.requestId());
            lm.put("terminal", phase.to().terminal());
        }
        lm.put("fields", type.toJson(record));
        return lm;
    }

    /** The object {@code inspect --json} prints, for one node. */
    private static Map<String, Object> json(String query, String node, String journalName, Set<String> rids,
                                            Set<String> tids, List<Map<String, Object>> lines, boolean truncated) {
        long base = lines.isEmpty() ? 0 : (Long) lines.get(0).get("at_ns");
        LinkedHashSet<String> legs = new LinkedHashSet<>();
        LinkedHashMap<String, Map<String, Object>> ends = new LinkedHashMap<>();
        List<Object> out = new ArrayList<>();
        for (Map<String, Object> l : lines) {
            LinkedHashMap<String, Object> lm = new LinkedHashMap<>();
            long at = (Long) l.get("at_ns");
            lm.put("t", (at - base) / 1e9);
            lm.putAll(l);
            Object rid = lm.remove("request_id");
            Object terminal = lm.remove("terminal");
            if (rid != null) {
                if (rids.contains(rid)) {
                    legs.add((String) rid);
                }
                LinkedHashMap<String, Object> em = new LinkedHashMap<>();
                em.put("node", node);
                em.put("request_id", rid);
                em.put("phase", l.get("phase_to"));
                em.put("terminal", terminal);
                em.put("reason", l.get("reason"));
                em.put("t", (at - base) / 1e9);
                ends.put((String) rid, em);
            }
            // inspect's key order: t, at_ns, node, seq, kind, cause, type, text, phase..., fields
            Object fields = lm.remove("fields");
            lm.put("fields", fields);
            out.add(lm);
        }
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        m.put("command", "inspect");
        m.put("query", query);
        m.put("kind", "request");
        LinkedHashMap<String, Object> jm = new LinkedHashMap<>();
        jm.put("node", node);
        jm.put("journal", journalName);
        m.put("journals", List.of(jm));
        List<Object> requests = new ArrayList<>();
        for (String rid : legs) {
            LinkedHashMap<String, Object> lm = new LinkedHashMap<>();
            lm.put("node", node);
            lm.put("request_id", rid);
            requests.add(lm);
        }
        m.put("requests", requests);
        m.put("request_ids", new ArrayList<Object>(rids));
        m.put("transfer_ids", new ArrayList<Object>(tids));
        m.put("lines", out);
        m.put("end", new ArrayList<Object>(ends.values()));
        m.put("truncated", truncated);
        return m;
    }

    /** The uuid hex of a proxy request id, or {@code null}. */
    static String uuidOf(String requestId) {
        Matcher mm = PROXY_UUID.matcher(requestId);
        return mm.find() ? mm.group(1) : null;
    }

    /** Whether a partial id {@code q} (prefix or uuid hex) names {@code id}. */
    static boolean matches(String q, String id) {
        if (id.startsWith(q)) {
            return true;
        }
        if (q.length() >= 8 && q.chars().allMatch(c -> (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            String uuid = uuidOf(id);
            return uuid != null && uuid.startsWith(q);
        }
        return false;
    }

    /** Pass 1: the ids the query names and the transfer ids bound to request ids. */
    private static final class Scan implements Mentions.Sink {
        final String query;
        final LinkedHashSet<String> exact = new LinkedHashSet<>();
        final LinkedHashSet<String> matched = new LinkedHashSet<>();
        final LinkedHashMap<String, LinkedHashSet<String>> tidsOfRid = new LinkedHashMap<>();
        final LinkedHashMap<String, LinkedHashSet<String>> ridsOfTid = new LinkedHashMap<>();

        Scan(String query) {
            this.query = query;
        }

        @Override
        public void requestId(String rid) {
            if (rid.equals(query)) {
                exact.add(rid);
            } else if (matched.size() < 10_000 && matches(query, rid)) {
                matched.add(rid);
            }
        }

        @Override
        public void transferId(String tid) {
        }

        @Override
        public void bind(String rid, String tid) {
            tidsOfRid.computeIfAbsent(rid, k -> new LinkedHashSet<>()).add(tid);
            ridsOfTid.computeIfAbsent(tid, k -> new LinkedHashSet<>()).add(rid);
        }
    }

    /** Pass 2: whether an entry names the target ids (or a status posted for them). */
    private static final class Match implements Mentions.Sink {
        final Set<String> rids;
        final Set<String> tids;
        final Set<Long> statuses = new HashSet<>();
        boolean hit;

        Match(Set<String> rids, Set<String> tids) {
            this.rids = rids;
            this.tids = tids;
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
