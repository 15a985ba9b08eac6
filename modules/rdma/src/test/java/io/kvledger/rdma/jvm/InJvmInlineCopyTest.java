package io.kvledger.rdma.jvm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvledger.rdma.EngineOptions;
import io.kvledger.rdma.MemoryRegion;
import io.kvledger.rdma.OffsetBatch;
import io.kvledger.rdma.PendingTransfer;
import io.kvledger.rdma.Result;
import io.kvledger.rdma.Session;
import io.kvledger.rdma.TransferEvent;
import io.kvledger.rdma.testing.Await;
import io.kvledger.rdma.testing.KvPattern;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;

/** Where the in-JVM engine runs a batch: inline on the posting thread, or on its own thread. */
class InJvmInlineCopyTest {

    static final Duration WAIT = Duration.ofSeconds(120);
    static final long REGION = 4L << 20;
    static final String ENGINE_THREAD = "kvledger-injvm-";

    InJvmTransferEngine a;
    InJvmTransferEngine b;
    MemoryRegion rb;

    Session open(EngineOptions options) {
        a = InJvmTransferEngine.open(options.withName("a"));
        b = InJvmTransferEngine.open(options.withName("b"));
        MemoryRegion ra = a.register("a-kv", REGION).orElseThrow();
        rb = b.register("b-kv", REGION).orElseThrow();
        Session s = a.openSession(ra, rb.descriptor()).orElseThrow();
        Await.open(s, WAIT);
        assertThat(s.state()).isEqualTo(Session.State.OPEN);
        return s;
    }

    @AfterEach
    void close() {
        if (a != null) {
            a.close();
        }
        if (b != null) {
            b.close();
        }
    }

    @Test
    void aSmallBatchIsCopiedAndCompletedBeforePostReturnsOnThePostingThread() {
        Session s = open(EngineOptions.defaults());
        KvPattern.fill(s.local().segment(), 0, 64 << 10, 0, 7, 1);
        List<String> threads = new CopyOnWriteArrayList<>();
        Disposable sub = a.completions().subscribe(e -> threads.add(Thread.currentThread().getName()));
        PendingTransfer p = s.write(1, OffsetBatch.single(0, 8192, 64 << 10)).orElseThrow();
        assertThat(p.future()).as("completed inside post").isDone();
        assertThat(p.future().join().succeeded()).isTrue();
        assertThat(threads).containsExactly(Thread.currentThread().getName());
        assertThat(KvPattern.firstMismatch(rb.segment(), 8192, 64 << 10, 0, 7, 1)).isEqualTo(-1);
        sub.dispose();
        assertThat(a.stats().inFlight()).isZero();
        assertThat(a.stats().succeeded()).isEqualTo(1);
    }

    @Test
    void aBatchOverTheLimitRunsOnTheEngineThread() {
        Session s = open(EngineOptions.defaults().withInlineCopyMaxBytes(64 << 10));
        List<String> threads = new CopyOnWriteArrayList<>();
        Disposable sub = a.completions().subscribe(e -> threads.add(Thread.currentThread().getName()));
        TransferEvent small = Await.event(s.write(1, OffsetBatch.single(0, 0, 64 << 10)), WAIT);
        TransferEvent large = Await.event(s.write(2, OffsetBatch.single(0, 0, (64 << 10) + 1)), WAIT);
        assertThat(small.succeeded()).isTrue();
        assertThat(large.succeeded()).isTrue();
        Await.until(() -> threads.size() == 2, WAIT, "two completions on the flux");
        sub.dispose();
        assertThat(threads.get(0)).isEqualTo(Thread.currentThread().getName());
        assertThat(threads.get(1)).startsWith(ENGINE_THREAD);
    }

    @Test
    void aSmallBatchWaitsBehindAQueuedBatchOfItsSession() {
        Session s = open(EngineOptions.defaults());
        List<Long> order = new CopyOnWriteArrayList<>();
        Disposable sub = a.completions().subscribe(e -> order.add(e.transferId()));
        for (int round = 0; round < 20; round++) {
            Await.event(s.write(100 + round, OffsetBatch.single(0, 0, 2L << 20)), WAIT);
        }
        order.clear();
        for (int round = 0; round < 20; round++) {
            PendingTransfer big = s.write(1000 + 2 * round, OffsetBatch.single(0, 0, 3L << 20)).orElseThrow();
            PendingTransfer small = s.write(1001 + 2 * round, OffsetBatch.single(0, 0, 4096)).orElseThrow();
            assertThat(Await.event(Result.ok(small), WAIT).succeeded()).isTrue();
            assertThat(big.future()).as("the earlier, larger batch completed first").isDone();
        }
        Await.until(() -> order.size() == 40, WAIT, "40 completions");
        sub.dispose();
        for (int i = 0; i < 40; i += 2) {
            assertThat(order.subList(i, i + 2)).as("completion order of round %d", i / 2)
                    .containsExactly(1000L + i, 1001L + i);
        }
    }

    @Test
    void aSubscriberThatPostsTheNextBatchFromItsCallbackDoesNotRecurse() {
        Session s = open(EngineOptions.defaults());
        int n = 20_000;
        AtomicLong next = new AtomicLong(2);
        ConcurrentHashMap<String, Integer> byThread = new ConcurrentHashMap<>();
        AtomicLong deepest = new AtomicLong();
        Disposable sub = a.completions().subscribe(e -> {
            byThread.merge(Thread.currentThread().getName().startsWith(ENGINE_THREAD) ? "engine" : "poster", 1,
                    Integer::sum);
            deepest.accumulateAndGet(Thread.currentThread().getStackTrace().length, Math::max);
            long id = next.getAndIncrement();
            if (id <= n) {
                long off = (id % 256) * 4096;
                s.write(id, OffsetBatch.single(off, off, 4096)).orElseThrow();
            }
        });
        assertThat(s.write(1, OffsetBatch.single(0, 0, 4096)).orElseThrow().future()).isDone();
        Await.until(() -> a.stats().succeeded() == n, WAIT, n + " chained writes");
        sub.dispose();
        assertThat(byThread).containsEntry("poster", 1).containsEntry("engine", n - 1);
        assertThat(deepest.get()).as("stack depth in the callback").isLessThan(400);
        assertThat(a.stats().failed()).isZero();
    }

    @Test
    void aNegativeLimitIsRefused() {
        assertThatThrownBy(() -> EngineOptions.defaults().withInlineCopyMaxBytes(-1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("inlineCopyMaxBytes");
    }
}
