package io.kvledger.rdma.ucx;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.rdma.EngineOptions;
import io.kvledger.rdma.FailureCode;
import io.kvledger.rdma.MemoryRegion;
import io.kvledger.rdma.OffsetBatch;
import io.kvledger.rdma.PendingTransfer;
import io.kvledger.rdma.RegionDescriptor;
import io.kvledger.rdma.Result;
import io.kvledger.rdma.Session;
import io.kvledger.rdma.TransferEvent;
import io.kvledger.rdma.adapter.TransferEffectPublisher;
import io.kvledger.rdma.layout.KvGeometry;
import io.kvledger.rdma.layout.KvTensor;
import io.kvledger.rdma.testing.Await;
import io.kvledger.rdma.testing.KvPattern;
import io.kvledger.rdma.testing.Peer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Two JVM processes over UCX: this one and a {@link io.kvledger.rdma.testing.PeerProcess} it
 * starts with the same JVM flags and classpath. Descriptors travel as text over the child's
 * stdin/stdout. Every byte of every moved block is checked against the pattern of its source
 * block and layer, and every block that should not have been touched is checked to be zero.
 *
 * <p>The KV layout is the K/V split one ({@code [2, num_blocks, 16, 4, 32]} bf16, 4 KiB blocks)
 * with two layers in one shared region, a producer with 64 blocks per layer and a consumer with
 * 96 (so {@code remote_kv_stride} differs from the local one), and block id lists that merge
 * into contiguous runs.
 */
class TwoProcessUcxTest {

    /**
     * Both engines' transfer timeout, which also bounds a region's registration: a 64 MiB region
     * took over 3 s to register at a load average of 15, so it leaves room for a loaded machine.
     */
    static final Duration TIMEOUT = Duration.ofSeconds(10);
    static final Duration WAIT = Duration.ofSeconds(120);
    static final int PRODUCER_BLOCKS = 64;
    static final int CONSUMER_BLOCKS = 96;
    static final int LAYERS = 2;
    static final long BLOCK = 16 * 4 * 32 * 2;
    static final int[] PRODUCER_IDS = {3, 4, 5, 6, 10, 11, 20};
    static final int[] CONSUMER_IDS = {40, 41, 42, 43, 7, 8, 90};

    @TempDir
    Path dir;

    @BeforeAll
    static void ucx() {
        Ucx.Availability a = Ucx.load();
        assumeTrue(a.loaded(), () -> "UCX not available here: " + a.detail());
    }

    static long layerBytes(int blocks) {
        return 2L * blocks * BLOCK;
    }

    static KvGeometry geometry(int localBlocks, int remoteBlocks) {
        return KvGeometry.of(KvTensor.contiguous(2, 2, localBlocks, 16, 4, 32), 16, false, remoteBlocks).orElseThrow();
    }

    static String csv(int[] ids) {
        return Arrays.stream(ids).mapToObj(Integer::toString).collect(Collectors.joining(","));
    }

    static UcxTransferEngine engine(String mode) {
        return UcxTransferEngine.open(EngineOptions.defaults().withTransferTimeout(TIMEOUT).withName("parent")
                .withErrorHandling(EngineOptions.ErrorHandling.valueOf(mode.toUpperCase()))).orElseThrow();
    }

    /**
     * Posts the same (idempotent) batch under fresh ids until one completes inside {@code post},
     * as a batch does once its session has nothing queued; at most 20 tries.
     */
    static boolean directly(java.util.function.LongFunction<io.kvledger.rdma.Result<io.kvledger.rdma.PendingTransfer>> post,
                            long firstId) {
        for (int i = 0; i < 20; i++) {
            var p = post.apply(firstId + i);
            boolean inside = p.orElseThrow().future().isDone();
            assertThat(Await.event(p, WAIT).succeeded()).isTrue();
            if (inside) {
                return true;
            }
        }
        return false;
    }

    static RegionDescriptor desc(String answer) {
        assertThat(answer).startsWith("DESC ");
        return RegionDescriptor.parse(answer.substring(5)).orElseThrow();
    }

