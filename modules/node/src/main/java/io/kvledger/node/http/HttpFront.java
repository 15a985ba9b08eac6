package io.kvledger.node.http;

import io.kvledger.core.model.KvParams;
import io.kvledger.journal.json.Json;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.node.data.DataPlane;
import io.kvledger.node.engine.Completion;
import io.kvledger.node.engine.SimulatedEngine;
import io.kvledger.node.loop.Inbox;
import io.kvledger.node.loop.NodeLoop;
import io.kvledger.node.metrics.NodeMetrics;
import io.kvledger.node.shadow.ShadowMonitor;
import io.kvledger.ledger.web.WebPage;
import io.kvledger.ledger.web.HttpHardening;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.LongSupplier;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;
import reactor.netty.http.server.HttpServerRequest;
import reactor.netty.http.server.HttpServerResponse;

/**
 * The node's HTTP server (Reactor-Netty), loopback by default:
 * <ul>
 *   <li>{@code GET /healthz}: 200 while the loop runs, 503 otherwise (never needs the token);</li>
 *   <li>{@code GET /v1/status}: the node's counters as JSON;</li>
 *   <li>{@code POST /v1/completions} and {@code POST /v1/chat/completions} (simulated engine
 *       only): an OpenAI-style completion whose body gives {@code prompt_tokens} (or a
 *       {@code prompt} string, one token per whitespace-separated word, or token ids; for chat the
 *       {@code messages}' words), {@code max_tokens} and {@code kv_transfer_params}, and with
 *       {@code "stream": true} is answered as server-sent events ending in {@code [DONE]}; the
 *       {@code X-Request-Id} header names the request as the toy proxy does, and the engine
 *       runs it as vLLM's OpenAI server would, under {@code cmpl-<X-Request-Id>-0-<8 hex>}.
 *       The response carries the {@code kv_transfer_params} {@code request_finished} returned.</li>
 *   <li>{@code GET /metrics}, {@code GET /v1/requests}, {@code GET /v1/requests/{id}},
 *       {@code GET /v1/hangs}, {@code GET /v1/events}: the admin API ({@link AdminRoutes}; the
 *       routes are documented in docs/http-api.md).</li>
 *   <li>{@code GET /} and {@code GET /ui/}: the web timeline page ({@link WebPage}), over the
 *       routes above; its assets hold no data and need no token.</li>
 * </ul>
 * Bodies over {@value #MAX_BODY_BYTES} bytes are refused (413); with a bearer token, every route
 * but {@code /healthz} needs {@code Authorization: Bearer <token>} (401). Handlers never block a
 * Netty thread: state reads go through the loop's inbox, completions through futures.
 */
public final class HttpFront implements AutoCloseable {

    static final int MAX_BODY_BYTES = 1 << 20;
    private static final Duration COMPLETION_TIMEOUT = Duration.ofMinutes(5);
    /** How long {@code /v1/status} and {@code /metrics} wait for the loop's fresh snapshot. */
    static final Duration STATUS_TIMEOUT = Duration.ofSeconds(5);

    /**
     * What the server serves from: the node's identity and journal, its loop (the status snapshot,
     * state queries through the inbox), clock and data plane (the metrics), and the parts that
     * answer routes of their own.
     *
     * @param engineName the node's {@code --engine}, for the answer of a node without a built-in engine
     * @param engine     the built-in simulated engine, or {@code null}
     * @param shadow     a shadow node's monitor, or {@code null}
     */
    public record Sources(String nodeId, NodeConfig config, Path journalDir, String engineName, NodeLoop loop,
                          Inbox inbox, LongSupplier clock, DataPlane dataPlane, SimulatedEngine engine,
                          ShadowMonitor shadow) {}

    private final Sources node;
    private final String token;
    private final NodeMetrics metrics;
    private final AdminRoutes admin;
    private final DisposableServer server;
    private final Duration headerTimeout;

