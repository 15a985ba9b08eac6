package io.kvledger.proxy;

import io.kvledger.journal.json.Json;
import io.kvledger.node.cluster.LoopbackPorts;
import io.kvledger.wire.Registration;
import io.kvledger.zmq.EventSink;
import io.kvledger.zmq.RegistrationHeartbeat;
import io.netty.handler.codec.http.HttpHeaderNames;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;
import reactor.netty.http.server.HttpServerRequest;
import reactor.netty.http.server.HttpServerResponse;

/**
 * A fake vLLM engine for the proxy tests: a Reactor-Netty OpenAI-style server on loopback that
 * registers with the proxy over a real ZMQ DEALER (the worker-side {@link RegistrationHeartbeat},
 * msgpack frames as a vLLM worker sends them). As a prefill it answers one token with the
 * {@code kv_transfer_params} MoRIIO's {@code request_finished} returns (protocol 4.3); as a decode
 * it answers text, streamed as SSE when asked. Records what it received and when.
 */
final class FakeEngine implements AutoCloseable {

    /** One request the engine received. */
    record Received(String path, String requestId, String dpRank, String authorization, String framing,
                    Map<String, Object> body, long atNanoTime) {}

    /** How a request's body was delimited: {@code content-length} or {@code chunked}. */
    private static String framing(HttpServerRequest req) {
        String te = req.requestHeaders().get("Transfer-Encoding");
        return te != null ? te.toLowerCase() : req.requestHeaders().contains("Content-Length") ? "content-length" : "none";
    }

    final String role;
    final int dpSize;
    final int handshakePort;
    final int notifyPort;
    final DisposableServer server;
    final List<Received> received = new CopyOnWriteArrayList<>();
    final AtomicInteger closedConnections = new AtomicInteger();
    final List<Long> answeredAtNanoTime = new CopyOnWriteArrayList<>();
    /** Completed with the first completion request this engine receives. */
    final CompletableFuture<Received> firstReceived = new CompletableFuture<>();
    private RegistrationHeartbeat heartbeat;

    /** Milliseconds before answering. */
    volatile long delayMs;
    /**
     * Answer only once this completes (after {@link #delayMs}): one engine's answer held until
     * another engine received its leg, an order a test needs without timing it (null: no hold).
     */
    volatile CompletableFuture<?> holdUntil;
    /** Never answer. */
    volatile boolean hang;
    /** Answer every completion with this error status (0: answer normally). */
    volatile int failStatus;
    /** Echo this transfer id instead of the one received (prefill). */
    volatile String echoTransferId;
    /** Decode: chunks of a streamed answer, and the pause between two. */
    volatile int chunks = 3;
    volatile long chunkDelayMs;
    /** Decode: close the connection after this many chunks of a streamed answer (negative: never). */
    volatile int dieAfterChunks = -1;
    /** The models {@code GET /v1/models} lists, as vLLM's served model names. */
    volatile List<String> models = List.of("fake-model");
    /** Answer {@code GET /v1/models} with this error status (0: the list). */
    volatile int modelsFailStatus;

    private FakeEngine(String role, int dpSize) {
        this.role = role;
        this.dpSize = dpSize;
        int[] ports = LoopbackPorts.distinct(2);
        this.handshakePort = ports[0];
        this.notifyPort = ports[1];
        this.server = HttpServer.create().host("127.0.0.1").port(0)
                .route(r -> r.post("/v1/completions", this::complete).post("/v1/chat/completions", this::complete)
                        .post("/start_profile", this::profile).post("/stop_profile", this::profile)
                        .get("/v1/models", this::models))
                .bindNow(ProxyTest.WAIT);
    }

    static FakeEngine start(String role, int dpSize) {
        return new FakeEngine(role, dpSize);
    }

    String httpAddress() {
        return "127.0.0.1:" + server.port();
    }

    String zmqAddress() {
        return Registration.zmqAddress("127.0.0.1", handshakePort, notifyPort);
    }

