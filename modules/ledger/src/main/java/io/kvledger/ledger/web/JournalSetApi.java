package io.kvledger.ledger.web;

import io.kvledger.ledger.diagnosis.Bounds;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.proxy.ProxyEvent;
import io.kvledger.ledger.replay.ProxyLedger;
import io.kvledger.ledger.replay.ConfigOverrides;
import io.kvledger.ledger.replay.Hangs;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import io.kvledger.ledger.replay.Mentions;
import io.kvledger.ledger.replay.Replayer;
import io.kvledger.ledger.replay.Timeline;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.QueryStringDecoder;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.netty.http.server.HttpServerRoutes;

/**
 * The web page's JSON over a fixed set of journals (the {@code serve} command, and
 * {@code kvledger proxy} over its journal and {@code --serve-journals}): the routes the live node
 * serves over its own journal, computed by replaying every journal given.
 * <ul>
 *   <li>{@code GET /v1/requests}: every (node, request) the journals admitted, newest first, with
 *       its last phase, transfer id, age at the end of the journals and the anomalies the reducer
 *       recorded for it, and every request a proxy journal among them routed, with a
 *       {@code PROXY_*} phase ({@link #requests()});</li>
 *   <li>{@code GET /v1/requests/{id}}: one request's timeline across every journal, its legs on
 *       other nodes linked by the transfer ids they carry (what {@code kvledger inspect} prints),
 *       plus the findings that name it ({@link #request(String)});</li>
 *   <li>{@code GET /v1/hangs?stuck_after=SECONDS}: what {@code kvledger hangs} finds
 *       ({@link #hangs(Bounds)}).</li>
 * </ul>
 * Each call replays the journals again, so journals still being written are read up to their
 * last entry. Journal reads run on Reactor's bounded-elastic scheduler, never a Netty thread.
 */
public final class JournalSetApi {

    private static final Duration TIMEOUT = Duration.ofSeconds(120);

    private final List<NodeJournal> journals;

    public JournalSetApi(List<NodeJournal> journals) {
        this.journals = List.copyOf(journals);
    }

    /** A query's outcome: an HTTP status and a JSON body. */
    public record Answer(int status, Map<String, Object> body) {}

    /**
     * Mounts the three routes on {@code routes}, each wrapped by {@code guard} (for example a
     * bearer-token check; {@code UnaryOperator.identity()} for none).
     */
    public void mount(HttpServerRoutes routes, UnaryOperator<WebPage.Handler> guard) {
        mount(routes, guard, () -> this);
    }

    /**
     * Mounts the three routes over journals found again on each request: {@code apis} is called
     * off the Netty threads (it may list directories), and the message of an
     * {@link IllegalStateException} it throws is the answer's error (503), for example "no journal
     * yet". The proxy's page uses it over journal directories that appear while it runs.
     */
    public static void mount(HttpServerRoutes routes, UnaryOperator<WebPage.Handler> guard,
                             Supplier<JournalSetApi> apis) {
        routes.get("/v1/requests", guard.apply((req, res) -> answer(res, () -> apis.get().requests())))
                .get("/v1/requests/{id}", guard.apply((req, res) -> {
                    String raw = req.param("id");
                    String id;
                    try {
                        id = raw == null ? "" : URLDecoder.decode(raw.replace("+", "%2B"), StandardCharsets.UTF_8);
                    } catch (IllegalArgumentException e) {
                        return WebPage.json(res, 400, error(400, "bad escape in the request id"));
                    }
                    return answer(res, () -> apis.get().request(id));
                }))
                .get("/v1/hangs", guard.apply((req, res) -> {
                    Bounds b;
                    try {
                        b = bounds(new QueryStringDecoder(req.uri()).parameters().get("stuck_after"));
                    } catch (IllegalArgumentException e) {
                        return WebPage.json(res, 400, error(400, e.getMessage()));
                    }
                    return answer(res, () -> new Answer(200, apis.get().hangs(b)));
                }));
    }

    /** An error answer's body, OpenAI's shape ({@link HttpHardening#errorObject}). */
    private static Map<String, Object> error(int status, String message) {
        return Map.of("error", HttpHardening.errorObject(status, message));
    }

    private interface Query {
        Answer run();
    }

    private static Publisher<Void> answer(reactor.netty.http.server.HttpServerResponse res, Query q) {
        return Mono.fromCallable(q::run)
                .subscribeOn(Schedulers.boundedElastic())
                .timeout(TIMEOUT)
                .flatMap(a -> Mono.from(WebPage.json(res, a.status(), a.body())))
                .onErrorResume(e -> Mono.from(WebPage.json(res, 503, error(503,
                        e instanceof java.util.concurrent.TimeoutException ? "the journals took too long to read"
                                : String.valueOf(e.getMessage())))));
    }

