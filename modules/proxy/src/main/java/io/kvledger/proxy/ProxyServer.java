package io.kvledger.proxy;

import io.kvledger.core.config.TransferMode;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.moriio.ZmqAddress;
import io.kvledger.journal.json.Json;
import io.kvledger.journal.proxy.ProxyEvent;
import io.kvledger.core.model.ToyProxyParams;
import io.kvledger.ledger.text.Seconds;
import io.kvledger.ledger.web.HttpHardening;
import io.kvledger.wire.Registration;
import io.netty.handler.codec.http.HttpHeaderNames;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.reactivestreams.Publisher;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.publisher.ConnectableFlux;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.netty.DisposableServer;
import reactor.netty.http.client.HttpClient;
import reactor.netty.http.server.HttpServer;
import reactor.netty.http.server.HttpServerRequest;
import reactor.netty.http.server.HttpServerResponse;
import reactor.netty.http.server.HttpServerRoutes;
import reactor.netty.resources.ConnectionProvider;

/**
 * The proxy's HTTP side (Reactor Netty server and client).
 *
 * <p>{@code POST /v1/completions} and {@code POST /v1/chat/completions}: the client's request is
 * counted (the toy proxy's {@code request_nums}, from 1) and checked ({@link Checks#request}); the
 * count picks the prefill and the decode instance ({@link Instances#pick}: count modulo each
 * role's instances, in registration order), the request id
 * {@code ___prefill_addr_{P zmq_address}___decode_addr_{D zmq_address}_{uuid4 hex}} (both
 * addresses verbatim as registered) and the transfer id {@code tx-<uuid4>} are minted, and the two
 * legs go out as the toy proxy sends them (protocol 4.2), both with {@code X-Request-Id}: the
 * prefill leg with {@code stream: false}, {@code max_tokens: 1} (and
 * {@code max_completion_tokens: 1} when given), {@code ignore_eos} and no stop conditions, the
 * decode leg with one token less (never below 1). READ sends the decode leg once the prefill has
 * answered, with the prefill's {@code remote_engine_id}, {@code remote_block_ids} and
 * {@code transfer_id}; WRITE sends both at once and holds the decode's answer until the prefill's
 * handoff has been checked ({@link Checks#handoff}), cancelling the decode leg when it fails. A
 * prefill of DP size above 1 gets a rank ({@link Instances#pick}: its turns go round its ranks,
 * where the toy proxy's choice aliases with the instance choice) as {@code X-data-parallel-rank},
 * and the decode leg gets it as {@code remote_dp_rank}; a decode of DP size above 1 is given its
 * rank the same way (the toy proxy leaves it to the engine), so that the journal names it. The
 * decode's answer
 * is passed through with its status and content type, streamed (SSE) chunk by chunk.
 *
 * <p>Every error is OpenAI's body {@code {"error": {"message", "type", "param", "code"}}}
 * ({@link HttpHardening#error}): 400 for a request the checks refuse, 503 when no prefill or no
 * decode instance is registered, 502 when a leg fails or the handoff is invalid, 504 when a leg
 * does not answer in time; an engine's own refusal (a 4xx of the prefill, any error status of the
 * decode) keeps its status, and its body when it is OpenAI's already. A client that goes away
 * cancels both legs.
 *
 * <p>Other routes: {@code GET /health}, {@code GET /metrics} ({@link ProxyMetrics}),
 * {@code GET /v1/models} (the models a registered prefill and decode both serve, as vLLM lists
 * them), {@code GET /v1/instances}, {@code POST /start_profile} and {@code /stop_profile} (fanned out to
 * every instance, as the toy proxy does), and what the service adds (the web page, {@link ProxyWeb}).
 */
final class ProxyServer implements AutoCloseable {

    static final int MAX_BODY_BYTES = 16 << 20;
    private static final Pattern FINISH = Pattern.compile("\"finish_reason\"\\s*:\\s*\"([^\"]+)\"");

    private final ProxyOptions options;
    private final Instances instances;
    private final Consumer<ProxyEvent> journal;
    private final LongSupplier clock;
    private final ProxyMetrics metrics;
    private final ConnectionProvider pool;
    private final HttpClient client;
    private final DisposableServer server;
    /** The toy proxy's {@code request_nums}: completion requests taken, counted from 1 as they arrive. */
    private final AtomicLong requestNums = new AtomicLong();

