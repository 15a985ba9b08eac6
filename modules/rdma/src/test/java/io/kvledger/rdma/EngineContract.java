package io.kvledger.rdma;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.rdma.testing.Await;
import io.kvledger.rdma.testing.KvPattern;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;

/**
 * What every engine must do, run against each engine by a subclass: two engines of this JVM,
 * {@code a} and {@code b}, each with a registered region.
 */
public abstract class EngineContract {

    static final Duration TIMEOUT = Duration.ofSeconds(4);
    static final Duration WAIT = Duration.ofSeconds(120);
    static final long REGION = 1 << 20;

    TransferEngine a;
    TransferEngine b;
    MemoryRegion ra;
    MemoryRegion rb;

    /** An open engine of the kind under test. */
    protected abstract TransferEngine open(EngineOptions options);

    /** The prefix of the engine thread's name. */
    protected abstract String threadPrefix();

    /** Whether the engine under test may complete a batch on the thread that posted it. */
    protected boolean mayCompleteOnPostingThread() {
        return false;
    }

    /** The options each test opens its engines with; a subclass may adjust them. */
    protected EngineOptions options(String name) {
        return EngineOptions.defaults().withTransferTimeout(TIMEOUT).withName(name);
    }

    @BeforeEach
    void openEngines() {
        a = open(options("a"));
        b = open(options("b"));
        ra = a.register("a-kv", REGION).orElseThrow();
        rb = b.register("b-kv", REGION).orElseThrow();
    }

    @AfterEach
    void closeEngines() {
        if (a != null) {
            a.close();
        }
        if (b != null) {
            b.close();
        }
    }

    private Session connected(TransferEngine e, MemoryRegion local, RegionDescriptor remote) {
        Session s = e.openSession(local, remote).orElseThrow();
        Await.open(s, WAIT);
        assertThat(s.state()).as("session state, failure %s", s.failure()).isEqualTo(Session.State.OPEN);
        return s;
    }

    @Test
    void writesAndReadsBackEveryByteWithCompletionsOnTheEngineThread() {
        for (int block = 0; block < 16; block++) {
            KvPattern.fill(ra.segment(), block * 4096L, 4096, 0, block, 0);
        }
        Session s = connected(a, ra, rb.descriptor());
        List<String> threads = new CopyOnWriteArrayList<>();
        Disposable sub = a.completions().subscribe(ev -> threads.add(Thread.currentThread().getName()));
        // blocks 0..15 of a to blocks 15..0 of b, one entry each
        long[] l = new long[16];
        long[] r = new long[16];
        long[] n = new long[16];
        for (int i = 0; i < 16; i++) {
            l[i] = i * 4096L;
            r[i] = (15 - i) * 4096L;
            n[i] = 4096;
        }
        TransferEvent w = Await.event(s.write(1, OffsetBatch.of(l, r, n)), WAIT);
        assertThat(w).isInstanceOf(TransferEvent.Succeeded.class);
        assertThat(w.code()).isZero();
        assertThat(((TransferEvent.Succeeded) w).bytes()).isEqualTo(16 * 4096L);
        for (int i = 0; i < 16; i++) {
            assertThat(KvPattern.firstMismatch(rb.segment(), (15 - i) * 4096L, 4096, 0, i, 0))
                    .as("b block %d", 15 - i).isEqualTo(-1);
        }
        assertThat(KvPattern.firstNonZero(rb.segment(), 16 * 4096L, REGION - 16 * 4096L)).isEqualTo(-1);
        // read the same bytes back into the upper half of a
        TransferEvent rd = Await.event(s.read(2, OffsetBatch.single(REGION / 2, 0, 16 * 4096L)), WAIT);
        assertThat(rd.succeeded()).as("read %s", rd).isTrue();
        for (int i = 0; i < 16; i++) {
            assertThat(KvPattern.firstMismatch(ra.segment(), REGION / 2 + (15 - i) * 4096L, 4096, 0, i, 0))
                    .as("a block %d", 15 - i).isEqualTo(-1);
        }
        Await.until(() -> threads.size() == 2, WAIT, "both completions seen on the flux");
        sub.dispose();
        String poster = Thread.currentThread().getName();
        assertThat(threads).allSatisfy(t -> assertThat(t.startsWith(threadPrefix())
                || mayCompleteOnPostingThread() && t.equals(poster))
                .as("completion thread %s (engine threads %s…, poster %s)", t, threadPrefix(), poster).isTrue());
        EngineStats st = a.stats();
        assertThat(st.inFlight()).isZero();
        assertThat(st.succeeded()).isEqualTo(2);
        assertThat(st.failed()).isZero();
    }

