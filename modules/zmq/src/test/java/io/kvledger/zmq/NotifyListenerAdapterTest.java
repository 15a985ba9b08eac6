package io.kvledger.zmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.event.NodeEvent;
import io.kvledger.wire.NotifyEncoder;
import io.kvledger.wire.NotifyEvents;
import io.kvledger.wire.WireLimits;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.zeromq.ZMQ;
import reactor.core.publisher.Flux;

class NotifyListenerAdapterTest {

    static final String LOOPBACK = "tcp://127.0.0.1:*";
    private static final NotifyEncoder ENC = new NotifyEncoder();

    static List<byte[]> mixedFrames() {
        return List.of(
                ENC.remoteBlocks("d-1", "tx-1", List.of(1, 2, 300), 3),
                ENC.remoteBlocksLegacy("d-2", "tx-legacy", List.of(5, 6)),
                ENC.release("tx-1", 8),
                ENC.release("tx-old", null),
                ENC.writeDone("tx-2"),
                "tx-legacy-raw".getBytes(StandardCharsets.UTF_8),
                HexFormat.of().parseHex("fffe8081"),
                HexFormat.of().parseHex("82a474797065a76578706c6f6465ab7472616e736665725f6964a474782d31"),
                new byte[0],
                ENC.writeDone("tx-after-bad-frames"));
    }

    @Test
    void everyFrameOfADealerBecomesOneEventInOrder() {
        Set<String> before = Threads.kvledger();
        Collector<InboundFrame> sink = new Collector<>();
        AtomicInteger clock = new AtomicInteger(1000);
        List<byte[]> frames = mixedFrames();
        try (NotifyListenerAdapter l = NotifyListenerAdapter.open(NotifyListenerConfig.forEndpoint(LOOPBACK)
                     .withClock(clock::incrementAndGet), sink);
             TestPeers peers = new TestPeers()) {
            assertThat(l.endpoint()).startsWith("tcp://127.0.0.1:");
            ZMQ.Socket d = peers.dealer(l.endpoint());
            for (byte[] f : frames) {
                d.send(f, 0);
            }
            List<InboundFrame> got = sink.await(frames.size(), 10);
            NotifyEvents reference = new NotifyEvents();
            for (int i = 0; i < frames.size(); i++) {
                InboundFrame in = got.get(i);
                assertThat(in.seq()).isEqualTo(i);
                assertThat(in.endpoint()).isEqualTo(l.endpoint());
                assertThat(in.identity()).isNotEmpty();
                assertThat(in.frames()).hasSize(1);
                assertThat(in.payload()).isEqualTo(frames.get(i));
                assertThat(in.atNs()).isEqualTo(in.event().atNs()).isGreaterThan(1000);
                assertThat(comparable(in.event())).as("frame %d", i).isEqualTo(comparable(reference.toEvent(frames.get(i), in.atNs())));
            }
            assertThat(got.get(0).event()).isEqualTo(new NodeEvent.RemoteBlocksReceived(got.get(0).atNs(), "d-1", "tx-1", List.of(1, 2, 300), 3, false));
            assertThat(got.get(6).event()).isInstanceOf(NodeEvent.FrameRejected.class);
            assertThat(((NodeEvent.FrameRejected) got.get(6).event()).wouldKillPythonListener()).isTrue();
            assertThat(got.get(9).event()).isEqualTo(new NodeEvent.WriteDoneReceived(got.get(9).atNs(), "tx-after-bad-frames"));
            assertThat(l.received()).isEqualTo(frames.size());
            assertThat(l.rejected()).isEqualTo(3);
            assertThat(l.isRunning()).isTrue();
        }
        Threads.assertNoneLeftBeyond(before);
    }

    /** FrameRejected holds an array: compare it by content. */
    static Object comparable(NodeEvent e) {
        if (e instanceof NodeEvent.FrameRejected r) {
            return List.of(r.atNs(), r.reason(), HexFormat.of().formatHex(r.frame()), r.wouldKillPythonListener());
        }
        return e;
    }

    @Test
    void aDealerThatAddsAnEmptyDelimiterIsRejectedAndTheListenerGoesOn() {
        Collector<InboundFrame> sink = new Collector<>();
        try (NotifyListenerAdapter l = NotifyListenerAdapter.open(NotifyListenerConfig.forEndpoint(LOOPBACK), sink);
             TestPeers peers = new TestPeers()) {
            ZMQ.Socket d = peers.dealer(l.endpoint());
            d.sendMore(new byte[0]);
            d.send(ENC.writeDone("t"), 0);
            d.send(ENC.writeDone("next"), 0);
            List<InboundFrame> got = sink.await(2, 10);
            NodeEvent.FrameRejected r = (NodeEvent.FrameRejected) got.get(0).event();
            assertThat(r.reason()).startsWith("BAD_FRAMING: 2 frames after the identity (sizes 0, ");
            assertThat(r.wouldKillPythonListener()).isTrue();
            assertThat(r.frame()).isEqualTo(ENC.writeDone("t"));
            assertThat(got.get(0).frames()).hasSize(2);
            assertThat(got.get(1).event()).isInstanceOf(NodeEvent.WriteDoneReceived.class);
        }
    }