    ProxyServer(ProxyOptions options, Instances instances, Consumer<ProxyEvent> journal, LongSupplier clock,
                ProxyMetrics metrics, Consumer<HttpServerRoutes> extra) {
        this.options = options;
        this.instances = instances;
        this.journal = journal;
        this.clock = clock;
        this.metrics = metrics;
        this.pool = ConnectionProvider.builder("kvledger-proxy").maxConnections(2048).pendingAcquireMaxCount(-1)
                .build();
        this.client = HttpClient.create(pool);
        try {
            this.server = HttpHardening.harden(HttpServer.create(), options.headerTimeout())
                    .host(options.host())
                    .port(options.httpPort())
                    .route(r -> {
                        r.post("/v1/completions", (req, res) -> handle(req, res, "/completions"))
                                .post("/v1/chat/completions", (req, res) -> handle(req, res, "/chat/completions"))
                                .get("/health", this::health)
                                .get("/metrics", (req, res) -> res.header(HttpHeaderNames.CONTENT_TYPE,
                                        "text/plain; version=0.0.4; charset=utf-8").sendString(Mono.just(metrics.scrape())))
                                .get("/v1/instances", this::listInstances)
                                .get("/v1/models", this::listModels)
                                .post("/start_profile", (req, res) -> profile(req, res, "start"))
                                .post("/stop_profile", (req, res) -> profile(req, res, "stop"));
                        extra.accept(r);
                        HttpHardening.fallback(r);
                    })
                    .bindNow(Duration.ofSeconds(10));
        } catch (RuntimeException e) {
            pool.dispose();
            throw new IllegalStateException("cannot bind the proxy's HTTP server on " + options.host() + ":"
                    + options.httpPort() + ": " + HttpHardening.bindFailure(e), e);
        }
    }

    int port() {
        return server.port();
    }

    // ------------------------------------------------------------------ small routes

    private Publisher<Void> health(HttpServerRequest req, HttpServerResponse res) {
        int p = instances.of(Registration.PRODUCER).size();
        int d = instances.of(Registration.CONSUMER).size();
        boolean ok = p > 0 && d > 0;
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("status", ok ? "ok" : "unavailable");
        m.put("mode", instances.mode() == null ? null : instances.mode().name());
        m.put("prefill_instances", (long) p);
        m.put("decode_instances", (long) d);
        if (!ok) {
            m.put("reason", noInstance(p == 0 ? Registration.PRODUCER : Registration.CONSUMER));
        }
        return json(res, ok ? 200 : 503, m);
    }

    private Publisher<Void> listInstances(HttpServerRequest req, HttpServerResponse res) {
        List<Object> list = new java.util.ArrayList<>();
        long now = clock.getAsLong();
        for (Instances.Instance i : instances.all()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("type", i.role());
            m.put("http_address", i.httpAddress());
            m.put("zmq_address", i.zmqAddress());
            m.put("dp_size", (long) i.dpSize());
            m.put("tp_size", (long) i.tpSize());
            m.put("transfer_mode", i.transferMode());
            m.put("last_seen_s_ago", (now - i.lastSeenNs()) / 1e9);
            list.add(m);
        }
        return json(res, 200, Map.of("instances", list));
    }