    @ParameterizedTest(name = "error handling {0}")
    @ValueSource(strings = {"peer", "none"})
    void writeAndReadShapesMoveEveryByteOfEveryBlock(String mode) throws Exception {
        try (Peer peer = Peer.start(dir, mode, TIMEOUT); UcxTransferEngine engine = engine(mode)) {
            // ---- WRITE: this process is the producer and pushes into the consumer's region
            MemoryRegion producerKv = engine.register("producer-kv", LAYERS * layerBytes(PRODUCER_BLOCKS)).orElseThrow();
            for (int layer = 0; layer < LAYERS; layer++) {
                long base = layer * layerBytes(PRODUCER_BLOCKS);
                for (int id = 0; id < PRODUCER_BLOCKS; id++) {
                    KvPattern.fill(producerKv.segment(), base + id * BLOCK, BLOCK, layer, id, 0);
                    KvPattern.fill(producerKv.segment(), base + PRODUCER_BLOCKS * BLOCK + id * BLOCK, BLOCK, layer, id, 1);
                }
            }
            RegionDescriptor consumerKv = desc(peer.call("REGISTER consumer-kv " + LAYERS * layerBytes(CONSUMER_BLOCKS), WAIT));
            Session push = engine.openSession(producerKv, consumerKv, "consumer-kv").orElseThrow();
            KvGeometry g = geometry(PRODUCER_BLOCKS, CONSUMER_BLOCKS);
            assertThat(g.remoteKvStrideBytes()).isEqualTo(CONSUMER_BLOCKS * BLOCK);
            for (int layer = 0; layer < LAYERS; layer++) {
                OffsetBatch batch = g.plan(PRODUCER_IDS, CONSUMER_IDS).orElseThrow()
                        .shifted(layer * layerBytes(PRODUCER_BLOCKS), layer * layerBytes(CONSUMER_BLOCKS));
                assertThat(batch.size()).as("3 contiguous runs x K and V planes").isEqualTo(6);
                TransferEvent e = Await.event(push.write(100 + layer, batch), WAIT);
                assertThat(e.succeeded()).as("write of layer %d: %s", layer, e).isTrue();
            }
            if (mode.equals("none")) {
                // once the session is idle, a batch goes straight into the peer's mapped region
                OffsetBatch again = g.plan(PRODUCER_IDS, CONSUMER_IDS).orElseThrow();
                assertThat(directly(id -> push.write(id, again), 150)).as("a write completed inside post").isTrue();
            }
            for (int layer = 0; layer < LAYERS; layer++) {
                assertThat(peer.call("VERIFYKV consumer-kv " + layer + " " + layer * layerBytes(CONSUMER_BLOCKS) + " "
                        + CONSUMER_BLOCKS * BLOCK + " " + BLOCK + " " + BLOCK + " " + CONSUMER_BLOCKS + " "
                        + csv(CONSUMER_IDS) + " " + csv(PRODUCER_IDS), WAIT)).as("consumer layer %d", layer)
                        .isEqualTo("OK");
            }

            // ---- READ: this process is the consumer and pulls from the producer's region
            RegionDescriptor remoteProducer = desc(peer.call("REGISTER producer-kv " + LAYERS * layerBytes(PRODUCER_BLOCKS), WAIT));
            for (int layer = 0; layer < LAYERS; layer++) {
                assertThat(peer.call("FILLKV producer-kv " + layer + " " + layer * layerBytes(PRODUCER_BLOCKS) + " "
                        + PRODUCER_BLOCKS * BLOCK + " " + BLOCK + " " + BLOCK + " "
                        + csv(java.util.stream.IntStream.range(0, PRODUCER_BLOCKS).toArray()), WAIT)).isEqualTo("OK");
            }
            MemoryRegion consumerLocal = engine.register("consumer-kv", LAYERS * layerBytes(CONSUMER_BLOCKS)).orElseThrow();
            Session pull = engine.openSession(consumerLocal, remoteProducer, "producer-kv").orElseThrow();
            KvGeometry rg = geometry(CONSUMER_BLOCKS, PRODUCER_BLOCKS);
            for (int layer = 0; layer < LAYERS; layer++) {
                OffsetBatch batch = rg.plan(CONSUMER_IDS, PRODUCER_IDS).orElseThrow()
                        .shifted(layer * layerBytes(CONSUMER_BLOCKS), layer * layerBytes(PRODUCER_BLOCKS));
                assertThat(batch.size()).isEqualTo(6);
                TransferEvent e = Await.event(pull.read(200 + layer, batch), WAIT);
                assertThat(e.succeeded()).as("read of layer %d: %s", layer, e).isTrue();
            }
            if (mode.equals("none")) {
                OffsetBatch again = rg.plan(CONSUMER_IDS, PRODUCER_IDS).orElseThrow();
                assertThat(directly(id -> pull.read(id, again), 250)).as("a read completed inside post").isTrue();
            }
            for (int layer = 0; layer < LAYERS; layer++) {
                long base = layer * layerBytes(CONSUMER_BLOCKS);
                for (int block = 0; block < CONSUMER_BLOCKS; block++) {
                    int at = indexOf(CONSUMER_IDS, block);
                    for (int plane = 0; plane < 2; plane++) {
                        long off = base + plane * CONSUMER_BLOCKS * BLOCK + block * BLOCK;
                        long bad = at < 0 ? KvPattern.firstNonZero(consumerLocal.segment(), off, BLOCK)
                                : KvPattern.firstMismatch(consumerLocal.segment(), off, BLOCK, layer, PRODUCER_IDS[at], plane);
                        assertThat(bad).as("layer %d block %d plane %d", layer, block, plane).isEqualTo(-1);
                    }
                }
            }

            // ---- the child initiates: it writes into this process's region (this engine is the target)
            MemoryRegion inbox = engine.register("inbox", 1 << 20).orElseThrow();
            assertThat(peer.call("POST WRITE producer-kv " + inbox.descriptor().toText() + " 7 0:0:65536,65536:131072:4096",
                    WAIT)).isEqualTo("DONE ok");
            assertThat(KvPattern.firstMismatch(inbox.segment(), 0, BLOCK, 0, 0, 0)).isEqualTo(-1);
            assertThat(KvPattern.firstMismatch(inbox.segment(), 131072, BLOCK, 0, 16, 0)).isEqualTo(-1);
            assertThat(KvPattern.firstNonZero(inbox.segment(), 65536, 65536)).isEqualTo(-1);

            push.close();
            pull.close();
            Await.until(() -> engine.stats().endpoints() == 0, WAIT, "endpoint closed after the last session");
            assertThat(engine.stats().inFlight()).isZero();
        }
    }

