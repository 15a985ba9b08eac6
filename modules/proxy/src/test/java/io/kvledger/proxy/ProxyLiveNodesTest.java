package io.kvledger.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.ledger.diagnosis.Bounds;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.json.Json;
import io.kvledger.journal.proxy.ProxyEvent;
import io.kvledger.ledger.replay.ConfigOverrides;
import io.kvledger.ledger.replay.Hangs;
import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.ledger.replay.Replayer;
import io.kvledger.ledger.replay.Timeline;
import io.kvledger.node.NodeService;
import io.kvledger.node.TestNodes;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@code kvledger proxy} in front of two live kvledger nodes (their simulated engines serve
 * {@code POST /v1/completions}; the nodes register with the proxy through their own registration
 * heartbeat): the proxy's ids reach the nodes, the KV moves between them over real ZMQ notifies and
 * the in-JVM transfer engine, and {@code inspect}'s timeline and {@code hangs} read the proxy's
 * journal beside the nodes'.
 */
class ProxyLiveNodesTest {

    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    @SuppressWarnings("unchecked")
    void requests_through_the_proxy_move_kv_between_live_nodes_and_the_journals_join(TransferMode mode)
            throws Exception {
        int base = TestNodes.freePortBase(4);
        String uuid;
        try (ProxyService proxy = ProxyService.start(ProxyOptions.loopback().withMode(mode)
                .withJournal(dir.resolve("proxy")), "test")) {
            String ping = "tcp://127.0.0.1:" + proxy.pingPort();
            try (NodeService p = NodeService.start(TestNodes.options("P0",
                    TestNodes.config(Role.PRODUCER, mode, base, base + 1), dir.resolve("P0"))
                    .withHttp("127.0.0.1", 0, null).withProxy(ping, null));
                 NodeService d = NodeService.start(TestNodes.options("D0",
                    TestNodes.config(Role.CONSUMER, mode, base + 2, base + 3), dir.resolve("D0"))
                    .withHttp("127.0.0.1", 0, null).withProxy(ping, null))) {
                assertThat(TestNodes.eventually(Duration.ofSeconds(120),
                        () -> proxy.producers() == 1 && proxy.consumers() == 1)).as("both nodes registered").isTrue();
                HttpClient http = HttpClient.newHttpClient();
                for (int i = 0; i < 3; i++) {
                    HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                                    + proxy.httpPort() + "/v1/completions")).timeout(Duration.ofSeconds(120))
                            .header("Content-Type", "application/json")
                            .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"m\",\"prompt\":\""
                                    + "word ".repeat(40 + i) + "\",\"max_tokens\":5}")).build(),
                            HttpResponse.BodyHandlers.ofString());
                    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
                    Map<String, Object> m = (Map<String, Object>) Json.parse(r.body());
                    Map<String, Object> kl = (Map<String, Object>) m.get("kvledger");
                    assertThat((Long) kl.get("verified_bytes")).as("the decode verified the KV it got: %s", r.body())
                            .isPositive();
                    assertThat((String) kl.get("request_id")).startsWith("cmpl-___prefill_addr_host:127.0.0.1,handshake:"
                            + base + ",notify:" + (base + 1) + "___decode_addr_host:127.0.0.1,handshake:" + (base + 2));
                }
                // "stream": true is honoured on both APIs: SSE chunks, the last with the finish
                // reason (and, asked for, a usage chunk), then [DONE]
                for (String[] api : List.of(
                        new String[] {"/v1/completions", "{\"model\":\"m\",\"prompt\":\"" + "word ".repeat(30)
                                + "\",\"max_tokens\":4,\"stream\":true,\"stream_options\":{\"include_usage\":true}}",
                                "text_completion"},
                        new String[] {"/v1/chat/completions", "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
                                + "\"content\":\"" + "word ".repeat(30) + "\"}],\"max_tokens\":4,\"stream\":true}",
                                "chat.completion.chunk"})) {
                    HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                                    + proxy.httpPort() + api[0])).timeout(Duration.ofSeconds(120))
                            .header("Content-Type", "application/json")
                            .POST(HttpRequest.BodyPublishers.ofString(api[1])).build(), HttpResponse.BodyHandlers.ofString());
                    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
                    assertThat(r.headers().firstValue("Content-Type").orElse("")).startsWith("text/event-stream");
                    assertThat(r.body()).as(api[0]).startsWith("data: {").endsWith("data: [DONE]\n\n");
                    List<String> events = java.util.Arrays.stream(r.body().split("\n\n")).toList();
                    List<Map<String, Object>> chunks = events.stream().filter(e -> !e.equals("data: [DONE]"))
                            .map(e -> (Map<String, Object>) Json.parse(e.substring("data: ".length()))).toList();
                    assertThat(chunks).as(r.body()).allSatisfy(c -> assertThat(c.get("object")).isEqualTo(api[2]));
                    List<Map<String, Object>> withChoices = chunks.stream()
                            .filter(c -> !((List<?>) c.get("choices")).isEmpty()).toList();
                    Map<String, Object> last = (Map<String, Object>) ((List<?>) withChoices.getLast().get("choices")).getFirst();
                    assertThat(last.get("finish_reason")).as(r.body()).isEqualTo("length");
                    Map<String, Object> kl = (Map<String, Object>) withChoices.getLast().get("kvledger");
                    assertThat((Long) kl.get("verified_bytes")).as("the decode verified the KV it got: %s", r.body())
                            .isPositive();
                    if (api[0].equals("/v1/completions")) {
                        Map<String, Object> usage = (Map<String, Object>) chunks.getLast().get("usage");
                        assertThat(usage).as("the usage chunk: %s", r.body()).isNotNull();
                        assertThat(usage.get("completion_tokens")).isEqualTo(3L);
                    }
                }
            }
        }
        List<ProxyEvent.RequestRouted> routed = new java.util.ArrayList<>();
        try (JournalReader r = JournalReader.open(dir.resolve("proxy"))) {
            for (JournalEntry e : r) {
                if (e instanceof JournalEntry.Proxy px && px.event() instanceof ProxyEvent.RequestRouted rr) {
                    routed.add(rr);
                }
            }
        }
        assertThat(routed).hasSize(5);
        uuid = routed.getFirst().requestId().substring(routed.getFirst().requestId().length() - 32);

        List<JournalInputs.NodeJournal> journals = JournalInputs.resolve(List.of(dir));
        Timeline.Result t = Timeline.of(journals, uuid, Timeline.Kind.REQUEST, false, null);
        assertThat(t).isInstanceOf(Timeline.Found.class);
        Timeline.Found found = (Timeline.Found) t;
        List<String> nodes = found.lines().stream().map(Timeline.Line::node).distinct().toList();
        assertThat(nodes).contains("P0", "D0", "proxy");
        List<String> proxyLines = found.lines().stream().filter(l -> l.node().equals("proxy"))
                .map(l -> l.type().typeName()).toList();
        if (mode == TransferMode.READ) {
            // serial: the decode leg goes out after the prefill answered
            assertThat(proxyLines).containsExactly("request_routed", "leg_sent", "leg_answered", "leg_sent",
                    "leg_answered", "request_completed");
        } else {
            assertThat(proxyLines).containsExactly("request_routed", "leg_sent", "leg_sent", "leg_answered",
                    "leg_answered", "request_completed");
        }
        assertThat(found.transferIds()).containsExactly(routed.getFirst().transferId());
        // the proxy's lines sit among the nodes' by time: routed before the decode admitted it
        long routedAt = found.lines().stream().filter(l -> l.type().typeName().equals("request_routed")).findFirst()
                .orElseThrow().atNs();
        long admittedAt = found.lines().stream().filter(l -> l.node().equals("D0")
                && l.type().typeName().equals("request_admitted")).findFirst().orElseThrow().atNs();
        assertThat(routedAt).isLessThan(admittedAt);

        try (Replayer r = Replayer.open(journals, ConfigOverrides.none())) {
            Hangs.Result h = Hangs.analyse(r, Bounds.defaults());
            assertThat(h.findings()).as("no hang in a clean run").isEmpty();
            assertThat(h.proxies()).containsExactly("proxy");
            assertThat(h.nodes()).extracting(Replayer.Node::name).containsExactly("D0", "P0");
        }
    }
}
