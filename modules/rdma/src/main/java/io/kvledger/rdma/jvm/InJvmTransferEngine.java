package io.kvledger.rdma.jvm;

import io.kvledger.rdma.EngineOptions;
import io.kvledger.rdma.EngineStats;
import io.kvledger.rdma.FailureCode;
import io.kvledger.rdma.MemoryRegion;
import io.kvledger.rdma.OffsetBatch;
import io.kvledger.rdma.PendingTransfer;
import io.kvledger.rdma.RegionDescriptor;
import io.kvledger.rdma.Result;
import io.kvledger.rdma.Session;
import io.kvledger.rdma.TransferEngine;
import io.kvledger.rdma.TransferError;
import io.kvledger.rdma.TransferEvent;
import io.kvledger.rdma.TransferOp;
import io.kvledger.rdma.spi.BatchRules;
import io.kvledger.rdma.spi.SessionRules;
import io.kvledger.rdma.spi.CompletionHub;
import io.kvledger.rdma.spi.EngineRegion;
import io.kvledger.rdma.spi.EngineSession;
import io.kvledger.rdma.spi.Idler;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import reactor.core.publisher.Flux;

/**
 * The transfer-engine port over {@link MemorySegment#copy}, for tests, the simulator and hosts
 * without UCX. Peers are other {@code InJvmTransferEngine}s of the same JVM: a descriptor's
 * worker address is the owning engine's id and its remote key a per-region random token, so a
 * descriptor of an engine that is gone is {@link FailureCode#PEER_UNREACHABLE} and a forged key
 * {@link FailureCode#BAD_RKEY}, as with UCX.
 *
 * <p>A small batch ({@link EngineOptions#inlineCopyMaxBytes}, 1 MiB by default) posted while
 * nothing of its session waits on the engine thread is copied on the posting thread, and its
 * completion is emitted there before {@code post} returns: a hand-off to another thread and back
 * costs more than such a copy (benchmarks/README.md). Every other batch, and every post made from
 * inside a completion callback (so that a subscriber that posts the next batch never recurses),
 * runs on the engine's own thread ({@code kvledger-injvm-…}), in post order per session. Either
 * way a batch's completion follows its last copy.
 *
 * <p>Memory is off-heap, one shared arena per region, all owned by the engine and freed when it
 * closes; a copy that races with the peer engine's close fails with
 * {@link FailureCode#PEER_FAILED} instead of touching freed memory (shared arenas make that a
 * checked condition).
 */
public final class InJvmTransferEngine implements TransferEngine {

    /** The descriptor engine kind. */
    static final String KIND = "in-jvm";
    private static final ConcurrentHashMap<UUID, InJvmTransferEngine> LIVE = new ConcurrentHashMap<>();
    private static final AtomicInteger SEQUENCE = new AtomicInteger();
    private static final System.Logger LOG = System.getLogger("io.kvledger.rdma");
    /** Set while this thread emits an inline completion: a post from the callback is queued. */
    private static final ThreadLocal<boolean[]> IN_CALLBACK = ThreadLocal.withInitial(() -> new boolean[1]);

    private final UUID id = UUID.randomUUID();
    private final EngineOptions options;
    private final long timeoutNs;
    private final long inlineMaxBytes;
    private final String label;
    private final CompletionHub hub;
    private final ConcurrentLinkedQueue<Runnable> commands = new ConcurrentLinkedQueue<>();
    private final Idler idler = new Idler();
    private final Thread thread;
    private final AtomicBoolean closed = new AtomicBoolean();
    private volatile boolean stopped;
    private final AtomicLong nextRegionId = new AtomicLong(1);
    private final ConcurrentHashMap<Long, JvmRegion> regions = new ConcurrentHashMap<>();
    private final Set<JvmSession> sessions = ConcurrentHashMap.newKeySet();
    private final ConcurrentHashMap<UUID, AtomicInteger> peers = new ConcurrentHashMap<>();