    /**
     * {@code GET /v1/models}, as vLLM and OpenAI answer it ({@code {"object": "list", "data": [{"id",
     * "object": "model", "created", "owned_by", ...}]}}), from the registered instances: each is asked
     * for its own list at once; a model is listed when a prefill and a decode that answered both
     * serve it (the proxy sends every request to one of each), with the decode's entry (vLLM's
     * {@code root} and {@code max_model_len} kept). An instance that does not answer is left out
     * with a warning; no prefill or no decode registered is a 503, none of one role answering a 502.
     */
    private Publisher<Void> listModels(HttpServerRequest req, HttpServerResponse res) {
        List<Instances.Instance> all = new java.util.ArrayList<>(instances.of(Registration.PRODUCER));
        all.addAll(instances.of(Registration.CONSUMER));
        if (instances.of(Registration.PRODUCER).isEmpty() || instances.of(Registration.CONSUMER).isEmpty()) {
            return error(res, 503, noInstance(instances.of(Registration.PRODUCER).isEmpty()
                    ? Registration.PRODUCER : Registration.CONSUMER));
        }
        List<Mono<InstanceModels>> calls = new java.util.ArrayList<>();
        for (Instances.Instance i : all) {
            calls.add(client.headers(h -> {
                        if (options.apiKey() != null) {
                            h.set(HttpHeaderNames.AUTHORIZATION, "Bearer " + options.apiKey());
                        }
                    }).get().uri(i.requestAddress() + "/models")
                    .responseSingle((r, buf) -> buf.asString(StandardCharsets.UTF_8).defaultIfEmpty("")
                            .map(text -> InstanceModels.of(i, r.status().code(), text)))
                    .timeout(MODELS_TIMEOUT)
                    .onErrorResume(e -> Mono.just(new InstanceModels(i, null, describe(e)))));
        }
        return Flux.mergeSequential(calls).collectList().flatMap(answers -> {
            Map<String, Map<String, Object>> prefill = new LinkedHashMap<>();
            Map<String, Map<String, Object>> decode = new LinkedHashMap<>();
            List<String> silent = new java.util.ArrayList<>();
            boolean prefillAnswered = false;
            boolean decodeAnswered = false;
            for (InstanceModels a : answers) {
                if (a.models() == null) {
                    silent.add(a.instance().httpAddress() + " (" + a.problem() + ")");
                    MODEL_WARNINGS.warn("models " + a.instance().httpAddress(), "proxy: GET /v1/models of "
                            + a.instance().httpAddress() + " failed, its models are left out: " + a.problem());
                    continue;
                }
                boolean isPrefill = Registration.PRODUCER.equals(a.instance().role());
                prefillAnswered |= isPrefill;
                decodeAnswered |= !isPrefill;
                for (Map<String, Object> m : a.models()) {
                    (isPrefill ? prefill : decode).putIfAbsent((String) m.get("id"), m);
                }
            }
            if (!prefillAnswered || !decodeAnswered) {
                return error(res, 502, "no " + (prefillAnswered ? "decode" : "prefill")
                        + " instance answered GET /v1/models: " + String.join("; ", silent));
            }
            List<Object> data = new java.util.ArrayList<>();
            long now = System.currentTimeMillis() / 1000;
            for (Map.Entry<String, Map<String, Object>> e : decode.entrySet()) {
                if (prefill.containsKey(e.getKey())) {
                    Map<String, Object> m = new LinkedHashMap<>(e.getValue());
                    m.put("object", "model");
                    m.putIfAbsent("created", now);
                    m.putIfAbsent("owned_by", "vllm");
                    data.add(m);
                }
            }
            Map<String, Object> body = new LinkedHashMap<>();
            body.put("object", "list");
            body.put("data", data);
            return json(res, 200, body);
        });
    }

    private static final Duration MODELS_TIMEOUT = Duration.ofSeconds(10);
    private static final io.kvledger.ledger.web.RateLimitedLog MODEL_WARNINGS =
            io.kvledger.ledger.web.RateLimitedLog.warnings();

    /** One instance's answer to {@code GET /v1/models}: its models, or why there are none. */
    private record InstanceModels(Instances.Instance instance, List<Map<String, Object>> models, String problem) {

        @SuppressWarnings("unchecked")
        static InstanceModels of(Instances.Instance i, int status, String text) {
            if (status != 200) {
                return new InstanceModels(i, null, "answered " + status + ": " + excerpt(text));
            }
            Object parsed;
            try {
                parsed = Json.parse(text);
            } catch (RuntimeException e) {
                return new InstanceModels(i, null, "the answer is not JSON: " + excerpt(text));
            }
            if (!(parsed instanceof Map<?, ?> m) || !(m.get("data") instanceof List<?> data)) {
                return new InstanceModels(i, null, "the answer has no \"data\" list: " + excerpt(text));
            }
            List<Map<String, Object>> out = new java.util.ArrayList<>();
            for (Object o : data) {
                if (o instanceof Map<?, ?> one && one.get("id") instanceof String) {
                    out.add((Map<String, Object>) one);
                }
            }
            return new InstanceModels(i, out, null);
        }
    }

    private static Mono<Void> json(HttpServerResponse res, int status, Object body) {
        return res.status(status).header(HttpHeaderNames.CONTENT_TYPE, "application/json")
                .sendString(Mono.just(Json.write(body))).then();
    }

    private static String noInstance(String role) {
        return Registration.PRODUCER.equals(role)
                ? "no prefill (kv_producer) instance is registered with the proxy"
                : "no decode (kv_consumer) instance is registered with the proxy";
    }