    /** Starts the registration heartbeat to the proxy's ping port. */
    FakeEngine register(int pingPort, String mode, Duration interval) {
        Registration r = new Registration(role, httpAddress(), zmqAddress(), dpSize, 1, mode);
        heartbeat = RegistrationHeartbeat.start("tcp://127.0.0.1:" + pingPort, r, interval, EventSink.discarding(),
                System::nanoTime);
        return this;
    }

    /** Stops the heartbeat (the server keeps answering). */
    void stopHeartbeat() {
        if (heartbeat != null) {
            heartbeat.close();
            heartbeat = null;
        }
    }

    List<Received> received() {
        return new ArrayList<>(received);
    }

    @SuppressWarnings("unchecked")
    private Publisher<Void> complete(HttpServerRequest req, HttpServerResponse res) {
        res.withConnection(c -> c.onDispose(closedConnections::incrementAndGet));
        String rid = req.requestHeaders().get("X-Request-Id");
        String dp = req.requestHeaders().get("X-data-parallel-rank");
        return req.receive().aggregate().asString(StandardCharsets.UTF_8).flatMap(text -> {
            Map<String, Object> body = (Map<String, Object>) Json.parse(text);
            Received got = new Received(req.uri(), rid, dp, req.requestHeaders().get("Authorization"), framing(req),
                    body, System.nanoTime());
            received.add(got);
            firstReceived.complete(got);
            if (hang) {
                return Mono.never();
            }
            if (failStatus > 0) {
                answeredAtNanoTime.add(System.nanoTime());
                return res.status(failStatus).header(HttpHeaderNames.CONTENT_TYPE, "application/json")
                        .sendString(Mono.just("{\"error\":\"engine failure\"}")).then();
            }
            Mono<Void> wait = delayMs > 0 ? Mono.delay(Duration.ofMillis(delayMs)).then() : Mono.empty();
            CompletableFuture<?> hold = holdUntil;
            if (hold != null) {
                // a copy: a cancelled answer must not cancel what it waits for
                wait = wait.then(Mono.fromFuture(hold.copy())).then();
            }
            boolean chat = req.uri().endsWith("/chat/completions");
            return wait.then(Mono.defer(() -> "P".equals(role) ? prefill(res, rid, dp, body, chat)
                    : decode(res, rid, body, chat)));
        });
    }

    @SuppressWarnings("unchecked")
    private Publisher<Void> profile(HttpServerRequest req, HttpServerResponse res) {
        return req.receive().aggregate().asString(StandardCharsets.UTF_8).defaultIfEmpty("").flatMap(text -> {
            received.add(new Received(req.uri(), null, null, req.requestHeaders().get("Authorization"), framing(req),
                    text.isEmpty() ? Map.of() : (Map<String, Object>) Json.parse(text), System.nanoTime()));
            return res.header(HttpHeaderNames.CONTENT_TYPE, "application/json")
                    .sendString(Mono.just("{\"profiling\":\"" + req.uri() + "\"}")).then();
        });
    }

    @SuppressWarnings("unchecked")
    private Mono<Void> prefill(HttpServerResponse res, String rid, String dp, Map<String, Object> body, boolean chat) {
        Map<String, Object> sent = (Map<String, Object>) body.get("kv_transfer_params");
        Map<String, Object> kv = new LinkedHashMap<>();
        kv.put("do_remote_prefill", true);
        kv.put("do_remote_decode", false);
        kv.put("remote_block_ids", List.of(List.of(4L, 5L, 6L)));
        kv.put("remote_engine_id", "127.0.0.1:" + handshakePort);
        kv.put("remote_host", "127.0.0.1");
        kv.put("remote_handshake_port", (long) handshakePort);
        kv.put("remote_notify_port", (long) notifyPort);
        kv.put("remote_dp_rank", dp == null ? 0L : Long.parseLong(dp));
        kv.put("remote_dp_rank_override", true);
        kv.put("remote_dp_size", (long) dpSize);
        kv.put("remote_dp_size_local", (long) dpSize);
        kv.put("tp_size", 1L);
        kv.put("transfer_id", echoTransferId != null ? echoTransferId : sent.get("transfer_id"));
        Map<String, Object> m = completion(rid, "A", "length", chat, false);
        m.put("kv_transfer_params", kv);
        answeredAtNanoTime.add(System.nanoTime());
        return res.header(HttpHeaderNames.CONTENT_TYPE, "application/json").sendString(Mono.just(Json.write(m))).then();
    }

