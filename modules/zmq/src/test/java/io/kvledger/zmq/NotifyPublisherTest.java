package io.kvledger.zmq;

import io.kvledger.core.model.TransferId;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.wire.EffectFrames;
import io.kvledger.wire.NotifyEncoder;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.zeromq.SocketType;
import org.zeromq.ZMQ;
import reactor.core.publisher.Flux;

class NotifyPublisherTest {

    /** Receives one message on a ROUTER: all its frames. */
    static List<byte[]> recv(ZMQ.Socket router) {
        List<byte[]> frames = new java.util.ArrayList<>();
        byte[] f = router.recv(0);
        assertThat(f).as("a message within the receive timeout").isNotNull();
        frames.add(f);
        while (router.hasReceiveMore()) {
            frames.add(router.recv(0));
        }
        return frames;
    }

    @Test
    void sendEffectsArriveAsSingleFramesWithPythonsBytes() {
        Set<String> before = Threads.kvledger();
        Collector<AdapterEvent> events = new Collector<>();
        try (TestPeers peers = new TestPeers();
             NotifyPublisher pub = NotifyPublisher.open(PublisherConfig.DEFAULT, events)) {
            ZMQ.Socket router = peers.router("tcp://127.0.0.1:*");
            int port = TestPeers.port(router);
            List<Effect.Notify> effects = List.of(
                    new Effect.SendRemoteBlocks("127.0.0.1", port, "d-1", TransferId.of("tx-1"), List.of(1, 2, 70000), 3),
                    new Effect.SendRelease(Effect.Sender.WORKER, "127.0.0.1", port, TransferId.of("tx-1"), 8),
                    new Effect.SendRelease(Effect.Sender.SCHEDULER, "127.0.0.1", port, TransferId.of(17L), 1),
                    new Effect.SendWriteDone("127.0.0.1", port, "tx-2"),
                    new Effect.SendWriteFailed("127.0.0.1", port, "tx-3", "deferred write expired"));
            for (Effect.Notify e : effects) {
                assertThat(pub.publish(e)).isTrue();
            }
            EffectFrames reference = new EffectFrames();
            byte[] identity = null;
            for (Effect.Notify e : effects) {
                List<byte[]> msg = recv(router);
                assertThat(msg).as("[identity, payload]: no empty delimiter").hasSize(2);
                if (identity == null) {
                    identity = msg.get(0);
                }
                assertThat(msg.get(0)).as("one cached DEALER per endpoint").isEqualTo(identity);
                assertThat(HexFormat.of().formatHex(msg.get(1))).isEqualTo(HexFormat.of().formatHex(reference.encode(e).frame()));
            }
            assertThat(HexFormat.of().formatHex(reference.encode(effects.get(1)).frame())).isEqualTo(
                    "83a474797065a772656c65617365ab7472616e736665725f6964a474782d31b0636f6e73756d65725f74705f73697a6508");
            assertThat(pub.sent()).isEqualTo(effects.size());
            assertThat(events.items()).isEmpty();
        }
        Threads.assertNoneLeftBeyond(before);
    }

    @Test
    void differentPortsGetDifferentDealers() {
        try (TestPeers peers = new TestPeers();
             NotifyPublisher pub = NotifyPublisher.open(PublisherConfig.DEFAULT, EventSink.discarding())) {
            ZMQ.Socket a = peers.router("tcp://127.0.0.1:*");
            ZMQ.Socket b = peers.router("tcp://127.0.0.1:*");
            pub.publish(new Effect.SendWriteDone("127.0.0.1", TestPeers.port(a), "ta"));
            pub.publish(new Effect.SendWriteDone("127.0.0.1", TestPeers.port(b), "tb"));
            pub.publish(new Effect.SendWriteDone("127.0.0.1", TestPeers.port(a), "ta2"));
            List<byte[]> a1 = recv(a);
            List<byte[]> b1 = recv(b);
            List<byte[]> a2 = recv(a);
            assertThat(a1.get(0)).isEqualTo(a2.get(0));
            assertThat(a1.get(1)).isEqualTo(new NotifyEncoder().writeDone("ta"));
            assertThat(b1.get(1)).isEqualTo(new NotifyEncoder().writeDone("tb"));
            assertThat(a2.get(1)).isEqualTo(new NotifyEncoder().writeDone("ta2"));
        }
    }