    /**
     * {@code POST /start_profile} and {@code /stop_profile}, as the toy proxy serves them: the
     * body goes to {@code http://{http_address}/{cmd}_profile} of every registered instance
     * (prefills, then decodes), at once; the answer is the first instance's when every one said
     * yes. Unlike the toy proxy: no instance is a 503 (it answers 500), an engine's refusal or
     * silence a 502 naming it (500 there), all as JSON errors.
     */
    private Publisher<Void> profile(HttpServerRequest req, HttpServerResponse res, String cmd) {
        List<Instances.Instance> all = new java.util.ArrayList<>(instances.of(Registration.PRODUCER));
        all.addAll(instances.of(Registration.CONSUMER));
        return HttpHardening.body(req, res, MAX_BODY_BYTES, HttpHardening.bodyTimeout(options.headerTimeout()))
                .onErrorResume(HttpHardening.BodyRefused.class, e -> Mono.from(error(res, e.status(), e.getMessage()))
                        .then(Mono.empty()))
                .flatMap(body -> {
            if (all.isEmpty()) {
                return error(res, 503, "no prefill or decode instance is registered with the proxy");
            }
            List<Mono<Object[]>> calls = new java.util.ArrayList<>();
            for (Instances.Instance i : all) {
                String url = "http://" + i.httpAddress() + "/" + cmd + "_profile";
                HttpClient c = client.headers(h -> {
                    if (body.length > 0) {
                        h.set(HttpHeaderNames.CONTENT_TYPE, "application/json");
                    }
                    if (options.apiKey() != null) {
                        h.set(HttpHeaderNames.AUTHORIZATION, "Bearer " + options.apiKey());
                    }
                });
                calls.add(c.headers(h -> h.setInt(HttpHeaderNames.CONTENT_LENGTH, body.length)).post().uri(url)
                        .send(sized(body))
                        .responseSingle((r, buf) -> buf.asByteArray().defaultIfEmpty(new byte[0])
                                .map(b -> new Object[] {r.status().code(),
                                        r.responseHeaders().get(HttpHeaderNames.CONTENT_TYPE), b, url}))
                        .timeout(Duration.ofSeconds(60))
                        .onErrorResume(e -> Mono.just(new Object[] {-1, null, describe(e).getBytes(
                                StandardCharsets.UTF_8), url})));
            }
            return Flux.mergeSequential(calls).collectList().flatMap(answers -> {
                for (Object[] a : answers) {
                    int status = (Integer) a[0];
                    if (status < 200 || status >= 400) {
                        String text = new String((byte[]) a[2], StandardCharsets.UTF_8);
                        return error(res, 502, cmd + "_profile failed at " + a[3] + ": "
                                + (status < 0 ? text : status + " " + excerpt(text)));
                    }
                }
                Object[] first = answers.getFirst();
                res.status((Integer) first[0]);
                if (first[1] != null) {
                    res.header(HttpHeaderNames.CONTENT_TYPE, (String) first[1]);
                }
                return res.sendByteArray(Mono.just((byte[]) first[2])).then();
            });
        });
    }

    // ------------------------------------------------------------------ completions

    /** One client request in flight. */
    private final class Flight {
        final String rid;
        final String tid;
        final long startNs;
        final AtomicBoolean completed = new AtomicBoolean();
        final Disposable.Composite legs = Disposables.composite();
        volatile String cancelReason = "client disconnected";
        volatile Runnable onComplete;

        Flight(String rid, String tid, long startNs) {
            this.rid = rid;
            this.tid = tid;
            this.startNs = startNs;
        }

        /** The client got its answer (or gave up): journaled once. */
        void complete(int status, String outcome) {
            if (completed.compareAndSet(false, true)) {
                Runnable r = onComplete;
                if (r != null) {
                    r.run();
                }
                journal.accept(new ProxyEvent.RequestCompleted(clock.getAsLong(), rid, tid, status,
                        clock.getAsLong() - startNs));
                metrics.request(outcome, status);
            }
        }

        /** The client went away before its answer: cancel what is still running. */
        void clientGone() {
            if (!completed.get()) {
                cancelReason = "client disconnected";
                legs.dispose();
                complete(499, "client_gone");
            }
        }
    }

    /** One leg's bookkeeping: it ends (answered, failed or cancelled) exactly once. */
    private final class LegTrack {
        final Flight flight;
        final String leg;
        final long startNs = clock.getAsLong();
        final AtomicBoolean ended = new AtomicBoolean();
        volatile int status = -1;
        volatile String finish;

        LegTrack(Flight flight, String leg) {
            this.flight = flight;
            this.leg = leg;
        }

        long elapsed() {
            return clock.getAsLong() - startNs;
        }

        void answered(KvParams returned) {
            if (ended.compareAndSet(false, true)) {
                long el = elapsed();
                journal.accept(new ProxyEvent.LegAnswered(clock.getAsLong(), flight.rid, flight.tid, leg, status, el,
                        finish, returned));
                metrics.leg(leg, "answered", el);
            }
        }

        void failed(Integer httpStatus, String reason) {
            if (ended.compareAndSet(false, true)) {
                long el = elapsed();
                journal.accept(new ProxyEvent.LegFailed(clock.getAsLong(), flight.rid, flight.tid, leg, httpStatus, el,
                        reason));
                metrics.leg(leg, "failed", el);
            }
        }

