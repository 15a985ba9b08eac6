package io.kvledger.rdma.adapter;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.rdma.EngineOptions;
import io.kvledger.rdma.FailureCode;
import io.kvledger.rdma.MemoryRegion;
import io.kvledger.rdma.Session;
import io.kvledger.rdma.TransferEvent;
import io.kvledger.rdma.TransferOp;
import io.kvledger.rdma.jvm.InJvmTransferEngine;
import io.kvledger.rdma.layout.KvGeometry;
import io.kvledger.rdma.testing.Await;
import io.kvledger.rdma.testing.KvPattern;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;

/** The reducer's PostWrite/PostRead effects in, TransferCompleted events with their status ids out. */
class TransferEffectPublisherTest {

    static final Duration WAIT = Duration.ofSeconds(120);
    static final long BLOCK = 4096;
    InJvmTransferEngine producer;
    InJvmTransferEngine consumer;
    MemoryRegion pKv;
    MemoryRegion dKv;
    Session session;
    TransferEffectPublisher publisher;
    final AtomicLong clock = new AtomicLong(1_000);
    final List<NodeEvent.TransferCompleted> events = new CopyOnWriteArrayList<>();
    final KvGeometry geometry = KvGeometry.kvSplit(16, 32, BLOCK, BLOCK);

    @BeforeEach
    void setUp() {
        producer = InJvmTransferEngine.open(EngineOptions.defaults().withName("p"));
        consumer = InJvmTransferEngine.open(EngineOptions.defaults().withName("d"));
        pKv = producer.register("p-kv", 2 * 16 * BLOCK).orElseThrow();
        dKv = consumer.register("d-kv", 2 * 32 * BLOCK).orElseThrow();
        for (int id = 0; id < 16; id++) {
            KvPattern.fill(pKv.segment(), id * BLOCK, BLOCK, 0, id, 0);
            KvPattern.fill(pKv.segment(), 16 * BLOCK + id * BLOCK, BLOCK, 0, id, 1);
        }
        session = producer.openSession(pKv, dKv.descriptor()).orElseThrow();
        publisher = new TransferEffectPublisher(producer, clock::incrementAndGet);
        publisher.events().subscribe(events::add);
        assertThat(publisher.bind("d_dp0", "model.layers.0", session, geometry, 0, 0).isOk()).isTrue();
    }

    @AfterEach
    void tearDown() {
        publisher.close();
        producer.close();
        consumer.close();
    }

    @Test
    void aPostWriteMovesItsBlocksAndComesBackWithItsStatusId() {
        publisher.publish(new Effect.PostWrite(41, "tx-a", "model.layers.0", "d_dp0",
                new int[] {2, 3, 4}, new int[] {20, 21, 22}));
        Await.until(() -> events.size() == 1, WAIT, "one event");
        NodeEvent.TransferCompleted e = events.get(0);
        assertThat(e.statusId()).isEqualTo(41);
        assertThat(e.succeeded()).isTrue();
        assertThat(e.code()).isZero();
        assertThat(e.message()).isEqualTo("ok");
        assertThat(e.atNs()).as("stamped by the node's clock").isGreaterThan(1_000);
        for (int i = 0; i < 3; i++) {
            assertThat(KvPattern.firstMismatch(dKv.segment(), (20 + i) * BLOCK, BLOCK, 0, 2 + i, 0)).isEqualTo(-1);
            assertThat(KvPattern.firstMismatch(dKv.segment(), 32 * BLOCK + (20 + i) * BLOCK, BLOCK, 0, 2 + i, 1)).isEqualTo(-1);
        }
        assertThat(publisher.pending()).isZero();
    }

    @Test
    void aPostReadPullsIntoTheLocalRegion() {
        Session pull = consumer.openSession(dKv, pKv.descriptor()).orElseThrow();
        try (TransferEffectPublisher reader = new TransferEffectPublisher(consumer)) {
            List<NodeEvent.TransferCompleted> got = new CopyOnWriteArrayList<>();
            reader.events().subscribe(got::add);
            assertThat(reader.bind("p_dp0", "model.layers.0", pull, KvGeometry.kvSplit(32, 16, BLOCK, BLOCK), 0, 0).isOk())
                    .isTrue();
            reader.publish(new Effect.PostRead(9, "req-1", "tx-b", "model.layers.0", "p_dp0", new int[] {30}, new int[] {15}));
            Await.until(() -> got.size() == 1, WAIT, "the read's event");
            assertThat(got.get(0).statusId()).isEqualTo(9);
            assertThat(got.get(0).succeeded()).isTrue();
            assertThat(KvPattern.firstMismatch(dKv.segment(), 30 * BLOCK, BLOCK, 0, 15, 0)).isEqualTo(-1);
            assertThat(KvPattern.firstMismatch(dKv.segment(), 32 * BLOCK + 30 * BLOCK, BLOCK, 0, 15, 1)).isEqualTo(-1);
        }
    }

