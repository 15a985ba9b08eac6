package io.kvledger.node.http;

import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.ledger.replay.Timeline;
import io.kvledger.ledger.web.TimelineJson;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * The timeline of one request on a live node ({@code GET /v1/requests/{id}}), in the JSON shape
 * {@code kvledger inspect --json} prints: read from the node's own journal (readable while the
 * loop appends to it), so it holds every journaled input and derived entry that names the
 * request, its transfer ids, or a status id posted for it, up to the last entry written.
 *
 * <p>As in {@code inspect}, the effects are recomputed by replaying the journal's inputs (the
 * node's reducer is deterministic, so they are the ones its loop derived); startup checks
 * (derived from the header) are left out. The JSON is {@link TimelineJson}'s, shared with
 * {@code inspect --json} and {@code kvledger serve}: each journal in {@code journals} carries the
 * node's role, mode and timeouts from its header.
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
    static Result of(Path dir, String node, String query) {
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
            case Timeline.Found f -> new Result.Found(TimelineJson.timeline(f, MAX_LINES));
        };
    }
}