        void cancelled() {
            if (ended.compareAndSet(false, true)) {
                long el = elapsed();
                journal.accept(new ProxyEvent.LegCancelled(clock.getAsLong(), flight.rid, flight.tid, leg, el,
                        flight.cancelReason));
                metrics.leg(leg, "cancelled", el);
            }
        }
    }

    /** The prefill leg's outcome: its returned params when the handoff is good, else the client's error. */
    private record Prefill(Map<String, Object> params, Failure failure) {}

    /** An error for the client. */
    private record Failure(int status, String message) {}

    /** The decode answer's status line and content type (the first item of a decode stream). */
    private record Head(int status, String contentType) {}

    private Publisher<Void> handle(HttpServerRequest req, HttpServerResponse res, String api) {
        long t0 = clock.getAsLong();
        long n = requestNums.incrementAndGet();
        String clientRid = req.requestHeaders().get("X-Request-Id");
        return HttpHardening.body(req, res, MAX_BODY_BYTES, HttpHardening.bodyTimeout(options.headerTimeout()))
                .map(b -> new String(b, StandardCharsets.UTF_8))
                .flatMap(text -> route(res, api, clientRid, text, t0, n))
                .onErrorResume(HttpHardening.BodyRefused.class, e -> reject(res, api, clientRid, e.status(),
                        e.getMessage()));
    }

    private Mono<Void> reject(HttpServerResponse res, String api, String clientRid, int status, String reason) {
        journal.accept(new ProxyEvent.RequestRejected(clock.getAsLong(), "/v1" + api, clientRid, status, reason));
        metrics.request("rejected", status);
        return error(res, status, reason);
    }

    private static Mono<Void> error(HttpServerResponse res, int status, String message) {
        return Mono.from(HttpHardening.error(res, status, message));
    }

