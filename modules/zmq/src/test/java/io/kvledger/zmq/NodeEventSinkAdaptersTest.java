package io.kvledger.zmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.wire.NotifyEncoder;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.zeromq.ZMQ;

/**
 * The adapters' node shape: each hands {@link NodeEvent}s to a bounded inbox (a
 * {@link io.kvledger.core.event.NodeEventSink}) and counts what it had to drop after its bound.
 */
class NodeEventSinkAdaptersTest {

    private static final NotifyEncoder ENC = new NotifyEncoder();
    private static final Duration SHORT = Duration.ofMillis(20);

    /** Polls (up to 10 s) until {@code done}; fails with {@code what}. Not a timing assertion. */
    static void await(BooleanSupplier done, String what) {
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("waited 120 s for " + what);
            }
            Thread.onSpinWait();
        }
    }

    @Test
    void theListenerOffersEachFramesEventAndDropsAndCountsWhatAFullInboxRefuses() {
        ArrayBlockingQueue<NodeEvent> inbox = new ArrayBlockingQueue<>(2);
        try (NotifyListenerAdapter l = NotifyListenerAdapter.openForNode(
                NotifyListenerConfig.forEndpoint("tcp://127.0.0.1:*"), inbox::offer, SHORT);
             TestPeers peers = new TestPeers()) {
            ZMQ.Socket d = peers.dealer(l.endpoint());
            d.send(ENC.writeDone("tx-1"), 0);
            d.send(ENC.release("tx-2", 1), 0);
            d.send(ENC.writeDone("tx-3"), 0);
            d.send(new byte[] {(byte) 0xc1}, 0);
            await(() -> l.received() == 4 && l.refused() == 2, "4 frames received, 2 refused");
            List<NodeEvent> got = List.copyOf(inbox);
            assertThat(got).hasSize(2);
            assertThat(got.get(0)).isInstanceOfSatisfying(NodeEvent.WriteDoneReceived.class,
                    e -> assertThat(e.transferId()).isEqualTo("tx-1"));
            assertThat(got.get(1)).isInstanceOf(NodeEvent.ReleaseReceived.class);
            assertThat(l.rejected()).as("the bad frame was decoded as a rejection, then refused").isEqualTo(1);
            // room again: the next frame goes through, the listener kept running
            inbox.clear();
            d.send(ENC.writeDone("tx-4"), 0);
            await(() -> inbox.size() == 1, "the frame after the drops");
            assertThat(l.refused()).isEqualTo(2);
            assertThat(l.isRunning()).isTrue();
        }
    }

    @Test
    void thePublishersSendFailuresBecomeNotifySendFailedAndARefusalIsCounted() {
        ArrayBlockingQueue<NodeEvent> inbox = new ArrayBlockingQueue<>(1);
        try (NotifyPublisher pub = NotifyPublisher.openForNode(PublisherConfig.DEFAULT, inbox::offer, SHORT)) {
            // port 0 fails on the publisher thread
            assertThat(pub.publish(new Effect.SendWriteDone("127.0.0.1", 0, "tx-a"))).isTrue();
            await(() -> inbox.size() == 1, "the failure");
            assertThat(inbox.peek()).isInstanceOfSatisfying(NodeEvent.NotifySendFailed.class, f -> {
                assertThat(f.transferId()).isEqualTo("tx-a");
                assertThat(f.messageType()).isEqualTo("write_done");
                assertThat(f.reason()).contains("out of range");
            });
            assertThat(pub.publish(new Effect.SendWriteDone("127.0.0.1", 0, "tx-b"))).isTrue();
            await(() -> pub.refused() == 1, "the second failure refused after the bound");
            assertThat(pub.failed()).isEqualTo(2);
            assertThat(inbox).hasSize(1);
        }
    }

    @Test
    void theHandshakeClientOffersItsFailureAndCountsARefusal() throws Exception {
        ArrayBlockingQueue<NodeEvent> inbox = new ArrayBlockingQueue<>(1);
        try (HandshakeClient c = HandshakeClient.openForNode(Duration.ofSeconds(5), 1, inbox::offer, System::nanoTime,
                SHORT)) {
            var first = c.handshake("peer_dp0", "", 1);
            assertThatThrownBy(first::join).hasCauseInstanceOf(HandshakeException.class);
            await(() -> inbox.size() == 1, "the failure event");
            assertThat(inbox.peek()).isInstanceOfSatisfying(NodeEvent.HandshakeFailed.class,
                    f -> assertThat(f.key()).isEqualTo("peer_dp0"));
            var second = c.handshake("peer_dp1", "", 1);
            assertThatThrownBy(second::join).hasCauseInstanceOf(HandshakeException.class);
            await(() -> c.refused() == 1, "the second failure refused");
            assertThat(inbox).hasSize(1);
        }
    }

    @Test
    void aNegativeBoundIsRejected() {
        assertThatThrownBy(() -> NotifyPublisher.openForNode(PublisherConfig.DEFAULT, e -> true, Duration.ofMillis(-1)))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