    private HttpFront(Sources node, String host, int port, String token, Duration headerTimeout) {
        this.node = node;
        this.token = token;
        this.headerTimeout = headerTimeout;
        this.metrics = NodeMetrics.attach(node.loop(), node.inbox(), node.clock(), node.dataPlane());
        this.admin = new AdminRoutes(node, metrics);
        this.server = HttpHardening.harden(HttpServer.create(), headerTimeout)
                .host(host)
                .port(port)
                .route(r -> HttpHardening.fallback(WebPage.mount(r
                        .get("/healthz", this::healthz)
                        .get("/v1/status", guarded(this::status))
                        .post("/v1/completions", guarded((req, res) -> completions(req, res, false)))
                        .post("/v1/chat/completions", guarded((req, res) -> completions(req, res, true)))
                        .get("/metrics", guarded(admin::metrics))
                        .get("/v1/requests", guarded(admin::requests))
                        .get("/v1/requests/{id}", guarded(admin::request))
                        .get("/v1/hangs", guarded(admin::hangs))
                        .get("/v1/divergences", guarded(admin::divergences))
                        .get("/v1/events", guarded(admin::events)))))
                .bindNow(Duration.ofSeconds(10));
    }

    /**
     * Binds the server.
     *
     * @throws IllegalStateException when the address cannot be bound
     */
    public static HttpFront start(Sources node, String host, int port, String token) {
        return start(node, host, port, token, HttpHardening.HEADER_TIMEOUT);
    }

    /**
     * Binds the server with its own header timeout ({@link HttpHardening}).
     *
     * @throws IllegalStateException when the address cannot be bound
     */
    public static HttpFront start(Sources node, String host, int port, String token, Duration headerTimeout) {
        try {
            return new HttpFront(node, host, port, token, headerTimeout);
        } catch (RuntimeException e) {
            throw new IllegalStateException("cannot bind the HTTP server at " + host + ":" + port + ": "
                    + HttpHardening.bindFailure(e), e);
        }
    }

    public int port() {
        return server.port();
    }

    public String host() {
        return server.host();
    }

    /** The node's metrics (registered with the loop when the server started). */
    public NodeMetrics metrics() {
        return metrics;
    }

    @Override
    public void close() {
        // End the event streams first: an open stream would hold the server's graceful shutdown.
        try {
            admin.close();
        } finally {
            server.disposeNow(Duration.ofSeconds(5));
        }
    }

    private interface Handler {
        Publisher<Void> handle(HttpServerRequest req, HttpServerResponse res);
    }

    private java.util.function.BiFunction<HttpServerRequest, HttpServerResponse, Publisher<Void>> guarded(Handler h) {
        return (req, res) -> {
            if (token != null && !("Bearer " + token).equals(req.requestHeaders().get("Authorization"))) {
                return json(res, HttpResponseStatus.UNAUTHORIZED, Map.of("error", "missing or wrong bearer token"));
            }
            if (req.method() == io.netty.handler.codec.http.HttpMethod.GET) {
                Publisher<Void> refused = AdminRoutes.tooLarge(req, res);
                if (refused != null) {
                    return refused;
                }
            }
            return h.handle(req, res);
        };
    }

    static Publisher<Void> json(HttpServerResponse res, HttpResponseStatus status, Object body) {
        return res.status(status).header("Content-Type", "application/json")
                .sendString(Mono.just(Json.write(errorShaped(status, body)) + "\n"), StandardCharsets.UTF_8);
    }

    /**
     * Every error the node answers has the one shape of every kvledger server (OpenAI's, as the
     * proxy's and {@code serve}'s): a body whose {@code "error"} is a message becomes
     * {@code {"error": {"message", "type", "param", "code"}}}, its other fields kept (the
     * {@code candidates} of an ambiguous request id).
     */
    static Object errorShaped(HttpResponseStatus status, Object body) {
        if (body instanceof Map<?, ?> m && m.get("error") instanceof String message) {
            Map<Object, Object> out = new LinkedHashMap<>(m);
            out.put("error", HttpHardening.errorObject(status.code(), message));
            return out;
        }
        return body;
    }

    private Publisher<Void> healthz(HttpServerRequest req, HttpServerResponse res) {
        boolean up = node.loop().isRunning();
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("status", up ? "ok" : "stopped");
        body.put("node", node.nodeId());
        return json(res, up ? HttpResponseStatus.OK : HttpResponseStatus.SERVICE_UNAVAILABLE, body);
    }