    @SuppressWarnings("unchecked")
    private Mono<Void> route(HttpServerResponse res, String api, String clientRid, String text, long t0, long count) {
        Map<String, Object> body;
        try {
            if (!(Json.parse(text) instanceof Map<?, ?> m)) {
                return reject(res, api, clientRid, 400, "the body must be a JSON object");
            }
            body = (Map<String, Object>) m;
        } catch (RuntimeException e) {
            return reject(res, api, clientRid, 400, "the body is not JSON: " + e.getMessage());
        }
        String problem = Checks.request(body, clientRid, api.startsWith("/chat"));
        if (problem != null) {
            return reject(res, api, clientRid, 400, problem);
        }
        Instances.Pair pair = instances.pick(count);
        if (pair == null) {
            return reject(res, api, clientRid, 503, noInstance(instances.of(Registration.PRODUCER).isEmpty()
                    ? Registration.PRODUCER : Registration.CONSUMER));
        }
        Instances.Instance p = pair.prefill();
        Instances.Instance d = pair.decode();
        TransferMode mode = instances.mode();
        String rid = "___prefill_addr_" + embedded(p) + "___decode_addr_" + embedded(d) + "_"
                + UUID.randomUUID().toString().replace("-", "");
        String tid = "tx-" + UUID.randomUUID();
        // the toy proxy leaves the decode's rank to its engine; this proxy says it, so that the
        // rank each leg runs on is journaled
        Integer pDp = pair.prefillDpRank();
        Integer dDp = pair.decodeDpRank();
        boolean stream = Boolean.TRUE.equals(body.get("stream"));
        journal.accept(new ProxyEvent.RequestRouted(t0, rid, tid, "/v1" + api, stream, clientRid, mode.name(),
                p.httpAddress(), pDp, d.httpAddress(), dDp));
        Flight f = new Flight(rid, tid, t0);
        // a client connection closed before the answer: cancel the legs (the listener is removed
        // when the request completes, so a long keep-alive connection does not collect them)
        res.withConnection(c -> {
            io.netty.util.concurrent.GenericFutureListener<io.netty.util.concurrent.Future<? super Void>> gone =
                    x -> f.clientGone();
            c.channel().closeFuture().addListener(gone);
            f.onComplete = () -> c.channel().closeFuture().removeListener(gone);
        });

        // keys in the toy proxy's order (a new key goes last): the params, then stream and the caps
        Map<String, Object> pb = new LinkedHashMap<>(body);
        pb.put("kv_transfer_params", traced(ToyProxyParams.prefill(d.dpSize(), d.tpSize(), tid), tid).asMap());
        pb.put("stream", false);
        pb.put("max_tokens", 1L);
        if (pb.containsKey("max_completion_tokens")) {
            pb.put("max_completion_tokens", 1L);
        }
        pb.remove("stream_options");
        pb.put("ignore_eos", true);
        pb.remove("stop");
        pb.remove("stop_token_ids");
        pb.remove("min_tokens");

        Map<String, Object> db = new LinkedHashMap<>(body);
        db.put("kv_transfer_params", Map.of()); // its place in the toy proxy's key order; filled below
        for (String k : List.of("max_tokens", "max_completion_tokens")) {
            if (db.get(k) instanceof Long n) {
                db.put(k, Math.max(1L, n - 1));
            }
        }

        Sinks.One<Prefill> prefillDone = Sinks.one();
        f.legs.add(prefill(f, p, pDp, api, mode, pb).subscribe(prefillDone::tryEmitValue));
        Flux<Object> out;
        if (mode == TransferMode.WRITE) {
            db.put("kv_transfer_params", traced(decodeParams(p, pDp, tid, null), tid).asMap());
            ConnectableFlux<Object> dc = decode(f, d, dDp, api, db).replay();
            Disposable conn = dc.connect();
            f.legs.add(conn);
            out = prefillDone.asMono().flatMapMany(pr -> {
                if (pr.failure() == null) {
                    return dc;
                }
                f.cancelReason = "prefill leg failed: " + pr.failure().message();
                conn.dispose();
                return Flux.just(pr.failure());
            });
        } else {
            out = prefillDone.asMono().flatMapMany(pr -> {
                if (pr.failure() != null) {
                    return Flux.just(pr.failure());
                }
                db.put("kv_transfer_params", traced(decodeParams(p, pDp, tid, pr.params()), tid).asMap());
                ConnectableFlux<Object> dc = decode(f, d, dDp, api, db).replay();
                f.legs.add(dc.connect());
                return dc;
            });
        }
        return out.switchOnFirst((sig, flux) -> {
            if (sig.hasValue() && sig.get() instanceof Failure fail) {
                f.complete(fail.status(), "failed");
                return error(res, fail.status(), fail.message());
            }
            if (sig.hasValue() && sig.get() instanceof Head h && h.status() >= 400) {
                // the decode's refusal: passed on with its status, in the OpenAI error body (the
                // engine's own when it gave one, else one that quotes it)
                return flux.skip(1).filter(o -> o instanceof byte[]).map(o -> (byte[]) o)
                        .reduce(new byte[0], ProxyServer::concat)
                        .onErrorResume(e -> Mono.just(new byte[0]))
                        .flatMap(b -> {
                            String answer = new String(b, StandardCharsets.UTF_8);
                            Mono<Void> sent = isOpenAiError(answer)
                                    ? res.status(h.status()).header(HttpHeaderNames.CONTENT_TYPE, "application/json")
                                            .sendByteArray(Mono.just(b)).then()
                                    : error(res, h.status(), "decode leg to " + d.httpAddress() + " answered "
                                            + h.status() + ": " + engineMessage(answer));
                            return sent.doOnSuccess(v -> f.complete(h.status(), "failed"));
                        });
            }
            if (sig.hasValue() && sig.get() instanceof Head h) {
                res.status(h.status());
                if (h.contentType() != null) {
                    res.header(HttpHeaderNames.CONTENT_TYPE, h.contentType());
                }
                AtomicBoolean broken = new AtomicBoolean();
                boolean sse = h.contentType() != null && h.contentType().startsWith("text/event-stream");
                Flux<byte[]> answer = flux.skip(1).filter(o -> o instanceof byte[]).map(o -> (byte[]) o)
                        .onErrorResume(e -> {
                            // the decode broke off after its status went out: the leg is journaled
                            // as failed; the client must see the cut, never an answer that looks whole
                            broken.set(true);
                            if (sse) {
                                return Flux.just(("data: " + HttpHardening.errorJson(502, "decode leg to "
                                        + d.httpAddress() + " broke off mid-stream: " + describe(e)) + "\n\n"
                                        + "data: [DONE]\n\n").getBytes(StandardCharsets.UTF_8));
                            }
                            // not a stream a client can be told in: close the connection, so that the
                            // body is seen cut short (no last chunk), without Reactor's error log
                            res.withConnection(c -> c.channel().close());
                            return Flux.empty();
                        });
                return res.sendByteArray(answer).then()
                        .onErrorResume(e -> {
                            f.clientGone(); // the client's connection closed under the answer
                            return Mono.empty();
                        })
                        .doOnSuccess(v -> f.complete(h.status(), h.status() == 200 && !broken.get() ? "ok" : "failed"));
            }
            if (sig.hasError()) {
                f.complete(500, "failed");
                return error(res, 500, "proxy error: " + sig.getThrowable());
            }
            return Mono.<Void>empty();
        }).doOnCancel(f::clientGone).then();
    }

