package io.kvledger.node.http;

import io.kvledger.ledger.web.EventStream;
import io.kvledger.ledger.diagnosis.Bounds;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.node.NodeState;
import io.kvledger.node.shadow.ShadowMonitor;
import io.kvledger.node.metrics.NodeMetrics;
import io.kvledger.node.metrics.RequestTimes;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.QueryStringDecoder;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.netty.http.server.HttpServerRequest;
import reactor.netty.http.server.HttpServerResponse;

/**
 * The admin routes of a node's HTTP server: {@code GET /metrics}, {@code GET /v1/requests},
 * {@code GET /v1/requests/{id}}, {@code GET /v1/hangs} and {@code GET /v1/events} (see the
 * docs/http-api.md). {@link HttpFront} registers them behind its bearer-token check.
 *
 * <p>Nothing here blocks a Netty thread or the loop: state reads are small tasks on the loop
 * ({@code Inbox.query}) whose result is rendered after; journal reads run on Reactor's
 * bounded-elastic scheduler; the event stream has its own thread.
 */
final class AdminRoutes implements AutoCloseable {

    static final int DEFAULT_LIMIT = 100;
    static final int MAX_LIMIT = 10_000;
    private static final Duration QUERY_TIMEOUT = Duration.ofSeconds(5);
    private static final Duration JOURNAL_TIMEOUT = Duration.ofSeconds(60);

    private final HttpFront.Sources node;
    private final NodeMetrics metrics;
    private final EventStream events;

    AdminRoutes(HttpFront.Sources node, NodeMetrics metrics) {
        this.node = node;
        this.metrics = metrics;
        this.events = new EventStream(node.journalDir(), node.nodeId());
    }

    @Override
    public void close() {
        events.close();
    }

    EventStream events() {
        return events;
    }

    /** Refuses a declared body over the server's limit (413) on routes that take none. */
    static Publisher<Void> tooLarge(HttpServerRequest req, HttpServerResponse res) {
        String len = req.requestHeaders().get("Content-Length");
        if (len == null) {
            return null;
        }
        try {
            if (Long.parseLong(len.trim()) <= HttpFront.MAX_BODY_BYTES) {
                return null;
            }
        } catch (NumberFormatException e) {
            return HttpFront.json(res, HttpResponseStatus.BAD_REQUEST, Map.of("error", "bad Content-Length"));
        }
        return HttpFront.json(res, HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE,
                Map.of("error", "request body over " + HttpFront.MAX_BODY_BYTES + " bytes"));
    }

    // ------------------------------------------------------------------ /metrics

    Publisher<Void> metrics(HttpServerRequest req, HttpServerResponse res) {
        return res.status(HttpResponseStatus.OK)
                .header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                .sendString(Mono.fromCallable(() -> {
                            node.loop().freshStatus(HttpFront.STATUS_TIMEOUT); // the meters read it
                            return metrics.scrape();
                        }).subscribeOn(Schedulers.boundedElastic()),
                        StandardCharsets.UTF_8);
    }

    // ------------------------------------------------------------------ /v1/requests

    /** One row of the request list, copied out of the state on the loop thread. */
    private record Row(String requestId, RequestPhase phase, long admittedAtNs, long phaseSinceNs, String transferId) {}

    /** What the loop thread copies out for {@code /v1/requests}. */
    private record Listing(List<Row> rows, long matched, long[] byPhase, long nowNs) {}

    Publisher<Void> requests(HttpServerRequest req, HttpServerResponse res) {
        Map<String, List<String>> q = new QueryStringDecoder(req.uri()).parameters();
        Set<RequestPhase> phases;
        int limit;
        try {
            phases = phases(q.get("phase"));
            limit = limit(q.get("limit"));
        } catch (IllegalArgumentException e) {
            return HttpFront.json(res, HttpResponseStatus.BAD_REQUEST, Map.of("error", e.getMessage()));
        }
        RequestTimes times = metrics.times();
        return Mono.fromFuture(() -> node.inbox().query(s -> list(s, times, phases, limit)))
                .timeout(QUERY_TIMEOUT)
                .flatMap(l -> Mono.from(HttpFront.json(res, HttpResponseStatus.OK, render(l, phases, limit))))
                .onErrorResume(e -> Mono.from(unavailable(res, e)));
    }