    /** The {@code stuck_after} parameter (seconds), or the default bounds. */
    static Bounds bounds(List<String> values) {
        if (values == null || values.isEmpty()) {
            return Bounds.defaults();
        }
        String v = values.get(values.size() - 1).strip();
        double secs;
        try {
            secs = Double.parseDouble(v);
        } catch (NumberFormatException e) {
            secs = Double.NaN;
        }
        if (!(secs > 0) || Double.isInfinite(secs)) {
            throw new IllegalArgumentException("stuck_after must be a positive number of seconds, got '" + v + "'");
        }
        return new Bounds((long) (secs * 1e9));
    }

    private Replayer open() {
        return Replayer.open(journals, ConfigOverrides.none()).recorded(false);
    }

    /** One (node, request) as the list shows it. */
    private static final class Row {
        final String node;
        final String requestId;
        RequestPhase phase;
        long admittedAtNs = Long.MIN_VALUE;
        long phaseSinceNs = Long.MIN_VALUE;
        String transferId;
        final TreeSet<String> anomalies = new TreeSet<>();
        /** A proxy's request: where it is ({@link #proxyPhase}), instead of a node phase. */
        String proxyPhase;

        Row(String node, String requestId) {
            this.node = node;
            this.requestId = requestId;
        }

        String phaseName() {
            return proxyPhase != null ? proxyPhase : phase.name();
        }

        boolean terminal() {
            return proxyPhase != null ? PROXY_TERMINAL.contains(proxyPhase) : phase.terminal();
        }
    }

    /** The phases a proxy's request row ends in: the client got its answer (or went away). */
    static final java.util.Set<String> PROXY_TERMINAL = java.util.Set.of("PROXY_ANSWERED", "PROXY_FAILED",
            "PROXY_CLIENT_GONE");

    /**
     * Where a proxy's request is, as the list shows it: {@code PROXY_ROUTED} (no leg sent yet),
     * {@code PROXY_PREFILL} (the prefill leg unanswered), {@code PROXY_DECODE} (the decode leg
     * unanswered), or once the client has its answer {@code PROXY_ANSWERED} (200),
     * {@code PROXY_CLIENT_GONE} (499) or {@code PROXY_FAILED}.
     */
    static String proxyPhase(ProxyLedger.Request q) {
        if (q.clientStatus() != null) {
            int s = q.clientStatus();
            return s == 200 ? "PROXY_ANSWERED" : s == 499 ? "PROXY_CLIENT_GONE" : "PROXY_FAILED";
        }
        ProxyLedger.Leg d = q.legs().get(ProxyEvent.DECODE);
        ProxyLedger.Leg p = q.legs().get(ProxyEvent.PREFILL);
        if (p != null && p.outcome() == null) {
            return "PROXY_PREFILL";
        }
        if (d != null && d.outcome() == null) {
            return "PROXY_DECODE";
        }
        return p == null && d == null ? "PROXY_ROUTED" : "PROXY_DECODE";
    }

    private static long proxyPhaseSince(ProxyLedger.Request q) {
        long since = q.routedAtNs();
        for (ProxyLedger.Leg l : q.legs().values()) {
            since = Math.max(since, l.outcome() == null ? l.sentAtNs() : l.endAtNs());
        }
        return since;
    }