    private Publisher<Void> status(HttpServerRequest req, HttpServerResponse res) {
        // the loop answers on its thread; this waits on Reactor's bounded-elastic scheduler, not Netty's
        return Mono.fromCallable(() -> node.loop().freshStatus(STATUS_TIMEOUT))
                .subscribeOn(reactor.core.scheduler.Schedulers.boundedElastic())
                .flatMap(s -> Mono.from(json(res, HttpResponseStatus.OK, s.toJson())));
    }

    /**
     * Reads a body of at most {@link #MAX_BODY_BYTES} within the body timeout; errors with
     * {@link HttpHardening.BodyRefused} (413, 408, 400) otherwise.
     */
    Mono<String> body(HttpServerRequest req, HttpServerResponse res) {
        return HttpHardening.body(req, res, MAX_BODY_BYTES, HttpHardening.bodyTimeout(headerTimeout))
                .map(b -> new String(b, StandardCharsets.UTF_8));
    }

    private Publisher<Void> completions(HttpServerRequest req, HttpServerResponse res, boolean chat) {
        SimulatedEngine engine = node.engine();
        if (engine == null) {
            return json(res, HttpResponseStatus.NOT_FOUND, Map.of("error",
                    "this node has no built-in engine (--engine " + node.engineName() + ")"));
        }
        String xrid = req.requestHeaders().get("X-Request-Id");
        String dpHeader = req.requestHeaders().get("X-data-parallel-rank");
        int ownDp = node.config().dpRank();
        if (dpHeader != null && !dpHeader.trim().equals(Integer.toString(ownDp))) {
            // vLLM's API server hands a request to the engine of the rank the header names: this node is one rank
            return json(res, HttpResponseStatus.BAD_REQUEST, Map.of("error", "X-data-parallel-rank " + dpHeader
                    + " is not this node's DP rank (" + ownDp + ")"));
        }
        return body(req, res).flatMap(text -> {
            CompletionRequest cr;
            try {
                cr = CompletionRequest.parse(text, chat);
            } catch (IllegalArgumentException e) {
                return Mono.from(json(res, HttpResponseStatus.BAD_REQUEST, Map.of("error", e.getMessage())));
            }
            String base = xrid != null && !xrid.isBlank() ? xrid : java.util.UUID.randomUUID().toString().replace("-", "");
            String rid = "cmpl-" + base + "-0-" + String.format("%08x", ThreadLocalRandom.current().nextInt());
            // A client that goes away (Reactor Netty cancels this publisher when the connection
            // closes) or a completion that outlives its bound aborts the request in the engine, as
            // vLLM's API server aborts a request whose client disconnected: otherwise it runs on,
            // holding its blocks (a huge max_tokens, or a decode waiting for KV that never comes).
            return Mono.fromFuture(() -> engine.submit(rid, cr.promptTokens(), cr.maxTokens(), cr.params()), true)
                    .timeout(COMPLETION_TIMEOUT)
                    .doOnCancel(() -> engine.abort(rid))
                    .doOnError(java.util.concurrent.TimeoutException.class, e -> engine.abort(rid))
                    .flatMap(c -> Mono.from(cr.stream() && c.error() == null ? stream(res, base, c, cr)
                            : json(res, c.error() == null ? HttpResponseStatus.OK
                            : HttpResponseStatus.INTERNAL_SERVER_ERROR, response(base, c, chat))))
                    .onErrorResume(e -> Mono.from(json(res, HttpResponseStatus.SERVICE_UNAVAILABLE,
                            Map.of("error", String.valueOf(e.getMessage())))));
        }).onErrorResume(HttpHardening.BodyRefused.class, e -> Mono.from(json(res,
                HttpResponseStatus.valueOf(e.status()), Map.of("error", e.getMessage()))))
          .onErrorResume(IllegalArgumentException.class, e -> Mono.from(json(res, HttpResponseStatus.BAD_REQUEST,
                Map.of("error", e.getMessage()))));
    }

