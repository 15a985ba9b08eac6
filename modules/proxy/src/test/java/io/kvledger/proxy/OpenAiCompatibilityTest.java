package io.kvledger.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvledger.core.config.TransferMode;
import io.kvledger.journal.json.Json;
import io.kvledger.node.Chromium;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvledger proxy} as an OpenAI-compatible server: {@code GET /v1/models} and the OpenAI
 * error body ({@code {"error": {"message", "type", "param", "code"}}}) on every error, checked on
 * the wire and with the official OpenAI client (the {@code openai} npm package, pinned in
 * {@code src/test/node/package-lock.json}, installed by {@code npm ci} under
 * {@code target/openai-client/}) against the proxy in front of {@link FakeEngine}s. The client's
 * tests are skipped, saying so, only when Debian's {@code nodejs} and {@code npm} are absent (the
 * launcher installs them for {@code ./kvledger test}).
 */
class OpenAiCompatibilityTest {

    private static final Duration BEAT = Duration.ofMillis(150);

    @TempDir
    Path dir;

    private final List<AutoCloseable> open = new ArrayList<>();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(ProxyTest.WAIT).build();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    private ProxyService proxy(TransferMode mode) {
        ProxyService p = ProxyService.start(ProxyOptions.loopback().withMode(mode).withJournal(dir.resolve("proxy")),
                "test");
        open.add(p);
        return p;
    }

    private FakeEngine engine(String role, ProxyService p, String mode) {
        FakeEngine e = FakeEngine.start(role, 1).register(p.pingPort(), mode, BEAT);
        open.add(e);
        return e;
    }

    private static void registered(ProxyService p, int n) {
        assertTrue(ProxyTest.eventually(ProxyTest.WAIT, () -> p.producers() + p.consumers() == n),
                "the engines registered");
    }

