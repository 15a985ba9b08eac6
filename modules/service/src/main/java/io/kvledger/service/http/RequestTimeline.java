package io.kvledger.service.http;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.effect.Effect;
import io.kvledger.journal.replay.JournalInputs;
import io.kvledger.journal.replay.Timeline;
import io.kvledger.service.web.TimelineJson;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

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

    /** What a lookup found. */
    sealed interface Result {
        record Found(Map<String, Object> json) implements Result {}

        record NotFound(String message) implements Result {}

        record Ambiguous(String message, List<String> candidates) implements Result {}
    }

    private RequestTimeline() {}

    /**
     * The timeline of {@code query} in the journal of node {@code node} in {@code dir}: the replay
     * library's {@link Timeline} (what {@code kvledger inspect} computes) over this one journal.
     */
    static Result of(Path dir, String node, NodeConfig config, String query) {
        query = query.strip();
        if (query.isEmpty()) {
            return new Result.NotFound("give a request id");
        }
        Timeline.Result r = Timeline.of(JournalInputs.resolve(List.of(dir)), query, Timeline.Kind.REQUEST, true, null);
        return switch (r) {
            case Timeline.NotFound nf -> new Result.NotFound("no request id in the journal of " + node + " matches '"
                    + query + "' (give a whole request id, a prefix, or the 32-hex uuid of a proxy request id)");
            case Timeline.Ambiguous amb -> new Result.Ambiguous("'" + query + "' matches " + amb.candidates().size()
                    + " requests; give more of the id",
                    List.copyOf(amb.candidates().subList(0, Math.min(MAX_CANDIDATES, amb.candidates().size()))));
            case Timeline.Found f -> {
                List<Map<String, Object>> lines = new ArrayList<>();
                boolean truncated = false;
                for (Timeline.Line l : f.lines()) {
                    if (lines.size() == MAX_LINES) {
                        truncated = true;
                        break;
                    }
                    lines.add(line(l, node));
                }
                String journalName = dir.getFileName() == null ? node : dir.getFileName().toString();
                yield new Result.Found(json(query, node, TimelineJson.journal(node, journalName, config), new LinkedHashSet<>(f.requestIds()),
                        new LinkedHashSet<>(f.transferIds()), lines, truncated));
            }
        };
    }

    private static Map<String, Object> line(Timeline.Line l, String node) {
        LinkedHashMap<String, Object> lm = new LinkedHashMap<>();
        lm.put("at_ns", l.atNs());
        lm.put("node", node);
        lm.put("seq", l.seq());
        lm.put("kind", l.input() ? "input" : "effect");
        lm.put("cause", l.cause());
        lm.put("type", l.type().typeName());
        lm.put("text", l.text());
        Effect.PhaseChanged phase = l.phase();
        if (phase != null) {
            lm.put("phase_from", phase.from() == null ? null : phase.from().name());
            lm.put("phase_to", phase.to().name());
            lm.put("reason", phase.reason());
            lm.put("request_id", phase.requestId());
            lm.put("terminal", phase.to().terminal());
        }
        lm.put("fields", l.fields());
        return lm;
    }

    /** The object {@code inspect --json} prints, for one node. */
    private static Map<String, Object> json(String query, String node, Map<String, Object> journal, Set<String> rids,
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
        m.put("journals", List.of(journal));
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
}