    /**
     * With {@code --otlp}, the params with a {@code traceparent} naming the request's span this
     * proxy sends (last, after the toy proxy's keys): the nodes then send no root of their own.
     */
    private KvParams traced(KvParams params, String tid) {
        if (options.otlp() != null) {
            params.put("traceparent", io.kvledger.ledger.otlp.LegSpans.rootTraceparent(tid));
        }
        return params;
    }

    /** The decode leg's params (toy proxy 4.2), with the selected prefill rank and, in READ, the handoff. */
    private static KvParams decodeParams(Instances.Instance p, Integer pDp, String tid, Map<String, Object> returned) {
        KvParams params = ToyProxyParams.decode(p.dpSize(), p.tpSize(), tid, returned);
        if (pDp != null) {
            params.put("remote_dp_rank", (long) pDp);
        }
        return params;
    }

    /**
     * The {@code zmq_address} an instance's part of a request id carries: as it registered it (the
     * toy proxy embeds it verbatim), or with {@code --notify-port-shift} its notify port moved.
     */
    private String embedded(Instances.Instance i) {
        int s = options.notifyPortShift();
        // only the notify port: a tap forwards notifies, never handshakes
        return s == 0 ? i.zmqAddress()
                : new ZmqAddress(i.zmq().host(), i.zmq().handshakePort(), i.zmq().notifyPort() + s).format();
    }

    /**
     * A request body sent whole with its {@code Content-Length} (set by the caller), as the toy
     * proxy's aiohttp sends JSON: not chunked, which some servers do not read.
     */
    private static Mono<io.netty.buffer.ByteBuf> sized(byte[] body) {
        return Mono.fromSupplier(() -> io.netty.buffer.Unpooled.wrappedBuffer(body));
    }

    private HttpClient legClient(Flight f, Integer dp) {
        return client.headers(h -> {
            h.set(HttpHeaderNames.CONTENT_TYPE, "application/json");
            h.set("X-Request-Id", f.rid);
            if (dp != null) {
                h.set("X-data-parallel-rank", Integer.toString(dp));
            }
            if (options.apiKey() != null) {
                h.set(HttpHeaderNames.AUTHORIZATION, "Bearer " + options.apiKey());
            }
        });
    }

    private Mono<Prefill> prefill(Flight f, Instances.Instance p, Integer dp, String api, TransferMode mode,
                                  Map<String, Object> body) {
        LegTrack t = new LegTrack(f, ProxyEvent.PREFILL);
        String json = Json.write(body);
        journal.accept(new ProxyEvent.LegSent(t.startNs, f.rid, f.tid, t.leg, p.httpAddress(),
                KvParams.of((Map<String, ?>) body.get("kv_transfer_params"))));
        Duration timeout = options.prefillTimeout();
        byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
        return legClient(f, dp).headers(h -> h.setInt(HttpHeaderNames.CONTENT_LENGTH, bytes.length))
                .post().uri(p.requestAddress() + api)
                .send(sized(bytes))
                .responseSingle((resp, buf) -> {
                    t.status = resp.status().code();
                    return buf.asString(StandardCharsets.UTF_8).defaultIfEmpty("");
                })
                .timeout(timeout)
                .map(text -> evaluate(t, mode, text))
                .onErrorResume(e -> {
                    boolean late = e instanceof TimeoutException;
                    String why = late ? "no answer within " + seconds(timeout) : "did not answer: " + describe(e);
                    t.failed(t.status < 0 ? null : t.status, why);
                    return Mono.just(new Prefill(null, new Failure(late ? 504 : 502,
                            "prefill leg to " + p.httpAddress() + " " + why)));
                })
                .doOnCancel(t::cancelled);
    }

