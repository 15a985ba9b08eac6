package io.kvledger.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.ledger.otlp.LegSpans;
import io.kvledger.node.otlp.LiveTraces;
import io.kvledger.ledger.otlp.OtlpReceiver;
import io.kvledger.ledger.otlp.OtlpSender;
import io.kvledger.node.NodeService;
import io.kvledger.node.TestNodes;
import io.opentelemetry.proto.trace.v1.Span;
import io.opentelemetry.proto.trace.v1.Status;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvledger proxy --otlp}: a proxy in front of two live nodes that export their own traces
 * ({@code kvledger node --otlp}), all to one OTLP/HTTP receiver decoding the real protobuf. Each
 * request's proxy span (the client's leg) and its prefill and decode leg spans land in the trace
 * the two nodes' leg spans of that request are in, parented as the proxy sent them.
 */
class ProxyTracesTest {

    @TempDir
    Path dir;

    @Test
    void theProxysSpansJoinTheNodesTraceOfEachRequest() throws Exception {
        int base = TestNodes.freePortBase(4);
        try (OtlpReceiver receiver = OtlpReceiver.start()) {
            ProxyService proxy = ProxyService.start(ProxyOptions.loopback().withMode(TransferMode.WRITE)
                    .withOtlp(receiver.url()), "test");
            String ping = "tcp://127.0.0.1:" + proxy.pingPort();
            NodeService p = NodeService.start(TestNodes.options("P0", TestNodes.config(Role.PRODUCER,
                    TransferMode.WRITE, base, base + 1), dir.resolve("P0")).withHttp("127.0.0.1", 0, null)
                    .withProxy(ping, null));
            NodeService d = NodeService.start(TestNodes.options("D0", TestNodes.config(Role.CONSUMER,
                    TransferMode.WRITE, base + 2, base + 3), dir.resolve("D0")).withHttp("127.0.0.1", 0, null)
                    .withProxy(ping, null));
            LiveTraces tp = LiveTraces.attach(p, sender(receiver), LiveTraces.Options.defaults());
            LiveTraces td = LiveTraces.attach(d, sender(receiver), LiveTraces.Options.defaults());
            try {
                assertThat(TestNodes.eventually(Duration.ofSeconds(120),
                        () -> proxy.producers() == 1 && proxy.consumers() == 1)).as("both nodes registered").isTrue();
                HttpClient http = HttpClient.newHttpClient();
                for (int i = 0; i < 2; i++) {
                    HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
                                    + proxy.httpPort() + "/v1/completions")).timeout(Duration.ofSeconds(120))
                            .header("Content-Type", "application/json")
                            .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"m\",\"prompt\":\""
                                    + "word ".repeat(40 + i) + "\",\"max_tokens\":4}")).build(),
                            HttpResponse.BodyHandlers.ofString());
                    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
                }
                assertThat(TestNodes.eventually(Duration.ofSeconds(120), () -> named(receiver, "kvledger.proxy").size() == 2))
                        .as("a proxy span per request, sent within a second or two").isTrue();
            } finally {
                proxy.close();
                p.close();
                d.close();
                tp.close();
                td.close();
            }
            assertThat(proxy.otlpSpansExported()).isEqualTo(6);
            assertThat(proxy.otlpSpansFailed()).isZero();

            List<OtlpReceiver.Received> roots = named(receiver, "kvledger.proxy");
            assertThat(roots).hasSize(2);
            for (OtlpReceiver.Received root : roots) {
                String tid = root.attr("kvledger.transfer_id");
                assertThat(tid).startsWith("tx-");
                assertThat(root.traceId()).as("the nodes' trace id of the transfer").isEqualTo(LegSpans.traceId(tid));
                assertThat(root.parentSpanId()).isEmpty();
                assertThat(root.span().getKind()).isEqualTo(Span.SpanKind.SPAN_KIND_SERVER);
                assertThat(root.attr("http.response.status_code")).isEqualTo("200");
                assertThat(root.attr("kvledger.in_flight")).isEqualTo("false");
                assertThat(root.attr("kvledger.mode")).isEqualTo("WRITE");
                assertThat(root.resourceAttr("kvledger.role")).isEqualTo("proxy");
                assertThat(root.resourceAttr("service.instance.id")).isEqualTo("proxy");
                String rid = root.attr("kvledger.request_id");
                assertThat(rid).contains("___decode_addr_");

                List<OtlpReceiver.Received> trace = receiver.spans().stream()
                        .filter(s -> s.traceId().equals(root.traceId())).toList();
                List<OtlpReceiver.Received> legs = trace.stream().filter(s -> s.name().startsWith("kvledger.proxy.")).toList();
                assertThat(legs).extracting(OtlpReceiver.Received::name)
                        .containsExactlyInAnyOrder("kvledger.proxy.prefill", "kvledger.proxy.decode");
                for (OtlpReceiver.Received leg : legs) {
                    assertThat(leg.parentSpanId()).as("a child of the request's span").isEqualTo(root.spanId());
                    assertThat(leg.span().getKind()).isEqualTo(Span.SpanKind.SPAN_KIND_CLIENT);
                    assertThat(leg.attr("kvledger.outcome")).isEqualTo("answered");
                    assertThat(leg.attr("http.response.status_code")).isEqualTo("200");
                    assertThat(leg.span().getStatus().getCode()).isEqualTo(Status.StatusCode.STATUS_CODE_UNSET);
                    assertThat(leg.span().getStartTimeUnixNano()).isGreaterThanOrEqualTo(root.span().getStartTimeUnixNano());
                    assertThat(leg.span().getEndTimeUnixNano()).isLessThanOrEqualTo(root.span().getEndTimeUnixNano());
                }
                // the nodes' leg spans of the same request, in the same trace
                List<OtlpReceiver.Received> nodeLegs = trace.stream()
                        .filter(s -> s.name().equals("kvledger.prefill") || s.name().equals("kvledger.decode")).toList();
                assertThat(nodeLegs).extracting(OtlpReceiver.Received::name)
                        .containsExactlyInAnyOrder("kvledger.prefill", "kvledger.decode");
                assertThat(nodeLegs).allSatisfy(s -> {
                    assertThat(s.attr("kvledger.transfer_id")).isEqualTo(tid);
                    assertThat(s.attr("kvledger.request_id")).contains(rid);
                    assertThat(s.parentSpanId()).as("the legs of all nodes are children of the proxy's span").isEqualTo(root.spanId());
                });
                assertThat(trace.stream().filter(x -> x.parentSpanId().isEmpty())).as("one root per trace").hasSize(1);
                assertThat(root.resourceAttr("service.version")).isEqualTo(LegSpans.VERSION);
                // the proxy sent the legs before the nodes admitted them
                long routed = root.span().getStartTimeUnixNano();
                assertThat(nodeLegs).allSatisfy(s -> assertThat(s.span().getStartTimeUnixNano()).isGreaterThan(routed));
            }
        }
    }

    private static OtlpSender sender(OtlpReceiver r) {
        return OtlpSender.to(r.url(), Duration.ofSeconds(10), Map.of(), true, true);
    }

    private static List<OtlpReceiver.Received> named(OtlpReceiver r, String name) {
        return r.spans().stream().filter(s -> s.name().equals(name)).toList();
    }
}
