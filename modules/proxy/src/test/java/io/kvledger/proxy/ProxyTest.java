package io.kvledger.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvledger.core.config.TransferMode;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.json.Json;
import io.kvledger.journal.proxy.ProxyEvent;
import io.kvledger.ledger.otlp.LegSpans;
import io.kvledger.ledger.otlp.OtlpReceiver;
import io.opentelemetry.proto.trace.v1.Status;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The proxy against fake engines (Reactor-Netty servers that register over a real ZMQ DEALER, as
 * a vLLM worker does), all on loopback: registration and expiry, READ and WRITE flows, streaming,
 * DP pinning, a client that goes away, a dead prefill, request checks, and the journal of each.
 */
class ProxyTest {

    private static final Duration BEAT = Duration.ofMillis(150);
    /**
     * How long a test waits for something to happen (a registration, a journal entry, an answer):
     * generous, for a loaded machine; a wait ends as soon as what it waits for comes.
     */
    static final Duration WAIT = Duration.ofSeconds(120);
    /**
     * The registration time to live where a test needs instances to expire: 13 heartbeats of
     * {@link #BEAT}, so a heartbeat thread the machine's load holds back does not expire a live instance.
     */
    private static final Duration TTL = Duration.ofSeconds(2);
    static final Pattern RID = Pattern.compile(
            "___prefill_addr_host:127\\.0\\.0\\.1,handshake:(\\d+),notify:(\\d+)___decode_addr_host:127\\.0\\.0\\.1,"
                    + "handshake:(\\d+),notify:(\\d+)_[0-9a-f]{32}");
    static final Pattern TID = Pattern.compile("tx-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");

    @TempDir
    Path dir;

    private final List<AutoCloseable> open = new ArrayList<>();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(WAIT).build();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    private <T extends AutoCloseable> T keep(T c) {
        open.add(c);
        return c;
    }

    private ProxyService proxy(ProxyOptions o) {
        return keep(ProxyService.start(o.withJournal(dir.resolve("proxy")), "test"));
    }

    private FakeEngine engine(String role, int dp, ProxyService p, String mode) {
        return keep(FakeEngine.start(role, dp)).register(p.pingPort(), mode, BEAT);
    }

    private void pair(ProxyService p, FakeEngine... engines) {
        assertTrue(eventually(WAIT, () -> p.producers() + p.consumers() == engines.length),
                "the engines registered");
    }