    @Test
    void refusesBadBatchesBeforePostingAndEmitsNothing() {
        Session s = connected(a, ra, rb.descriptor());
        List<TransferEvent> seen = new CopyOnWriteArrayList<>();
        Disposable sub = a.completions().subscribe(seen::add);
        assertCode(s.write(1, OffsetBatch.empty()), FailureCode.EMPTY_BATCH);
        assertCode(s.write(2, OffsetBatch.single(0, 0, 0)), FailureCode.ZERO_SIZE);
        assertCode(s.write(3, OffsetBatch.single(0, 0, -5)), FailureCode.ZERO_SIZE);
        assertCode(s.write(4, OffsetBatch.single(REGION - 100, 0, 101)), FailureCode.LOCAL_OUT_OF_BOUNDS);
        assertCode(s.write(5, OffsetBatch.single(0, REGION - 100, 101)), FailureCode.REMOTE_OUT_OF_BOUNDS);
        assertCode(s.read(6, OffsetBatch.single(-1, 0, 10)), FailureCode.LOCAL_OUT_OF_BOUNDS);
        assertCode(s.read(7, OffsetBatch.single(0, Long.MAX_VALUE, 10)), FailureCode.REMOTE_OUT_OF_BOUNDS);
        assertCode(s.write(8, OffsetBatch.of(new long[] {0, 0}, new long[] {0}, new long[] {1, 1})),
                FailureCode.MALFORMED_BATCH);
        // one bad entry among good ones refuses the whole batch
        assertCode(s.write(9, OffsetBatch.of(new long[] {0, 4096, REGION}, new long[] {0, 4096, 0},
                new long[] {4096, 4096, 4096})), FailureCode.LOCAL_OUT_OF_BOUNDS);
        assertCode(s.post(10, null, OffsetBatch.single(0, 0, 1)), FailureCode.INVALID_ARGUMENT);
        TransferEvent ok = Await.event(s.write(11, OffsetBatch.single(0, 0, REGION)), WAIT);
        assertThat(ok.succeeded()).isTrue();
        Await.until(() -> !seen.isEmpty(), WAIT, "the good batch's event");
        sub.dispose();
        assertThat(seen).extracting(TransferEvent::transferId).containsExactly(11L);
        assertThat(a.stats().rejected()).isEqualTo(10);
        assertThat(a.stats().posted()).isEqualTo(1);
    }

    @Test
    void closedRegionSessionAndEngineAreRefused() {
        Session s = connected(a, ra, rb.descriptor());
        s.close();
        assertThat(s.state()).isEqualTo(Session.State.CLOSED);
        assertCode(s.write(1, OffsetBatch.single(0, 0, 8)), FailureCode.ENDPOINT_CLOSED);
        MemoryRegion spare = a.register("spare", 4096).orElseThrow();
        Session s2 = connected(a, spare, rb.descriptor());
        spare.close();
        assertThat(spare.isOpen()).isFalse();
        assertCode(s2.write(2, OffsetBatch.single(0, 0, 8)), FailureCode.REGION_CLOSED);
        assertThat(a.openSession(spare, rb.descriptor()).errorOrNull().code()).isEqualTo(FailureCode.REGION_CLOSED);
        a.close();
        assertThat(a.register("late", 4096).errorOrNull().code()).isEqualTo(FailureCode.ENGINE_CLOSED);
        assertThat(a.openSession(ra, rb.descriptor()).errorOrNull().code()).isEqualTo(FailureCode.ENGINE_CLOSED);
        assertCode(s2.write(3, OffsetBatch.single(0, 0, 8)), FailureCode.ENGINE_CLOSED);
    }