    /** Runs on the loop thread: the newest {@code limit} matching requests, and counts. */
    private Listing list(NodeState s, RequestTimes times, Set<RequestPhase> phases, int limit) {
        long now = node.clock().getAsLong();
        long[] byPhase = new long[RequestPhase.values().length];
        ArrayDeque<Row> last = new ArrayDeque<>(Math.min(limit, 1024));
        long matched = 0;
        for (Map.Entry<String, RequestPhase> e : s.phases().entrySet()) {
            RequestPhase p = e.getValue();
            byPhase[p.ordinal()]++;
            if (!phases.contains(p)) {
                continue;
            }
            matched++;
            if (limit == 0) {
                continue;
            }
            if (last.size() == limit) {
                last.removeFirst();
            }
            String rid = e.getKey();
            String tid = s.requestIdMap().get(rid);
            if (tid == null) {
                tid = times.transferId(rid);
            }
            if (tid == null) {
                KvParams params = s.liveParams(rid);
                if (params != null && params.get("transfer_id") instanceof String t && !t.isEmpty()) {
                    tid = t;
                }
            }
            last.addLast(new Row(rid, p, times.admittedAtNs(rid), times.phaseSinceNs(rid), tid));
        }
        List<Row> rows = new ArrayList<>(last);
        java.util.Collections.reverse(rows);
        return new Listing(rows, matched, byPhase, now);
    }

    private Map<String, Object> render(Listing l, Set<RequestPhase> phases, int limit) {
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        m.put("node", node.nodeId());
        m.put("now_ns", l.nowNs());
        List<Object> filter = new ArrayList<>();
        phases.forEach(p -> filter.add(p.name()));
        m.put("phases", filter);
        m.put("matched", l.matched());
        m.put("returned", (long) l.rows().size());
        m.put("truncated", l.matched() > l.rows().size());
        m.put("limit", (long) limit);
        LinkedHashMap<String, Object> counts = new LinkedHashMap<>();
        for (RequestPhase p : RequestPhase.values()) {
            if (l.byPhase()[p.ordinal()] > 0) {
                counts.put(p.name(), l.byPhase()[p.ordinal()]);
            }
        }
        m.put("by_phase", counts);
        List<Object> rows = new ArrayList<>();
        for (Row r : l.rows()) {
            LinkedHashMap<String, Object> rm = new LinkedHashMap<>();
            rm.put("request_id", r.requestId());
            rm.put("phase", r.phase().name());
            rm.put("terminal", r.phase().terminal());
            rm.put("transfer_id", r.transferId());
            rm.put("admitted_at_ns", r.admittedAtNs() == Long.MIN_VALUE ? null : r.admittedAtNs());
            rm.put("age_s", r.admittedAtNs() == Long.MIN_VALUE ? null : (l.nowNs() - r.admittedAtNs()) / 1e9);
            rm.put("in_phase_s", r.phaseSinceNs() == Long.MIN_VALUE ? null : (l.nowNs() - r.phaseSinceNs()) / 1e9);
            rows.add(rm);
        }
        m.put("requests", rows);
        return m;
    }

    /** The {@code phase} parameter: names (any case, comma-separated, repeatable), {@code live} or {@code terminal}. */
    static Set<RequestPhase> phases(List<String> values) {
        if (values == null || values.isEmpty()) {
            return EnumSet.allOf(RequestPhase.class);
        }
        EnumSet<RequestPhase> out = EnumSet.noneOf(RequestPhase.class);
        for (String v : values) {
            for (String part : v.split(",")) {
                String name = part.strip().toUpperCase(Locale.ROOT);
                if (name.isEmpty()) {
                    continue;
                }
                switch (name) {
                    case "LIVE" -> {
                        for (RequestPhase p : RequestPhase.values()) {
                            if (!p.terminal()) {
                                out.add(p);
                            }
                        }
                    }
                    case "TERMINAL" -> {
                        for (RequestPhase p : RequestPhase.values()) {
                            if (p.terminal()) {
                                out.add(p);
                            }
                        }
                    }
                    // a switch over query text, not a sealed type: any other word must be a phase name,
                    // and one that is not is refused below
                    default -> {
                        try {
                            out.add(RequestPhase.valueOf(name));
                        } catch (IllegalArgumentException e) {
                            throw new IllegalArgumentException("unknown phase '" + part.strip() + "' (phases: "
                                    + java.util.Arrays.toString(RequestPhase.values()) + ", or live, terminal)");
                        }
                    }
                }
            }
        }
        if (out.isEmpty()) {
            throw new IllegalArgumentException("phase names no phase");
        }
        return out;
    }

    static int limit(List<String> values) {
        if (values == null || values.isEmpty()) {
            return DEFAULT_LIMIT;
        }
        String v = values.get(values.size() - 1).strip();
        int n;
        try {
            n = Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("limit must be an integer from 0 to " + MAX_LIMIT + ", got '" + v + "'");
        }
        if (n < 0 || n > MAX_LIMIT) {
            throw new IllegalArgumentException("limit must be from 0 to " + MAX_LIMIT + ", got " + n);
        }
        return n;
    }

    // ------------------------------------------------------------------ /v1/requests/{id}