    private InJvmTransferEngine(EngineOptions options) {
        this.options = options;
        this.timeoutNs = options.transferTimeout().toNanos();
        this.inlineMaxBytes = options.inlineCopyMaxBytes();
        this.label = "in-jvm engine " + options.name() + "#" + SEQUENCE.incrementAndGet();
        this.hub = new CompletionHub(label);
        this.thread = Thread.ofPlatform().daemon(true).name("kvledger-injvm-" + options.name() + "-" + SEQUENCE.get())
                .unstarted(this::run);
    }

    /** Starts an engine and its copy thread. */
    public static InJvmTransferEngine open(EngineOptions options) {
        InJvmTransferEngine e = new InJvmTransferEngine(options);
        LIVE.put(e.id, e);
        e.thread.start();
        return e;
    }

    @Override public String kind() { return KIND; }
    @Override public UUID id() { return id; }
    @Override public EngineOptions options() { return options; }
    @Override public Flux<TransferEvent> completions() { return hub.flux(); }

    @Override
    public EngineStats stats() {
        int peerCount = 0;
        for (AtomicInteger n : peers.values()) {
            peerCount += n.get() > 0 ? 1 : 0;
        }
        int open = 0;
        for (JvmRegion r : regions.values()) {
            open += r.isOpen() ? 1 : 0;
        }
        return new EngineStats(open, sessions.size(), peerCount, hub.inFlight(), hub.posted(),
                hub.succeeded(), hub.failed(), hub.rejected());
    }

    @Override
    public Result<MemoryRegion> register(String name, long lengthBytes) {
        if (name == null || name.isBlank()) {
            return Result.err(FailureCode.INVALID_ARGUMENT, "region name must not be blank");
        }
        if (lengthBytes <= 0) {
            return Result.err(FailureCode.INVALID_ARGUMENT, "region length must be positive, got " + lengthBytes);
        }
        if (closed.get()) {
            return Result.err(FailureCode.ENGINE_CLOSED, label + " is closed");
        }
        Arena arena = Arena.ofShared();
        MemorySegment segment;
        try {
            segment = arena.allocate(lengthBytes, 4096);
        } catch (OutOfMemoryError | IllegalArgumentException e) {
            arena.close();
            return Result.err(FailureCode.REGISTRATION_FAILED, "cannot allocate " + lengthBytes + " bytes off-heap: " + e);
        }
        long regionId = nextRegionId.getAndIncrement();
        long token = ThreadLocalRandom.current().nextLong();
        byte[] worker = ByteBuffer.allocate(16).putLong(id.getMostSignificantBits())
                .putLong(id.getLeastSignificantBits()).array();
        byte[] rkey = ByteBuffer.allocate(16).putLong(regionId).putLong(token).array();
        RegionDescriptor d = RegionDescriptor.of(KIND, id, regionId, name, segment.address(), lengthBytes, worker, rkey)
                .orElseThrow();
        JvmRegion r = new JvmRegion(regionId, name, arena, segment, d, token);
        regions.put(regionId, r);
        if (closed.get()) {
            // raced with close(): do not leave memory behind
            regions.remove(regionId);
            arena.close();
            return Result.err(FailureCode.ENGINE_CLOSED, label + " is closed");
        }
        return Result.ok(r);
    }

    @Override
    public Result<Session> openSession(MemoryRegion local, RegionDescriptor remote) {
        TransferError bad = SessionRules.check(local, remote, !closed.get(), label,
                local instanceof JvmRegion own && own.engine() == this, KIND, "the in-JVM engine");
        if (bad != null) {
            return Result.err(bad);
        }
        JvmRegion r = (JvmRegion) local;
        JvmSession s = new JvmSession(r, remote);
        sessions.add(s);
        submit(() -> connect(s));
        return Result.ok(s);
    }

