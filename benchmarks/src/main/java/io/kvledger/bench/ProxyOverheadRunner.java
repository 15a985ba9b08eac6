package io.kvledger.bench;

import io.kvledger.core.config.TransferMode;
import io.kvledger.journal.json.Json;
import io.kvledger.proxy.ProxyOptions;
import io.kvledger.proxy.ProxyService;
import io.kvledger.wire.Registration;
import io.kvledger.zmq.EventSink;
import io.kvledger.zmq.RegistrationHeartbeat;
import io.netty.handler.codec.http.HttpHeaderNames;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;
import reactor.core.publisher.Mono;
import reactor.netty.ByteBufFlux;
import reactor.netty.DisposableServer;
import reactor.netty.http.client.HttpClient;
import reactor.netty.http.server.HttpServer;
import reactor.netty.resources.ConnectionProvider;

/**
 * Question: what does {@code kvledger proxy} add to a request's latency? A measured runner, not
 * JMH: two fake OpenAI engines on loopback (Reactor Netty; a prefill that answers one token with
 * MoRIIO's handoff, a decode that answers a short completion; both register with the proxies over
 * a real ZMQ DEALER), and three ways of sending the same non-streamed completion, one request in
 * flight, interleaved request by request so that every case sees the same machine:
 * <ul>
 *   <li>{@code direct}: straight to the decode engine (one HTTP hop);</li>
 *   <li>{@code proxy}: through a proxy with its journal on (the usual way to run it): the prefill
 *       and decode legs (WRITE: at once; READ: one after the other), the checks, the journal;</li>
 *   <li>{@code proxy-no-journal}: the same proxy code with no journal.</li>
 * </ul>
 * The client is one Reactor-Netty client with a keep-alive pool for all three. Printed per round:
 * p50 and p99 of each case; at the end, the medians over the rounds and the overhead (proxy minus
 * direct) at p50 and p99.
 *
 * <p>Usage: {@code java <project JVM flags> -cp benchmarks/target/benchmarks.jar
 * io.kvledger.bench.ProxyOverheadRunner [--requests N] [--rounds R] [--warmup N] [--mode WRITE|READ]}
 * (defaults: 2000 per case and round, 5 rounds, 3000 warm-up requests per case, WRITE).
 */
public final class ProxyOverheadRunner {

    private ProxyOverheadRunner() {}

    /** A fake engine: an HTTP server that registers with the proxies. */
    static final class Engine implements AutoCloseable {
        final DisposableServer server;
        final List<RegistrationHeartbeat> beats = new ArrayList<>();

        Engine(boolean prefill) {
            this.server = HttpServer.create().host("127.0.0.1").port(0)
                    .route(r -> r.post("/v1/completions", (req, res) -> req.receive().aggregate()
                            .asString(StandardCharsets.UTF_8).flatMap(text -> {
                                String answer = prefill ? prefillAnswer(text) : DECODE_ANSWER;
                                return res.header(HttpHeaderNames.CONTENT_TYPE, "application/json")
                                        .sendString(Mono.just(answer)).then();
                            })))
                    .bindNow(Duration.ofSeconds(10));
        }

        void register(int pingPort, String role, String mode) {
            Registration r = new Registration(role, "127.0.0.1:" + server.port(),
                    Registration.zmqAddress("127.0.0.1", 6301, 61005), 1, 1, mode);
            beats.add(RegistrationHeartbeat.start("tcp://127.0.0.1:" + pingPort, r, Duration.ofMillis(500),
                    EventSink.discarding(), System::nanoTime));
        }

        @Override
        public void close() {
            beats.forEach(RegistrationHeartbeat::close);
            server.disposeNow(Duration.ofSeconds(5));
        }
    }

    static final String DECODE_ANSWER = "{\"id\":\"cmpl-x\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,"
            + "\"text\":\" a short decoded answer of a few tokens\",\"finish_reason\":\"length\"}],"
            + "\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":8,\"total_tokens\":16}}";

    @SuppressWarnings("unchecked")
    static String prefillAnswer(String request) {
        Map<String, Object> body = (Map<String, Object>) Json.parse(request);
        Map<String, Object> sent = (Map<String, Object>) body.get("kv_transfer_params");
        Map<String, Object> kv = new LinkedHashMap<>();
        kv.put("do_remote_prefill", true);
        kv.put("do_remote_decode", false);
        kv.put("remote_block_ids", List.of(List.of(1L, 2L, 3L)));
        kv.put("remote_engine_id", "127.0.0.1:6301");
        kv.put("remote_host", "127.0.0.1");
        kv.put("remote_handshake_port", 6301L);
        kv.put("remote_notify_port", 61005L);
        kv.put("remote_dp_rank", 0L);
        kv.put("remote_dp_rank_override", true);
        kv.put("remote_dp_size", 1L);
        kv.put("tp_size", 1L);
        kv.put("transfer_id", sent.get("transfer_id"));
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", "cmpl-p");
        m.put("choices", List.of(Map.of("index", 0L, "text", "A", "finish_reason", "length")));
        m.put("kv_transfer_params", kv);
        return Json.write(m);
    }

    static final String REQUEST = "{\"model\":\"m\",\"prompt\":\"The quick brown fox jumps over the lazy dog\","
            + "\"max_tokens\":9,\"temperature\":0}";