    @Test
    void bindsAtTheBasePortPlusTheTwoArgumentOffset() {
        for (int attempt = 0; ; attempt++) {
            int port = TestPeers.freePort();
            NotifyListenerConfig cfg = NotifyListenerConfig.forRank("127.0.0.1", port - 3, 1, 2);
            assertThat(cfg.bindEndpoint()).isEqualTo("tcp://127.0.0.1:" + port);
            try (NotifyListenerAdapter l = NotifyListenerAdapter.open(cfg, EventSink.discarding())) {
                assertThat(l.port()).isEqualTo(port);
                return;
            } catch (IllegalStateException e) {
                if (attempt >= 5) {
                    throw e;
                }
            }
        }
    }

    @Test
    void aPortInUseFailsToOpenWithAClearMessageAndLeavesNoThread() {
        Set<String> before = Threads.kvledger();
        try (NotifyListenerAdapter first = NotifyListenerAdapter.open(NotifyListenerConfig.forEndpoint(LOOPBACK), EventSink.discarding())) {
            assertThatThrownBy(() -> NotifyListenerAdapter.open(NotifyListenerConfig.forEndpoint(first.endpoint()), EventSink.discarding()))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("cannot bind notify listener at " + first.endpoint());
        }
        Threads.assertNoneLeftBeyond(before);
    }

    @Test
    void aFullSinkHoldsFramesBackWithoutLosingAny() {
        Set<String> before = Threads.kvledger();
        BoundedFluxSink<InboundFrame> sink = new BoundedFluxSink<>(4);
        int n = 200;
        try (NotifyListenerAdapter l = NotifyListenerAdapter.open(NotifyListenerConfig.forEndpoint(LOOPBACK), sink);
             TestPeers peers = new TestPeers()) {
            ZMQ.Socket d = peers.dealer(l.endpoint());
            for (int i = 0; i < n; i++) {
                d.send(ENC.writeDone("tx-" + i), 0);
            }
            long deadline = System.nanoTime() + 120_000_000_000L;
            while (sink.delivered() < 4 && System.nanoTime() < deadline) {
                Collector.sleep(5);
            }
            assertThat(sink.delivered()).as("no subscriber yet: only the buffer fills").isEqualTo(4);
            List<InboundFrame> got = sink.flux().take(n).collectList().block(Duration.ofSeconds(120));
            assertThat(got).hasSize(n);
            for (int i = 0; i < n; i++) {
                assertThat(got.get(i).event()).isEqualTo(new NodeEvent.WriteDoneReceived(got.get(i).atNs(), "tx-" + i));
            }
            assertThat(sink.dropped()).isZero();
        }
        Threads.assertNoneLeftBeyond(before);
    }

    @Test
    void aThrowingSinkLosesOnlyThatFrame() {
        Collector<InboundFrame> kept = new Collector<>();
        AtomicInteger calls = new AtomicInteger();
        EventSink<InboundFrame> flaky = f -> {
            if (calls.incrementAndGet() == 2) {
                throw new IllegalStateException("journal full");
            }
            return kept.offer(f);
        };
        try (NotifyListenerAdapter l = NotifyListenerAdapter.open(NotifyListenerConfig.forEndpoint(LOOPBACK), flaky);
             TestPeers peers = new TestPeers()) {
            ZMQ.Socket d = peers.dealer(l.endpoint());
            for (int i = 0; i < 3; i++) {
                d.send(ENC.writeDone("tx-" + i), 0);
            }
            List<InboundFrame> got = kept.await(2, 10);
            assertThat(got).extracting(InboundFrame::seq).containsExactly(0L, 2L);
            assertThat(l.sinkErrors()).isEqualTo(1);
            assertThat(l.isRunning()).isTrue();
        }
    }

    @Test
    void framesOverTheDecoderLimitAreRejectedWithTheirPrefix() {
        Collector<InboundFrame> sink = new Collector<>();
        NotifyListenerConfig cfg = NotifyListenerConfig.forEndpoint(LOOPBACK).withLimits(new WireLimits(1024, 8, 32));
        try (NotifyListenerAdapter l = NotifyListenerAdapter.open(cfg, sink); TestPeers peers = new TestPeers()) {
            ZMQ.Socket d = peers.dealer(l.endpoint());
            byte[] big = ENC.writeDone("x".repeat(2000));
            d.send(big, 0);
            NodeEvent.FrameRejected r = (NodeEvent.FrameRejected) sink.await(1, 10).get(0).event();
            assertThat(r.reason()).startsWith("FRAME_TOO_LARGE").contains("first 32 of " + big.length + " bytes kept");
            assertThat(r.frame()).hasSize(32);
        }
    }

    @Test
    void theFluxFactoryBindsOnSubscribeAndClosesOnCancel() throws Exception {
        Set<String> before = Threads.kvledger();
        java.util.concurrent.CompletableFuture<String> bound = new java.util.concurrent.CompletableFuture<>();
        Flux<InboundFrame> frames = NotifyListenerAdapter.receive(NotifyListenerConfig.forEndpoint(LOOPBACK), 64, bound::complete);
        Thread sender = new Thread(() -> {
            // its own peers: the DEALER belongs to this thread
            try (TestPeers peers = new TestPeers()) {
                ZMQ.Socket d = peers.dealer(bound.join());
                for (int i = 0; i < 3; i++) {
                    d.send(ENC.writeDone("tx-" + i), 0);
                }
            }
        });
        List<NodeEvent> got = frames.doOnSubscribe(s -> sender.start()).map(InboundFrame::event).take(3)
                .collectList().block(Duration.ofSeconds(120));
        sender.join();
        assertThat(got).extracting(e -> ((NodeEvent.WriteDoneReceived) e).transferId()).containsExactly("tx-0", "tx-1", "tx-2");
        Threads.assertNoneLeftBeyond(before);
    }
}