    Publisher<Void> request(HttpServerRequest req, HttpServerResponse res) {
        String raw = req.param("id");
        String id;
        try {
            id = raw == null ? "" : URLDecoder.decode(raw.replace("+", "%2B"), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            return HttpFront.json(res, HttpResponseStatus.BAD_REQUEST, Map.of("error", "bad escape in the request id"));
        }
        String nodeId = node.nodeId();
        return Mono.fromCallable(() -> RequestTimeline.of(node.journalDir(), nodeId, id))
                .subscribeOn(Schedulers.boundedElastic())
                .timeout(JOURNAL_TIMEOUT)
                .flatMap(r -> Mono.from(switch (r) {
                    case RequestTimeline.Result.Found f -> HttpFront.json(res, HttpResponseStatus.OK, f.json());
                    case RequestTimeline.Result.NotFound n -> HttpFront.json(res, HttpResponseStatus.NOT_FOUND,
                            Map.of("error", n.message()));
                    case RequestTimeline.Result.Ambiguous a -> {
                        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
                        m.put("error", a.message());
                        m.put("candidates", new ArrayList<Object>(a.candidates()));
                        yield HttpFront.json(res, HttpResponseStatus.CONFLICT, m);
                    }
                }))
                .onErrorResume(e -> Mono.from(unavailable(res, e)));
    }

    // ------------------------------------------------------------------ /v1/hangs

    Publisher<Void> hangs(HttpServerRequest req, HttpServerResponse res) {
        Map<String, List<String>> q = new QueryStringDecoder(req.uri()).parameters();
        Bounds bounds = Bounds.defaults();
        List<String> sa = q.get("stuck_after");
        if (sa != null && !sa.isEmpty()) {
            double secs;
            try {
                secs = Double.parseDouble(sa.get(sa.size() - 1).strip());
            } catch (NumberFormatException e) {
                secs = Double.NaN;
            }
            if (!(secs > 0) || Double.isInfinite(secs)) {
                return HttpFront.json(res, HttpResponseStatus.BAD_REQUEST, Map.of("error",
                        "stuck_after must be a positive number of seconds, got '" + sa.get(sa.size() - 1) + "'"));
            }
            bounds = new Bounds((long) (secs * 1e9));
        }
        Bounds b = bounds;
        return Mono.fromCallable(() -> LiveHangs.run(node.journalDir(), node.nodeId(),
                        node.config(), b, node.clock()))
                .subscribeOn(Schedulers.boundedElastic())
                .timeout(JOURNAL_TIMEOUT)
                .flatMap(m -> Mono.from(HttpFront.json(res, HttpResponseStatus.OK, m)))
                .onErrorResume(e -> Mono.from(unavailable(res, e)));
    }

    // ------------------------------------------------------------------ /v1/divergences

    /**
     * A shadow node's divergences: where the real connector answered a hook otherwise than the
     * reducer, newest {@code limit} (default 100, at most {@value ShadowMonitor#KEPT}) oldest first,
     * with the counts by hook and the streams the node reads. {@code 404} on a node that is not a
     * shadow.
     */
    Publisher<Void> divergences(HttpServerRequest req, HttpServerResponse res) {
        ShadowMonitor shadow = node.shadow();
        if (shadow == null) {
            return HttpFront.json(res, HttpResponseStatus.NOT_FOUND, Map.of("error",
                    "this node is not a shadow node (kvledger node --engine shadow)"));
        }
        int limit = 100;
        List<String> l = new QueryStringDecoder(req.uri()).parameters().get("limit");
        if (l != null && !l.isEmpty()) {
            String v = l.get(l.size() - 1).strip();
            try {
                limit = Integer.parseInt(v);
            } catch (NumberFormatException e) {
                limit = -1;
            }
            if (limit < 0 || limit > ShadowMonitor.KEPT) {
                return HttpFront.json(res, HttpResponseStatus.BAD_REQUEST, Map.of("error",
                        "limit must be an integer from 0 to " + ShadowMonitor.KEPT + ", got '" + v + "'"));
            }
        }
        return HttpFront.json(res, HttpResponseStatus.OK, shadow.toJson(node.nodeId(), limit));
    }

    // ------------------------------------------------------------------ /v1/events

    Publisher<Void> events(HttpServerRequest req, HttpServerResponse res) {
        return EventStream.serve(List.of(events), res);
    }

    private static Publisher<Void> unavailable(HttpServerResponse res, Throwable e) {
        String why = e instanceof java.util.concurrent.TimeoutException ? "the node did not answer in time"
                : String.valueOf(e.getMessage());
        return HttpFront.json(res, HttpResponseStatus.SERVICE_UNAVAILABLE, Map.of("error", why));
    }
}
