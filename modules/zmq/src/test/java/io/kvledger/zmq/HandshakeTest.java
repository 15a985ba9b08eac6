package io.kvledger.zmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.wire.AgentMetadata;
import io.kvledger.wire.HandshakeCodec;
import io.kvledger.wire.HandshakeRequest;
import io.kvledger.wire.LayerMap;
import io.kvledger.wire.OpaqueBytes;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;
import org.zeromq.ZMQ;

class HandshakeTest {

    static final AgentMetadata META = new AgentMetadata("10.0.0.1:6301", OpaqueBytes.ofHex("00112233445566778899aabbccddeeff"),
            new long[] {140234567680000L, 140234601234432L}, 4096, 262144, "ROCM_AITER_FA");
    static final LayerMap LAYERS = LayerMap.builder()
            .layer("model.layers.0.self_attn.attn", OpaqueBytes.ofHex("deadbeef01"))
            .layer("model.layers.1.self_attn.attn", OpaqueBytes.ofHex("deadbeef02"))
            .build();

    @Test
    void clientAndServerCompleteAHandshake() {
        Set<String> before = Threads.kvledger();
        Collector<AdapterEvent> served = new Collector<>();
        Collector<NodeEvent> events = new Collector<>();
        try (HandshakeServer server = HandshakeServer.open("tcp://127.0.0.1:*", META, LAYERS, served, System::nanoTime);
             HandshakeClient client = HandshakeClient.open(Duration.ofSeconds(10), 2, events, System::nanoTime)) {
            HandshakeResult r = client.start(new Effect.StartHandshake("10.0.0.1:6301_dp0", "127.0.0.1", server.port(), "e", 0)).join();
            assertThat(r.key()).isEqualTo("10.0.0.1:6301_dp0");
            assertThat(r.metadata()).isEqualTo(META);
            assertThat(r.layers()).isEqualTo(LAYERS);
            assertThat(events.await(1, 10).get(0)).isInstanceOf(NodeEvent.HandshakeCompleted.class)
                    .extracting(e -> ((NodeEvent.HandshakeCompleted) e).key()).isEqualTo("10.0.0.1:6301_dp0");
            AdapterEvent.HandshakeServed s = (AdapterEvent.HandshakeServed) served.await(1, 10).get(0);
            assertThat(s.request()).isEqualTo(HandshakeRequest.GET_META_MSG);
            assertThat(client.handshakeMono("k2", "127.0.0.1", server.port()).block(Duration.ofSeconds(120)).metadata()).isEqualTo(META);
            assertThat(server.served()).isEqualTo(2);
        }
        Threads.assertNoneLeftBeyond(before);
    }

    @Test
    void theServerAnswersGetMetaMsgWithTwoTwoFrameRepliesAndSurvivesGarbage() {
        Collector<AdapterEvent> served = new Collector<>();
        try (HandshakeServer server = HandshakeServer.open("tcp://127.0.0.1:*", META, LAYERS, served, System::nanoTime);
             TestPeers peers = new TestPeers()) {
            ZMQ.Socket d = peers.dealer(server.endpoint());
            d.setReceiveTimeOut(10_000);
            d.send("explode".getBytes(StandardCharsets.US_ASCII), 0);
            d.sendMore(new byte[0]);
            d.send(HandshakeRequest.GET_META_MSG.bytes(), 0);
            d.send(HandshakeRequest.POP_DONE_RECV.bytes(), 0);
            d.send(HandshakeRequest.GET_META_MSG.bytes(), 0);
            List<byte[]> first = List.of(d.recv(0), d.recv(0));
            assertThat(d.hasReceiveMore()).isFalse();
            List<byte[]> second = List.of(d.recv(0), d.recv(0));
            assertThat(d.hasReceiveMore()).isFalse();
            assertThat(first.get(0)).isEmpty();
            assertThat(second.get(0)).isEmpty();
            assertThat(first.get(1)).isEqualTo(new HandshakeCodec().encodeMetadata(META));
            assertThat(second.get(1)).isEqualTo(new HandshakeCodec().encodeLayerMap(LAYERS));
            List<AdapterEvent.HandshakeRequestRejected> refused = served.awaitMatching(e -> e instanceof AdapterEvent.HandshakeRequestRejected, 2, 10);
            assertThat(refused.get(0).reason()).startsWith("UNKNOWN_TYPE: handshake request is neither get_meta_msg nor pop_done_recv: explode");
            assertThat(refused.get(0).wouldKillPythonHandshakeThread()).isTrue();
            assertThat(refused.get(1).reason()).startsWith("BAD_FRAMING: 2 frames");
            List<AdapterEvent.HandshakeServed> ok = served.awaitMatching(e -> e instanceof AdapterEvent.HandshakeServed, 2, 10);
            assertThat(ok).extracting(AdapterEvent.HandshakeServed::request).containsExactly(HandshakeRequest.POP_DONE_RECV, HandshakeRequest.GET_META_MSG);
            assertThat(server.isRunning()).isTrue();
        }
    }