    @Test
    void refusesBadArgumentsAndForeignOrWrongDescriptors() {
        assertThat(a.register("", 10).errorOrNull().code()).isEqualTo(FailureCode.INVALID_ARGUMENT);
        assertThat(a.register("x", 0).errorOrNull().code()).isEqualTo(FailureCode.INVALID_ARGUMENT);
        assertThat(a.openSession(null, rb.descriptor()).errorOrNull().code()).isEqualTo(FailureCode.INVALID_ARGUMENT);
        assertThat(a.openSession(rb, rb.descriptor()).errorOrNull().code())
                .as("a region of another engine").isEqualTo(FailureCode.INVALID_ARGUMENT);
        RegionDescriptor d = rb.descriptor();
        RegionDescriptor foreign = RegionDescriptor.of("mori", d.engineId(), d.regionId(), d.name(), d.baseAddress(),
                d.length(), d.workerAddress(), d.rkey()).orElseThrow();
        assertThat(a.openSession(ra, foreign).errorOrNull().code()).isEqualTo(FailureCode.FOREIGN_ENGINE);
        assertThat(a.openSession(ra, d, "kv-layer-7").errorOrNull())
                .satisfies(e -> assertThat(e.code()).isEqualTo(FailureCode.WRONG_REGION))
                .satisfies(e -> assertThat(e.message()).contains("b-kv", "kv-layer-7"));
        Session ok = a.openSession(ra, d, "b-kv").orElseThrow();
        ok.close();
    }

    @Test
    void aPeerThatIsGoneFailsTheTransferWithinTheTimeout() {
        RegionDescriptor gone = rb.descriptor();
        b.close();
        b = null;
        Session s = a.openSession(ra, gone).orElseThrow();
        TransferEvent e = Await.event(s.write(1, OffsetBatch.single(0, 0, 4096)), WAIT);
        assertThat(e.succeeded()).isFalse();
        assertThat(FailureCode.ofCode(e.code())).as("failure %s", e)
                .isIn(FailureCode.PEER_UNREACHABLE, FailureCode.PEER_FAILED, FailureCode.ENDPOINT_CLOSED,
                        FailureCode.TIMEOUT);
        Await.until(() -> a.stats().endpoints() == 0, WAIT, "endpoint to the dead peer released");
        assertThat(a.stats().inFlight()).isZero();
    }

    @Test
    void everyAcceptedBatchGetsExactlyOneEventOnTheFlux() {
        Session s = connected(a, ra, rb.descriptor());
        List<TransferEvent> seen = new CopyOnWriteArrayList<>();
        Disposable sub = a.completions().subscribe(seen::add);
        List<Result<PendingTransfer>> posted = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            long off = (i % 256) * 4096L;
            posted.add(i % 2 == 0 ? s.write(1000 + i, OffsetBatch.single(off, off, 4096))
                    : s.read(1000 + i, OffsetBatch.single(off, off, 4096)));
        }
        for (Result<PendingTransfer> p : posted) {
            assertThat(Await.event(p, WAIT).succeeded()).isTrue();
        }
        Await.until(() -> seen.size() == 200, WAIT, "200 events");
        sub.dispose();
        assertThat(seen).extracting(TransferEvent::transferId).doesNotHaveDuplicates().hasSize(200);
    }

    @Test
    void closeAnswersEveryBatchAndReleasesEverything() {
        Session s = connected(a, ra, rb.descriptor());
        List<Result<PendingTransfer>> posted = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            posted.add(s.write(i, OffsetBatch.single(0, 0, REGION)));
        }
        a.close();
        for (Result<PendingTransfer> p : posted) {
            TransferEvent e = Await.event(p, WAIT);
            assertThat(e.succeeded() || e.code() == FailureCode.CANCELED.code()).as("%s", e).isTrue();
        }
        EngineStats st = a.stats();
        assertThat(st.inFlight()).isZero();
        assertThat(st.endpoints()).isZero();
        assertThat(st.regions()).isZero();
        assertThat(st.sessions()).isZero();
        assertThat(a.completions().collectList().block(WAIT)).as("flux completes after close").isNotNull();
        a.close(); // idempotent
    }

    @Test
    void aDescriptorTravelsAsText() {
        RegionDescriptor d = rb.descriptor();
        RegionDescriptor back = RegionDescriptor.parse(d.toText()).orElseThrow();
        assertThat(back).isEqualTo(d);
        assertThat(back.engineId()).isEqualTo(b.id());
        assertThat(back.engineKind()).isEqualTo(b.kind());
        assertThat(back.length()).isEqualTo(REGION);
        assertThat(back.engineId()).isNotEqualTo(UUID.randomUUID());
        Session s = connected(a, ra, back);
        assertThat(Await.event(s.write(1, OffsetBatch.single(0, 0, 64)), WAIT).succeeded()).isTrue();
    }

    static void assertCode(Result<?> r, FailureCode code) {
        assertThat(r.errorOrNull()).as("refusal").isNotNull();
        assertThat(r.errorOrNull().code()).as("%s", r.errorOrNull()).isEqualTo(code);
        assertThat(r.errorOrNull().message()).isNotBlank();
    }
}