    private static String finishReason(Completion c) {
        return switch (c.finishStatus()) {
            case FINISHED_STOPPED -> "stop";
            case FINISHED_LENGTH_CAPPED -> "length";
            case FINISHED_ABORTED -> "abort";
            case FINISHED_IGNORED, FINISHED_ERROR -> "error";
        };
    }

    private static Map<String, Object> usage(Completion c) {
        Map<String, Object> usage = new LinkedHashMap<>();
        usage.put("prompt_tokens", c.promptTokens());
        usage.put("completion_tokens", c.outputTokens());
        usage.put("total_tokens", c.promptTokens() + c.outputTokens());
        return usage;
    }

    private static Map<String, Object> kvledger(Completion c) {
        Map<String, Object> kv = new LinkedHashMap<>();
        kv.put("request_id", c.requestId());
        kv.put("verified_bytes", c.verifiedBytes());
        kv.put("load_failed", c.loadFailed());
        if (c.error() != null) {
            kv.put("error", c.error());
        }
        return kv;
    }

    private static Map<String, Object> response(String id, Completion c, boolean chat) {
        Map<String, Object> choice = new LinkedHashMap<>();
        choice.put("index", 0);
        if (chat) {
            Map<String, Object> message = new LinkedHashMap<>();
            message.put("role", "assistant");
            message.put("content", "");
            choice.put("message", message);
        } else {
            choice.put("text", "");
        }
        choice.put("finish_reason", finishReason(c));
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("id", (chat ? "chatcmpl-" : "cmpl-") + id);
        out.put("object", chat ? "chat.completion" : "text_completion");
        out.put("choices", List.of(choice));
        out.put("usage", usage(c));
        out.put("kv_transfer_params", c.kvTransferParams());
        out.put("kvledger", kvledger(c));
        return out;
    }

    /**
     * A completion asked for with {@code "stream": true}, as OpenAI's server-sent events: one
     * chunk per output token (the built-in engine makes no text: each is empty; a chat stream's
     * first carries the assistant role), the last with the finish reason, the
     * {@code kv_transfer_params} and this node's {@code kvledger} fields; with
     * {@code stream_options.include_usage} a usage chunk with no choices; then
     * {@code data: [DONE]}. The engine answers once the request finished, so the chunks follow
     * one another at once.
     */
    private static Publisher<Void> stream(HttpServerResponse res, String base, Completion c, CompletionRequest cr) {
        boolean chat = cr.chat();
        String id = (chat ? "chatcmpl-" : "cmpl-") + base;
        String object = chat ? "chat.completion.chunk" : "text_completion";
        int tokens = Math.max(1, c.outputTokens());
        List<String> events = new java.util.ArrayList<>();
        for (int i = 0; i < tokens; i++) {
            boolean last = i == tokens - 1;
            Map<String, Object> choice = new LinkedHashMap<>();
            choice.put("index", 0);
            if (chat) {
                Map<String, Object> delta = new LinkedHashMap<>();
                if (i == 0) {
                    delta.put("role", "assistant");
                }
                delta.put("content", "");
                choice.put("delta", delta);
            } else {
                choice.put("text", "");
            }
            choice.put("finish_reason", last ? finishReason(c) : null);
            Map<String, Object> chunk = new LinkedHashMap<>();
            chunk.put("id", id);
            chunk.put("object", object);
            chunk.put("choices", List.of(choice));
            if (last) {
                chunk.put("kv_transfer_params", c.kvTransferParams());
                chunk.put("kvledger", kvledger(c));
            }
            events.add("data: " + Json.write(chunk) + "\n\n");
        }
        if (cr.includeUsage()) {
            Map<String, Object> chunk = new LinkedHashMap<>();
            chunk.put("id", id);
            chunk.put("object", object);
            chunk.put("choices", List.of());
            chunk.put("usage", usage(c));
            events.add("data: " + Json.write(chunk) + "\n\n");
        }
        events.add("data: [DONE]\n\n");
        return res.status(HttpResponseStatus.OK).header("Content-Type", "text/event-stream")
                .header("Cache-Control", "no-cache")
                .sendString(reactor.core.publisher.Flux.fromIterable(events), StandardCharsets.UTF_8);
    }