    @SuppressWarnings("unchecked")
    private Prefill evaluate(LegTrack t, TransferMode mode, String text) {
        String where = "prefill leg (" + t.flight.rid.substring(t.flight.rid.length() - 32) + ")";
        Object parsed;
        try {
            parsed = Json.parse(text);
        } catch (RuntimeException e) {
            parsed = null;
        }
        if (t.status != 200) {
            t.failed(t.status, "answered " + t.status + ": " + excerpt(text));
            // the engine refused the request itself (too long a prompt, an unknown model): the
            // client's error, with its status, so that a client does not retry it as a server's
            boolean clients = t.status >= 400 && t.status < 500 && t.status != 408;
            return new Prefill(null, new Failure(clients ? t.status : 502,
                    where + " answered " + t.status + ": " + engineMessage(text)));
        }
        if (!(parsed instanceof Map<?, ?> m)) {
            t.failed(t.status, "the answer is not a JSON object: " + excerpt(text));
            return new Prefill(null, new Failure(502, where + " answered with a body that is not a JSON object"));
        }
        Matcher fm = FINISH.matcher(text);
        t.finish = fm.find() ? fm.group(1) : null;
        Object params = m.get("kv_transfer_params");
        String bad = Checks.handoff(params, t.flight.tid, mode);
        if (bad != null) {
            t.failed(t.status, "invalid handoff: " + bad);
            metrics.handoffRejected(bad);
            return new Prefill(null, new Failure(502, where + " returned an invalid handoff: " + bad));
        }
        Map<String, Object> p = (Map<String, Object>) params;
        t.answered(KvParams.of(p));
        return new Prefill(p, null);
    }

    @SuppressWarnings("unchecked")
    private Flux<Object> decode(Flight f, Instances.Instance d, Integer dp, String api, Map<String, Object> body) {
        LegTrack t = new LegTrack(f, ProxyEvent.DECODE);
        String json = Json.write(body);
        journal.accept(new ProxyEvent.LegSent(t.startNs, f.rid, f.tid, t.leg, d.httpAddress(),
                KvParams.of((Map<String, ?>) body.get("kv_transfer_params"))));
        Duration timeout = options.decodeTimeout();
        AtomicBoolean headSeen = new AtomicBoolean();
        byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
        return legClient(f, dp).headers(h -> h.setInt(HttpHeaderNames.CONTENT_LENGTH, bytes.length))
                .post().uri(d.requestAddress() + api)
                .send(sized(bytes))
                .response((resp, content) -> {
                    t.status = resp.status().code();
                    headSeen.set(true);
                    return Flux.<Object>just(new Head(t.status, resp.responseHeaders().get(HttpHeaderNames.CONTENT_TYPE)))
                            .concatWith(content.asByteArray());
                })
                .timeout(timeout)
                .doOnNext(o -> {
                    if (o instanceof byte[] b) {
                        Matcher fm = FINISH.matcher(new String(b, StandardCharsets.UTF_8));
                        while (fm.find()) {
                            t.finish = fm.group(1);
                        }
                    }
                })
                .doOnComplete(() -> {
                    if (t.status == 200) {
                        t.answered(null);
                    } else {
                        t.failed(t.status, "answered " + t.status);
                    }
                })
                .onErrorResume(e -> {
                    boolean late = e instanceof TimeoutException;
                    String why = late ? (headSeen.get() ? "no chunk" : "no answer") + " within " + seconds(timeout)
                            : "failed: " + describe(e);
                    t.failed(t.status < 0 ? null : t.status, why);
                    return headSeen.get() ? Flux.error(e)
                            : Flux.just(new Failure(late ? 504 : 502, "decode leg to " + d.httpAddress() + " " + why));
                })
                .doOnCancel(t::cancelled);
    }

    /** A leg's timeout as its failure reason names it: whole milliseconds, "5.0 s", "0.25 s". */
    private static String seconds(Duration d) {
        return Seconds.exact(d.truncatedTo(ChronoUnit.MILLIS), 1);
    }

    private static String describe(Throwable e) {
        String m = e.getMessage();
        return e.getClass().getSimpleName() + (m == null ? "" : ": " + m);
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    /** An OpenAI (and vLLM) error body: {@code {"error": {"message": "...", ...}}}. */
    private static boolean isOpenAiError(String text) {
        try {
            return Json.parse(text) instanceof Map<?, ?> m && m.get("error") instanceof Map<?, ?> e
                    && e.get("message") instanceof String;
        } catch (RuntimeException e) {
            return false;
        }
    }

    /** What an engine's error answer says: its error's message, else an excerpt of the body. */
    private static String engineMessage(String text) {
        try {
            if (Json.parse(text) instanceof Map<?, ?> m) {
                Object e = m.get("error");
                if (e instanceof Map<?, ?> em && em.get("message") instanceof String msg) {
                    return excerpt(msg);
                }
                if (e instanceof String msg) {
                    return excerpt(msg);
                }
            }
        } catch (RuntimeException e) {
            // not JSON: quoted as it is
        }
        return text.isBlank() ? "(no body)" : excerpt(text);
    }

    private static String excerpt(String s) {
        String one = s.replace('\n', ' ').strip();
        return one.length() > 200 ? one.substring(0, 197) + "..." : one;
    }

    @Override
    public void close() {
        server.disposeNow(Duration.ofSeconds(5));
        pool.disposeLater().block(Duration.ofSeconds(5));
    }
}