    public static void main(String[] args) throws Exception {
        int requests = 2000;
        int rounds = 5;
        int warmup = 3000;
        TransferMode mode = TransferMode.WRITE;
        for (int i = 0; i < args.length; i += 2) {
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException(args[i] + " needs a value");
            }
            String v = args[i + 1];
            switch (args[i]) {
                case "--requests" -> requests = Integer.parseInt(v);
                case "--rounds" -> rounds = Integer.parseInt(v);
                case "--warmup" -> warmup = Integer.parseInt(v);
                case "--mode" -> mode = TransferMode.valueOf(v.toUpperCase(Locale.ROOT));
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        Path dir = Files.createTempDirectory("kvledger-proxy-bench");
        ConnectionProvider pool = ConnectionProvider.create("bench-client", 8);
        HttpClient client = HttpClient.create(pool);
        try (Engine p = new Engine(true); Engine d = new Engine(false);
             ProxyService journaled = ProxyService.start(ProxyOptions.loopback().withMode(mode)
                     .withJournal(dir.resolve("proxy")), "ProxyOverheadRunner");
             ProxyService bare = ProxyService.start(ProxyOptions.loopback().withMode(mode), "ProxyOverheadRunner")) {
            for (ProxyService s : List.of(journaled, bare)) {
                p.register(s.pingPort(), "P", mode.name());
                d.register(s.pingPort(), "D", mode.name());
            }
            long until = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while ((journaled.producers() + journaled.consumers() + bare.producers() + bare.consumers()) < 4) {
                if (System.nanoTime() > until) {
                    throw new IllegalStateException("the engines did not register within 20 s");
                }
                Thread.sleep(10);
            }
            String[] names = {"direct", "proxy", "proxy-no-journal"};
            String[] urls = {"http://127.0.0.1:" + d.server.port() + "/v1/completions",
                "http://127.0.0.1:" + journaled.httpPort() + "/v1/completions",
                "http://127.0.0.1:" + bare.httpPort() + "/v1/completions"};
            System.out.printf(Locale.ROOT, "%s, %d requests per case and round, %d rounds, %d warm-up, one in flight, "
                    + "%d available processors%n", mode, requests, rounds, warmup,
                    Runtime.getRuntime().availableProcessors());
            run(client, urls, warmup);
            List<long[][]> all = new ArrayList<>();
            for (int r = 0; r < rounds; r++) {
                long[][] ns = run(client, urls, requests);
                all.add(ns);
                StringBuilder b = new StringBuilder(String.format(Locale.ROOT, "round %d:", r + 1));
                for (int c = 0; c < names.length; c++) {
                    b.append(String.format(Locale.ROOT, "  %s p50 %.0f us p99 %.0f us", names[c], pct(ns[c], 0.50) / 1e3,
                            pct(ns[c], 0.99) / 1e3));
                }
                System.out.println(b);
            }
            double[][] p50 = new double[names.length][rounds];
            double[][] p99 = new double[names.length][rounds];
            for (int r = 0; r < rounds; r++) {
                for (int c = 0; c < names.length; c++) {
                    p50[c][r] = pct(all.get(r)[c], 0.50) / 1e3;
                    p99[c][r] = pct(all.get(r)[c], 0.99) / 1e3;
                }
            }
            for (int c = 0; c < names.length; c++) {
                System.out.printf(Locale.ROOT, "%-17s median over rounds: p50 %.0f us, p99 %.0f us%n", names[c],
                        median(p50[c]), median(p99[c]));
            }
            for (int c = 1; c < names.length; c++) {
                System.out.printf(Locale.ROOT, "overhead of %s over direct: p50 +%.0f us, p99 +%.0f us%n", names[c],
                        median(p50[c]) - median(p50[0]), median(p99[c]) - median(p99[0]));
            }
            System.out.printf(Locale.ROOT, "journaled records: %d%n", journaled.journaled());
        } finally {
            pool.dispose();
            try (Stream<Path> s = Files.walk(dir)) {
                s.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
    }

    /** {@code n} requests per case, interleaved; returns the latencies per case, sorted. */
    static long[][] run(HttpClient client, String[] urls, int n) {
        long[][] ns = new long[urls.length][n];
        for (int i = 0; i < n; i++) {
            for (int k = 0; k < urls.length; k++) {
                int c = (i + k) % urls.length; // rotate which case goes first
                long t0 = System.nanoTime();
                String body = client.headers(h -> h.set(HttpHeaderNames.CONTENT_TYPE, "application/json"))
                        .post().uri(urls[c]).send(ByteBufFlux.fromString(Mono.just(REQUEST)))
                        .responseSingle((res, buf) -> res.status().code() == 200 ? buf.asString()
                                : Mono.error(new IllegalStateException(urls[c] + " answered " + res.status())))
                        .block(Duration.ofSeconds(30));
                ns[c][i] = System.nanoTime() - t0;
                if (body == null || !body.contains("decoded answer")) {
                    throw new IllegalStateException(urls[c] + " answered " + body);
                }
            }
        }
        for (long[] a : ns) {
            Arrays.sort(a);
        }
        return ns;
    }

    static double pct(long[] sorted, double p) {
        int i = (int) Math.ceil(p * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
    }

    static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }
}
