package io.kvledger.zmq;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.wire.Registration;
import java.time.Duration;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** A whole node's worth of adapters, used and closed: no thread they started is left. */
class ThreadLeakTest {

    @Test
    void closingEveryAdapterEndsEveryThread() {
        Set<String> before = Threads.kvledger();
        Collector<InboundFrame> frames = new Collector<>();
        Collector<Object> events = new Collector<>();
        NotifyListenerAdapter proxy = NotifyListenerAdapter.open(NotifyListenerConfig.forEndpoint("tcp://127.0.0.1:*"), EventSink.discarding());
        NotifyListenerAdapter listener = NotifyListenerAdapter.open(NotifyListenerConfig.forEndpoint("tcp://127.0.0.1:*"), frames);
        NotifyPublisher publisher = NotifyPublisher.open(PublisherConfig.DEFAULT, events::offer);
        HandshakeServer server = HandshakeServer.open("tcp://127.0.0.1:*", HandshakeTest.META, HandshakeTest.LAYERS, events::offer, System::nanoTime);
        HandshakeClient client = HandshakeClient.open(Duration.ofSeconds(10), 2, events::offer, System::nanoTime);
        RegistrationHeartbeat heartbeat = RegistrationHeartbeat.start(proxy.endpoint(),
                new Registration("P", "127.0.0.1:8100", "host:127.0.0.1,handshake:6301,notify:61005", 1, 1, "WRITE"),
                Duration.ofMillis(20), events::offer, System::nanoTime);
        try {
            assertThat(Threads.kvledger()).hasSizeGreaterThan(before.size());
            publisher.publish(new Effect.SendWriteDone("127.0.0.1", listener.port(), "tx-leak"));
            assertThat(frames.await(1, 10).get(0).event()).isInstanceOf(NodeEvent.WriteDoneReceived.class);
            assertThat(client.handshake("k", "127.0.0.1", server.port()).join().metadata()).isEqualTo(HandshakeTest.META);
            // a handshake still in flight when the client closes
            client.handshake("k2", "127.0.0.1", proxy.port());
        } finally {
            heartbeat.close();
            client.close();
            server.close();
            publisher.close();
            listener.close();
            proxy.close();
        }
        Threads.assertNoneLeftBeyond(before);
        assertThat(events.items()).anyMatch(e -> e instanceof NodeEvent.HandshakeCompleted)
                .anyMatch(e -> e instanceof NodeEvent.HandshakeFailed f && f.key().equals("k2"));
    }
}
