package io.kvledger.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.ledger.otlp.LegSpans;
import io.kvledger.ledger.otlp.OtlpReceiver;
import io.opentelemetry.proto.trace.v1.Span;
import io.opentelemetry.proto.trace.v1.Status;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * {@code kvledger export --otlp}: the recorded fixture journals go to an OTLP/HTTP receiver that
 * decodes the real protobuf (opentelemetry-proto); checked on the spans received and on the
 * command's captured output.
 */
class ExportCommandTest {

    private static Path fixture(String name) {
        String p = System.getProperty("kvledger.fixtures");
        assertThat(p).as("the kvledger.fixtures property (set by the pom)").isNotNull();
        return Path.of(p).resolve(name);
    }

    @Test
    void aStrandedWriteIsOneTraceWithBothLegsAndTheFindingsAsStatus() throws Exception {
        try (OtlpReceiver receiver = OtlpReceiver.start()) {
            CliRun.Outcome o = CliRun.run("export", "--otlp", receiver.url(), fixture("27-write-stranded").toString());
            assertThat(o.code()).as(o.err()).isZero();
            assertThat(o.out().strip()).isEqualTo("export: 2 journal(s) (D0, P0): 1 trace(s), 2 leg(s) (1 in flight, "
                    + "2 with a finding), " + receiver.spans().size() + " span(s) sent to " + receiver.url() + "/v1/traces");
            assertThat(o.err()).contains("kvledger export: note: the journals' times start at 1970-01-01");

            List<OtlpReceiver.Received> spans = receiver.spans();
            assertThat(spans).extracting(OtlpReceiver.Received::traceId).containsOnly(
                    LegSpans.traceId("tx-75301b59-de1f-4242-9f7d-3b77de8039a0"));
            OtlpReceiver.Received decode = leg(spans, "kvledger.decode");
            OtlpReceiver.Received prefill = leg(spans, "kvledger.prefill");
            assertThat(decode.resourceAttr("kvledger.node")).isEqualTo("D0");
            assertThat(prefill.resourceAttr("kvledger.node")).isEqualTo("P0");
            assertThat(decode.attr("kvledger.request_id")).endsWith("_6c5d8182190c404694cda0f3b0e27cc7-0-968056bf");
            assertThat(spans).allSatisfy(x -> assertThat(x.span().getAttributesList())
                    .noneMatch(kv -> kv.getKey().startsWith("gen_ai.")));

            // One root per trace (no proxy journal here: a synthetic one) parenting both legs.
            List<OtlpReceiver.Received> roots = spans.stream().filter(x -> x.parentSpanId().isEmpty()).toList();
            assertThat(roots).extracting(OtlpReceiver.Received::name).containsExactly("kvledger.request");
            OtlpReceiver.Received root = roots.get(0);
            assertThat(root.spanId()).isEqualTo(LegSpans.rootSpanId("tx-75301b59-de1f-4242-9f7d-3b77de8039a0"));
            assertThat(decode.parentSpanId()).isEqualTo(root.spanId());
            assertThat(prefill.parentSpanId()).isEqualTo(root.spanId());
            assertThat(root.attr("kvledger.synthetic_root")).isEqualTo("true");
            assertThat(root.attr("kvledger.legs")).isEqualTo("2");
            assertThat(root.resourceAttr("kvledger.node")).as("the node that sends it live").isEqualTo("P0");
            assertThat(root.span().getStatus().getCode()).isEqualTo(Status.StatusCode.STATUS_CODE_ERROR);
            assertThat(root.span().getStartTimeUnixNano()).isEqualTo(Math.min(decode.span().getStartTimeUnixNano(),
                    prefill.span().getStartTimeUnixNano()));
            assertThat(root.span().getEndTimeUnixNano()).isEqualTo(Math.max(decode.span().getEndTimeUnixNano(),
                    prefill.span().getEndTimeUnixNano()));
            // service.version and the semantic conventions' schema on every resource and scope
            assertThat(spans).allSatisfy(x -> assertThat(x.resourceAttr("service.version")).isEqualTo(Main.VERSION));
            assertThat(receiver.requests()).allSatisfy(req -> assertThat(req.getResourceSpansList()).allSatisfy(rs -> {
                assertThat(rs.getSchemaUrl()).isEqualTo(LegSpans.SCHEMA_URL).startsWith("https://opentelemetry.io/schemas/");
                assertThat(rs.getScopeSpansList()).allSatisfy(ss -> {
                    assertThat(ss.getSchemaUrl()).isEqualTo(LegSpans.SCHEMA_URL);
                    assertThat(ss.getScope().getVersion()).isEqualTo(Main.VERSION);
                });
            }));
            assertThat(decode.attr("kvledger.proxy_uuid")).isEqualTo("6c5d8182190c404694cda0f3b0e27cc7");

            // The decode waits for KV that never comes: stuck-waiting (class 27), still open at the journals' end.
            assertThat(decode.span().getStatus().getCode()).isEqualTo(Status.StatusCode.STATUS_CODE_ERROR);
            assertThat(decode.span().getStatus().getMessage()).startsWith("stuck-waiting: in WAITING_FOR_REMOTE_KVS for");
            assertThat(decode.attr("kvledger.bug_class")).isEqualTo("27");
            assertThat(decode.attr("kvledger.in_flight")).isEqualTo("true");
            List<OtlpReceiver.Received> dPhases = children(spans, decode);
            assertThat(dPhases).extracting(OtlpReceiver.Received::name).endsWith("WAITING_FOR_REMOTE_KVS");
            OtlpReceiver.Received waiting = dPhases.get(dPhases.size() - 1);
            assertThat(waiting.attr("kvledger.open")).isEqualTo("true");
            assertThat(waiting.span().getEndTimeUnixNano()).as("open until the journals end")
                    .isEqualTo(spans.stream().mapToLong(s -> s.span().getEndTimeUnixNano()).max().orElseThrow())
                    .isGreaterThan(prefill.span().getEndTimeUnixNano());
            assertThat(events(dPhases)).contains("send_remote_blocks", "hang_finding");

            // The prefill self-ACKs after its write task expired: the anomaly is an event and the finding its status.
            assertThat(prefill.span().getStatus().getCode()).isEqualTo(Status.StatusCode.STATUS_CODE_ERROR);
            assertThat(prefill.span().getStatus().getMessage()).startsWith("anomaly: WRITE_TASK_EXPIRED");
            List<OtlpReceiver.Received> pPhases = children(spans, prefill);
            assertThat(pPhases).extracting(OtlpReceiver.Received::name).endsWith("FREED_AFTER_ACK");
            assertThat(pPhases.stream().flatMap(s -> s.span().getEventsList().stream())
                    .filter(e -> e.getName().equals("anomaly")).toList()).anySatisfy(e ->
                    assertThat(OtlpReceiver.Received.value(e.getAttributesList(), "kvledger.anomaly.kind"))
                            .isEqualTo("WRITE_TASK_EXPIRED"));
            // Times are the journal's (nanoseconds from the simulator's zero).
            assertThat(decode.span().getStartTimeUnixNano()).isLessThan(1_000_000_000_000L);

            // Exporting again sends the same ids: a backend sees the same trace, not a second one.
            Set<String> first = ids(spans);
            receiver.clear();
            assertThat(CliRun.run("export", "--otlp", receiver.url(), "--time-origin", "2026-12-03T09:00:00Z",
                    fixture("27-write-stranded").toString()).code()).isZero();
            assertThat(ids(receiver.spans())).isEqualTo(first);
            long start = receiver.spans().stream().mapToLong(s -> s.span().getStartTimeUnixNano()).min().orElseThrow();
            Instant origin = Instant.parse("2026-12-03T09:00:00Z");
            assertThat(start).as("--time-origin moves the first event there")
                    .isEqualTo(origin.getEpochSecond() * 1_000_000_000L + origin.getNano());
        }
    }