    @Test
    void failuresBecomeSendFailedEvents() {
        Collector<AdapterEvent> events = new Collector<>();
        try (NotifyPublisher pub = NotifyPublisher.open(PublisherConfig.DEFAULT, events)) {
            assertThat(pub.publish(new Effect.SendRelease(Effect.Sender.WORKER, "127.0.0.1", 1, TransferId.of(new Object()), 1))).isFalse();
            pub.publish(new Effect.SendWriteDone("127.0.0.1", 0, "t-port0"));
            pub.publish(new Effect.SendWriteDone("127.0.0.1", 70000, "t-port-high"));
            pub.publish(new Effect.SendWriteDone("no-such-host.invalid", 5555, "t-nohost"));
            pub.publish(new Effect.SendWriteDone(null, 5555, "t-null-host"));
            List<AdapterEvent.SendFailed> failed = events.awaitMatching(e -> e instanceof AdapterEvent.SendFailed, 5, 10);
            assertThat(failed.get(0).reason()).startsWith("cannot encode");
            assertThat(failed.get(0).messageType()).isEqualTo("release");
            assertThat(failed).extracting(AdapterEvent.SendFailed::transferId).containsSubsequence("t-port0", "t-port-high", "t-nohost", "t-null-host");
            assertThat(failed.get(1).reason()).contains("port 0 out of range");
            assertThat(failed.get(2).reason()).contains("port 70000 out of range");
            assertThat(failed.get(3).endpoint()).isEqualTo("tcp://no-such-host.invalid:5555");
            assertThat(failed.get(3).reason()).contains("no-such-host.invalid");
            assertThat(failed.get(3).frame()).isEqualTo(new NotifyEncoder().writeDone("t-nohost"));
            assertThat(failed.get(4).reason()).isEqualTo("no host");
            assertThat(pub.failed()).isEqualTo(5);
            NodeEvent.NotifySendFailed e = failed.get(3).toNodeEvent();
            assertThat(e.atNs()).isEqualTo(failed.get(3).atNs());
            assertThat(e.endpoint()).isEqualTo("tcp://no-such-host.invalid:5555");
            assertThat(e.messageType()).isEqualTo("write_done");
            assertThat(e.transferId()).isEqualTo("t-nohost");
            assertThat(e.reason()).isEqualTo(failed.get(3).reason());
            assertThat(e.frame()).isEqualTo(failed.get(3).frame());
            assertThat(failed.get(0).toNodeEvent().frame()).as("encoding failed: no frame").isEmpty();
        }
    }

    @Test
    void aClosedPublisherReportsInsteadOfSending() {
        Collector<AdapterEvent> events = new Collector<>();
        NotifyPublisher pub = NotifyPublisher.open(PublisherConfig.DEFAULT, events);
        pub.close();
        assertThat(pub.publish(new Effect.SendWriteDone("127.0.0.1", 5, "late"))).isFalse();
        assertThat(events.items()).hasSize(1);
        assertThat(((AdapterEvent.SendFailed) events.items().get(0)).reason()).isEqualTo("publisher closed");
    }

    @Test
    void sentFramesAreReportedWhenAskedAndAFluxOfEffectsCanBeAttached() {
        Collector<AdapterEvent> events = new Collector<>();
        try (TestPeers peers = new TestPeers();
             NotifyPublisher pub = NotifyPublisher.open(PublisherConfig.DEFAULT.withReportSentFrames(true), events)) {
            ZMQ.Socket router = peers.router("tcp://127.0.0.1:*");
            int port = TestPeers.port(router);
            pub.attach(Flux.just(new Effect.SendWriteDone("127.0.0.1", port, "a"),
                    new Effect.SendWriteDone("127.0.0.1", port, "b")));
            List<AdapterEvent.FrameSent> sent = events.awaitMatching(e -> e instanceof AdapterEvent.FrameSent, 2, 10);
            assertThat(sent).extracting(AdapterEvent.FrameSent::transferId).containsExactly("a", "b");
            assertThat(sent.get(0).endpoint()).isEqualTo("tcp://127.0.0.1:" + port);
            assertThat(recv(router).get(1)).isEqualTo(new NotifyEncoder().writeDone("a"));
            assertThat(recv(router).get(1)).isEqualTo(new NotifyEncoder().writeDone("b"));
        }
    }

    @Test
    void notifyDealersUseTheNewestPeersOptions() {
        try (ZMQ.Context ctx = ZMQ.context(1)) {
            ZMQ.Socket s = ZmqRuntime.notifyDealer(ctx, false);
            assertThat(s.getSocketType()).isEqualTo(SocketType.DEALER);
            assertThat(s.getTCPKeepAlive()).isEqualTo(1);
            assertThat(s.getTCPKeepAliveIdle()).isEqualTo(30);
            assertThat(s.getTCPKeepAliveInterval()).isEqualTo(10);
            assertThat(s.getTCPKeepAliveCount()).isEqualTo(3);
            assertThat(s.getSndHWM()).isZero();
            assertThat(s.getLinger()).isZero();
            s.close();
        }
    }
}
