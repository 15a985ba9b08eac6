package io.kvledger.node;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.ledger.diagnosis.Bounds;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.moriio.RequestIds;
import io.kvledger.core.moriio.ZmqAddress;
import io.kvledger.ledger.replay.ConfigOverrides;
import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.ledger.replay.Replayer;
import io.kvledger.node.cluster.LocalLeg;
import io.kvledger.node.cluster.LiveRouter;
import io.kvledger.node.engine.Completion;
import io.kvledger.ledger.otlp.JournalTraces;
import io.kvledger.ledger.otlp.LegSpans;
import io.kvledger.node.otlp.LiveTraces;
import io.kvledger.ledger.otlp.OtlpReceiver;
import io.kvledger.ledger.otlp.OtlpSender;
import io.opentelemetry.proto.trace.v1.Span;
import io.opentelemetry.proto.trace.v1.Status;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@code kvledger node --otlp}: live nodes (real ZMQ on loopback, the in-JVM transfer engine, real
 * journals) export each request's legs to an OTLP/HTTP receiver that decodes the real protobuf
 * with the opentelemetry-proto classes; the prefill and decode legs of one request land in one
 * trace, and the spans are the ones {@code kvledger export} makes from the same journals.
 */
class LiveTracesTest {

    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void bothLegsOfEachRequestLandInOneTrace(TransferMode mode) throws Exception {
        int base = TestNodes.freePortBase(4);
        try (OtlpReceiver receiver = OtlpReceiver.start()) {
            NodeService p = NodeService.start(TestNodes.options("P0",
                    TestNodes.config(Role.PRODUCER, mode, base, base + 1), dir.resolve("P0")));
            NodeService d = NodeService.start(TestNodes.options("D0",
                    TestNodes.config(Role.CONSUMER, mode, base + 2, base + 3), dir.resolve("D0")));
            LiveTraces tp = LiveTraces.attach(p, sender(receiver), LiveTraces.Options.defaults());
            LiveTraces td = LiveTraces.attach(d, sender(receiver), LiveTraces.Options.defaults());
            List<LiveRouter.Outcome> outcomes = new ArrayList<>();
            try {
                LiveRouter router = new LiveRouter(List.of(new LocalLeg(p)), List.of(new LocalLeg(d)), mode, 5);
                List<CompletableFuture<LiveRouter.Outcome>> all = new ArrayList<>();
                for (int i = 0; i < 3; i++) {
                    all.add(router.send(40 + 30 * i, 2));
                }
                for (CompletableFuture<LiveRouter.Outcome> f : all) {
                    LiveRouter.Outcome o = f.get(120, TimeUnit.SECONDS);
                    assertThat(o.ok()).as("%s", o).isTrue();
                    outcomes.add(o);
                }
                // Both legs of every request are exported once they end (the prefill's after its ACK).
                assertThat(TestNodes.eventually(Duration.ofSeconds(120), () -> legSpans(receiver).size() >= 6))
                        .as("six leg spans, got %s", legSpans(receiver).size()).isTrue();
            } finally {
                p.close();
                d.close();
                tp.close();
                td.close();
            }
            assertThat(tp.dropped() + td.dropped()).isZero();
            assertThat(tp.failedSpans() + td.failedSpans()).isZero();
            assertThat(receiver.contentTypes()).allSatisfy(ct -> assertThat(ct).isEqualTo("application/x-protobuf"));

            List<OtlpReceiver.Received> spans = receiver.spans();
            for (LiveRouter.Outcome o : outcomes) {
                String traceId = LegSpans.traceId(o.transferId());
                List<OtlpReceiver.Received> trace = spans.stream().filter(s -> s.traceId().equals(traceId)).toList();
                List<OtlpReceiver.Received> legs = trace.stream()
                        .filter(s -> s.name().equals("kvledger.prefill") || s.name().equals("kvledger.decode")).toList();
                assertThat(legs).as("the legs of %s", o.transferId()).extracting(OtlpReceiver.Received::name)
                        .containsExactlyInAnyOrder("kvledger.prefill", "kvledger.decode");
                for (OtlpReceiver.Received leg : legs) {
                    // a child of the request's root (the proxy's span; export sends a synthetic one without a proxy)
                    assertThat(leg.parentSpanId()).isEqualTo(LegSpans.rootSpanId(o.transferId()));
                    assertThat(leg.attr("kvledger.transfer_id")).isEqualTo(o.transferId());
                    assertThat(leg.attr("kvledger.request_id")).contains(o.xRequestId());
                    assertThat(leg.attr("kvledger.in_flight")).isEqualTo("false");
                    assertThat(leg.span().getStatus().getCode()).isEqualTo(Status.StatusCode.STATUS_CODE_UNSET);
                    assertThat(leg.resourceAttr("service.name")).isEqualTo("kvledger");
                    assertThat(leg.resourceAttr("kvledger.node"))
                            .isEqualTo(leg.name().equals("kvledger.prefill") ? "P0" : "D0");
                    assertThat(leg.span().getEndTimeUnixNano()).isGreaterThanOrEqualTo(leg.span().getStartTimeUnixNano());
                }
                // one root live, without a proxy: the synthetic root the prefill's TP rank 0 sends, and no orphan
                List<OtlpReceiver.Received> roots = trace.stream().filter(s -> s.parentSpanId().isEmpty()).toList();
                assertThat(roots).as("the roots of %s", o.transferId()).singleElement().satisfies(r -> {
                    assertThat(r.name()).isEqualTo("kvledger.request");
                    assertThat(r.spanId()).isEqualTo(LegSpans.rootSpanId(o.transferId()));
                    assertThat(r.attr("kvledger.synthetic_root")).isEqualTo("true");
                    assertThat(r.attr("kvledger.transfer_id")).isEqualTo(o.transferId());
                    assertThat(r.resourceAttr("kvledger.node")).isEqualTo("P0");
                });
                Set<String> ids = trace.stream().map(OtlpReceiver.Received::spanId).collect(Collectors.toSet());
                assertThat(trace.stream().filter(s -> !s.parentSpanId().isEmpty()))
                        .as("every parent is in the trace").allSatisfy(s -> assertThat(ids).contains(s.parentSpanId()));
                OtlpReceiver.Received prefill = legs.stream().filter(l -> l.name().equals("kvledger.prefill")).findFirst().orElseThrow();
                OtlpReceiver.Received decode = legs.stream().filter(l -> l.name().equals("kvledger.decode")).findFirst().orElseThrow();
                List<String> pPhases = phases(trace, prefill);
                List<String> dPhases = phases(trace, decode);
                assertThat(pPhases).as("prefill phases").startsWith("ADMITTED").endsWith("FREED_AFTER_ACK");
                assertThat(dPhases).as("decode phases").startsWith("ADMITTED").endsWith("FINISHED");
                if (mode == TransferMode.WRITE) {
                    assertThat(dPhases).contains("WAITING_FOR_REMOTE_KVS", "KV_RECEIVED");
                    assertThat(events(trace, prefill)).contains("remote_blocks_received", "send_write_done");
                    assertThat(events(trace, decode)).contains("send_remote_blocks", "write_done_received");
                } else {
                    assertThat(dPhases).contains("READS_IN_FLIGHT");
                    assertThat(events(trace, decode)).contains("send_release");
                    assertThat(events(trace, prefill)).contains("release_received");
                }
                assertThat(prefill.attr("kvledger.end_phase")).isEqualTo("FREED_AFTER_ACK");
                assertThat(Long.parseLong(prefill.attr("kvledger.transfers.posted"))
                        + Long.parseLong(decode.attr("kvledger.transfers.posted"))).as("layer batches posted").isPositive();
            }

            // The journals give the same spans offline (kvledger export): same ids, same names, the
            // synthetic roots included (no proxy sent one here).
            Set<String> live = spans.stream().map(s -> s.traceId() + "/" + s.spanId() + " " + s.name())
                    .collect(Collectors.toCollection(TreeSet::new));
            var journals = JournalInputs.resolveArgs(List.of(dir.resolve("P0").toString(), dir.resolve("D0").toString()));
            List<io.opentelemetry.sdk.trace.data.SpanData> exported = new ArrayList<>();
            JournalTraces.Result res = JournalTraces.export(() -> Replayer.open(journals, ConfigOverrides.none()),
                    Bounds.defaults(), first -> 0, exported::addAll);
            Set<String> offline = exported.stream().map(s -> s.getTraceId() + "/" + s.getSpanId() + " " + s.getName())
                    .collect(Collectors.toCollection(TreeSet::new));
            assertThat(offline).isEqualTo(live);
            Set<String> rootIds = exported.stream().filter(s -> s.getName().equals("kvledger.request"))
                    .map(s -> s.getTraceId() + "/" + s.getSpanId()).collect(Collectors.toSet());
            assertThat(rootIds).hasSize(3);
            assertThat(spans.stream().filter(s -> s.name().equals("kvledger.prefill") || s.name().equals("kvledger.decode")))
                    .allSatisfy(s -> assertThat(rootIds).contains(s.traceId() + "/" + s.parentSpanId()));
            assertThat(res.spans()).isEqualTo(exported.size());
            assertThat(res.traces()).isEqualTo(3);
            assertThat(res.legs()).isEqualTo(6);
            assertThat(res.inFlight()).isZero();
        }
    }

