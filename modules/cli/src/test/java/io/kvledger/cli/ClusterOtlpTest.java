package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.journal.json.Json;
import io.kvledger.ledger.otlp.OtlpReceiver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kvledger cluster --otlp}: node processes (real ZMQ, real transfers) each export their
 * requests' legs with {@code node --otlp}; a receiver decoding the real OTLP protobuf gets one
 * trace per request holding the prefill leg from P0 and the decode leg from D0.
 */
class ClusterOtlpTest {

    @TempDir
    Path dir;

    @Test
    void everyRequestIsOneTraceWithALegFromEachNodeProcess() throws Exception {
        try (OtlpReceiver receiver = OtlpReceiver.start()) {
            CliRun.Outcome r = CliRun.run("cluster", "--prefill", "1", "--decode", "1", "--mode", "write", "--requests",
                    "6", "--out", dir.resolve("run").toString(), "--timeout-s", "120", "--otlp", receiver.url());
            assertThat(r.code()).as(r.out() + r.err()).isZero();
            assertThat(r.out()).contains("6 requests, 6 ok, 0 failed");

            // the legs, and the one root each request has live (no proxy: the prefill node sends a synthetic one)
            List<OtlpReceiver.Received> legs = receiver.spans().stream()
                    .filter(s -> s.name().startsWith("kvledger.") && (s.name().equals("kvledger.request")
                            == s.parentSpanId().isEmpty())).toList();
            Map<String, List<String>> byTrace = legs.stream().collect(Collectors.groupingBy(OtlpReceiver.Received::traceId,
                    Collectors.mapping(l -> l.resourceAttr("kvledger.node") + " " + l.name(), Collectors.toList())));
            assertThat(byTrace).hasSize(6);
            assertThat(byTrace.values()).allSatisfy(v ->
                    assertThat(v).containsExactlyInAnyOrder("P0 kvledger.prefill", "D0 kvledger.decode", "P0 kvledger.request"));
            assertThat(receiver.spans()).filteredOn(s -> s.parentSpanId().isEmpty())
                    .as("one root per trace").hasSize(6);
            for (String node : List.of("P0", "D0")) {
                @SuppressWarnings("unchecked")
                Map<String, Object> status = (Map<String, Object>) Json.parse(
                        Files.readString(dir.resolve("run").resolve(node + ".status.json")));
                assertThat((Long) status.get("otlp_spans_exported")).as(node).isPositive();
                assertThat(status.get("otlp_spans_failed")).as(node).isEqualTo(0L);
                assertThat(status.get("otlp_events_dropped")).as(node).isEqualTo(0L);
            }
        }
    }
}