    private HttpResponse<String> post(ProxyService p, String path, String body, String... headers) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + p.httpPort() + path))
                .timeout(WAIT).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        for (int i = 0; i < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    static boolean eventually(Duration timeout, BooleanSupplier cond) {
        long end = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < end) {
            if (cond.getAsBoolean()) {
                return true;
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return cond.getAsBoolean();
    }

    /** The proxy records journaled so far (read on the test thread, the writer keeps writing). */
    private List<ProxyEvent> journal() {
        List<ProxyEvent> out = new ArrayList<>();
        try (JournalReader r = JournalReader.open(dir.resolve("proxy"))) {
            assertTrue(r.header().proxy(), "the header says proxy");
            for (JournalEntry e : r) {
                if (e instanceof JournalEntry.Proxy px) {
                    out.add(px.event());
                }
            }
        }
        return out;
    }

    private <T extends ProxyEvent> List<T> journaled(Class<T> type) {
        return journal().stream().filter(type::isInstance).map(type::cast).toList();
    }

    private <T extends ProxyEvent> T awaitJournaled(Class<T> type, java.util.function.Predicate<T> which) {
        List<T> found = new ArrayList<>();
        assertTrue(eventually(WAIT, () -> {
            found.clear();
            journaled(type).stream().filter(which).forEach(found::add);
            return !found.isEmpty();
        }), "a " + type.getSimpleName() + " is journaled: " + journal());
        return found.getFirst();
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> kv(FakeEngine.Received r) {
        return (Map<String, Object>) r.body().get("kv_transfer_params");
    }

    // ------------------------------------------------------------------ tests

    @Test
    void registrationsExpireWhenHeartbeatsStopAndRequestsThenGetA503() throws Exception {
        ProxyService p = proxy(ProxyOptions.loopback().withRegistrationTtl(TTL)
                .withTimeouts(Duration.ofMinutes(10), Duration.ofMinutes(10)));
        FakeEngine pe = engine("P", 1, p, "WRITE");
        FakeEngine de = engine("D", 1, p, "WRITE");
        pair(p, pe, de);
        // heartbeats keep them: well past the ttl, both are still there
        Thread.sleep(TTL.toMillis() * 3 / 2);
        assertEquals(1, p.producers());
        assertEquals(1, p.consumers());
        de.stopHeartbeat();
        assertTrue(eventually(WAIT, () -> p.consumers() == 0), "the decode instance expired");
        assertEquals(1, p.producers());
        // no hang: the answer is the proxy's refusal, not a leg's timeout (the proxy's are 10 min,
        // beyond the client's wait, so a request that waited on a leg or an instance never answers)
        HttpResponse<String> r = post(p, "/v1/completions", "{\"prompt\":\"hi\",\"max_tokens\":4}");
        assertEquals(503, r.statusCode(), r.body());
        assertTrue(r.body().contains("no decode (kv_consumer) instance"), r.body());
        assertTrue(pe.received().isEmpty(), "no leg went out");
        HttpResponse<String> health = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + p.httpPort()
                + "/health")).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(503, health.statusCode(), health.body());

        List<ProxyEvent.InstanceRegistered> reg = journaled(ProxyEvent.InstanceRegistered.class);
        assertEquals(2, reg.size(), "one entry per instance, not one per heartbeat: " + reg);
        assertEquals(List.of("P", "D"), reg.stream().map(ProxyEvent.InstanceRegistered::role).sorted(
                java.util.Comparator.reverseOrder()).toList());
        ProxyEvent.InstanceExpired exp = awaitJournaled(ProxyEvent.InstanceExpired.class, e -> true);
        assertEquals(de.httpAddress(), exp.httpAddress());
        assertEquals("D", exp.role());
        ProxyEvent.RequestRejected rej = awaitJournaled(ProxyEvent.RequestRejected.class, e -> true);
        assertEquals(503, rej.status());

        // it comes back with its next heartbeat
        de.register(p.pingPort(), "WRITE", BEAT);
        assertTrue(eventually(WAIT, () -> p.consumers() == 1), "re-registered");
    }

    @Test
    void writeSendsBothLegsAtOnceComposedAsTheToyProxyWithThePrefillRankChosen() throws Exception {
        ProxyService p = proxy(ProxyOptions.loopback().withMode(TransferMode.WRITE));
        FakeEngine pe = engine("P", 2, p, "WRITE");
        FakeEngine de = engine("D", 1, p, "WRITE");
        pair(p, pe, de);
        // the prefill answers only once the decode leg has arrived: a proxy that waited for the
        // prefill before sending the decode gets no prefill answer (and the test its 504)
        pe.delayMs = 400;
        pe.holdUntil = de.firstReceived;
        HttpResponse<String> r = post(p, "/v1/completions",
                "{\"model\":\"m\",\"prompt\":\"hello world\",\"max_tokens\":5,\"stop\":[\"x\"],\"temperature\":0.5}");
        assertEquals(200, r.statusCode(), r.body());
        assertTrue(r.body().contains("decoded text"), r.body());

        FakeEngine.Received pr = pe.received().getFirst();
        FakeEngine.Received dr = de.received().getFirst();
        // concurrent: the decode leg arrived before the prefill answered
        assertTrue(dr.atNanoTime() < pe.answeredAtNanoTime.getFirst(), "WRITE dispatches decode without waiting");
        var m = RID.matcher(pr.requestId());
        assertTrue(m.matches(), pr.requestId());
        assertEquals(pe.handshakePort, Integer.parseInt(m.group(1)));
        assertEquals(pe.notifyPort, Integer.parseInt(m.group(2)));
        assertEquals(de.handshakePort, Integer.parseInt(m.group(3)));
        assertEquals(de.notifyPort, Integer.parseInt(m.group(4)));
        assertEquals(pr.requestId(), dr.requestId(), "both legs carry one X-Request-Id");
        assertEquals("/v1/completions", pr.path());

        // the prefill leg: one token, no stream, ignore_eos, no stop; the toy's params in its order
        assertEquals(1L, pr.body().get("max_tokens"));
        assertEquals(false, pr.body().get("stream"));
        assertEquals(true, pr.body().get("ignore_eos"));
        assertFalse(pr.body().containsKey("stop"));
        assertEquals(0.5, pr.body().get("temperature"));
        String tid = (String) kv(pr).get("transfer_id");
        assertTrue(TID.matcher(tid).matches(), tid);
        assertEquals(List.of("remote_dp_size", "remote_tp_size", "transfer_id", "do_remote_decode",
                "do_remote_prefill", "remote_engine_id", "remote_block_ids"), List.copyOf(kv(pr).keySet()));
        assertEquals(1L, kv(pr).get("remote_dp_size"));
        assertEquals(true, kv(pr).get("do_remote_decode"));

        // the prefill rank is the request count (1) modulo its DP size, as the toy proxy picks it,
        // sent as a header and to the decode
        int pinned = 1;
        assertEquals(Integer.toString(pinned), pr.dpRank());
        assertNull(dr.dpRank(), "decode has dp_size 1: no rank header");
        assertEquals(4L, dr.body().get("max_tokens"));
        assertEquals(List.of("x"), dr.body().get("stop"), "the decode keeps the client's stop");
        assertEquals(false, kv(dr).get("do_remote_decode"));
        assertEquals(true, kv(dr).get("do_remote_prefill"));
        assertEquals(tid, kv(dr).get("transfer_id"));
        assertNull(kv(dr).get("remote_block_ids"), "WRITE: decode does not wait for the blocks");
        assertEquals(2L, kv(dr).get("remote_dp_size"));
        assertEquals((long) pinned, kv(dr).get("remote_dp_rank"));
        assertFalse(kv(dr).containsKey("remote_dp_rank_override"), "the toy proxy sends no override");

        ProxyEvent.RequestCompleted done = awaitJournaled(ProxyEvent.RequestCompleted.class, e -> true);
        assertEquals(200, done.httpStatus());
        HttpResponse<String> health = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + p.httpPort()
                + "/health")).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, health.statusCode(), health.body());
        assertEquals("{\"status\":\"ok\",\"mode\":\"WRITE\",\"prefill_instances\":1,\"decode_instances\":1}",
                health.body());
        HttpResponse<String> list = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + p.httpPort()
                + "/v1/instances")).build(), HttpResponse.BodyHandlers.ofString());
        assertTrue(list.body().contains("\"http_address\":\"" + pe.httpAddress() + "\"") && list.body()
                .contains("\"dp_size\":2"), list.body());
        ProxyEvent.RequestRouted routed = journaled(ProxyEvent.RequestRouted.class).getFirst();
        assertEquals(pr.requestId(), routed.requestId());
        assertEquals(tid, routed.transferId());
        assertEquals(pinned, routed.prefillDpRank());
        assertEquals("WRITE", routed.mode());
        List<ProxyEvent.LegAnswered> legs = journaled(ProxyEvent.LegAnswered.class);
        assertEquals(2, legs.size(), legs.toString());
        ProxyEvent.LegAnswered pl = legs.stream().filter(l -> l.leg().equals("prefill")).findFirst().orElseThrow();
        assertEquals(tid, pl.kvTransferParams().get("transfer_id"), "the returned handoff is journaled");
        assertEquals("length", pl.finishReason());
        assertTrue(pl.elapsedNs() >= Duration.ofMillis(400).toNanos());
    }

    @Test
    void readSerialisesAndStreamsTheDecodeWithThePrefillsHandoff() throws Exception {
        ProxyService p = proxy(ProxyOptions.loopback().withNotifyPortShift(1000));
        FakeEngine pe = engine("P", 1, p, "READ");
        FakeEngine de = engine("D", 1, p, "READ");
        pair(p, pe, de);
        pe.delayMs = 200;
        de.chunks = 4;
        HttpResponse<String> r = post(p, "/v1/chat/completions",
                "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":6,\"stream\":true,"
                        + "\"stream_options\":{\"include_usage\":true}}");
        assertEquals(200, r.statusCode(), r.body());
        assertEquals("text/event-stream", r.headers().firstValue("content-type").orElse(""));
        assertTrue(r.body().startsWith("data: "), r.body());
        assertTrue(r.body().contains("\"t3\""), r.body());
        assertTrue(r.body().endsWith("data: [DONE]\n\n"), r.body());

        FakeEngine.Received pr = pe.received().getFirst();
        FakeEngine.Received dr = de.received().getFirst();
        assertEquals("/v1/chat/completions", pr.path());
        assertTrue(dr.atNanoTime() > pe.answeredAtNanoTime.getFirst(), "READ sends decode after the prefill answered");
        assertFalse(pr.body().containsKey("stream_options"));
        assertEquals(false, pr.body().get("stream"));
        assertEquals(true, dr.body().get("stream"));
        assertEquals(List.of(List.of(4L, 5L, 6L)), kv(dr).get("remote_block_ids"));
        assertEquals("127.0.0.1:" + pe.handshakePort, kv(dr).get("remote_engine_id"));
        assertEquals(kv(pr).get("transfer_id"), kv(dr).get("transfer_id"));
        // --notify-port-shift moves the notify ports embedded in the request id (not the handshake
        // ports, which a tap does not carry, nor the registrations)
        var m = RID.matcher(pr.requestId());
        assertTrue(m.matches(), pr.requestId());
        assertEquals(pe.handshakePort, Integer.parseInt(m.group(1)));
        assertEquals(pe.notifyPort + 1000, Integer.parseInt(m.group(2)));
        assertEquals(de.notifyPort + 1000, Integer.parseInt(m.group(4)));

        ProxyEvent.LegAnswered dl = awaitJournaled(ProxyEvent.LegAnswered.class, l -> l.leg().equals("decode"));
        assertEquals("length", dl.finishReason(), "the finish reason is read from the stream");
        assertEquals(200, awaitJournaled(ProxyEvent.RequestCompleted.class, e -> true).httpStatus());
    }

    @Test
    void aClientThatGoesAwayCancelsTheDecodeLeg() throws Exception {
        ProxyService p = proxy(ProxyOptions.loopback());
        FakeEngine pe = engine("P", 1, p, "WRITE");
        FakeEngine de = engine("D", 1, p, "WRITE");
        pair(p, pe, de);
        de.chunks = 1_000_000; // a stream that only a cancellation ends (a day of chunks)
        de.chunkDelayMs = 100;
        String body = "{\"prompt\":\"hi\",\"max_tokens\":100,\"stream\":true}";
        try (Socket s = new Socket("127.0.0.1", p.httpPort())) {
            OutputStream out = s.getOutputStream();
            out.write(("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    + "Content-Length: " + body.length() + "\r\n\r\n" + body).getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            StringBuilder got = new StringBuilder();
            byte[] buf = new byte[4096];
            while (!got.toString().contains("\"t0\"")) {
                int n = in.read(buf);
                assertTrue(n > 0, "the stream started");
                got.append(new String(buf, 0, n, StandardCharsets.UTF_8));
            }
        }
        assertTrue(eventually(WAIT, () -> de.closedConnections.get() >= 1),
                "the proxy closed its decode connection");
        ProxyEvent.LegCancelled c = awaitJournaled(ProxyEvent.LegCancelled.class, e -> e.leg().equals("decode"));
        assertEquals("client disconnected", c.reason());
        assertEquals(499, awaitJournaled(ProxyEvent.RequestCompleted.class, e -> true).httpStatus());
        assertTrue(journaled(ProxyEvent.LegAnswered.class).stream().noneMatch(l -> l.leg().equals("decode")));
    }

    @Test
    void theJournalsTimeNeverGoesBackUnderConcurrentRequests() throws Exception {
        ProxyService p = proxy(ProxyOptions.loopback());
        FakeEngine pe = engine("P", 1, p, "WRITE");
        FakeEngine de = engine("D", 1, p, "WRITE");
        pair(p, pe, de);
        de.chunks = 4;
        int requests = 96;
        List<java.util.concurrent.CompletableFuture<HttpResponse<String>>> answers = new ArrayList<>();
        for (int i = 0; i < requests; i++) {
            answers.add(http.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + p.httpPort()
                            + "/v1/completions")).timeout(WAIT).header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":\"p" + i + "\",\"max_tokens\":4,\"stream\":"
                            + (i % 2 == 0) + "}")).build(), HttpResponse.BodyHandlers.ofString()));
        }
        for (var a : answers) {
            assertEquals(200, a.get().statusCode());
        }
        assertTrue(eventually(WAIT,
                () -> journaled(ProxyEvent.RequestCompleted.class).size() == requests), "every request journaled");
        long last = Long.MIN_VALUE;
        long lastSeq = -1;
        int entries = 0;
        try (JournalReader r = JournalReader.open(dir.resolve("proxy"))) {
            for (JournalEntry e : r) {
                if (e instanceof JournalEntry.Proxy px) {
                    entries++;
                    assertTrue(px.atNs() >= last, "time goes back at seq " + px.seq() + ": " + px.atNs() + " < "
                            + last + " (seq " + lastSeq + ")");
                    assertEquals(px.atNs(), px.event().atNs(), "the entry's time is its record's");
                    last = px.atNs();
                    lastSeq = px.seq();
                }
            }
        }
        assertTrue(entries >= requests * 6, "routed, two legs sent and answered, completed: " + entries);
        // the durations are still measured where they happened: a request's elapsed time covers its legs'
        for (ProxyEvent.RequestCompleted c : journaled(ProxyEvent.RequestCompleted.class)) {
            assertTrue(c.elapsedNs() > 0, c.toString());
        }
    }

    @Test
    void aDecodeThatDiesMidStreamEndsTheClientsStreamWithAnErrorEvent() throws Exception {
        ProxyService p = proxy(ProxyOptions.loopback());
        FakeEngine pe = engine("P", 1, p, "WRITE");
        FakeEngine de = engine("D", 1, p, "WRITE");
        pair(p, pe, de);
        de.dieAfterChunks = 2;
        HttpResponse<String> r = post(p, "/v1/completions", "{\"prompt\":\"hi\",\"max_tokens\":9,\"stream\":true}");
        assertEquals(200, r.statusCode(), "the status was out before the decode died");
        assertTrue(r.body().startsWith("data: {"), r.body());
        assertTrue(r.body().contains("\"t1\""), "the chunks before the cut reach the client: " + r.body());
        String[] events = r.body().split("\n\n");
        assertEquals("data: [DONE]", events[events.length - 1], r.body());
        String error = events[events.length - 2];
        assertTrue(error.startsWith("data: {\"error\":"), "an OpenAI error event says the stream broke: " + r.body());
        assertTrue(error.contains("decode leg") && error.contains("\"code\":502"), error);
        ProxyEvent.LegFailed lf = awaitJournaled(ProxyEvent.LegFailed.class, e -> e.leg().equals("decode"));
        assertTrue(lf.reason().contains("failed"), lf.reason());
        ProxyEvent.RequestCompleted done = awaitJournaled(ProxyEvent.RequestCompleted.class, e -> true);
        assertEquals(200, done.httpStatus());
        assertTrue(eventually(WAIT, () -> {
            try {
                return metrics(p).getOrDefault("kvledger_proxy_requests_total{outcome=\"failed\",status=\"200\"}", 0.0) == 1.0;
            } catch (Exception e) {
                return false;
            }
        }), "counted as failed");
    }

    @Test
    void aHungPrefillTimesOutWithA504AndCancelsTheDecode() throws Exception {
        // the prefill timeout leaves the decode leg (sent at once in WRITE) time to arrive on a loaded machine
        Duration prefillTimeout = Duration.ofSeconds(5);
        ProxyService p = proxy(ProxyOptions.loopback().withTimeouts(prefillTimeout, Duration.ofMinutes(10)));
        FakeEngine pe = engine("P", 1, p, "WRITE");
        FakeEngine de = engine("D", 1, p, "WRITE");
        pair(p, pe, de);
        pe.hang = true;
        de.hang = true; // neither leg ever answers: only the prefill timeout can end the request
        long t0 = System.nanoTime();
        HttpResponse<String> r = post(p, "/v1/completions", "{\"prompt\":\"hi\",\"max_tokens\":3}");
        long took = System.nanoTime() - t0;
        // bounded by the prefill timeout: the answer came (the decode leg, whose timeout is 10 min,
        // never answers), it is the timeout's 504 saying so, and it came no sooner than the timeout
        assertEquals(504, r.statusCode(), r.body());
        assertTrue(r.body().contains("no answer within 5.0 s"), r.body());
        assertTrue(took >= prefillTimeout.toNanos(), "the timeout fired, not something sooner: " + took + " ns");
        ProxyEvent.LegFailed f = awaitJournaled(ProxyEvent.LegFailed.class, e -> e.leg().equals("prefill"));
        assertTrue(f.reason().contains("no answer within 5.0 s"), f.reason());
        assertTrue(f.elapsedNs() >= prefillTimeout.toNanos(), "the leg waited its timeout: " + f);
        assertEquals(1, pe.received().size(), "the prefill leg was sent");
        assertEquals(1, de.received().size(), "the decode leg was sent at once");
        ProxyEvent.LegCancelled c = awaitJournaled(ProxyEvent.LegCancelled.class, e -> e.leg().equals("decode"));
        assertTrue(c.reason().startsWith("prefill leg failed"), c.reason());
        assertTrue(eventually(WAIT, () -> de.closedConnections.get() >= 1), "decode connection closed");
        assertTrue(de.answeredAtNanoTime.isEmpty(), "the decode never answered");
    }

    @Test
    void aDeadPrefillOrABadHandoffIsA502AndReadNeverSendsTheDecode() throws Exception {
        ProxyService p = proxy(ProxyOptions.loopback().withRegistrationTtl(TTL)
                .withTimeouts(Duration.ofMinutes(10), Duration.ofMinutes(10)));
        FakeEngine pe = engine("P", 1, p, "READ");
        FakeEngine de = engine("D", 1, p, "READ");
        pair(p, pe, de);
        pe.echoTransferId = "tx-somebody-else";
        HttpResponse<String> r = post(p, "/v1/completions", "{\"prompt\":\"hi\",\"max_tokens\":3}");
        assertEquals(502, r.statusCode(), r.body());
        assertTrue(r.body().contains("invalid handoff") && r.body().contains("tx-somebody-else"), r.body());
        assertTrue(de.received().isEmpty(), "no decode leg for a bad handoff");
        ProxyEvent.LegFailed f = awaitJournaled(ProxyEvent.LegFailed.class, e -> e.leg().equals("prefill"));
        assertEquals(200, f.httpStatus());
        String scrape = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + p.httpPort() + "/metrics"))
                .build(), HttpResponse.BodyHandlers.ofString()).body();
        assertTrue(scrape.contains("kvledger_proxy_handoffs_rejected_total{proxy=\"proxy\",reason=\"transfer_id\"} 1.0"),
                scrape);
        assertTrue(scrape.contains("kvledger_proxy_leg_duration_seconds_count{leg=\"prefill\",outcome=\"failed\",proxy=\"proxy\"} 1"),
                scrape);

        // a prefill that registers but whose HTTP port is closed (the first one expires meanwhile)
        pe.stopHeartbeat();
        FakeEngine gone = keep(FakeEngine.start("P", 1));
        gone.server.disposeNow(WAIT);
        gone.register(p.pingPort(), "READ", BEAT);
        assertTrue(eventually(WAIT, () -> p.producers() == 1
                && journaled(ProxyEvent.InstanceExpired.class).size() == 1), "only the dead prefill is left");
        // no hang: the refused connection is the answer (a 502 naming it), not the prefill timeout
        // (10 min, beyond the client's wait; its expiry would be a 504 'no answer within')
        HttpResponse<String> dead = post(p, "/v1/completions", "{\"prompt\":\"hi\",\"max_tokens\":3}");
        assertEquals(502, dead.statusCode(), dead.body());
        assertTrue(dead.body().contains("did not answer") && dead.body().contains("Connection refused"), dead.body());
        ProxyEvent.LegFailed refused = awaitJournaled(ProxyEvent.LegFailed.class,
                e -> e.leg().equals("prefill") && e.reason().contains("Connection refused"));
        assertNull(refused.httpStatus(), "no HTTP answer: " + refused);
        assertTrue(de.received().isEmpty());
    }

    @Test
    void withOtlpABadHandoffIsAnErrorSpanWithAFailedPrefillChildAndNoDecode() throws Exception {
        try (OtlpReceiver receiver = OtlpReceiver.start()) {
            ProxyService p = ProxyService.start(ProxyOptions.loopback().withOtlp(receiver.url()), "test");
            try {
                FakeEngine pe = engine("P", 1, p, "READ");
                FakeEngine de = engine("D", 1, p, "READ");
                pair(p, pe, de);
                pe.echoTransferId = "tx-somebody-else";
                assertEquals(502, post(p, "/v1/completions", "{\"prompt\":\"hi\",\"max_tokens\":3}").statusCode());
                // a refused request (no leg) is no trace
                assertEquals(400, post(p, "/v1/completions", "{\"prompt\":\"hi\",\"n\":2}").statusCode());
            } finally {
                p.close();
            }
            assertEquals(2, p.otlpSpansExported(), "the request's span and its prefill leg's");
            List<OtlpReceiver.Received> spans = receiver.spans();
            assertEquals(2, spans.size(), spans.toString());
            OtlpReceiver.Received root = spans.stream().filter(x -> x.name().equals("kvledger.proxy")).findFirst()
                    .orElseThrow();
            OtlpReceiver.Received prefill = spans.stream().filter(x -> x.name().equals("kvledger.proxy.prefill"))
                    .findFirst().orElseThrow();
            assertEquals(LegSpans.traceId(root.attr("kvledger.transfer_id")), root.traceId());
            assertEquals("502", root.attr("http.response.status_code"));
            assertEquals(Status.StatusCode.STATUS_CODE_ERROR, root.span().getStatus().getCode());
            assertEquals(root.spanId(), prefill.parentSpanId());
            assertEquals(root.traceId(), prefill.traceId());
            assertEquals("failed", prefill.attr("kvledger.outcome"));
            assertTrue(prefill.attr("kvledger.reason").contains("invalid handoff"), prefill.attr("kvledger.reason"));
            assertEquals(Status.StatusCode.STATUS_CODE_ERROR, prefill.span().getStatus().getCode());
        }
    }

    @Test
    void requestsACarefulRouterRefusesAre400sWithNoLegSent() throws Exception {
        ProxyService p = proxy(ProxyOptions.loopback());
        FakeEngine pe = engine("P", 1, p, "WRITE");
        FakeEngine de = engine("D", 1, p, "WRITE");
        pair(p, pe, de);
        assertEquals(400, post(p, "/v1/completions", "{\"prompt\":\"hi\"}", "X-Request-Id",
                "mine___decode_addr_host:1.2.3.4").statusCode());
        assertEquals(400, post(p, "/v1/completions", "{\"prompt\":\"hi\",\"request_id\":\"x___prefill_addr_y\"}")
                .statusCode());
        HttpResponse<String> n = post(p, "/v1/completions", "{\"prompt\":\"hi\",\"n\":2}");
        assertEquals(400, n.statusCode());
        assertTrue(n.body().contains("n must be 1"), n.body());
        HttpResponse<String> batch = post(p, "/v1/completions", "{\"prompt\":[\"a\",\"b\"]}");
        assertEquals(400, batch.statusCode());
        assertTrue(batch.body().contains("batched prompts"), batch.body());
        assertEquals(400, post(p, "/v1/completions", "not json").statusCode());
        assertEquals(400, post(p, "/v1/chat/completions", "{\"messages\":[]}").statusCode());
        assertEquals(200, post(p, "/v1/completions", "{\"prompt\":[1,2,3],\"max_tokens\":2}").statusCode(),
                "one tokenized prompt is not a batch");
        assertEquals(1, pe.received().size());
        assertTrue(eventually(WAIT, () -> journaled(ProxyEvent.RequestRejected.class).size() == 6));
        HttpResponse<String> metrics = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + p.httpPort()
                + "/metrics")).build(), HttpResponse.BodyHandlers.ofString());
        assertTrue(metrics.body().contains(
                "kvledger_proxy_requests_total{outcome=\"rejected\",proxy=\"proxy\",status=\"400\"} 6.0"), metrics.body());
        assertTrue(metrics.body().contains("kvledger_proxy_instances{proxy=\"proxy\",role=\"producer\"} 1.0"),
                metrics.body());
    }

    /**
     * A DEALER whose connection is known to work (JeroMQ 0.6.0 leaves about 2 % of fresh connects
     * without a ZMTP handshake): a HELLO registration, which the proxy reads and ignores, must
     * arrive first.
     */
    private static org.zeromq.ZMQ.Socket dealer(org.zeromq.ZContext ctx, ProxyService p) {
        byte[] hello = new io.kvledger.wire.RegistrationCodec().encode(io.kvledger.wire.Registration.hello());
        for (int attempt = 0; attempt < 10; attempt++) {
            org.zeromq.ZMQ.Socket s = ctx.createSocket(org.zeromq.SocketType.DEALER);
            s.setLinger(0);
            s.connect("tcp://127.0.0.1:" + p.pingPort());
            long before = p.registrationsReceived();
            s.send(hello, 0);
            // long enough for a working connection on a loaded machine; a lost handshake never reads
            if (eventually(Duration.ofSeconds(15), () -> p.registrationsReceived() > before)) {
                return s;
            }
            ctx.destroySocket(s);
        }
        throw new AssertionError("no DEALER connection to the proxy in 10 attempts");
    }

    @Test
    void malformedRegistrationsAreJournaledAndIgnored() throws Exception {
        ProxyService p = proxy(ProxyOptions.loopback().withMode(TransferMode.WRITE));
        io.kvledger.wire.RegistrationCodec codec = new io.kvledger.wire.RegistrationCodec();
        try (org.zeromq.ZContext ctx = new org.zeromq.ZContext(1)) {
            org.zeromq.ZMQ.Socket s = dealer(ctx, p);
            assertEquals(0, p.registrationsRejected(), "HELLO is accepted and ignored");
            byte[] notMsgpack = "hello proxy".getBytes(StandardCharsets.US_ASCII);
            byte[] missing;
            try (var pk = org.msgpack.core.MessagePack.newDefaultBufferPacker()) {
                pk.packMapHeader(2).packString("type").packString("P").packString("http_address").packString("127.0.0.1:1");
                missing = pk.toByteArray();
            }
            byte[] wrongMode = codec.encode(new io.kvledger.wire.Registration("P", "127.0.0.1:9", "host:127.0.0.1,"
                    + "handshake:6301,notify:61005", 1, 1, "READ"));
            byte[] badZmq = codec.encode(new io.kvledger.wire.Registration("D", "127.0.0.1:9", "host=127.0.0.1", 1, 1,
                    "WRITE"));
            byte[] good = codec.encode(new io.kvledger.wire.Registration("D", "127.0.0.1:9", "host:127.0.0.1,"
                    + "handshake:7301,notify:62005", 1, 1, "WRITE"));
            s.send(notMsgpack, 0);
            s.send(missing, 0);
            s.send(wrongMode, 0);
            s.send(badZmq, 0);
            s.sendMore(new byte[0]); // an empty delimiter, as a REQ-style peer would add
            s.send(good, 0);
            assertTrue(eventually(WAIT, () -> p.registrationsRejected() == 5),
                    "five rejected, got " + p.registrationsRejected());
            assertEquals(0, p.producers() + p.consumers(), "nothing registered from a malformed frame");
            s.send(good, 0);
            assertTrue(eventually(WAIT, () -> p.consumers() == 1), "the socket still reads");
        }
        List<String> reasons = new ArrayList<>();
        assertTrue(eventually(WAIT, () -> {
            reasons.clear();
            journaled(ProxyEvent.RegistrationRejected.class).forEach(r -> reasons.add(r.reason()));
            return reasons.size() == 5;
        }), reasons.toString());
        assertTrue(reasons.get(0).startsWith("NOT_A_MAP"), reasons.get(0));
        assertTrue(reasons.get(1).contains("registration without 'zmq_address'"), reasons.get(1));
        assertEquals("transfer_mode READ of 127.0.0.1:9 does not match the proxy's WRITE", reasons.get(2));
        assertTrue(reasons.get(3).startsWith("Malformed zmq_address 'host=127.0.0.1'"), reasons.get(3));
        assertTrue(reasons.get(4).startsWith("expected 2 frames (identity, msgpack map), got 3"), reasons.get(4));
        ProxyEvent.RegistrationRejected first = journaled(ProxyEvent.RegistrationRejected.class).getFirst();
        assertEquals("hello proxy", new String(first.frame(), StandardCharsets.US_ASCII), "the frame is kept");
        assertEquals(1, journaled(ProxyEvent.InstanceRegistered.class).size());

        // the registration counters are exported and move, also after a collection (a function
        // counter over an object nothing else held read NaN, shown as nothing, once collected)
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        Map<String, Double> m = metrics(p);
        assertEquals((double) p.registrationsReceived(), m.get("kvledger_proxy_registrations_received_total"), m.toString());
        assertEquals(5.0, m.get("kvledger_proxy_registrations_rejected_total"), m.toString());
        assertTrue(p.registrationsReceived() >= 7, "every frame read is counted");
        assertEquals(0.0, m.get("kvledger_proxy_instances{role=\"producer\"}"));
        assertEquals(1.0, m.get("kvledger_proxy_instances{role=\"consumer\"}"));
        for (Map.Entry<String, Double> e : m.entrySet()) {
            assertFalse(e.getValue().isNaN(), "a series reads NaN: " + e.getKey());
        }
    }

    /** The proxy's /metrics: each series (its name and labels but {@code proxy}) and its value. */
    private Map<String, Double> metrics(ProxyService p) throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + p.httpPort()
                + "/metrics")).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode());
        Map<String, Double> out = new java.util.TreeMap<>();
        for (String line : r.body().split("\n")) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            int sp = line.lastIndexOf(' ');
            String series = line.substring(0, sp).replaceAll("proxy=\"[^\"]*\",?", "").replace(",}", "}")
                    .replace("{}", "");
            out.put(series, Double.parseDouble(line.substring(sp + 1)));
        }
        return out;
    }

    @Test
    void theProxyRefusesWhatTheNodesEngineRefuses() {
        // each of these is a 400 from a node's built-in engine; the proxy refuses it before any leg
        String[][] bad = {
            {"/completions", "{\"prompt\":\"\"}", "prompt"},
            {"/completions", "{\"prompt\":\"   \"}", "prompt"},
            {"/completions", "{\"prompt\":[]}", "prompt"},
            {"/completions", "{\"prompt\":[1,-2]}", "token ids"},
            {"/completions", "{\"prompt\":7}", "prompt"},
            {"/completions", "{\"prompt\":\"hi\",\"stream\":\"yes\"}", "stream"},
            {"/completions", "{\"prompt\":\"hi\",\"stream_options\":{\"include_usage\":true}}", "stream_options"},
            {"/completions", "{\"prompt\":\"hi\",\"stream\":true,\"stream_options\":3}", "stream_options"},
            {"/completions", "{\"prompt\":\"hi\",\"kv_transfer_params\":[1]}", "kv_transfer_params"},
            {"/completions", "{\"prompt\":\"hi\",\"n\":\"1\"}", "n must be 1"},
            {"/completions", "{\"prompt\":\"hi\",\"max_tokens\":1.5}", "max_tokens"},
            {"/chat/completions", "{\"messages\":[\"hi\"]}", "message"},
            {"/chat/completions", "{\"messages\":[{\"content\":\"hi\"}]}", "role"},
            {"/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_completion_tokens\":0}",
                "max_completion_tokens"},
        };
        for (String[] b : bad) {
            @SuppressWarnings("unchecked")
            Map<String, Object> body = (Map<String, Object>) Json.parse(b[1]);
            String why = Checks.request(body, null, b[0].startsWith("/chat"));
            assertNotNull(why, b[1] + " is refused");
            assertTrue(why.contains(b[2]), b[1] + ": " + why);
        }
        for (String ok : List.of("{\"prompt\":\"hi\",\"stream\":true,\"stream_options\":{\"include_usage\":true}}",
                "{\"prompt\":[1,2,3],\"stream\":false,\"kv_transfer_params\":{\"x\":1}}", "{\"prompt\":[\"one\"]}")) {
            @SuppressWarnings("unchecked")
            Map<String, Object> body = (Map<String, Object>) Json.parse(ok);
            assertNull(Checks.request(body, null, false), ok);
        }
    }

    @Test
    void checksOfTheHandoff() {
        String tid = "tx-1";
        assertNull(Checks.handoff(Map.of("transfer_id", tid), tid, TransferMode.WRITE));
        assertNotNull(Checks.handoff(null, tid, TransferMode.WRITE));
        assertNotNull(Checks.handoff(Map.of("transfer_id", tid), tid, TransferMode.READ), "READ needs blocks and engine");
        assertNull(Checks.handoff(Json.parse("{\"transfer_id\":\"tx-1\",\"remote_engine_id\":\"h:1\","
                + "\"remote_block_ids\":[1,2]}"), tid, TransferMode.READ));
        assertNotNull(Checks.handoff(Json.parse("{\"transfer_id\":\"tx-1\",\"remote_engine_id\":\"h:1\","
                + "\"remote_block_ids\":[[1],\"x\"]}"), tid, TransferMode.READ));
        assertNotNull(Checks.handoff(Json.parse("{\"transfer_id\":\"tx-1\",\"remote_notify_port\":0}"), tid,
                TransferMode.WRITE));
        assertNotNull(Checks.handoff(Json.parse("{\"transfer_id\":\"tx-1\",\"remote_host\":\"\"}"), tid,
                TransferMode.WRITE));
    }
}
