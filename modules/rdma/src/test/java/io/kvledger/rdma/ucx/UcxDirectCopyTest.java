package io.kvledger.rdma.ucx;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvledger.rdma.EngineOptions;
import io.kvledger.rdma.FailureCode;
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
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;

/**
 * The UCX engine's direct path: a small batch to a peer whose region UCX maps into this process
 * (shared memory, no peer error handling) is copied by the posting thread; with peer error
 * handling, or over the limit, it goes through the progress thread. Closing a session or the
 * engine while posters copy never touches unmapped memory.
 */
class UcxDirectCopyTest {

    static final Duration WAIT = Duration.ofSeconds(120);
    static final long REGION = 4L << 20;

    UcxTransferEngine a;
    UcxTransferEngine b;
    MemoryRegion ra;
    MemoryRegion rb;
    /** Batches {@link #open} posted. */
    long setupPosts;

    @BeforeAll
    static void ucx() {
        Ucx.Availability av = Ucx.load();
        assumeTrue(av.loaded(), () -> "UCX not available here: " + av.detail());
    }

    Session open(EngineOptions.ErrorHandling mode) {
        EngineOptions o = EngineOptions.defaults().withTransferTimeout(Duration.ofSeconds(5)).withErrorHandling(mode);
        a = UcxTransferEngine.open(o.withName("a")).orElseThrow();
        b = UcxTransferEngine.open(o.withName("b")).orElseThrow();
        ra = a.register("a-kv", REGION).orElseThrow();
        rb = b.register("b-kv", REGION).orElseThrow();
        Session s = a.openSession(ra, rb.descriptor()).orElseThrow();
        Await.open(s, WAIT);
        assertThat(s.state()).as("session %s", s.failure()).isEqualTo(Session.State.OPEN);
        assertThat(Await.event(s.write(1, OffsetBatch.single(0, 0, 64)), WAIT).succeeded()).isTrue();
        setupPosts = 1;
        if (mode == EngineOptions.ErrorHandling.NONE) {
            // a batch that went through the progress thread keeps the session busy until it is
            // reported; once one completes inside post, the session is idle for this thread
            boolean inside = false;
            for (long id = 1_000_000; id < 1_000_020 && !inside; id++) {
                PendingTransfer p = s.write(id, OffsetBatch.single(0, 0, 64)).orElseThrow();
                setupPosts++;
                inside = p.future().isDone();
                assertThat(Await.event(Result.ok(p), WAIT).succeeded()).isTrue();
            }
            assertThat(inside).as("a small write completed inside post").isTrue();
        }
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
    void aSmallBatchToAMappedPeerIsCopiedByThePostingThread() {
        Session s = open(EngineOptions.ErrorHandling.NONE);
        KvPattern.fill(ra.segment(), 0, 64 << 10, 3, 9, 0);
        List<String> threads = new CopyOnWriteArrayList<>();
        // the flux replays the set-up batches (id 1, ids from 1,000,000) to its first subscriber: skip them
        Disposable sub = a.completions().filter(e -> e.transferId() != 1 && e.transferId() < 1_000_000)
                .subscribe(e -> threads.add(Thread.currentThread().getName()));
        PendingTransfer w = s.write(2, OffsetBatch.single(0, 1 << 20, 64 << 10)).orElseThrow();
        assertThat(w.future()).as("completed inside post").isDone();
        assertThat(w.future().join().succeeded()).isTrue();
        assertThat(KvPattern.firstMismatch(rb.segment(), 1 << 20, 64 << 10, 3, 9, 0)).isEqualTo(-1);
        KvPattern.fill(rb.segment(), 2 << 20, 4096, 4, 1, 1);
        PendingTransfer r = s.read(3, OffsetBatch.single(8192, 2 << 20, 4096)).orElseThrow();
        assertThat(r.future()).isDone();
        assertThat(KvPattern.firstMismatch(ra.segment(), 8192, 4096, 4, 1, 1)).isEqualTo(-1);
        assertThat(threads).containsOnly(Thread.currentThread().getName());
        // over the limit: the progress thread
        TransferEvent big = Await.event(s.write(4, OffsetBatch.single(0, 0, (1 << 20) + 4096)), WAIT);
        assertThat(big.succeeded()).isTrue();
        Await.until(() -> threads.size() == 3, WAIT, "three completions");
        sub.dispose();
        assertThat(threads.get(2)).startsWith("kvledger-ucx-");
        assertThat(a.stats().inFlight()).isZero();
    }

    @Test
    void withPeerErrorHandlingEveryBatchGoesThroughTheProgressThread() {
        Session s = open(EngineOptions.ErrorHandling.PEER);
        List<String> threads = new CopyOnWriteArrayList<>();
        // the flux replays the set-up batches (id 1, ids from 1,000,000) to its first subscriber: skip them
        Disposable sub = a.completions().filter(e -> e.transferId() != 1 && e.transferId() < 1_000_000)
                .subscribe(e -> threads.add(Thread.currentThread().getName()));
        assertThat(Await.event(s.write(2, OffsetBatch.single(0, 0, 4096)), WAIT).succeeded()).isTrue();
        Await.until(() -> threads.size() == 1, WAIT, "one completion");
        sub.dispose();
        assertThat(threads.get(0)).startsWith("kvledger-ucx-");
    }

    @Test
    void closingTheSessionOrTheEngineUnderPostingThreadsLosesNoBatchAndTouchesNoFreedMemory() throws Exception {
        Session s = open(EngineOptions.ErrorHandling.NONE);
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong ids = new AtomicLong(100);
        AtomicLong accepted = new AtomicLong();
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        List<PendingTransfer> pending = new CopyOnWriteArrayList<>();
        Runnable poster = () -> {
            try {
                while (!stop.get()) {
                    long id = ids.getAndIncrement();
                    long off = (id % 256) * 4096;
                    Result<PendingTransfer> p = id % 2 == 0 ? s.write(id, OffsetBatch.single(off, off, 4096))
                            : s.read(id, OffsetBatch.single(off, off, 4096));
                    if (p.isOk()) {
                        accepted.incrementAndGet();
                        if (!p.valueOrNull().future().isDone()) {
                            pending.add(p.valueOrNull());
                        }
                    }
                }
            } catch (Throwable t) {
                thrown.set(t);
            }
        };
        Thread t1 = Thread.ofPlatform().start(poster);
        Thread t2 = Thread.ofPlatform().start(poster);
        Await.until(() -> accepted.get() > 20_000, WAIT, "posters running");
        s.close();
        Await.until(() -> accepted.get() > 20_000 && ids.get() > accepted.get() + 1000, WAIT, "posts refused after close");
        a.close();
        stop.set(true);
        t1.join();
        t2.join();
        assertThat(thrown.get()).as("a poster threw").isNull();
        for (PendingTransfer p : pending) {
            TransferEvent e = p.future().get(WAIT.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
            assertThat(e.succeeded() || e.code() == FailureCode.CANCELED.code()
                    || e.code() == FailureCode.ENDPOINT_CLOSED.code()).as("%s", e).isTrue();
        }
        assertThat(a.stats().inFlight()).isZero();
        assertThat(a.stats().posted()).as("the set-up batches and every accepted one").isEqualTo(accepted.get() + setupPosts);
        assertThat(a.stats().succeeded() + a.stats().failed()).isEqualTo(a.stats().posted());
    }
}