    private HttpResponse<String> send(ProxyService p, String method, String path, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + p.httpPort() + path))
                .timeout(ProxyTest.WAIT).header("Content-Type", "application/json");
        b.method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> map(Object o) {
        return (Map<String, Object>) o;
    }

    @SuppressWarnings("unchecked")
    private static List<Object> list(Object o) {
        return (List<Object>) o;
    }

    /** Asserts the OpenAI error body with {@code status} as its code, and returns its message. */
    private static String openAiError(HttpResponse<String> r, int status) {
        assertEquals(status, r.statusCode(), r.body());
        assertEquals("application/json", r.headers().firstValue("content-type").orElse(""), r.body());
        Map<String, Object> body = map(Json.parse(r.body()));
        assertEquals(List.of("error"), List.copyOf(body.keySet()), r.body());
        Map<String, Object> e = map(body.get("error"));
        assertEquals(List.of("message", "type", "param", "code"), List.copyOf(e.keySet()), r.body());
        assertEquals(status >= 500 ? "server_error" : "invalid_request_error", e.get("type"), r.body());
        assertTrue(e.containsKey("param") && e.get("param") == null, r.body());
        assertEquals((long) status, e.get("code"), r.body());
        return (String) e.get("message");
    }

    // ------------------------------------------------------------------ on the wire

    @Test
    void modelsAreThoseAPrefillAndADecodeBothServeInVllmsShape() throws Exception {
        ProxyService p = proxy(TransferMode.READ);
        // no decode yet: the proxy says which role is missing
        FakeEngine pe = engine("P", p, "READ");
        registered(p, 1);
        assertTrue(openAiError(send(p, "GET", "/v1/models", null), 503).contains("no decode (kv_consumer)"));

        FakeEngine pe2 = engine("P", p, "READ");
        FakeEngine de = engine("D", p, "READ");
        registered(p, 3);
        pe.models = List.of("llama", "qwen");
        pe2.models = List.of("mistral");
        de.models = List.of("qwen", "mistral", "decode-only");
        HttpResponse<String> r = send(p, "GET", "/v1/models", null);
        assertEquals(200, r.statusCode(), r.body());
        Map<String, Object> body = map(Json.parse(r.body()));
        assertEquals("list", body.get("object"));
        List<Object> data = list(body.get("data"));
        assertEquals(List.of("qwen", "mistral"), data.stream().map(m -> map(m).get("id")).toList(), r.body());
        Map<String, Object> qwen = map(data.getFirst());
        assertEquals("model", qwen.get("object"));
        assertEquals(1_700_000_000L, qwen.get("created"));
        assertEquals("vllm", qwen.get("owned_by"));
        assertEquals(4096L, qwen.get("max_model_len"), "the engine's own fields are kept");
        assertTrue(de.received().stream().anyMatch(x -> x.path().equals("/v1/models")), "the decode was asked");

        // an engine that fails is left out; when no decode answers, a 502 naming it
        pe2.modelsFailStatus = 500;
        r = send(p, "GET", "/v1/models", null);
        assertEquals(200, r.statusCode(), r.body());
        assertEquals(List.of("qwen"), list(map(Json.parse(r.body())).get("data")).stream()
                .map(m -> map(m).get("id")).toList(), r.body());
        de.modelsFailStatus = 503;
        String why = openAiError(send(p, "GET", "/v1/models", null), 502);
        assertTrue(why.contains("no decode instance answered GET /v1/models") && why.contains(de.httpAddress())
                && why.contains("answered 503: engine down"), why);
    }

    @Test
    void everyErrorOfTheProxyHasTheOpenAiBody() throws Exception {
        ProxyService p = proxy(TransferMode.READ);
        // no instance at all
        assertTrue(openAiError(send(p, "POST", "/v1/completions", "{\"prompt\":\"hi\",\"max_tokens\":4}"), 503)
                .contains("no prefill (kv_producer) instance"));
        FakeEngine pe = engine("P", p, "READ");
        FakeEngine de = engine("D", p, "READ");
        registered(p, 2);
        // the proxy's checks, a route it does not serve, a method it does not serve there
        openAiError(send(p, "POST", "/v1/chat/completions", "{\"messages\":[]}"), 400);
        openAiError(send(p, "POST", "/v1/completions", "not json"), 400);
        assertEquals("no route GET /v1/models/x", openAiError(send(p, "GET", "/v1/models/x", null), 404));
        openAiError(send(p, "GET", "/v1/completions", null), 405);
        // the web page's journal routes too
        assertTrue(openAiError(send(p, "GET", "/v1/requests/nope", null), 404).contains("no request id"));
        openAiError(send(p, "GET", "/v1/hangs?stuck_after=-1", null), 400);

        // a decode that fails with a body that is not OpenAI's: its status, in an OpenAI body quoting it
        de.failStatus = 500;
        String why = openAiError(send(p, "POST", "/v1/completions", "{\"prompt\":\"hi\",\"max_tokens\":4}"), 500);
        assertEquals("decode leg to " + de.httpAddress() + " answered 500: engine failure", why);
        why = openAiError(send(p, "POST", "/v1/chat/completions",
                "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":true}"), 500);
        assertTrue(why.startsWith("decode leg to " + de.httpAddress()), why);
        // a prefill that refuses the request (4xx): the client's error, not a 502 a client retries
        de.failStatus = 0;
        pe.failStatus = 400;
        why = openAiError(send(p, "POST", "/v1/completions", "{\"prompt\":\"hi\",\"max_tokens\":4}"), 400);
        assertTrue(why.startsWith("prefill leg (") && why.endsWith("answered 400: engine failure"), why);
        // a prefill that fails (5xx): a 502
        pe.failStatus = 500;
        why = openAiError(send(p, "POST", "/v1/completions", "{\"prompt\":\"hi\",\"max_tokens\":4}"), 502);
        assertTrue(why.endsWith("answered 500: engine failure"), why);
    }

    // ------------------------------------------------------------------ the official client

    /** {@code node openai-client.mjs BASE_URL [args]}: the JSON object it printed. */
    private static Map<String, Object> officialClient(ProxyService p, String... args) throws Exception {
        Path node = Chromium.onPath("node");
        Path npm = Chromium.onPath("npm");
        Assumptions.assumeTrue(node != null && npm != null,
                "skipped: Node.js and npm are not installed (the ./kvledger launcher installs Debian's nodejs and "
                        + "npm for the tests: apt-get install nodejs npm)");
        Path work = installClient(npm);
        List<String> cmd = new ArrayList<>(List.of(node.toString(), "openai-client.mjs",
                "http://127.0.0.1:" + p.httpPort() + "/v1"));
        cmd.addAll(List.of(args));
        Path err = work.resolve("stderr.txt");
        Process proc = new ProcessBuilder(cmd).directory(work.toFile()).redirectError(err.toFile()).start();
        String out = new String(proc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(proc.waitFor(ProxyTest.WAIT.toSeconds(), TimeUnit.SECONDS), "the client ended");
        assertEquals(0, proc.exitValue(), () -> "the client failed: " + out + read(err));
        return map(Json.parse(out.strip()));
    }

    private static String read(Path f) {
        try {
            return Files.readString(f);
        } catch (java.io.IOException e) {
            return e.toString();
        }
    }

    /**
     * The client's files under {@code target/openai-client/}, with {@code npm ci} run there when
     * the pinned lock file changed (or nothing is installed yet).
     */
    private static synchronized Path installClient(Path npm) throws Exception {
        Path src = Path.of("src", "test", "node");
        Path work = Path.of("target", "openai-client").toAbsolutePath();
        Files.createDirectories(work);
        for (String f : List.of("package.json", "package-lock.json", "openai-client.mjs")) {
            Files.copy(src.resolve(f), work.resolve(f), StandardCopyOption.REPLACE_EXISTING);
        }
        Path stamp = work.resolve("node_modules").resolve(".kvledger-lock");
        String lock = Files.readString(work.resolve("package-lock.json"));
        if (!Files.isRegularFile(stamp) || !Files.readString(stamp).equals(lock)) {
            Path log = work.resolve("npm-ci.log");
            Process ci = new ProcessBuilder(npm.toString(), "ci", "--no-audit", "--no-fund", "--loglevel=error")
                    .directory(work.toFile()).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            assertTrue(ci.waitFor(10, TimeUnit.MINUTES), "npm ci ended");
            assertEquals(0, ci.exitValue(), () -> "npm ci failed (the registry must be reachable): " + read(log));
            Files.writeString(stamp, lock);
        }
        return work;
    }

    @Test
    void theOfficialClientCompletesChatsStreamsAndListsModelsThroughTheProxy() throws Exception {
        ProxyService p = proxy(TransferMode.READ);
        FakeEngine pe = engine("P", p, "READ");
        FakeEngine de = engine("D", p, "READ");
        registered(p, 2);
        Map<String, Object> got = officialClient(p);

        assertEquals(List.of(Map.of("id", "fake-model", "object", "model", "owned_by", "vllm")),
                map(got.get("models")).get("ok"), got.toString());
        assertEquals(Map.of("object", "text_completion", "text", "decoded text", "finish", "length"),
                map(got.get("completion")).get("ok"), got.toString());
        assertEquals(Map.of("chunks", 3L, "text", "t0t1t2"), map(got.get("completionStream")).get("ok"),
                got.toString());
        assertEquals(Map.of("object", "chat.completion", "content", "decoded text", "finish", "length"),
                map(got.get("chat")).get("ok"), got.toString());
        assertEquals(Map.of("chunks", 3L, "text", "t0t1t2"), map(got.get("chatStream")).get("ok"), got.toString());

        // errors reach the client as OpenAI's, with the proxy's message, type, param and code
        Map<String, Object> bad = map(map(got.get("badRequest")).get("error"));
        assertEquals("BadRequestError", bad.get("class"), got.toString());
        assertEquals(400L, bad.get("status"));
        assertEquals("invalid_request_error", bad.get("type"));
        assertTrue(bad.containsKey("param") && bad.get("param") == null, got.toString());
        assertEquals(400L, bad.get("code"));
        assertNotNull(map(bad.get("body")).get("message"), got.toString());
        assertTrue(((String) bad.get("message")).startsWith("400 " + map(bad.get("body")).get("message")), got.toString());
        Map<String, Object> missing = map(map(got.get("notFound")).get("error"));
        assertEquals("NotFoundError", missing.get("class"), got.toString());
        assertEquals("404 no route GET /v1/models/fake-model", missing.get("message"), got.toString());

        // the legs went out as the proxy sends them: the decode streamed when the client asked
        List<FakeEngine.Received> legs = de.received().stream().filter(r -> r.path().endsWith("completions")).toList();
        assertEquals(4, legs.size(), legs.toString());
        assertEquals(List.of(false, true, false, true), legs.stream()
                .map(r -> Boolean.TRUE.equals(r.body().get("stream"))).toList());
        assertEquals(4, pe.received().stream().filter(r -> r.path().endsWith("completions")).count());
    }

    @Test
    void theOfficialClientSeesAFailedEngineAsAnOpenAiServerError() throws Exception {
        ProxyService p = proxy(TransferMode.WRITE);
        engine("P", p, "WRITE");
        FakeEngine de = engine("D", p, "WRITE");
        registered(p, 2);
        de.failStatus = 500;
        Map<String, Object> got = officialClient(p, "failing");
        for (String call : List.of("completion", "chatStream")) {
            Map<String, Object> e = map(map(got.get(call)).get("error"));
            assertNull(map(got.get(call)).get("ok"), got.toString());
            assertEquals("InternalServerError", e.get("class"), got.toString());
            assertEquals(500L, e.get("status"));
            assertEquals("server_error", e.get("type"));
            assertEquals("500 decode leg to " + de.httpAddress() + " answered 500: engine failure", e.get("message"),
                    got.toString());
        }
    }
}
