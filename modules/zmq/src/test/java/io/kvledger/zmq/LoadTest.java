package io.kvledger.zmq;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.event.NodeEvent;
import io.kvledger.wire.NotifyEncoder;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;
import org.zeromq.ZMQ;

/**
 * One listener, eight DEALERs sending at once (each on its own thread, as eight peer ranks
 * would): nothing lost, nothing reordered per sender. {@code -Dkvledger.load.frames=N} frames
 * per sender (default 5,000).
 */
class LoadTest {

    @Test
    void eightDealersAtOnceLoseAndReorderNothing() throws Exception {
        int senders = 8;
        int perSender = Integer.getInteger("kvledger.load.frames", 5000);
        Collector<InboundFrame> sink = new Collector<>();
        try (NotifyListenerAdapter l = NotifyListenerAdapter.open(NotifyListenerConfig.forEndpoint("tcp://127.0.0.1:*"), sink)) {
            CountDownLatch ready = new CountDownLatch(senders);
            CountDownLatch go = new CountDownLatch(1);
            List<Thread> threads = new ArrayList<>();
            List<Throwable> errors = java.util.Collections.synchronizedList(new ArrayList<>());
            for (int s = 0; s < senders; s++) {
                int sender = s;
                Thread t = new Thread(() -> {
                    try (TestPeers peers = new TestPeers()) {
                        ZMQ.Socket d = peers.dealer(l.endpoint());
                        NotifyEncoder enc = new NotifyEncoder();
                        ready.countDown();
                        go.await();
                        for (int i = 0; i < perSender; i++) {
                            d.send(i % 3 == 0 ? enc.release("s" + sender + "-" + i, 1 + sender)
                                    : enc.remoteBlocks("d" + sender, "s" + sender + "-" + i, List.of(i, i + 1), sender), 0);
                        }
                    } catch (Throwable e) {
                        errors.add(e);
                    }
                }, "load-sender-" + s);
                threads.add(t);
                t.start();
            }
            ready.await();
            go.countDown();
            for (Thread t : threads) {
                t.join();
            }
            assertThat(errors).isEmpty();
            List<InboundFrame> got = sink.await(senders * perSender, 60);
            assertThat(got).hasSize(senders * perSender);
            Map<Integer, Integer> next = new TreeMap<>();
            Map<Integer, String> identity = new TreeMap<>();
            for (InboundFrame f : got) {
                String tid = switch (f.event()) {
                    case NodeEvent.RemoteBlocksReceived r -> r.transferId();
                    case NodeEvent.ReleaseReceived r -> r.transferId();
                    default -> throw new AssertionError("unexpected event " + f.event());
                };
                int sender = Integer.parseInt(tid.substring(1, tid.indexOf('-')));
                int i = Integer.parseInt(tid.substring(tid.indexOf('-') + 1));
                assertThat(i).as("sender %d in order", sender).isEqualTo(next.getOrDefault(sender, 0));
                next.put(sender, i + 1);
                String id = HexFormat.of().formatHex(f.identity());
                assertThat(identity.computeIfAbsent(sender, k -> id)).as("one connection per sender").isEqualTo(id);
            }
            assertThat(next.values()).containsOnly(perSender);
            assertThat(next).hasSize(senders);
            assertThat(identity.values()).doesNotHaveDuplicates();
            assertThat(l.rejected()).isZero();
        }
    }
}