    /** Engine thread: finds the peer engine and region, checks the key. */
    private void connect(JvmSession s) {
        if (s.state() != Session.State.CONNECTING) {
            return;
        }
        byte[] w = s.remote().workerAddress();
        byte[] k = s.remote().rkey();
        if (w.length != 16 || k.length != 16) {
            s.fail(FailureCode.BAD_RKEY, "worker address or key of region '" + s.remote().name() + "' has the wrong size");
            return;
        }
        ByteBuffer wb = ByteBuffer.wrap(w);
        UUID peerId = new UUID(wb.getLong(), wb.getLong());
        InJvmTransferEngine peer = LIVE.get(peerId);
        if (peer == null || peer.closed.get()) {
            s.fail(FailureCode.PEER_UNREACHABLE, "no live in-JVM engine " + peerId + " in this JVM");
            return;
        }
        ByteBuffer kb = ByteBuffer.wrap(k);
        long regionId = kb.getLong();
        long token = kb.getLong();
        JvmRegion target = peer.regions.get(regionId);
        if (target == null || target.token != token || regionId != s.remote().regionId()) {
            s.fail(FailureCode.BAD_RKEY, "remote key does not match region " + s.remote().regionId() + " of engine "
                    + peerId);
            return;
        }
        if (target.segment().byteSize() < s.remote().length()) {
            s.fail(FailureCode.BAD_RKEY, "descriptor claims " + s.remote().length() + " bytes, region has "
                    + target.segment().byteSize());
            return;
        }
        s.markOpen(target, peerId);
    }

    private Result<PendingTransfer> post(JvmSession s, long transferId, TransferOp op, OffsetBatch batch) {
        if (op == null) {
            return hub.reject(Result.err(FailureCode.INVALID_ARGUMENT, "op is null"));
        }
        if (closed.get()) {
            return hub.reject(Result.err(FailureCode.ENGINE_CLOSED, label + " is closed"));
        }
        if (!s.local().isOpen()) {
            return hub.reject(Result.err(FailureCode.REGION_CLOSED, "local region '" + s.local().name() + "' is closed"));
        }
        if (s.state() == Session.State.CLOSED) {
            return hub.reject(Result.err(FailureCode.ENDPOINT_CLOSED, "session to '" + s.remote().name() + "' is closed"));
        }
        TransferError bad = BatchRules.check(batch, s.local().length(), s.remote().length());
        if (bad != null) {
            return hub.reject(Result.err(bad));
        }
        boolean[] inCallback;
        if (batch.totalBytes() <= inlineMaxBytes && s.queued().get() == 0 && s.state() == Session.State.OPEN
                && Thread.currentThread() != thread && !(inCallback = IN_CALLBACK.get())[0]) {
            // inline: the id is reserved, the batch copied and its event emitted before post returns
            if (!hub.reserve(transferId)) {
                return hub.duplicate(transferId);
            }
            TransferEvent event = copy(s, transferId, op, batch, System.nanoTime(), false);
            inCallback[0] = true;
            try {
                return Result.ok(hub.completeReserved(op, event));
            } finally {
                inCallback[0] = false;
            }
        }
        Result<PendingTransfer> admitted = hub.admit(transferId, op);
        if (admitted.isOk()) {
            long now = System.nanoTime();
            s.queued().incrementAndGet();
            submit(() -> {
                hub.complete(copy(s, transferId, op, batch, now, true));
                s.queued().decrementAndGet();
            });
        }
        return admitted;
    }

    /**
     * The copies of one batch, on the engine thread or inline; returns the batch's one event.
     *
     * @param queued whether the batch waited on the engine thread (only then can it be late)
     */
    private TransferEvent copy(JvmSession s, long transferId, TransferOp op, OffsetBatch b, long postNs,
                               boolean queued) {
        if (stopped) {
            return new TransferEvent.Failed(transferId, System.nanoTime(), op, FailureCode.CANCELED,
                    label + " closed before the batch ran");
        }
        if (s.state() != Session.State.OPEN) {
            TransferError why = s.failure();
            return new TransferEvent.Failed(transferId, System.nanoTime(), op,
                    why == null ? FailureCode.ENDPOINT_CLOSED : why.code(),
                    why == null ? "session is " + s.state() : why.message());
        }
        if (queued && System.nanoTime() - postNs > timeoutNs) {
            return new TransferEvent.Failed(transferId, System.nanoTime(), op, FailureCode.TIMEOUT,
                    "not started within " + options.transferTimeout().toMillis() + " ms");
        }
        JvmRegion target = s.target;
        if (!target.isOpen()) {
            return new TransferEvent.Failed(transferId, System.nanoTime(), op, FailureCode.PEER_FAILED,
                    "remote region '" + target.name() + "' was unregistered");
        }
        MemorySegment local = s.local().segment();
        MemorySegment remote = target.segment();
        try {
            BatchRules.copy(op, local, remote, b);
        } catch (IllegalStateException | IndexOutOfBoundsException e) {
            return new TransferEvent.Failed(transferId, System.nanoTime(), op, FailureCode.PEER_FAILED,
                    "copy failed (peer engine closed?): " + e.getMessage());
        }
        long now = System.nanoTime();
        return new TransferEvent.Succeeded(transferId, now, op, b.size(), b.totalBytes(), now - postNs);
    }