    /**
     * With the proxy's journal among the journals, the root of the request's trace is the proxy's
     * span (its id is the one the legs name), not a synthetic one.
     */
    @Test
    void withTheProxysJournalItsSpanIsTheRoot(@org.junit.jupiter.api.io.TempDir Path tmp) throws Exception {
        String uuid = "6c5d8182190c404694cda0f3b0e27cc7";
        String rid = "___prefill_addr_host:10.0.0.1,handshake:6301,notify:61005___decode_addr_host:10.0.1.1,"
                + "handshake:6301,notify:61005_" + uuid;
        String tid = "tx-75301b59-de1f-4242-9f7d-3b77de8039a0";
        Path proxy = tmp.resolve("proxy");
        try (var w = io.kvledger.journal.JournalWriter.open(proxy,
                io.kvledger.journal.JournalHeader.proxy("proxy0", io.kvledger.core.config.TransferMode.WRITE, "test"))) {
            long t = 20_000_000L;
            w.appendProxy(new io.kvledger.journal.proxy.ProxyEvent.RequestRouted(t, rid, tid, "/v1/completions", false,
                    null, "WRITE", "10.0.0.1:8100", null, "10.0.1.1:8200", null));
            w.appendProxy(new io.kvledger.journal.proxy.ProxyEvent.LegSent(t + 1000, rid, tid, "prefill", "10.0.0.1:8100",
                    io.kvledger.core.model.KvParams.of("transfer_id", tid, "do_remote_decode", true)));
            w.appendProxy(new io.kvledger.journal.proxy.ProxyEvent.LegSent(t + 2000, rid, tid, "decode", "10.0.1.1:8200",
                    io.kvledger.core.model.KvParams.of("transfer_id", tid, "do_remote_prefill", true)));
            w.appendProxy(new io.kvledger.journal.proxy.ProxyEvent.LegAnswered(t + 9000, rid, tid, "prefill", 200, 8000,
                    "length", io.kvledger.core.model.KvParams.of("transfer_id", tid)));
        }
        try (OtlpReceiver receiver = OtlpReceiver.start()) {
            CliRun.Outcome o = CliRun.run("export", "--otlp", receiver.url(), fixture("27-write-stranded").toString(),
                    proxy.toString());
            assertThat(o.code()).as(o.err()).isZero();
            List<OtlpReceiver.Received> spans = receiver.spans();
            List<OtlpReceiver.Received> roots = spans.stream().filter(x -> x.parentSpanId().isEmpty()).toList();
            assertThat(roots).extracting(OtlpReceiver.Received::name).containsExactly("kvledger.proxy");
            OtlpReceiver.Received root = roots.get(0);
            assertThat(root.spanId()).isEqualTo(LegSpans.rootSpanId(tid));
            assertThat(root.span().getKind()).isEqualTo(Span.SpanKind.SPAN_KIND_SERVER);
            assertThat(root.resourceAttr("kvledger.role")).isEqualTo("proxy");
            assertThat(root.resourceAttr("service.instance.id")).isEqualTo("proxy0");
            assertThat(root.attr("kvledger.request_id")).isEqualTo(rid);
            assertThat(root.attr("kvledger.in_flight")).as("the client was never answered").isEqualTo("true");
            OtlpReceiver.Received decode = leg(spans, "kvledger.decode");
            OtlpReceiver.Received prefill = leg(spans, "kvledger.prefill");
            assertThat(decode.parentSpanId()).isEqualTo(root.spanId());
            assertThat(prefill.parentSpanId()).isEqualTo(root.spanId());
            assertThat(root.span().getStartTimeUnixNano()).isLessThanOrEqualTo(Math.min(
                    decode.span().getStartTimeUnixNano(), prefill.span().getStartTimeUnixNano()));
            // the proxy's own spans of its engine legs, with the ids it sends live
            OtlpReceiver.Received pLeg = leg(spans, "kvledger.proxy.prefill");
            OtlpReceiver.Received dLeg = leg(spans, "kvledger.proxy.decode");
            assertThat(pLeg.spanId()).isEqualTo(LegSpans.spanId(tid, "proxy0", rid, 1));
            assertThat(dLeg.spanId()).isEqualTo(LegSpans.spanId(tid, "proxy0", rid, 2));
            for (OtlpReceiver.Received l : List.of(pLeg, dLeg)) {
                assertThat(l.parentSpanId()).isEqualTo(root.spanId());
                assertThat(l.span().getKind()).isEqualTo(Span.SpanKind.SPAN_KIND_CLIENT);
                assertThat(l.resourceAttr("service.instance.id")).isEqualTo("proxy0");
            }
            assertThat(pLeg.attr("server.address")).isEqualTo("10.0.0.1:8100");
            assertThat(pLeg.attr("kvledger.outcome")).isEqualTo("answered");
            assertThat(pLeg.attr("http.response.status_code")).isEqualTo("200");
            assertThat(pLeg.attr("kvledger.finish_reason")).isEqualTo("length");
            assertThat(pLeg.span().getEndTimeUnixNano() - pLeg.span().getStartTimeUnixNano()).isEqualTo(8000);
            assertThat(dLeg.attr("server.address")).isEqualTo("10.0.1.1:8200");
            assertThat(dLeg.attr("kvledger.in_flight")).as("never answered").isEqualTo("true");
        }
    }

