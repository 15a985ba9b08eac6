package io.kvledger.ledger.otlp;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.RequestPhase;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Which entries {@link TraceRecorder} gives a request's leg, fed by hand with events and effects
 * in the order a producer's loop applies them; and the spans {@link LegSpans} makes of it.
 */
class TraceRecorderTest {

    private static final NodeConfig P = NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).build();

    private static NodeEvent.RequestAdmitted admitted(long at, String rid, String tid) {
        return new NodeEvent.RequestAdmitted(at, rid, 32, 32, KvParams.of("transfer_id", tid, "do_remote_decode", true));
    }

    @Test
    void aLegCollectsItsPhasesFramesPostsAndFramesThatCameBeforeIt() {
        List<TraceRecorder.Leg> ended = new ArrayList<>();
        TraceRecorder rec = new TraceRecorder(ended::add, 16);
        rec.node("P0", P);
        // The decode's remote_blocks reaches the prefill before the prefill admits the request.
        rec.observe("P0", 1, new NodeEvent.RemoteBlocksReceived(100, "cmpl-decode-rid", "tx-1", List.of(3, 4), 0, false),
                List.of());
        assertThat(rec.legs()).as("a request id another node admitted makes no leg").isEmpty();
        rec.observe("P0", 2, admitted(200, "cmpl-p", "tx-1"),
                List.of(new Effect.PhaseChanged("cmpl-p", null, RequestPhase.ADMITTED, "admitted")));
        rec.observe("P0", 4, new NodeEvent.Tick(300),
                List.of(new Effect.PhaseChanged("cmpl-p", RequestPhase.ADMITTED, RequestPhase.PREFILLING, "allocated"),
                        new Effect.PostWrite(7, "tx-1", "layer.0", "s", new int[] {1, 2}, new int[] {3, 4})));
        rec.observe("P0", 6, new NodeEvent.TransferCompleted(400, 7, false, -1, "boom"), List.of());
        rec.observe("P0", 7, new NodeEvent.ReleaseReceived(500, "tx-1", 1), List.of());
        // Another request's frame does not land on this leg.
        rec.observe("P0", 8, new NodeEvent.WriteDoneReceived(550, "tx-other"), List.of());
        assertThat(ended).isEmpty();
        rec.observe("P0", 9, new NodeEvent.Tick(600),
                List.of(new Effect.Anomaly(io.kvledger.core.model.AnomalyKind.WRITE_FAILED, "cmpl-p", "tx-1", "x"),
                        new Effect.PhaseChanged("cmpl-p", RequestPhase.PREFILLING, RequestPhase.FREED_AFTER_ACK, "acked")));

        assertThat(ended).singleElement().satisfies(leg -> {
            assertThat(leg.transferId()).isEqualTo("tx-1");
            assertThat(leg.early()).extracting(TraceRecorder.Event::name).containsExactly("remote_blocks_received");
            assertThat(leg.phases()).extracting(TraceRecorder.Phase::phase).containsExactly(RequestPhase.ADMITTED,
                    RequestPhase.PREFILLING, RequestPhase.FREED_AFTER_ACK);
            assertThat(leg.phases().get(1).endNs()).isEqualTo(600);
            assertThat(leg.phases().get(1).exitReason()).isEqualTo("acked");
            assertThat(leg.phases().get(1).events()).extracting(TraceRecorder.Event::name)
                    .containsExactly("transfer_completed", "release_received", "anomaly");
            assertThat(leg.posts()).isEqualTo(1);
            assertThat(leg.failedCompletions()).isEqualTo(1);
        });

        TraceRecorder.Leg leg = ended.get(0);
        List<SpanData> spans = LegSpans.of(leg, LegSpans.resource("P0", P), null, 0, 0);
        assertThat(spans).extracting(SpanData::getName).containsExactly("kvledger.prefill", "ADMITTED", "PREFILLING",
                "FREED_AFTER_ACK");
        assertThat(spans.get(0).getStartEpochNanos()).as("the leg starts with its early frame").isEqualTo(100);
        assertThat(spans.get(0).getEndEpochNanos()).isEqualTo(600);
        assertThat(spans).extracting(SpanData::getTraceId).containsOnly(LegSpans.traceId("tx-1"));
        assertThat(spans.subList(1, 4)).extracting(SpanData::getParentSpanId).containsOnly(spans.get(0).getSpanId());
        assertThat(LegSpans.of(leg, LegSpans.resource("P0", P), null, 0, 0)).extracting(SpanData::getSpanId)
                .as("ids are a function of the leg").isEqualTo(spans.stream().map(SpanData::getSpanId).toList());
        rec.drop(leg);
        assertThat(rec.legs()).isEmpty();
    }

    @Test
    void theOldestOpenLegIsForgottenPastTheBound() {
        TraceRecorder rec = new TraceRecorder(l -> { }, 2);
        rec.node("P0", P);
        for (int i = 0; i < 3; i++) {
            rec.observe("P0", i + 1, admitted(100 * i, "cmpl-" + i, "tx-" + i),
                    List.of(new Effect.PhaseChanged("cmpl-" + i, null, RequestPhase.ADMITTED, "admitted")));
        }
        assertThat(rec.legs()).extracting(TraceRecorder.Leg::requestId).containsExactly("cmpl-1", "cmpl-2");
        assertThat(rec.forgotten()).isEqualTo(1);
    }

    @Test
    void aTraceparentIsALinkAndAMalformedOneIsIgnored() {
        assertThat(LegSpans.traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
                .satisfies(c -> {
                    assertThat(c.getTraceId()).isEqualTo("4bf92f3577b34da6a3ce929d0e0e4736");
                    assertThat(c.isSampled()).isTrue();
                });
        assertThat(LegSpans.traceparent("00-00000000000000000000000000000000-00f067aa0ba902b7-01")).isNull();
        assertThat(LegSpans.traceparent("not-a-traceparent")).isNull();
        assertThat(LegSpans.traceparent(null)).isNull();
    }
}
