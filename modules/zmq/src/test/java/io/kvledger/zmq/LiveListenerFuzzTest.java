package io.kvledger.zmq;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.event.NodeEvent;
import io.kvledger.wire.NotifyEvents;
import io.kvledger.wire.NotifyEncoder;
import io.kvledger.wire.WireLimits;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.zeromq.ZMQ;

/**
 * Random and mutated frames through a live listener. Budget {@code -Dkvledger.fuzz.budget=N}
 * (default 3,000 frames), seed {@code -Dkvledger.fuzz.seed=S}. Checked: every frame becomes
 * exactly one event, in order, equal to what the decoder alone makes of it (decoded or
 * rejected); the listener thread stays alive; what it allocates is bounded by the bytes it
 * received (nothing sized by a frame's claims); nothing escapes to the sink as an exception.
 */
class LiveListenerFuzzTest {

    @Test
    void aLiveListenerAccountsForEveryFuzzFrame() {
        int budget = Integer.getInteger("kvledger.fuzz.budget", 3000);
        long seed = Long.getLong("kvledger.fuzz.seed", 0x6b766c65L);
        List<byte[]> frames = new ArrayList<>(VerdictFrames.generate(seed, budget));
        // over the decoder's 4 MiB limit but under ZMQ's cap: received, then rejected as FRAME_TOO_LARGE
        frames.add(new NotifyEncoder().writeDone("x".repeat(5 << 20)));
        long totalBytes = 0;
        for (byte[] f : frames) {
            totalBytes += f.length;
        }
        NotifyEvents reference = new NotifyEvents();
        AtomicLong checked = new AtomicLong();
        AtomicLong rejected = new AtomicLong();
        AtomicReference<String> firstMismatch = new AtomicReference<>();
        EventSink<InboundFrame> verifier = in -> {
            int i = (int) in.seq();
            Object want = NotifyListenerAdapterTest.comparable(reference.toEvent(frames.get(i), in.atNs()));
            Object got = NotifyListenerAdapterTest.comparable(in.event());
            if (!want.equals(got)) {
                String hex = HexFormat.of().formatHex(frames.get(i), 0, Math.min(frames.get(i).length, 64));
                firstMismatch.compareAndSet(null, "seed " + seed + " frame " + i + " " + hex + ": want " + want + ", got " + got);
            }
            if (in.event() instanceof NodeEvent.FrameRejected) {
                rejected.incrementAndGet();
            }
            checked.incrementAndGet();
            return true;
        };
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        try (NotifyListenerAdapter l = NotifyListenerAdapter.open(NotifyListenerConfig.forEndpoint("tcp://127.0.0.1:*"), verifier);
             TestPeers peers = new TestPeers()) {
            long allocBefore = mx.getThreadAllocatedBytes(l.threadId());
            ZMQ.Socket d = peers.dealer(l.endpoint());
            for (byte[] f : frames) {
                d.send(f, 0);
            }
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (checked.get() < frames.size() && System.nanoTime() < deadline) {
                Collector.sleep(5);
            }
            long alloc = mx.getThreadAllocatedBytes(l.threadId()) - allocBefore;
            assertThat(firstMismatch.get()).as("listener vs decoder").isNull();
            assertThat(checked.get()).as("frames accounted for (seed %d)", seed).isEqualTo(frames.size());
            assertThat(l.received()).isEqualTo(frames.size());
            assertThat(l.rejected()).isEqualTo(rejected.get()).isPositive().isLessThan(frames.size());
            assertThat(l.sinkErrors()).isZero();
            assertThat(l.isRunning()).as("the listener thread survives every frame").isTrue();
            assertThat(alloc).as("listener allocation for %d frames of %d bytes", frames.size(), totalBytes)
                    .isLessThan(32L * 1024 * 1024 + 4096L * frames.size() + 8 * totalBytes);
        }
    }

    /**
     * Multi-part messages far above what a rejection may keep: each becomes one
     * {@code BAD_FRAMING} rejection holding at most 64 KiB, whatever the number and size of its
     * frames, and the valid frame sent after each is decoded.
     */
    @Test
    void hugeMultiPartMessagesAreRejectedWithABoundedPrefixAndTheListenerGoesOn() {
        int mib = 1 << 20;
        int[][] shapes = {{2, 8 * mib}, {3, 6 * mib}, {10, 8 * mib}};
        int kept = WireLimits.DEFAULT.keptRejectedBytes();
        NotifyEncoder enc = new NotifyEncoder();
        Collector<InboundFrame> sink = new Collector<>();
        try (NotifyListenerAdapter l = NotifyListenerAdapter.open(NotifyListenerConfig.forEndpoint("tcp://127.0.0.1:*"), sink);
             TestPeers peers = new TestPeers()) {
            ZMQ.Socket d = peers.dealer(l.endpoint());
            for (int s = 0; s < shapes.length; s++) {
                int count = shapes[s][0];
                byte[] part = new byte[shapes[s][1]];
                byte fill = (byte) ('a' + s);
                java.util.Arrays.fill(part, fill);
                for (int i = 0; i < count; i++) {
                    d.send(part, i < count - 1 ? ZMQ.SNDMORE : 0);
                }
                d.send(enc.writeDone("tx-after-" + s), 0);
                List<InboundFrame> got = sink.await(2 * (s + 1), 60);
                InboundFrame bad = got.get(2 * s);
                assertThat(bad.event()).as("shape %d x %d", count, part.length).isInstanceOfSatisfying(NodeEvent.FrameRejected.class, r -> {
                    assertThat(r.reason()).startsWith("BAD_FRAMING: " + count + " frames after the identity (sizes " + part.length + ", ")
                            .contains((long) count * part.length + " bytes in all")
                            .contains("the first " + kept + " bytes of the frames, concatenated, are kept");
                    assertThat(r.frame()).hasSize(kept).containsOnly(fill);
                });
                assertThat(bad.frames().stream().mapToLong(f -> f.length).sum()).isEqualTo(kept);
                assertThat(got.get(2 * s + 1).event()).as("the valid frame after %d x %d", count, part.length)
                        .isEqualTo(new NodeEvent.WriteDoneReceived(got.get(2 * s + 1).atNs(), "tx-after-" + s));
                assertThat(l.isRunning()).isTrue();
            }
            assertThat(l.received()).isEqualTo(6);
            assertThat(l.rejected()).isEqualTo(3);
            assertThat(l.sinkErrors()).isZero();
        }
    }
}