    private void submit(Runnable c) {
        commands.add(c);
        idler.wake();
        if (stopped) {
            drain();
        }
    }

    private void drain() {
        synchronized (commands) {
            for (Runnable c; (c = commands.poll()) != null; ) {
                try {
                    c.run();
                } catch (Throwable t) {
                    LOG.log(System.Logger.Level.ERROR, label + ": command failed", t);
                }
            }
        }
    }

    private void run() {
        idler.bindToCurrentThread();
        while (!stopped) {
            Runnable c = commands.poll();
            if (c == null) {
                idler.idle(commands::isEmpty);
                continue;
            }
            idler.busy();
            try {
                c.run();
            } catch (Throwable t) {
                LOG.log(System.Logger.Level.ERROR, label + ": command failed", t);
            }
        }
        drain();
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        LIVE.remove(id);
        for (JvmRegion r : regions.values()) {
            r.close();
        }
        submit(() -> stopped = true);
        if (Thread.currentThread() != thread) {
            try {
                thread.join(TimeUnit.NANOSECONDS.toMillis(timeoutNs) + 5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        stopped = true;
        drain();
        for (JvmSession s : sessions) {
            s.close();
        }
        for (JvmRegion r : regions.values()) {
            closeArena(r.arena());
        }
        regions.clear();
        hub.close();
    }

    private static void closeArena(Arena a) {
        // a peer's copy in progress makes close fail for an instant; it cannot last
        for (int i = 0; i < 1000; i++) {
            try {
                a.close();
                return;
            } catch (IllegalStateException e) {
                if (!a.scope().isAlive()) {
                    return;
                }
                Thread.onSpinWait();
            }
        }
        LOG.log(System.Logger.Level.WARNING, "in-jvm engine: a region arena could not be closed");
    }

    private final class JvmRegion extends EngineRegion {
        final long token;

        JvmRegion(long id, String name, Arena arena, MemorySegment segment, RegionDescriptor descriptor, long token) {
            super(id, name, arena, segment, descriptor);
            this.token = token;
        }

        InJvmTransferEngine engine() {
            return InJvmTransferEngine.this;
        }
    }

    private final class JvmSession extends EngineSession<JvmRegion> {
        volatile JvmRegion target;
        volatile UUID peerId;

        JvmSession(JvmRegion local, RegionDescriptor remote) {
            super(local, remote);
        }

        synchronized void fail(FailureCode code, String why) {
            if (markFailed(code, why)) {
                sessions.remove(this);
            }
        }

        synchronized void markOpen(JvmRegion region, UUID peer) {
            if (state() == State.CONNECTING) {
                target = region;
                peerId = peer;
                peers.computeIfAbsent(peer, u -> new AtomicInteger()).incrementAndGet();
                markOpen();
            }
        }

        @Override
        public Result<PendingTransfer> post(long transferId, TransferOp op, OffsetBatch batch) {
            return InJvmTransferEngine.this.post(this, transferId, op, batch);
        }

        @Override
        public synchronized void close() {
            if (!markClosed()) {
                return;
            }
            sessions.remove(this);
            UUID p = peerId;
            if (p != null) {
                AtomicInteger n = peers.get(p);
                if (n != null) {
                    n.decrementAndGet();
                }
            }
        }
    }
}