    @Test
    void aStuckDecodeIsExportedWithItsFindingBeforeItEnds() throws Exception {
        int base = TestNodes.freePortBase(2);
        int dead = TestNodes.freePortBase(2);
        try (OtlpReceiver receiver = OtlpReceiver.start()) {
            NodeService d = NodeService.start(TestNodes.options("D0",
                    TestNodes.config(Role.CONSUMER, TransferMode.WRITE, base, base + 1), dir.resolve("D0")));
            // stuck after 3 s: the leg must reach WAITING_FOR_REMOTE_KVS first (under a load of 23 a
            // leg stayed ADMITTED for 0.6 s, and a 0.2 s bound then named it stuck there)
            LiveTraces traces = LiveTraces.attach(d, sender(receiver), new LiveTraces.Options(
                    new Bounds(3_000_000_000L), Duration.ofMillis(100), Duration.ofMillis(100), 1 << 16, 1024));
            try {
                ZmqAddress nobody = new ZmqAddress("127.0.0.1", dead, dead + 1);
                String xrid = RequestIds.proxyRequestId(nobody, new LocalLeg(d).zmqAddress(),
                        "0123456789abcdef0123456789abcdef");
                KvParams params = KvParams.of("do_remote_decode", false, "do_remote_prefill", true,
                        "remote_engine_id", null, "remote_block_ids", null, "transfer_id", "tx-never-answered",
                        "remote_dp_size", 1, "remote_tp_size", 1,
                        "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
                CompletableFuture<Completion> leg = new LocalLeg(d).submit(xrid, 64, 2, params);
                assertThat(TestNodes.eventually(Duration.ofSeconds(120), () -> !legSpans(receiver).isEmpty()))
                        .as("the stuck leg exported").isTrue();
                assertThat(leg).isNotDone();
                OtlpReceiver.Received stuck = legSpans(receiver).get(0);
                assertThat(stuck.traceId()).isEqualTo(LegSpans.traceId("tx-never-answered"));
                assertThat(stuck.span().getStatus().getCode()).isEqualTo(Status.StatusCode.STATUS_CODE_ERROR);
                assertThat(stuck.span().getStatus().getMessage()).startsWith("stuck-waiting: ");
                assertThat(stuck.attr("kvledger.in_flight")).isEqualTo("true");
                assertThat(stuck.attr("kvledger.end_phase")).isEqualTo("WAITING_FOR_REMOTE_KVS");
                assertThat(stuck.attr("kvledger.bug_class")).isEqualTo("27");
                // the traceparent of its kv_transfer_params: a link to the caller's span
                assertThat(stuck.span().getLinksList()).singleElement().satisfies(l -> {
                    assertThat(java.util.HexFormat.of().formatHex(l.getTraceId().toByteArray()))
                            .isEqualTo("4bf92f3577b34da6a3ce929d0e0e4736");
                    assertThat(java.util.HexFormat.of().formatHex(l.getSpanId().toByteArray())).isEqualTo("00f067aa0ba902b7");
                });
                List<OtlpReceiver.Received> trace = receiver.spans().stream()
                        .filter(s -> s.traceId().equals(stuck.traceId())).toList();
                OtlpReceiver.Received waiting = trace.stream().filter(s -> s.name().equals("WAITING_FOR_REMOTE_KVS"))
                        .findFirst().orElseThrow();
                assertThat(waiting.parentSpanId()).isEqualTo(stuck.spanId());
                assertThat(waiting.attr("kvledger.open")).isEqualTo("true");
                assertThat(waiting.span().getStatus().getCode()).isEqualTo(Status.StatusCode.STATUS_CODE_ERROR);
                assertThat(waiting.span().getEventsList()).extracting(Span.Event::getName).contains("hang_finding");
                assertThat(events(trace, stuck)).contains("send_remote_blocks");
                assertThat(traces.findingLegs()).isEqualTo(1);
            } finally {
                d.close();
                traces.close();
            }
        }
    }

    @Test
    void aRefusingReceiverIsCountedAndNeverStopsTheNode() throws Exception {
        int base = TestNodes.freePortBase(4);
        try (OtlpReceiver receiver = OtlpReceiver.start()) {
            receiver.refuseWith(400);
            NodeService p = NodeService.start(TestNodes.options("P0",
                    TestNodes.config(Role.PRODUCER, TransferMode.WRITE, base, base + 1), dir.resolve("P0")));
            NodeService d = NodeService.start(TestNodes.options("D0",
                    TestNodes.config(Role.CONSUMER, TransferMode.WRITE, base + 2, base + 3), dir.resolve("D0")));
            LiveTraces td = LiveTraces.attach(d, OtlpSender.to(receiver.url(), Duration.ofSeconds(5), Map.of(), false,
                    true), LiveTraces.Options.defaults());
            try {
                LiveRouter router = new LiveRouter(List.of(new LocalLeg(p)), List.of(new LocalLeg(d)), TransferMode.WRITE, 9);
                for (int i = 0; i < 2; i++) {
                    assertThat(router.send(48, 2).get(120, TimeUnit.SECONDS).ok()).isTrue();
                }
                assertThat(TestNodes.eventually(Duration.ofSeconds(120), () -> td.failedSpans() > 0))
                        .as("the refused batch is counted").isTrue();
            } finally {
                p.close();
                d.close();
                td.close();
            }
            assertThat(receiver.requests()).isEmpty();
            assertThat(td.exportedSpans()).isZero();
        }
    }

    private static OtlpSender sender(OtlpReceiver r) {
        return OtlpSender.to(r.url(), Duration.ofSeconds(10), Map.of(), true, true);
    }

    private static List<OtlpReceiver.Received> legSpans(OtlpReceiver r) {
        return r.spans().stream().filter(s -> s.name().equals("kvledger.prefill") || s.name().equals("kvledger.decode"))
                .toList();
    }

    private static List<String> phases(List<OtlpReceiver.Received> trace, OtlpReceiver.Received leg) {
        return trace.stream().filter(s -> s.parentSpanId().equals(leg.spanId()))
                .sorted(java.util.Comparator.comparingInt(s -> Integer.parseInt(s.attr("kvledger.phase.index"))))
                .map(OtlpReceiver.Received::name).toList();
    }

    /** The events of a leg: its phase spans' and its own (frames that came before the request). */
    private static List<String> events(List<OtlpReceiver.Received> trace, OtlpReceiver.Received leg) {
        List<String> out = new ArrayList<>();
        leg.span().getEventsList().forEach(e -> out.add(e.getName()));
        for (OtlpReceiver.Received s : trace) {
            if (s.parentSpanId().equals(leg.spanId())) {
                s.span().getEventsList().forEach(e -> out.add(e.getName()));
            }
        }
        return out;
    }
}
