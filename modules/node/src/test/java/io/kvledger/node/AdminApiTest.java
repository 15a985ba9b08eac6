package io.kvledger.node;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.moriio.RequestIds;
import io.kvledger.core.moriio.ZmqAddress;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.json.Json;
import io.kvledger.node.cluster.LocalLeg;
import io.kvledger.node.cluster.LiveRouter;
import io.kvledger.node.engine.Completion;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The admin HTTP API of live nodes (two nodes in one JVM, real ZMQ on loopback, the in-JVM
 * transfer engine, real journals), checked with a real HTTP client: metrics, request list and
 * timelines, hang detection, the event stream, the bearer token and the body limit.
 */
class AdminApiTest {

    private static final String TOKEN = "s3cret-token";

    @TempDir
    Path dir;

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void adminApiReportsWhatTheNodesDid(TransferMode mode) throws Exception {
        int base = TestNodes.freePortBase(4);
        NodeService p = NodeService.start(TestNodes.options("P0",
                TestNodes.config(Role.PRODUCER, mode, base, base + 1), dir.resolve("P0"))
                .withHttp("127.0.0.1", 0, TOKEN));
        NodeService d = NodeService.start(TestNodes.options("D0",
                TestNodes.config(Role.CONSUMER, mode, base + 2, base + 3), dir.resolve("D0"))
                .withHttp("127.0.0.1", 0, TOKEN));
        SseClient sse = null;
        try {
            // The event stream of the decode node, open before the requests.
            sse = SseClient.open(http, url(d, "/v1/events"), TOKEN);
            SseEvent ready = sse.next(Duration.ofSeconds(120));
            assertThat(ready).as("the ready event").isNotNull()
                    .satisfies(ev -> assertThat(ev.event()).as("%s", ev).isEqualTo("ready"));

            LiveRouter router = new LiveRouter(List.of(new LocalLeg(p)), List.of(new LocalLeg(d)), mode, 11);
            List<LiveRouter.Outcome> outcomes = new ArrayList<>();
            List<CompletableFuture<LiveRouter.Outcome>> all = new ArrayList<>();
            int n = 5;
            for (int i = 0; i < n; i++) {
                all.add(router.send(40 + 50 * i, 2));
            }
            for (CompletableFuture<LiveRouter.Outcome> f : all) {
                LiveRouter.Outcome o = f.get(120, TimeUnit.SECONDS);
                assertThat(o.ok()).as("request %s: %s", o.xRequestId(), o).isTrue();
                outcomes.add(o);
            }
            int blocks = p.options().layout().numBlocks();
            assertThat(TestNodes.eventually(Duration.ofSeconds(120), () -> p.engine().freeBlocks() == blocks
                    && d.engine().freeBlocks() == blocks)).as("every block freed").isTrue();
            // Every request terminal on both nodes (the producer frees after the ACK).
            for (NodeService node : List.of(p, d)) {
                assertThat(TestNodes.eventually(Duration.ofSeconds(120), () -> terminalCount(node) == n))
                        .as("%s: every request terminal", node.options().nodeId()).isTrue();
            }

            // ---------------------------------------------------------------- /metrics
            // Micrometer holds what a gauge or function counter reads weakly: after a collection,
            // one over an object nothing else holds reads NaN (or stays at 0)
            for (int i = 0; i < 3; i++) {
                System.gc();
            }
            for (NodeService node : List.of(p, d)) {
                HttpResponse<String> r = get(node, "/metrics", TOKEN);
                assertThat(r.statusCode()).isEqualTo(200);
                assertThat(r.headers().firstValue("Content-Type").orElse("")).startsWith("text/plain");
                Map<String, Double> m = parsePrometheus(r.body());
                String id = node.options().nodeId();
                double live = 0;
                double terminal = 0;
                for (RequestPhase ph : RequestPhase.values()) {
                    // a live phase is a gauge of requests in it now, a terminal one a counter of requests that ended there
                    String name = ph.terminal() ? "kvledger_requests_ended_total" : "kvledger_requests";
                    String other = ph.terminal() ? "kvledger_requests" : "kvledger_requests_ended_total";
                    Double v = m.get(series(name, node, "phase", ph.name()));
                    assertThat(v).as("%s %s{phase=%s}", id, name, ph).isNotNull();
                    assertThat(m).as("%s has no %s{phase=%s}", id, other, ph)
                            .doesNotContainKey(series(other, node, "phase", ph.name()));
                    if (ph.terminal()) {
                        terminal += v;
                    } else {
                        live += v;
                    }
                }
                assertThat(live).as("%s: no request is left in a live phase", id).isZero();
                assertThat(terminal).as("%s: every request served ended in a terminal phase", id).isEqualTo(n);
                for (String name : List.of("kvledger_nixl_xfer_time_seconds_count", "kvledger_nixl_xfer_time_seconds_sum",
                        "kvledger_nixl_post_time_seconds_count", "kvledger_nixl_transfer_size_bytes_sum",
                        "kvledger_nixl_transfer_size_bytes_count", "kvledger_nixl_num_failed_transfers_total",
                        "kvledger_nixl_num_failed_notifications_total", "kvledger_nixl_num_kv_expired_reqs_total",
                        "kvledger_inbox_depth", "kvledger_inbox_refused_total", "kvledger_events_lost_total",
                        "kvledger_events_applied_total", "kvledger_ticks_total", "kvledger_journal_lag_seconds",
                        "kvledger_journal_last_seq")) {
                    assertThat(m).as("%s has %s", id, name).containsKey(series(name, node));
                }
                assertThat(m.get(series("kvledger_nixl_num_failed_transfers_total", node))).isZero();
                assertThat(m.get(series("kvledger_nixl_num_kv_expired_reqs_total", node))).isZero();
                assertThat(m.get(series("kvledger_events_lost_total", node))).isZero();
                assertThat(m.get(series("kvledger_events_applied_total", node))).isEqualTo(node.loop().applied());
                assertThat(m.entrySet()).as("%s: no series reads NaN", id).noneMatch(e -> e.getValue().isNaN());
                // each function counter and gauge moves with what it reads
                assertThat(m.get(series("kvledger_journal_last_seq", node))).isEqualTo((double) node.loop().lastSeq())
                        .isPositive();
                assertThat(m.get(series("kvledger_inbox_capacity", node))).isEqualTo((double) node.inbox().capacity());
                assertThat(m.get(series("kvledger_notifies_sent_total", node)))
                        .isEqualTo((double) node.status().notifiesSent());
                assertThat(m.get(series("kvledger_frames_received_total", node)))
                        .isEqualTo((double) node.listener().received());
                assertThat(m.get(series("kvledger_notifies_sent_total", node) ) + m.get(series(
                        "kvledger_frames_received_total", node))).as("%s sent or got notifies", id).isPositive();
                assertThat(m).as("histogram buckets of the transfer time")
                        .containsKey(series("kvledger_nixl_xfer_time_seconds_bucket", node, "le", "+Inf"));

                // The transfer figures match the posts in the node's own journal.
                long[] posts = posts(node);
                boolean posting = (mode == TransferMode.WRITE) == (node == p);
                if (posting) {
                    assertThat(posts[0]).as("%s posted", id).isPositive();
                }
                assertThat(m.get(series("kvledger_nixl_xfer_time_seconds_count", node))).as("%s transfers timed", id)
                        .isEqualTo((double) posts[0]);
                assertThat(m.get(series("kvledger_nixl_post_time_seconds_count", node))).as("%s posts timed", id)
                        .isEqualTo((double) posts[0]);
                assertThat(m.get(series("kvledger_nixl_transfer_size_bytes_sum", node))).as("%s bytes", id)
                        .isEqualTo((double) posts[1] * 2 * node.options().layout().blockLenBytes());
                if (posting) {
                    assertThat(m.get(series("kvledger_nixl_transfer_size_bytes_sum", node))).isPositive();
                }
            }

            // ---------------------------------------------------------------- /v1/requests
            Map<String, Object> list = json(get(d, "/v1/requests", TOKEN), 200);
            assertThat(list.get("matched")).isEqualTo((long) n);
            List<Map<String, Object>> rows = rows(list);
            assertThat(rows).hasSize(n);
            for (Map<String, Object> row : rows) {
                assertThat(row.get("terminal")).isEqualTo(true);
                assertThat((Double) row.get("age_s")).isNotNull().isGreaterThanOrEqualTo(0.0);
                assertThat(row.get("transfer_id")).isNotNull();
            }
            List<String> listed = rows.stream().map(r -> (String) r.get("request_id")).toList();
            for (LiveRouter.Outcome o : outcomes) {
                assertThat(listed).anyMatch(rid -> rid.contains(o.xRequestId()));
            }
            assertThat(json(get(d, "/v1/requests?phase=live", TOKEN), 200).get("matched")).isEqualTo(0L);
            Map<String, Object> two = json(get(d, "/v1/requests?limit=2", TOKEN), 200);
            assertThat(rows(two)).hasSize(2);
            assertThat(two.get("truncated")).isEqualTo(true);
            assertThat(rows(two).get(0).get("request_id")).as("newest first").isEqualTo(listed.get(0));
            // every error in the one shape of kvledger's servers: {"error": {"message", "type", "param", "code"}}
            Map<String, Object> bogus = cast(json(get(d, "/v1/requests?phase=bogus", TOKEN), 400).get("error"));
            assertThat(bogus).containsOnlyKeys("message", "type", "param", "code")
                    .containsEntry("type", "invalid_request_error").containsEntry("code", 400L);
            assertThat((String) bogus.get("message")).contains("bogus");
            Map<String, Object> noToken = cast(json(get(d, "/v1/requests", "wrong"), 401).get("error"));
            assertThat(noToken).containsEntry("message", "missing or wrong bearer token").containsEntry("code", 401L);
            assertThat(get(d, "/v1/requests?limit=-1", TOKEN).statusCode()).isEqualTo(400);

            // ---------------------------------------------------------------- /v1/requests/{id}
            LiveRouter.Outcome first = outcomes.get(0);
            String rid = listed.stream().filter(r -> r.contains(first.xRequestId())).findFirst().orElseThrow();
            Map<String, Object> tl = json(get(d, "/v1/requests/" + URLEncoder.encode(rid, StandardCharsets.UTF_8), TOKEN),
                    200);
            assertThat(tl.get("command")).isEqualTo("inspect");
            assertThat(AdminApiTest.<List<Object>>cast(tl.get("request_ids"))).contains(rid);
            assertThat(AdminApiTest.<List<Object>>cast(tl.get("transfer_ids"))).contains(first.transferId());
            List<Map<String, Object>> lines = cast(tl.get("lines"));
            assertThat(lines).isNotEmpty();
            assertThat(lines.get(0).get("type")).isEqualTo("request_admitted");
            assertThat(lines).anyMatch(l -> "phase_changed".equals(l.get("type")));
            List<Map<String, Object>> ends = cast(tl.get("end"));
            assertThat(ends).singleElement().satisfies(e -> {
                assertThat(e.get("request_id")).isEqualTo(rid);
                assertThat(e.get("terminal")).isEqualTo(true);
            });
            // Lines are in journal order.
            long prev = -1;
            for (Map<String, Object> l : lines) {
                assertThat((Long) l.get("seq")).isGreaterThanOrEqualTo(prev);
                prev = (Long) l.get("seq");
            }
            // The uuid of the proxy id finds the same request; an unknown id is a 404.
            String uuid = first.xRequestId().substring(first.xRequestId().length() - 32);
            List<Map<String, Object>> uuidEnds = cast(json(get(d, "/v1/requests/" + uuid, TOKEN), 200).get("end"));
            assertThat(uuidEnds).singleElement().satisfies(e -> assertThat(e.get("request_id")).isEqualTo(rid));
            assertThat(get(d, "/v1/requests/no-such-request", TOKEN).statusCode()).isEqualTo(404);
            assertThat(get(d, "/v1/requests/cmpl-", TOKEN).statusCode()).as("a prefix of several").isEqualTo(409);

            // ---------------------------------------------------------------- /v1/hangs
            for (NodeService node : List.of(p, d)) {
                Map<String, Object> h = json(get(node, "/v1/hangs?stuck_after=1", TOKEN), 200);
                assertThat(h.get("count")).as("%s hangs: %s", node.options().nodeId(), h).isEqualTo(0L);
                assertThat((Long) h.get("inputs")).isPositive();
            }

            // ---------------------------------------------------------------- /v1/events
            // The stream carried the journal entries of the requests as they were appended.
            List<SseEvent> seen = sse.drainQuiet(Duration.ofSeconds(1), Duration.ofSeconds(10));
            assertThat(seen).anyMatch(ev -> ev.event().equals("entry") && ev.data().contains("\"kind\":\"input\"")
                    && ev.data().contains("\"type\":\"request_admitted\"") && ev.data().contains(rid));
            assertThat(seen).anyMatch(ev -> ev.event().equals("entry") && ev.data().contains("\"kind\":\"derived\"")
                    && ev.data().contains("\"cause_seq\""));
            for (SseEvent ev : seen) {
                if (ev.event().equals("entry")) {
                    Map<String, Object> e = cast(Json.parse(ev.data()));
                    assertThat(ev.id()).isEqualTo(String.valueOf(e.get("seq")));
                }
            }
            assertThat(seen).noneMatch(ev -> ev.event().equals("dropped"));
            // And streams a new request as it is processed.
            LiveRouter.Outcome late = router.send(64, 1).get(120, TimeUnit.SECONDS);
            assertThat(late.ok()).isTrue();
            List<SseEvent> more = sse.drain(Duration.ofSeconds(120), ev -> ev.data().contains(late.xRequestId())
                    && ev.data().contains("\"type\":\"request_admitted\""));
            assertThat(more).anyMatch(ev -> ev.data().contains(late.xRequestId()));

            // ---------------------------------------------------------------- token and limits
            for (String path : List.of("/metrics", "/v1/requests", "/v1/requests/x", "/v1/hangs", "/v1/events",
                    "/v1/status")) {
                assertThat(get(d, path, null).statusCode()).as("%s without the token", path).isEqualTo(401);
                assertThat(get(d, path, "wrong").statusCode()).as("%s with a wrong token", path).isEqualTo(401);
            }
            assertThat(get(d, "/healthz", null).statusCode()).isEqualTo(200);
            byte[] big = new byte[2 << 20];
            HttpResponse<String> tooBig = http.send(HttpRequest.newBuilder(url(d, "/v1/completions"))
                    .header("Authorization", "Bearer " + TOKEN).header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofByteArray(big)).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(tooBig.statusCode()).isEqualTo(413);
            HttpResponse<String> getBig = http.send(HttpRequest.newBuilder(url(d, "/v1/hangs"))
                    .header("Authorization", "Bearer " + TOKEN)
                    .method("GET", HttpRequest.BodyPublishers.ofByteArray(big)).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(getBig.statusCode()).isEqualTo(413);
            // a node is one DP rank: a completion for another rank is refused, not served here
            HttpResponse<String> otherRank = http.send(HttpRequest.newBuilder(url(d, "/v1/completions"))
                    .header("Authorization", "Bearer " + TOKEN).header("Content-Type", "application/json")
                    .header("X-data-parallel-rank", "1")
                    .POST(HttpRequest.BodyPublishers.ofString("{\"prompt_tokens\": 16, \"max_tokens\": 1}")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(otherRank.statusCode()).isEqualTo(400);
            assertThat(otherRank.body()).contains("X-data-parallel-rank 1 is not this node's DP rank (0)");
        } finally {
            if (sse != null) {
                sse.close();
            }
            d.close();
            p.close();
        }
    }

    @Test
    void hangsNamesADecodeWhosePrefillNeverAnswers() throws Exception {
        int base = TestNodes.freePortBase(4);
        int dead = TestNodes.freePortBase(2);
        NodeService d = NodeService.start(TestNodes.options("D0",
                TestNodes.config(Role.CONSUMER, TransferMode.WRITE, base, base + 1), dir.resolve("D0"))
                .withHttp("127.0.0.1", 0, null));
        try {
            ZmqAddress nobody = new ZmqAddress("127.0.0.1", dead, dead + 1);
            ZmqAddress self = new LocalLeg(d).zmqAddress();
            String xrid = RequestIds.proxyRequestId(nobody, self, "0123456789abcdef0123456789abcdef");
            KvParams params = KvParams.of(
                    "do_remote_decode", false,
                    "do_remote_prefill", true,
                    "remote_engine_id", null,
                    "remote_block_ids", null,
                    "transfer_id", "tx-never-answered",
                    "remote_dp_size", 1,
                    "remote_tp_size", 1);
            CompletableFuture<Completion> leg = new LocalLeg(d).submit(xrid, 64, 2, params);
            assertThat(TestNodes.eventually(Duration.ofSeconds(120), () -> {
                try {
                    return (Long) json(get(d, "/v1/requests?phase=WAITING_FOR_REMOTE_KVS", null), 200)
                            .get("matched") == 1L;
                } catch (Exception e) {
                    return false;
                }
            })).as("the decode leg waits for its KV").isTrue();
            assertThat(leg).isNotDone();

            // The default bound is 30 s: a finding under it has waited that long (a busy machine can
            // take 30 s to get here); within a bound of an hour it is not stuck yet; past 0.2 s it is.
            Map<String, Object> early = json(get(d, "/v1/hangs", null), 200);
            assertThat(early.get("stuck_after_ns")).as("%s", early).isEqualTo(30_000_000_000L);
            List<Map<String, Object>> earlyFindings = cast(early.get("findings"));
            assertThat(earlyFindings).as("%s", early).allSatisfy(f -> assertThat(
                    (Long) early.get("now_ns") - (Long) f.get("since_ns")).isGreaterThanOrEqualTo(30_000_000_000L));
            Map<String, Object> notYet = json(get(d, "/v1/hangs?stuck_after=3600", null), 200);
            assertThat(notYet.get("count")).as("%s", notYet).isEqualTo(0L);
            Thread.sleep(300);
            Map<String, Object> h = json(get(d, "/v1/hangs?stuck_after=0.2", null), 200);
            List<Map<String, Object>> findings = cast(h.get("findings"));
            assertThat(findings).as("%s", h).anySatisfy(f -> {
                assertThat(f.get("detector")).isEqualTo("stuck-waiting");
                assertThat((String) f.get("request_id")).contains(xrid);
                assertThat(f.get("transfer_id")).isEqualTo("tx-never-answered");
                assertThat(f.get("phase")).isEqualTo("WAITING_FOR_REMOTE_KVS");
            });
            assertThat(json(get(d, "/v1/hangs?stuck_after=zero", null), 400).get("error").toString())
                    .contains("stuck_after");

            Map<String, Object> live = json(get(d, "/v1/requests?phase=live", null), 200);
            assertThat(rows(live)).singleElement().satisfies(r -> {
                assertThat((String) r.get("request_id")).contains(xrid);
                assertThat((Double) r.get("in_phase_s")).isGreaterThan(0.2);
            });
            HttpResponse<String> metrics = get(d, "/metrics", null);
            assertThat(parsePrometheus(metrics.body()).get(series("kvledger_requests", d, "phase",
                    "WAITING_FOR_REMOTE_KVS"))).isEqualTo(1.0);
        } finally {
            d.close();
        }
    }

    // ------------------------------------------------------------------ helpers

    private static long terminalCount(NodeService node) {
        try {
            return node.inbox().query(s -> s.phases().values().stream().filter(RequestPhase::terminal).count())
                    .get(120, TimeUnit.SECONDS);
        } catch (Exception e) {
            return -1;
        }
    }

    /** Posts in the node's journal and the blocks they name. */
    private static long[] posts(NodeService node) {
        long posts = 0;
        long blocks = 0;
        try (JournalReader r = JournalReader.open(node.options().journalDir())) {
            for (JournalEntry e : r) {
                if (e instanceof JournalEntry.Derived dd) {
                    if (dd.effect() instanceof Effect.PostWrite w) {
                        posts++;
                        blocks += w.localBlockIds().length;
                    } else if (dd.effect() instanceof Effect.PostRead pr) {
                        posts++;
                        blocks += pr.localBlockIds().length;
                    }
                }
            }
        }
        return new long[] {posts, blocks};
    }

    private static URI url(NodeService node, String path) {
        return URI.create("http://127.0.0.1:" + node.http().port() + path);
    }

    private HttpResponse<String> get(NodeService node, String path, String token) throws IOException,
            InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(url(node, path)).timeout(Duration.ofSeconds(30)).GET();
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        if (path.equals("/v1/events")) {
            // A stream: only its status matters here.
            HttpResponse<Stream<String>> r = http.send(b.build(), HttpResponse.BodyHandlers.ofLines());
            r.body().close();
            return new StatusOnly(r);
        }
        return HttpOnceMore.send(http, b.build(), HttpResponse.BodyHandlers.ofString(), "AdminApiTest");
    }

    @SuppressWarnings("unchecked")
    private static <T> T cast(Object o) {
        return (T) o;
    }

    private static Map<String, Object> json(HttpResponse<String> r, int status) {
        assertThat(r.statusCode()).as("status of %s: %s", r.uri(), r.body()).isEqualTo(status);
        return cast(Json.parse(r.body()));
    }

    private static List<Map<String, Object>> rows(Map<String, Object> list) {
        return cast(list.get("requests"));
    }

    /** The key of one series in {@link #parsePrometheus}: name and labels sorted. */
    private static String series(String name, NodeService node, String... labels) {
        Map<String, String> m = new java.util.TreeMap<>();
        m.put("node", node.options().nodeId());
        m.put("role", node.options().config().role().name().toLowerCase());
        for (int i = 0; i < labels.length; i += 2) {
            m.put(labels[i], labels[i + 1]);
        }
        return name + m;
    }

    private static final Pattern SAMPLE = Pattern.compile(
            "([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{(.*)\\})?\\s+(\\S+)(\\s+-?\\d+)?");
    private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\",?");

    /**
     * Parses the Prometheus text format strictly: every line is a comment (HELP or TYPE with a
     * valid name), blank, or a sample with a valid name, well-formed labels and a number.
     */
    static Map<String, Double> parsePrometheus(String text) {
        Map<String, Double> out = new LinkedHashMap<>();
        Map<String, String> types = new LinkedHashMap<>();
        for (String line : text.split("\n")) {
            if (line.isBlank()) {
                continue;
            }
            if (line.startsWith("#")) {
                String[] parts = line.split(" ", 4);
                assertThat(parts[1]).as(line).isIn("HELP", "TYPE");
                assertThat(parts[2]).as(line).matches("[a-zA-Z_:][a-zA-Z0-9_:]*");
                if (parts[1].equals("TYPE")) {
                    assertThat(parts[3]).as(line).isIn("counter", "gauge", "histogram", "summary", "untyped");
                    types.put(parts[2], parts[3]);
                }
                continue;
            }
            Matcher m = SAMPLE.matcher(line);
            assertThat(m.matches()).as("a sample line: %s", line).isTrue();
            Map<String, String> labels = new java.util.TreeMap<>();
            if (m.group(3) != null && !m.group(3).isEmpty()) {
                Matcher lm = LABEL.matcher(m.group(3));
                int end = 0;
                while (lm.find() && lm.start() == end) {
                    labels.put(lm.group(1), lm.group(2));
                    end = lm.end();
                }
                assertThat(end).as("labels of %s", line).isEqualTo(m.group(3).length());
            }
            String v = m.group(4);
            double value = switch (v) {
                case "+Inf" -> Double.POSITIVE_INFINITY;
                case "-Inf" -> Double.NEGATIVE_INFINITY;
                case "NaN" -> Double.NaN;
                default -> Double.parseDouble(v);
            };
            out.put(m.group(1) + labels, value);
        }
        assertThat(types).as("TYPE lines").isNotEmpty();
        return out;
    }

    /** One server-sent event. */
    record SseEvent(String id, String event, String data) {}

    /** A minimal SSE reader over java.net.http: events are parsed on the client's thread into a queue. */
    static final class SseClient implements AutoCloseable {
        private final LinkedBlockingQueue<SseEvent> events = new LinkedBlockingQueue<>();
        private final CompletableFuture<HttpResponse<Stream<String>>> response;

        private SseClient(CompletableFuture<HttpResponse<Stream<String>>> response) {
            this.response = response;
        }

        static SseClient open(HttpClient http, URI uri, String token) {
            HttpRequest.Builder b = HttpRequest.newBuilder(uri).GET().header("Accept", "text/event-stream");
            if (token != null) {
                b.header("Authorization", "Bearer " + token);
            }
            CompletableFuture<HttpResponse<Stream<String>>> f =
                    http.sendAsync(b.build(), HttpResponse.BodyHandlers.ofLines());
            SseClient c = new SseClient(f);
            Thread t = new Thread(() -> c.read(f), "sse-test-reader");
            t.setDaemon(true);
            t.start();
            return c;
        }

        private void read(CompletableFuture<HttpResponse<Stream<String>>> f) {
            try {
                HttpResponse<Stream<String>> r = f.get(120, TimeUnit.SECONDS);
                if (r.statusCode() != 200) {
                    events.add(new SseEvent(null, "http-" + r.statusCode(), ""));
                    return;
                }
                String[] cur = {null, "message", null};
                r.body().forEach(line -> {
                    if (line.isEmpty()) {
                        if (cur[2] != null) {
                            events.add(new SseEvent(cur[0], cur[1], cur[2]));
                        }
                        cur[0] = null;
                        cur[1] = "message";
                        cur[2] = null;
                    } else if (line.startsWith("id: ")) {
                        cur[0] = line.substring(4);
                    } else if (line.startsWith("event: ")) {
                        cur[1] = line.substring(7);
                    } else if (line.startsWith("data: ")) {
                        cur[2] = cur[2] == null ? line.substring(6) : cur[2] + "\n" + line.substring(6);
                    }
                });
            } catch (Exception e) {
                // the stream ended (closed by the test or the server)
                events.add(new SseEvent(null, "error", String.valueOf(e)));
            }
        }

        /** Every event until none came for {@code quiet} (at most {@code max}). */
        List<SseEvent> drainQuiet(Duration quiet, Duration max) throws InterruptedException {
            List<SseEvent> out = new ArrayList<>();
            long end = System.nanoTime() + max.toNanos();
            while (System.nanoTime() < end) {
                SseEvent ev = events.poll(quiet.toMillis(), TimeUnit.MILLISECONDS);
                if (ev == null) {
                    break;
                }
                out.add(ev);
            }
            return out;
        }

        SseEvent next(Duration timeout) throws InterruptedException {
            return events.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
        }

        /** Every event up to and including the first that matches {@code until} (or until the timeout). */
        List<SseEvent> drain(Duration timeout, java.util.function.Predicate<SseEvent> until) throws InterruptedException {
            List<SseEvent> out = new ArrayList<>();
            long end = System.nanoTime() + timeout.toNanos();
            while (System.nanoTime() < end) {
                SseEvent ev = events.poll(50, TimeUnit.MILLISECONDS);
                if (ev == null) {
                    continue;
                }
                out.add(ev);
                if (until.test(ev)) {
                    break;
                }
            }
            return out;
        }

        @Override
        public void close() {
            response.thenAccept(r -> r.body().close());
            response.cancel(true);
        }
    }

    /** A response whose body was not read. */
    private record StatusOnly(HttpResponse<Stream<String>> r) implements HttpResponse<String> {
        @Override public int statusCode() { return r.statusCode(); }
        @Override public HttpRequest request() { return r.request(); }
        @Override public java.util.Optional<HttpResponse<String>> previousResponse() { return java.util.Optional.empty(); }
        @Override public java.net.http.HttpHeaders headers() { return r.headers(); }
        @Override public String body() { return ""; }
        @Override public java.util.Optional<javax.net.ssl.SSLSession> sslSession() { return r.sslSession(); }
        @Override public URI uri() { return r.uri(); }
        @Override public HttpClient.Version version() { return r.version(); }
    }
}