    static int indexOf(int[] a, int v) {
        for (int i = 0; i < a.length; i++) {
            if (a[i] == v) {
                return i;
            }
        }
        return -1;
    }

    @ParameterizedTest(name = "error handling {0}")
    @ValueSource(strings = {"peer", "none"})
    void aPeerKilledMidTransferFailsItsBatchesWithinTheTimeout(String mode) throws Exception {
        long size = 64L << 20;
        try (Peer peer = Peer.start(dir, mode, TIMEOUT); UcxTransferEngine engine = engine(mode)) {
            RegionDescriptor remote = desc(peer.call("REGISTER big " + size, WAIT));
            MemoryRegion local = engine.register("big", size).orElseThrow();
            Session s = engine.openSession(local, remote).orElseThrow();
            // keep 8 writes of 64 MiB in flight, before and after the kill, until one fails
            java.util.ArrayDeque<PendingTransfer> window = new java.util.ArrayDeque<>();
            long id = 0;
            for (; id < 8; id++) {
                window.add(s.write(id, OffsetBatch.single(0, 0, size)).orElseThrow());
            }
            TransferEvent first = window.poll().future().get(WAIT.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
            assertThat(first.succeeded()).as("a write before the kill: %s", first).isTrue();
            long killedAt = System.nanoTime();
            peer.kill();
            TransferEvent failure = null;
            long giveUp = killedAt + TIMEOUT.plus(WAIT).toNanos();
            while (failure == null && System.nanoTime() < giveUp) {
                Result<PendingTransfer> next = s.write(id++, OffsetBatch.single(0, 0, size));
                if (next.isOk()) {
                    window.add(next.valueOrNull());
                }
                TransferEvent e = window.poll().future().get(WAIT.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
                if (!e.succeeded()) {
                    failure = e;
                }
            }
            assertThat(failure).as("a failure after the kill").isNotNull();
            assertThat(FailureCode.ofCode(failure.code())).as("%s", failure)
                    .isIn(FailureCode.PEER_FAILED, FailureCode.TIMEOUT, FailureCode.ENDPOINT_CLOSED);
            assertThat(Duration.ofNanos(failure.atNs() - killedAt)).as("failure after the kill: %s", failure)
                    .isLessThan(TIMEOUT.plus(WAIT)); // bounded by the timeout, with room for a loaded machine
            for (PendingTransfer p : window) {
                TransferEvent e = p.future().get(WAIT.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
                assertThat(e.succeeded() || FailureCode.ofCode(e.code()) != null).isTrue();
            }
            Await.until(() -> engine.stats().endpoints() == 0, WAIT, "the dead peer's endpoint released");
            assertThat(engine.stats().inFlight()).isZero();
            assertThat(s.state()).isEqualTo(Session.State.FAILED);
            TransferEvent after = Await.event(s.write(1_000_000, OffsetBatch.single(0, 0, 4096)), WAIT);
            assertThat(after.code()).as("%s", after).isEqualTo(FailureCode.ENDPOINT_CLOSED.code());
            // a new session to the dead peer fails too, and leaks nothing
            Session again = engine.openSession(local, remote).orElseThrow();
            TransferEvent e2 = Await.event(again.write(1_000_001, OffsetBatch.single(0, 0, 4096)), WAIT);
            assertThat(e2.succeeded()).as("%s", e2).isFalse();
            Await.until(() -> engine.stats().endpoints() == 0, WAIT, "no endpoint left");
        }
    }

    @ParameterizedTest(name = "error handling {0}")
    @ValueSource(strings = {"peer", "none"})
    void aTargetOutlivesAnInitiatorKilledWhileWritingIntoIt(String mode) throws Exception {
        long size = 64L << 20;
        try (UcxTransferEngine engine = engine(mode)) {
            MemoryRegion inbox = engine.register("inbox", size).orElseThrow();
            try (Peer peer = Peer.start(dir, mode, TIMEOUT)) {
                assertThat(peer.call("REGISTER src " + size, WAIT)).startsWith("DESC ");
                assertThat(peer.call("FLOOD src " + inbox.descriptor().toText() + " 64 " + size, WAIT)).isEqualTo("POSTED");
                Thread.sleep(100); // let the writes get going
                peer.kill();
            }
            // this process served the writes (its thread progressed the emulated RMA) and is fine
            MemoryRegion self = engine.register("self", 1 << 20).orElseThrow();
            Session s = engine.openSession(self, inbox.descriptor()).orElseThrow();
            TransferEvent e = Await.event(s.write(1, OffsetBatch.single(0, 0, 1 << 20)), WAIT);
            assertThat(e.succeeded()).as("%s", e).isTrue();
            s.close();
            Await.until(() -> engine.stats().endpoints() == 0, WAIT, "own endpoint closed");
            assertThat(engine.stats().inFlight()).isZero();
        }
    }

    /**
     * A put into a peer on this host is a one-sided copy in both modes: it completes while the
     * peer process is stopped (SIGSTOP), so the peer never serves it. With peer error handling
     * this used to run over tcp with RMA emulated by active messages, which the target serves,
     * and UCX aborts a target whose reply to an emulated put fails (its initiator died): see
     * {@link UcxTransferEngine}'s {@code survivalConfig}.
     */
    @ParameterizedTest(name = "error handling {0}")
    @ValueSource(strings = {"peer", "none"})
    void aWriteIntoAPeerOnThisHostNeedsNoneOfItsProgress(String mode) throws Exception {
        int blocks = 4;
        long kvStride = blocks * BLOCK;
        try (Peer peer = Peer.start(dir, mode, TIMEOUT); UcxTransferEngine engine = engine(mode)) {
            RegionDescriptor remote = desc(peer.call("REGISTER kv " + 2 * kvStride, WAIT));
            MemoryRegion local = engine.register("kv", 2 * BLOCK).orElseThrow();
            Session s = engine.openSession(local, remote).orElseThrow();
            // connected while the peer runs; this write leaves block 0 as it was (zero)
            assertThat(Await.event(s.write(1, OffsetBatch.single(0, 0, BLOCK)), WAIT).succeeded()).isTrue();
            KvPattern.fill(local.segment(), 0, BLOCK, 0, 2, 0);
            KvPattern.fill(local.segment(), BLOCK, BLOCK, 0, 2, 1);
            OffsetBatch block1 = OffsetBatch.of(new long[] {0, BLOCK}, new long[] {BLOCK, kvStride + BLOCK},
                    new long[] {BLOCK, BLOCK});
            signal(peer, "STOP");
            TransferEvent e;
            try {
                e = Await.event(s.write(2, block1), WAIT);
            } finally {
                signal(peer, "CONT");
            }
            assertThat(e.succeeded()).as("a write while the target process is stopped: %s", e).isTrue();
            assertThat(peer.call("VERIFYKV kv 0 0 " + kvStride + " " + BLOCK + " " + BLOCK + " " + blocks + " 1 2", WAIT))
                    .isEqualTo("OK");
        }
    }

    static void signal(Peer peer, String signal) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(peer.pid())).inheritIO().start();
        assertThat(kill.waitFor()).as("kill -%s %d", signal, peer.pid()).isZero();
    }

    @Test
    void zeroLengthOverBoundsAndWrongRegionAreRefusedBeforeAnythingIsPosted() throws Exception {
        try (Peer peer = Peer.start(dir, "none", TIMEOUT); UcxTransferEngine engine = engine("none")) {
            RegionDescriptor kv = desc(peer.call("REGISTER kv-layer0 " + layerBytes(CONSUMER_BLOCKS), WAIT));
            RegionDescriptor scratch = desc(peer.call("REGISTER scratch 65536", WAIT));
            MemoryRegion local = engine.register("kv", layerBytes(PRODUCER_BLOCKS)).orElseThrow();
            for (int id = 0; id < PRODUCER_BLOCKS; id++) {
                KvPattern.fill(local.segment(), id * BLOCK, BLOCK, 0, id, 0);
            }
            // the handshake promised kv-layer0, the descriptor is for scratch
            Result<Session> wrong = engine.openSession(local, scratch, "kv-layer0");
            assertThat(wrong.errorOrNull().code()).isEqualTo(FailureCode.WRONG_REGION);
            assertThat(wrong.errorOrNull().message()).contains("scratch", "kv-layer0");
            // without a name to check, the layer does not fit the region: refused at bind and at post
            Session toScratch = engine.openSession(local, scratch).orElseThrow();
            try (TransferEffectPublisher publisher = new TransferEffectPublisher(engine)) {
                KvGeometry g = geometry(PRODUCER_BLOCKS, CONSUMER_BLOCKS);
                Result<Void> bound = publisher.bind("peer_dp0", "layer.0", toScratch, g, 0, 0);
                assertThat(bound.errorOrNull().code()).isEqualTo(FailureCode.WRONG_REGION);
                assertThat(publisher.bind("peer_dp0", "layer.0", engine.openSession(local, kv).orElseThrow(), g, 0, 0)
                        .isOk()).isTrue();
                List<NodeEvent.TransferCompleted> events = new CopyOnWriteArrayList<>();
                publisher.events().subscribe(events::add);
                publisher.publish(new Effect.PostWrite(5, "tx-1", "layer.0", "peer_dp0", new int[] {1, 2}, new int[] {3}));
                publisher.publish(new Effect.PostWrite(6, "tx-1", "layer.9", "peer_dp0", new int[] {1}, new int[] {3}));
                publisher.publish(new Effect.PostWrite(7, "tx-1", "layer.0", "peer_dp0", new int[] {1}, new int[] {96}));
                Await.until(() -> events.size() == 3, WAIT, "three refusals as events");
                assertThat(events).extracting(NodeEvent.TransferCompleted::statusId).containsExactly(5L, 6L, 7L);
                assertThat(events).extracting(NodeEvent.TransferCompleted::code).containsExactly(
                        FailureCode.UNEQUAL_BLOCK_LISTS.code(), FailureCode.NO_SESSION.code(),
                        FailureCode.BLOCK_ID_OUT_OF_RANGE.code());
                assertThat(events).noneMatch(NodeEvent.TransferCompleted::succeeded);
            }
            OffsetBatch layerBatch = g0().plan(new int[] {0, 1}, new int[] {90, 91}).orElseThrow();
            Result<PendingTransfer> over = toScratch.write(1, layerBatch);
            assertThat(over.errorOrNull().code()).isEqualTo(FailureCode.REMOTE_OUT_OF_BOUNDS);
            assertThat(toScratch.write(2, OffsetBatch.empty()).errorOrNull().code()).isEqualTo(FailureCode.EMPTY_BATCH);
            assertThat(toScratch.write(3, OffsetBatch.single(0, 0, 0)).errorOrNull().code()).isEqualTo(FailureCode.ZERO_SIZE);
            assertThat(toScratch.write(4, OffsetBatch.single(0, 65536 - 4095, 4096)).errorOrNull().code())
                    .isEqualTo(FailureCode.REMOTE_OUT_OF_BOUNDS);
            assertThat(toScratch.read(5, OffsetBatch.single(layerBytes(PRODUCER_BLOCKS), 0, 1)).errorOrNull().code())
                    .isEqualTo(FailureCode.LOCAL_OUT_OF_BOUNDS);
            assertThat(engine.stats().posted()).as("nothing was posted").isZero();
            assertThat(peer.call("ISZERO scratch", WAIT)).isEqualTo("OK");
            assertThat(peer.call("ISZERO kv-layer0", WAIT)).isEqualTo("OK");
            // the same session still works for a batch that fits
            TransferEvent ok = Await.event(toScratch.write(6, OffsetBatch.single(0, 65536 - 4096, 4096)), WAIT);
            assertThat(ok.succeeded()).isTrue();
            assertThat(peer.call("ISZERO scratch", WAIT)).startsWith("BAD");
        }
    }

    static KvGeometry g0() {
        return geometry(PRODUCER_BLOCKS, CONSUMER_BLOCKS);
    }
}