    private Mono<Void> decode(HttpServerResponse res, String rid, Map<String, Object> body, boolean chat) {
        if (!Boolean.TRUE.equals(body.get("stream"))) {
            answeredAtNanoTime.add(System.nanoTime());
            return res.header(HttpHeaderNames.CONTENT_TYPE, "application/json")
                    .sendString(Mono.just(Json.write(completion(rid, "decoded text", "length", chat, false)))).then();
        }
        int n = chunks;
        int die = dieAfterChunks;
        if (die >= 0) {
            Flux<String> cut = Flux.range(0, die)
                    .map(i -> "data: " + Json.write(completion(rid, "t" + i, null, chat, true)) + "\n\n")
                    .concatWith(Mono.delay(Duration.ofMillis(200)).then(Mono.defer(() -> {
                        // the chunks are out (flushed) before the connection goes
                        res.withConnection(c -> c.channel().close());
                        return Mono.<String>never();
                    })));
            return res.header(HttpHeaderNames.CONTENT_TYPE, "text/event-stream").sendString(cut).then();
        }
        Flux<String> sse = Flux.range(0, n)
                .concatMap(i -> (chunkDelayMs > 0 ? Mono.delay(Duration.ofMillis(chunkDelayMs)) : Mono.just(0L))
                        .thenReturn("data: " + Json.write(completion(rid, "t" + i, i == n - 1 ? "length" : null, chat, true)) + "\n\n"))
                .concatWith(Mono.just("data: [DONE]\n\n"))
                .doOnComplete(() -> answeredAtNanoTime.add(System.nanoTime()));
        return res.header(HttpHeaderNames.CONTENT_TYPE, "text/event-stream").sendString(sse).then();
    }

    /**
     * One answer or streamed chunk as vLLM's OpenAI server shapes it: a text completion's
     * {@code choices[].text}, a chat completion's {@code message} (whole) or {@code delta} (a chunk).
     */
    private static Map<String, Object> completion(String rid, String text, String finish, boolean chat,
                                                  boolean chunk) {
        Map<String, Object> choice = new LinkedHashMap<>();
        choice.put("index", 0L);
        if (!chat) {
            choice.put("text", text);
        } else if (chunk) {
            choice.put("delta", Map.of("content", text));
        } else {
            choice.put("message", Map.of("role", "assistant", "content", text));
        }
        choice.put("finish_reason", finish);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", (chat ? "chatcmpl-" : "cmpl-") + rid + "-0-1a2b3c4d");
        m.put("object", !chat ? "text_completion" : chunk ? "chat.completion.chunk" : "chat.completion");
        m.put("created", 1_700_000_000L);
        m.put("model", "fake-model");
        m.put("choices", List.of(choice));
        return m;
    }

    /** {@code GET /v1/models}, as vLLM answers it (its served model names, {@code owned_by} "vllm"). */
    private Publisher<Void> models(HttpServerRequest req, HttpServerResponse res) {
        received.add(new Received(req.uri(), null, null, req.requestHeaders().get("Authorization"), "none", Map.of(),
                System.nanoTime()));
        if (modelsFailStatus > 0) {
            return res.status(modelsFailStatus).sendString(Mono.just("engine down")).then();
        }
        List<Object> data = new ArrayList<>();
        for (String id : models) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("id", id);
            m.put("object", "model");
            m.put("created", 1_700_000_000L);
            m.put("owned_by", "vllm");
            m.put("root", "/models/" + id);
            m.put("parent", null);
            m.put("max_model_len", 4096L);
            data.add(m);
        }
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("object", "list");
        body.put("data", data);
        return res.header(HttpHeaderNames.CONTENT_TYPE, "application/json").sendString(Mono.just(Json.write(body)))
                .then();
    }

    @Override
    public void close() {
        stopHeartbeat();
        server.disposeNow(ProxyTest.WAIT);
    }
}