    @Test
    void everyRefusalComesBackAsAFailedEventWithItsCode() {
        publisher.publish(new Effect.PostWrite(1, "tx", "model.layers.0", "d_dp0", new int[] {1, 2}, new int[] {1}));
        publisher.publish(new Effect.PostWrite(2, "tx", "model.layers.9", "d_dp0", new int[] {1}, new int[] {1}));
        publisher.publish(new Effect.PostWrite(3, "tx", "model.layers.0", "d_dp0", new int[] {16}, new int[] {1}));
        session.close();
        publisher.publish(new Effect.PostWrite(4, "tx", "model.layers.0", "d_dp0", new int[] {1}, new int[] {1}));
        Await.until(() -> events.size() == 4, WAIT, "four events");
        assertThat(events).extracting(NodeEvent.TransferCompleted::statusId).containsExactly(1L, 2L, 3L, 4L);
        assertThat(events).extracting(NodeEvent.TransferCompleted::code).containsExactly(
                FailureCode.UNEQUAL_BLOCK_LISTS.code(), FailureCode.NO_SESSION.code(),
                FailureCode.BLOCK_ID_OUT_OF_RANGE.code(), FailureCode.ENDPOINT_CLOSED.code());
        assertThat(events).noneMatch(NodeEvent.TransferCompleted::succeeded);
        assertThat(events).allSatisfy(e -> assertThat(e.message()).isNotBlank());
    }

    @Test
    void bindRefusesARegionTooSmallForTheLayer() {
        MemoryRegion small = consumer.register("scratch", 4 * BLOCK).orElseThrow();
        Session toSmall = producer.openSession(pKv, small.descriptor()).orElseThrow();
        var r = publisher.bind("d_dp0", "model.layers.1", toSmall, geometry, 0, 0);
        assertThat(r.errorOrNull().code()).isEqualTo(FailureCode.WRONG_REGION);
        assertThat(r.errorOrNull().message()).contains("scratch", "model.layers.1");
        var local = publisher.bind("d_dp0", "model.layers.1", session, geometry, BLOCK, 0);
        assertThat(local.errorOrNull().code()).isEqualTo(FailureCode.LOCAL_OUT_OF_BOUNDS);
        assertThat(publisher.bind(null, "x", session, geometry, 0, 0).errorOrNull().code())
                .isEqualTo(FailureCode.INVALID_ARGUMENT);
    }

    @Test
    void theAdapterMapsSuccessAndFailure() {
        NodeEvent.TransferCompleted ok = TransferCompletionAdapter.toNodeEvent(
                new TransferEvent.Succeeded(5, 77, TransferOp.READ, 2, 8192, 10));
        assertThat(ok).isEqualTo(new NodeEvent.TransferCompleted(77, 5, true, 0, "ok"));
        NodeEvent.TransferCompleted bad = TransferCompletionAdapter.toNodeEvent(
                new TransferEvent.Failed(6, 78, TransferOp.WRITE, FailureCode.TIMEOUT, "no completion within 30000 ms"), 60, 99);
        assertThat(bad).isEqualTo(new NodeEvent.TransferCompleted(99, 60, false, 201, "no completion within 30000 ms"));
        assertThat(TransferCompletionAdapter.adapt(Flux.just(new TransferEvent.Succeeded(1, 2, TransferOp.READ, 1, 1, 1)))
                .collectList().block(WAIT)).containsExactly(new NodeEvent.TransferCompleted(2, 1, true, 0, "ok"));
    }

    @Test
    void aNodeSinkGetsTheCompletionsAndAFullOneIsCountedAsRefusedNotLost() {
        java.util.concurrent.ArrayBlockingQueue<io.kvledger.core.event.NodeEvent> inbox =
                new java.util.concurrent.ArrayBlockingQueue<>(1);
        try (TransferEffectPublisher p = new TransferEffectPublisher(producer, clock::incrementAndGet, inbox::offer,
                Duration.ofMillis(20))) {
            assertThat(p.bind("d_dp0", "model.layers.0", session, geometry, 0, 0).isOk()).isTrue();
            p.publish(new Effect.PostWrite(51, "tx-s", "model.layers.0", "d_dp0",
                    new int[] {1}, new int[] {10}));
            Await.until(() -> inbox.size() == 1, WAIT, "the completion in the inbox");
            assertThat(((NodeEvent.TransferCompleted) inbox.peek()).statusId()).isEqualTo(51);
            // the inbox is full now: a refused post (caller's thread) and a completion (engine thread) are dropped and counted
            p.publish(new Effect.PostWrite(52, "tx-s", "model.layers.9", "d_dp0",
                    new int[] {1}, new int[] {10}));
            assertThat(p.refused()).isEqualTo(1);
            p.publish(new Effect.PostWrite(53, "tx-s", "model.layers.0", "d_dp0",
                    new int[] {2}, new int[] {11}));
            Await.until(() -> p.refused() == 2, WAIT, "the completion refused after the bound");
            assertThat(p.pending()).isZero();
            assertThat(inbox).hasSize(1);
            org.assertj.core.api.Assertions.assertThatThrownBy(p::events).isInstanceOf(IllegalStateException.class);
        }
    }
}