    @Test
    void aLargerRunGoesInBatchesThatNeverSplitALeg(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        assertThat(CliRun.simulate(dir.resolve("sim"), "write", 4, 120, "none").code()).isZero();
        try (OtlpReceiver receiver = OtlpReceiver.start()) {
            CliRun.Outcome o = CliRun.run("export", "--otlp", receiver.url(), dir.resolve("sim").toString());
            assertThat(o.code()).as(o.err()).isZero();
            assertThat(o.out()).contains("120 trace(s), 240 leg(s) (0 in flight, 0 with a finding)");
            List<OtlpReceiver.Received> spans = receiver.spans();
            assertThat(o.out()).contains(spans.size() + " span(s) sent");
            assertThat(receiver.requests()).as("batches").hasSizeGreaterThan(1);
            for (var req : receiver.requests()) {
                List<io.opentelemetry.proto.trace.v1.Span> batch = req.getResourceSpansList().stream()
                        .flatMap(rs -> rs.getScopeSpansList().stream()).flatMap(ss -> ss.getSpansList().stream()).toList();
                assertThat(batch.size()).isLessThanOrEqualTo(512);
                // every phase span travels with its leg span: a leg is never split over two batches
                Set<com.google.protobuf.ByteString> legIds = batch.stream().filter(x -> x.getName().startsWith("kvledger."))
                        .map(io.opentelemetry.proto.trace.v1.Span::getSpanId).collect(Collectors.toSet());
                assertThat(batch.stream().filter(x -> !x.getName().startsWith("kvledger.")))
                        .allSatisfy(x -> assertThat(legIds).contains(x.getParentSpanId()));
            }
            assertThat(spans.stream().filter(x -> x.name().equals("kvledger.prefill") || x.name().equals("kvledger.decode")))
                    .hasSize(240);
            // one root per request, the parent of both its legs
            List<OtlpReceiver.Received> roots = spans.stream().filter(x -> x.parentSpanId().isEmpty()).toList();
            assertThat(roots).hasSize(120).allSatisfy(x -> assertThat(x.name()).isEqualTo("kvledger.request"));
            Set<String> rootIds = roots.stream().map(OtlpReceiver.Received::spanId).collect(Collectors.toSet());
            assertThat(spans.stream().filter(x -> x.name().equals("kvledger.prefill") || x.name().equals("kvledger.decode")))
                    .allSatisfy(x -> assertThat(rootIds).contains(x.parentSpanId()));
        }
    }

