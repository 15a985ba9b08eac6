package io.kvledger.rdma.spi;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.rdma.FailureCode;
import io.kvledger.rdma.OffsetBatch;
import io.kvledger.rdma.PendingTransfer;
import io.kvledger.rdma.Result;
import io.kvledger.rdma.TransferError;
import io.kvledger.rdma.TransferEvent;
import io.kvledger.rdma.TransferOp;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class CompletionHubTest {

    static TransferEvent ok(long id) {
        return new TransferEvent.Succeeded(id, 1, TransferOp.WRITE, 1, 8, 1);
    }

    @Test
    void aTransferIdIsRefusedWhileInFlightAndFreeAgainAfterItsEvent() {
        CompletionHub hub = new CompletionHub("test");
        Result<PendingTransfer> first = hub.admit(7, TransferOp.WRITE);
        assertThat(first.isOk()).isTrue();
        Result<PendingTransfer> dup = hub.admit(7, TransferOp.READ);
        assertThat(dup.errorOrNull().code()).isEqualTo(FailureCode.DUPLICATE_TRANSFER_ID);
        assertThat(dup.errorOrNull().message()).contains("7", "in flight");
        assertThat(hub.inFlight()).isEqualTo(1);
        hub.complete(ok(7));
        assertThat(first.orElseThrow().future()).isCompletedWithValue(ok(7));
        assertThat(hub.admit(7, TransferOp.WRITE).isOk()).isTrue();
        assertThat(hub.rejected()).isEqualTo(1);
        assertThat(hub.posted()).isEqualTo(2);
    }

    @Test
    void eachBatchGetsOneEventEvenIfAnEngineReportsTwice() {
        CompletionHub hub = new CompletionHub("test");
        PendingTransfer p = hub.admit(1, TransferOp.WRITE).orElseThrow();
        hub.complete(ok(1));
        hub.complete(new TransferEvent.Failed(1, 2, TransferOp.WRITE, FailureCode.TIMEOUT, "late"));
        hub.complete(ok(99)); // never admitted
        hub.close();
        assertThat(p.completion().block(Duration.ofSeconds(120))).isEqualTo(ok(1));
        List<TransferEvent> all = hub.flux().collectList().block(Duration.ofSeconds(120));
        assertThat(all).as("buffered until the first subscriber").containsExactly(ok(1));
        assertThat(hub.succeeded()).isEqualTo(1);
        assertThat(hub.failed()).isZero();
    }

    @Test
    void afterEmitRunsOnceTheEventIsOnTheFluxAndBeforeTheFutureCompletes() {
        CompletionHub hub = new CompletionHub("test");
        List<TransferEvent> seen = new java.util.concurrent.CopyOnWriteArrayList<>();
        hub.flux().subscribe(seen::add);
        PendingTransfer p = hub.admit(3, TransferOp.READ).orElseThrow();
        List<String> at = new java.util.ArrayList<>();
        hub.complete(ok(3), () -> at.add("flux " + seen.size() + ", future done " + p.future().isDone()));
        assertThat(at).containsExactly("flux 1, future done false");
        assertThat(p.future()).isCompletedWithValue(ok(3));
        // an ignored event (a second report) still runs it: an engine's release must not be lost
        hub.complete(ok(3), () -> at.add("ignored"));
        assertThat(at).containsExactly("flux 1, future done false", "ignored");
        assertThat(seen).containsExactly(ok(3));
    }

    @Test
    void aReservedIdIsRefusedToOthersIgnoredByCompleteAndFreedByCompleteReserved() {
        CompletionHub hub = new CompletionHub("test");
        List<TransferEvent> seen = new java.util.concurrent.CopyOnWriteArrayList<>();
        hub.flux().subscribe(seen::add);
        assertThat(hub.reserve(5)).isTrue();
        assertThat(hub.reserve(5)).isFalse();
        assertThat(hub.admit(5, TransferOp.WRITE).errorOrNull().code()).isEqualTo(FailureCode.DUPLICATE_TRANSFER_ID);
        assertThat(hub.<PendingTransfer>duplicate(5).errorOrNull().message()).contains("5", "in flight");
        assertThat(hub.isPending(5)).isTrue();
        hub.complete(ok(5)); // not the reserver's event: ignored
        assertThat(seen).isEmpty();
        PendingTransfer p = hub.completeReserved(TransferOp.WRITE, ok(5));
        assertThat(p.future()).isCompletedWithValue(ok(5));
        assertThat(p.transferId()).isEqualTo(5);
        assertThat(seen).containsExactly(ok(5));
        assertThat(hub.isPending(5)).isFalse();
        assertThat(hub.inFlight()).isZero();
        assertThat(hub.posted()).isEqualTo(1);
        assertThat(hub.succeeded()).isEqualTo(1);
        assertThat(hub.rejected()).isEqualTo(2);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> hub.completeReserved(TransferOp.WRITE, ok(5)))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("not reserved");
        PendingTransfer q = hub.admit(6, TransferOp.WRITE).orElseThrow();
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> hub.completeReserved(TransferOp.WRITE, ok(6)))
                .isInstanceOf(IllegalStateException.class);
        assertThat(hub.isPending(6)).as("an admitted id survives a wrong completeReserved").isTrue();
        hub.complete(ok(6));
        assertThat(q.future()).isCompletedWithValue(ok(6));
    }

    @Test
    void threadsRacingForTheSameIdsAdmitEachIdOnceAtATime() throws Exception {
        CompletionHub hub = new CompletionHub("test");
        int threads = 4;
        int perThread = 20_000;
        java.util.concurrent.atomic.AtomicLong overlaps = new java.util.concurrent.atomic.AtomicLong();
        java.util.concurrent.ConcurrentHashMap<Long, Boolean> holding = new java.util.concurrent.ConcurrentHashMap<>();
        java.util.concurrent.atomic.AtomicLong wins = new java.util.concurrent.atomic.AtomicLong();
        java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
        List<Thread> ts = new java.util.ArrayList<>();
        for (int t = 0; t < threads; t++) {
            boolean inline = t % 2 == 0;
            ts.add(Thread.ofPlatform().start(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    return;
                }
                for (int i = 0; i < perThread; i++) {
                    long id = i % 64; // every thread wants the same 64 ids
                    boolean got = inline ? hub.reserve(id) : hub.admit(id, TransferOp.WRITE).isOk();
                    if (!got) {
                        continue;
                    }
                    wins.incrementAndGet();
                    if (holding.putIfAbsent(id, true) != null) {
                        overlaps.incrementAndGet();
                    }
                    holding.remove(id);
                    if (inline) {
                        hub.completeReserved(TransferOp.WRITE, ok(id));
                    } else {
                        hub.complete(ok(id));
                    }
                }
            }));
        }
        go.countDown();
        for (Thread t : ts) {
            t.join();
        }
        assertThat(overlaps.get()).as("an id held by two posters at once").isZero();
        assertThat(hub.inFlight()).isZero();
        assertThat(hub.posted()).isEqualTo(wins.get()).isEqualTo(hub.succeeded());
        assertThat(hub.posted() + hub.rejected()).isEqualTo((long) threads * perThread);
    }

    @Test
    void batchRulesNameTheFirstBadEntry() {
        TransferError e = BatchRules.check(OffsetBatch.of(new long[] {0, 10}, new long[] {0, 0}, new long[] {10, 10}), 15, 100);
        assertThat(e.code()).isEqualTo(FailureCode.LOCAL_OUT_OF_BOUNDS);
        assertThat(e.message()).contains("entry 1", "[10, 10+10)", "15 bytes");
        assertThat(BatchRules.check(OffsetBatch.single(0, 0, 100), 100, 100)).isNull();
        assertThat(BatchRules.check(OffsetBatch.single(1, 0, Long.MAX_VALUE), Long.MAX_VALUE, Long.MAX_VALUE).code())
                .as("no overflow in offset + size").isEqualTo(FailureCode.LOCAL_OUT_OF_BOUNDS);
        assertThat(BatchRules.check(null, 1, 1).code()).isEqualTo(FailureCode.INVALID_ARGUMENT);
    }
}