    /**
     * The fields of a completion request the simulated engine uses.
     *
     * @param chat         asked on {@code /v1/chat/completions}
     * @param stream       {@code "stream": true}
     * @param includeUsage {@code "stream_options": {"include_usage": true}}
     */
    record CompletionRequest(int promptTokens, int maxTokens, KvParams params, boolean chat, boolean stream,
                             boolean includeUsage) {

        static CompletionRequest parse(String text, boolean chat) {
            Object v;
            try {
                v = Json.parse(text);
            } catch (RuntimeException e) {
                throw new IllegalArgumentException("the body is not JSON: " + e.getMessage());
            }
            if (!(v instanceof Map<?, ?> m)) {
                throw new IllegalArgumentException("the body must be a JSON object");
            }
            int prompt;
            if (m.get("prompt_tokens") instanceof Long n) {
                prompt = (int) Math.min(n, 1_000_000);
            } else if (chat) {
                prompt = chatWords(m.get("messages"));
            } else if (m.get("prompt") instanceof String s) {
                prompt = words(s);
            } else if (m.get("prompt") instanceof List<?> l && !l.isEmpty() && l.stream().allMatch(x -> x instanceof Long)) {
                prompt = l.size(); // token ids
            } else if (m.get("prompt") instanceof List<?> l) {
                throw new IllegalArgumentException("batched prompts are not supported (one prompt per request)");
            } else {
                throw new IllegalArgumentException("give prompt_tokens (an integer) or prompt (a string or token ids)");
            }
            if (prompt < 1) {
                throw new IllegalArgumentException("the prompt must have at least one token");
            }
            int max = 16;
            for (String key : chat ? List.of("max_tokens", "max_completion_tokens") : List.of("max_tokens")) {
                if (m.get(key) != null) {
                    if (!(m.get(key) instanceof Long n) || n < 1) {
                        throw new IllegalArgumentException(key + " must be a positive integer");
                    }
                    max = (int) Math.min(n, 100_000);
                }
            }
            if (m.get("n") != null && !(m.get("n") instanceof Long n && n == 1)) {
                throw new IllegalArgumentException("n must be 1 (n > 1 is not supported)");
            }
            Object stream = m.get("stream");
            if (stream != null && !(stream instanceof Boolean)) {
                throw new IllegalArgumentException("stream must be true or false");
            }
            boolean usage = false;
            if (m.get("stream_options") instanceof Map<?, ?> so) {
                usage = Boolean.TRUE.equals(so.get("include_usage"));
            } else if (m.get("stream_options") != null) {
                throw new IllegalArgumentException("stream_options must be an object");
            }
            KvParams params = null;
            Object kv = m.get("kv_transfer_params");
            if (kv instanceof Map<?, ?> km) {
                Map<String, Object> copy = new LinkedHashMap<>();
                km.forEach((k, val) -> copy.put(String.valueOf(k), val));
                params = KvParams.of(copy);
            } else if (kv != null) {
                throw new IllegalArgumentException("kv_transfer_params must be an object");
            }
            return new CompletionRequest(prompt, max, params, chat, Boolean.TRUE.equals(stream), usage);
        }

        private static int words(String s) {
            return s.isBlank() ? 0 : s.trim().split("\\s+").length;
        }

        /** One token per whitespace-separated word of the messages' text. */
        private static int chatWords(Object messages) {
            if (!(messages instanceof List<?> l) || l.isEmpty()) {
                throw new IllegalArgumentException("messages must be a non-empty list");
            }
            int n = 0;
            for (Object o : l) {
                if (!(o instanceof Map<?, ?> msg) || !(msg.get("role") instanceof String)) {
                    throw new IllegalArgumentException("each message must be an object with a role");
                }
                Object content = msg.get("content");
                if (content instanceof String s) {
                    n += words(s);
                } else if (content instanceof List<?> parts) {
                    for (Object part : parts) {
                        if (part instanceof Map<?, ?> pm && pm.get("text") instanceof String t) {
                            n += words(t);
                        }
                    }
                }
            }
            return n;
        }
    }
}