    @Test
    void aRefusedOrUnreachableReceiverIsOneLineAndExit1() throws Exception {
        Path f = fixture("07-reaped-without-ack");
        try (OtlpReceiver receiver = OtlpReceiver.start()) {
            receiver.refuseWith(503);
            CliRun.Outcome o = CliRun.run("export", "--otlp", receiver.url(), f.toString());
            assertThat(o.code()).isEqualTo(1);
            assertThat(last(o.err())).startsWith("kvledger export: the OTLP receiver at " + receiver.url()
                    + "/v1/traces did not take ").endsWith(" spans: HTTP 503");
            assertThat(o.out()).isEmpty();
        }
        int dead = io.kvledger.node.cluster.LoopbackPorts.freeRange(1);
        CliRun.Outcome o = CliRun.run("export", "--otlp", "http://127.0.0.1:" + dead, f.toString());
        assertThat(o.code()).isEqualTo(1);
        assertThat(last(o.err())).startsWith("kvledger export: the OTLP receiver at http://127.0.0.1:" + dead
                + "/v1/traces did not take").contains("spans: cannot connect (");
        assertThat(o.err().lines().filter(l -> !l.startsWith("kvledger export: note:")).count()).isEqualTo(1);
    }

    @Test
    void usageErrors() {
        Path f = fixture("07-reaped-without-ack");
        CliRun.Outcome bad = CliRun.run("export", "--otlp", "127.0.0.1:4318", f.toString());
        assertThat(bad.code()).isEqualTo(2);
        assertThat(bad.err()).startsWith("kvledger export: --otlp takes an http(s)://HOST:PORT URL")
                .contains("see 'kvledger help export'");
        CliRun.Outcome missing = CliRun.run("export", f.toString());
        assertThat(missing.code()).isEqualTo(2);
        assertThat(missing.err()).contains("--otlp");
        CliRun.Outcome origin = CliRun.run("export", "--otlp", "http://127.0.0.1:4318", "--time-origin", "yesterday",
                f.toString());
        assertThat(origin.code()).isEqualTo(2);
        assertThat(origin.err()).startsWith("kvledger export: --time-origin takes now or an ISO-8601 instant");
    }