    @Test
    void aSilentPeerTimesOutAsHandshakeFailed() {
        Collector<NodeEvent> events = new Collector<>();
        try (TestPeers peers = new TestPeers();
             HandshakeClient client = HandshakeClient.open(Duration.ofMillis(300), 1, events, System::nanoTime)) {
            ZMQ.Socket silent = peers.router("tcp://127.0.0.1:*");
            CompletableFuture<HandshakeResult> f = client.handshake("peer_dp1", "127.0.0.1", TestPeers.port(silent));
            assertThatThrownBy(f::join).isInstanceOf(CompletionException.class).hasCauseInstanceOf(HandshakeException.class);
            NodeEvent.HandshakeFailed failed = (NodeEvent.HandshakeFailed) events.await(1, 10).get(0);
            assertThat(failed.key()).isEqualTo("peer_dp1");
            assertThat(failed.reason()).contains("no metadata reply from tcp://127.0.0.1:").contains("within 300 ms")
                    .contains("would block forever");
        }
    }

    @Test
    void malformedRepliesAndBadAddressesFail() throws Exception {
        Collector<NodeEvent> events = new Collector<>();
        try (TestPeers peers = new TestPeers();
             HandshakeClient client = HandshakeClient.open(Duration.ofSeconds(5), 2, events, System::nanoTime)) {
            ZMQ.Socket router = peers.router("tcp://127.0.0.1:*");
            CompletableFuture<HandshakeResult> noDelimiter = client.handshake("a", "127.0.0.1", TestPeers.port(router));
            answer(router, new byte[] {'x'}, new HandshakeCodec().encodeMetadata(META));
            assertThatThrownBy(noDelimiter::join).hasMessageContaining("first frame is 1 bytes, expected the empty delimiter");
            CompletableFuture<HandshakeResult> oneFrame = client.handshake("b", "127.0.0.1", TestPeers.port(router));
            answer(router, new HandshakeCodec().encodeMetadata(META));
            assertThatThrownBy(oneFrame::join).hasMessageContaining("the first reply has 1 frames, expected 2");
            CompletableFuture<HandshakeResult> badMeta = client.handshake("c", "127.0.0.1", TestPeers.port(router));
            byte[] id = answer(router, new byte[0], new byte[] {(byte) 0x81, (byte) 0xa1, 'k', 1});
            router.sendMore(id);
            router.sendMore(new byte[0]);
            router.send(new HandshakeCodec().encodeLayerMap(LAYERS), 0);
            assertThatThrownBy(badMeta::join).hasMessageContaining("undecodable agent metadata").hasMessageContaining("MISSING_FIELD");
            assertThatThrownBy(() -> client.handshake("d", "127.0.0.1", 0).join()).hasMessageContaining("invalid handshake address");
            assertThatThrownBy(() -> client.handshake("e", "no-such-host.invalid", 5).join()).hasMessageContaining("no-such-host.invalid");
            assertThat(events.await(5, 10)).allMatch(e -> e instanceof NodeEvent.HandshakeFailed);
        }
    }

    /** Reads one request on the router and answers with the given frames; returns the peer identity. */
    private static byte[] answer(ZMQ.Socket router, byte[]... frames) {
        byte[] id = router.recv(0);
        assertThat(router.recv(0)).isEqualTo(HandshakeRequest.GET_META_MSG.bytes());
        router.sendMore(id);
        for (int i = 0; i < frames.length; i++) {
            if (i == frames.length - 1) {
                router.send(frames[i], 0);
            } else {
                router.sendMore(frames[i]);
            }
        }
        return id;
    }

    @Test
    void rankEndpointsUseTheTwoArgumentOffset() {
        assertThat(HandshakeServer.rankEndpoint("*", 6301, 1, 2)).isEqualTo("tcp://*:6304");
    }

    @Test
    void closingFailsHandshakesInFlight() {
        Set<String> before = Threads.kvledger();
        Collector<NodeEvent> events = new Collector<>();
        CompletableFuture<HandshakeResult> f;
        try (TestPeers peers = new TestPeers()) {
            ZMQ.Socket silent = peers.router("tcp://127.0.0.1:*");
            HandshakeClient client = HandshakeClient.open(Duration.ofSeconds(60), 1, events, System::nanoTime);
            f = client.handshake("x", "127.0.0.1", TestPeers.port(silent));
            client.close();
        }
        assertThatThrownBy(f::join).hasMessageContaining("handshake client closed");
        Threads.assertNoneLeftBeyond(before);
    }
}