    /** {@code GET /v1/requests}: every request of every journal, newest admission first. */
    public Answer requests() {
        LinkedHashMap<String, Row> rows = new LinkedHashMap<>();
        long[] last = {Long.MIN_VALUE};
        List<Object> nodes = new ArrayList<>();
        List<NodeJournal> proxyJournals;
        try (Replayer r = open()) {
            proxyJournals = r.proxyJournals();
            for (Replayer.Node n : r.nodes()) {
                nodes.add(TimelineJson.journal(n.name(), n.journal().name(), n.config()));
            }
            r.run((node, in, fx, recorded) -> {
                last[0] = Math.max(last[0], in.atNs());
                String name = node.name();
                Mentions.of(in.event(), new Mentions.Sink() {
                    @Override
                    public void requestId(String rid) {
                    }

                    @Override
                    public void transferId(String tid) {
                    }

                    @Override
                    public void bind(String rid, String tid) {
                        Row row = rows.get(name + "\u0000" + rid);
                        if (row != null && row.transferId == null) {
                            row.transferId = tid;
                        }
                    }
                });
                for (Effect e : fx) {
                    if (e instanceof Effect.PhaseChanged p && p.requestId() != null) {
                        Row row = rows.computeIfAbsent(name + "\u0000" + p.requestId(), k -> new Row(name, p.requestId()));
                        if (row.admittedAtNs == Long.MIN_VALUE) {
                            row.admittedAtNs = in.atNs();
                        }
                        row.phase = p.to();
                        row.phaseSinceNs = in.atNs();
                        Mentions.of(in.event(), new Mentions.Sink() {
                            @Override
                            public void requestId(String rid) {
                            }

                            @Override
                            public void transferId(String tid) {
                                if (row.transferId == null) {
                                    row.transferId = tid;
                                }
                            }
                        });
                    } else if (e instanceof Effect.Anomaly a && a.requestId() != null) {
                        Row row = rows.get(name + "\u0000" + a.requestId());
                        if (row != null) {
                            row.anomalies.add(a.kind().name());
                        }
                    }
                }
            });
        }
        // A proxy's journal is not replayed: its routed requests are rows of their own (ProxyLedger).
        ProxyLedger proxies = ProxyLedger.read(proxyJournals);
        for (NodeJournal j : proxyJournals) {
            try (JournalReader jr = j.open()) {
                LinkedHashMap<String, Object> n = new LinkedHashMap<>();
                n.put("node", jr.header().nodeId());
                n.put("journal", j.name());
                n.put("kind", "proxy");
                nodes.add(n);
            }
        }
        for (ProxyLedger.Request q : proxies.requests()) {
            Row row = rows.computeIfAbsent(q.proxy() + "\u0000" + q.requestId(), k -> new Row(q.proxy(), q.requestId()));
            row.proxyPhase = proxyPhase(q);
            row.admittedAtNs = q.routedAtNs();
            row.phaseSinceNs = proxyPhaseSince(q);
            row.transferId = q.transferId();
        }
        List<Row> list = new ArrayList<>(rows.values());
        list.sort((a, b) -> Long.compare(b.admittedAtNs, a.admittedAtNs));
        long now = Math.max(last[0], proxies.lastAtNs());
        LinkedHashMap<String, Object> byPhase = new LinkedHashMap<>();
        for (Row row : list) {
            byPhase.merge(row.phaseName(), 1L, (a, b) -> (Long) a + (Long) b);
        }
        List<Object> out = new ArrayList<>();
        for (Row row : list) {
            LinkedHashMap<String, Object> m = new LinkedHashMap<>();
            m.put("node", row.node);
            m.put("request_id", row.requestId);
            m.put("phase", row.phaseName());
            m.put("terminal", row.terminal());
            m.put("transfer_id", row.transferId);
            m.put("admitted_at_ns", row.admittedAtNs);
            m.put("age_s", (now - row.admittedAtNs) / 1e9);
            m.put("in_phase_s", (now - row.phaseSinceNs) / 1e9);
            m.put("anomalies", new ArrayList<Object>(row.anomalies));
            out.add(m);
        }
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        m.put("nodes", nodes);
        m.put("now_ns", list.isEmpty() ? null : now);
        m.put("matched", (long) out.size());
        m.put("returned", (long) out.size());
        m.put("truncated", false);
        m.put("by_phase", byPhase);
        m.put("requests", out);
        return new Answer(200, m);
    }

    /**
     * {@code GET /v1/requests/{id}}: the timeline of one request across every journal (404 when no
     * request matches, 409 with candidates when several do), with the findings that name it.
     */
    public Answer request(String query) {
        String q = query.strip();
        if (q.isEmpty()) {
            return new Answer(404, error(404, "give a request id"));
        }
        Timeline.Result r = Timeline.of(journals, q, Timeline.Kind.REQUEST, true, null);
        return switch (r) {
            case Timeline.NotFound nf -> new Answer(404, error(404, "no request id in " + journals.size()
                    + " journal(s) matches '" + q + "' (give a whole request id, a prefix, or the 32-hex uuid of a "
                    + "proxy request id)"));
            case Timeline.Ambiguous amb -> {
                LinkedHashMap<String, Object> m = new LinkedHashMap<>();
                m.put("error", HttpHardening.errorObject(409, "'" + q + "' matches " + amb.candidates().size()
                        + " requests; give more of the id"));
                m.put("candidates", new ArrayList<Object>(amb.candidates().subList(0, Math.min(10, amb.candidates().size()))));
                yield new Answer(409, m);
            }
            case Timeline.Found f -> {
                Map<String, Object> m = TimelineJson.timeline(f);
                Hangs.Result h;
                try (Replayer rp = Replayer.open(journals, ConfigOverrides.none())) {
                    h = Hangs.analyse(rp, Bounds.defaults());
                }
                m.put("findings", TimelineJson.findingsFor(h.findings(), new HashSet<>(f.requestIds()),
                        new LinkedHashSet<>(f.transferIds())));
                yield new Answer(200, m);
            }
        };
    }

    /** {@code GET /v1/hangs}: the hang detectors over every journal. */
    public Map<String, Object> hangs(Bounds bounds) {
        try (Replayer r = Replayer.open(journals, ConfigOverrides.none())) {
            return TimelineJson.hangs(Hangs.analyse(r, bounds));
        }
    }

    /** The journals' node names, for a banner. */
    List<String> nodeNames() {
        List<String> out = new ArrayList<>();
        try (Replayer r = open()) {
            for (Replayer.Node n : r.nodes()) {
                out.add(n.name());
            }
        }
        return out;
    }
}