    @Test
    void nodeRefusesABadOtlpUrlBeforeStarting(@org.junit.jupiter.api.io.TempDir Path dir) {
        CliRun.Outcome o = CliRun.run("node", "--role", "producer", "--journal", dir.resolve("P0").toString(),
                "--otlp", "ftp://127.0.0.1:4318");
        assertThat(o.code()).isEqualTo(2);
        assertThat(o.err()).startsWith("kvledger node: --otlp takes an http(s)://HOST:PORT URL");
        assertThat(dir.resolve("P0")).doesNotExist();
    }

    private static String last(String err) {
        List<String> lines = err.strip().lines().toList();
        return lines.get(lines.size() - 1);
    }

    private static OtlpReceiver.Received leg(List<OtlpReceiver.Received> spans, String name) {
        List<OtlpReceiver.Received> legs = spans.stream().filter(s -> s.name().equals(name)).toList();
        assertThat(legs).as(name).hasSize(1);
        return legs.get(0);
    }

    private static List<OtlpReceiver.Received> children(List<OtlpReceiver.Received> spans, OtlpReceiver.Received leg) {
        return spans.stream().filter(s -> s.parentSpanId().equals(leg.spanId()))
                .sorted(java.util.Comparator.comparingInt(s -> Integer.parseInt(s.attr("kvledger.phase.index"))))
                .toList();
    }

    private static List<String> events(List<OtlpReceiver.Received> spans) {
        return spans.stream().flatMap(s -> s.span().getEventsList().stream()).map(Span.Event::getName).toList();
    }

    private static Set<String> ids(List<OtlpReceiver.Received> spans) {
        return spans.stream().map(s -> s.traceId() + "/" + s.spanId() + "<" + s.parentSpanId() + " " + s.name())
                .collect(Collectors.toCollection(TreeSet::new));
    }
}
