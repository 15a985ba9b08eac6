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
        assertThat(p.completion().block(Duration.ofSeconds(5))).isEqualTo(ok(1));
        List<TransferEvent> all = hub.flux().collectList().block(Duration.ofSeconds(5));
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
