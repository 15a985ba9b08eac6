package io.kvledger.rdma.ucx;

import static io.kvledger.rdma.ucx.UcxAbi.UCP_EP_PARAMS;
import static io.kvledger.rdma.ucx.UcxAbi.UCP_MEM_MAP_PARAMS;
import static io.kvledger.rdma.ucx.UcxAbi.UCP_PARAMS;
import static io.kvledger.rdma.ucx.UcxAbi.UCP_REQUEST_PARAM;
import static io.kvledger.rdma.ucx.UcxAbi.UCP_WORKER_PARAMS;
import static io.kvledger.rdma.ucx.UcxAbi.UCS_INPROGRESS;
import static io.kvledger.rdma.ucx.UcxAbi.UCS_OK;
import static io.kvledger.rdma.ucx.UcxAbi.offset;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

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
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import reactor.core.publisher.Flux;

/**
 * The transfer-engine port over UCX (libucp) through hand-written Panama bindings.
 *
 * <p><b>One worker, one thread.</b> The engine owns one UCP context and one worker created in
 * {@code UCS_THREAD_MODE_SINGLE} by its progress thread ({@code kvledger-ucx-…}), and every
 * UCX call is made on that thread: callers enqueue commands (register, connect, post, close)
 * and the thread runs them between {@code ucp_worker_progress} calls. The thread never runs
 * on a Reactor scheduler. It keeps serving peers while it has nothing of its own to do, because
 * on hosts without RDMA devices UCX emulates RMA with active messages that the <em>target</em>
 * must progress: idle, it waits on the worker's event descriptor ({@code UCP_FEATURE_WAKEUP}),
 * which a peer's message or a caller's command wakes (see {@code loop()}).
 *
 * <p><b>A batch</b> is one {@code ucp_put_nbx}/{@code ucp_get_nbx} per entry (their requests
 * are released at once) followed by one {@code ucp_ep_flush_nbx}; the batch completes when the
 * flush does, which for writes means remote completion. A batch whose flush is not done by
 * {@code transfer_timeout} fails with {@link FailureCode#TIMEOUT}, and its endpoint is then
 * presumed dead and closed (forcefully without peer error handling, see {@code failEndpoint}):
 * the other batches on it fail with {@link FailureCode#ENDPOINT_CLOSED}, its sessions turn
 * {@link Session.State#FAILED}, and a new session to the same peer makes a new endpoint. An
 * endpoint with peer error handling also hears from UCX that its peer failed, through the
 * endpoint error handler (an FFM upcall), which does the same with {@link FailureCode#PEER_FAILED}.
 * Which endpoints get peer error handling is {@link EngineOptions#errorHandling()}; by default
 * ({@code AUTO}) those to other hosts. Either way a peer on this host reaches this engine's
 * regions through shared memory, one-sided, so this process never serves RMA emulated for it
 * (UCX aborts a process whose reply to an emulated put fails; see {@code survivalConfig}).
 *
 * <p><b>Direct shared memory.</b> When UCX maps a peer's region into this process
 * ({@code ucp_rkey_ptr} succeeds: a peer on this host, shared-memory transport) and the endpoint
 * has no peer error handling (a direct copy could not notice a dead peer), a batch of up to
 * {@link EngineOptions#inlineCopyMaxBytes} posted while nothing of its session waits on the
 * progress thread is copied by the posting thread with {@link MemorySegment#copy} and completed
 * before {@code post} returns, as the in-JVM engine does: a put or get there is one memcpy by the
 * initiator anyway, and the hand-off to the progress thread and back cost up to a third of the
 * bandwidth (benchmarks/README.md). Posts from inside a completion callback, and every other
 * batch, take the path above. The progress thread stops direct copies of a session, and waits
 * for those running, before it destroys the session's remote key or the engine's memory.
 *
 * <p><b>Memory</b> of a region is allocated by UCX ({@code ucp_mem_map} with
 * {@code UCP_MEM_MAP_ALLOCATE}: shared memory on this host, which a peer here maps and accesses
 * one-sided) and handed out as a segment of a shared arena the engine owns; where UCX cannot
 * allocate, the engine allocates it from that arena. A closed region refuses posts, but stays
 * mapped until the engine closes: peers may hold its key and write into it directly (or, with
 * emulated RMA, have this worker write where they say), so its memory must not be reused while
 * the worker runs. On close the segments are invalidated first, then UCX unmaps and frees.
 * Remote keys are destroyed only after the operations that use them are done; an endpoint is
 * closed gracefully when its last session closes and forcefully when it failed.
 */
@SuppressWarnings("restricted") // reinterprets UCX-owned buffers and makes the error-handler upcall
public final class UcxTransferEngine implements TransferEngine {

    /** The descriptor engine kind. */
    static final String KIND = "ucx";
    private static final System.Logger LOG = System.getLogger("io.kvledger.rdma");
    private static final AtomicInteger SEQUENCE = new AtomicInteger();
    private static final int COMMANDS_PER_ROUND = 256;
    private static final long COMMAND_SLICE_NS = 500_000;

    private final UUID id = UUID.randomUUID();
    private final EngineOptions options;
    private final long timeoutNs;
    private final String label;
    private final CompletionHub hub;
    private final Arena arena = Arena.ofShared();
    private final ConcurrentLinkedQueue<Runnable> commands = new ConcurrentLinkedQueue<>();
    private final Thread thread;
    /** True while the progress thread waits in poll(2) on the worker's event descriptor. */
    private volatile boolean blocked;
    /** Guards ucp_worker_signal from other threads against the worker's destruction. */
    private final Object signalLock = new Object();
    private boolean workerAlive;   // guarded by signalLock
    private final CompletableFuture<Void> started = new CompletableFuture<>();
    private final CompletableFuture<Void> stopped = new CompletableFuture<>();
    private final AtomicBoolean closeRequested = new AtomicBoolean();
    private final AtomicBoolean memoryFreed = new AtomicBoolean();
    private volatile boolean accepting;
    private final AtomicLong nextRegionId = new AtomicLong(1);
    private final ConcurrentHashMap<Long, UcxRegion> regions = new ConcurrentHashMap<>();
    private final Set<UcxSession> sessions = ConcurrentHashMap.newKeySet();
    private final AtomicInteger endpointCount = new AtomicInteger();
    /** Posting threads inside a direct copy; the progress thread waits for 0 before it frees. */
    private final AtomicInteger directUsers = new AtomicInteger();
    private static final ThreadLocal<boolean[]> IN_CALLBACK = ThreadLocal.withInitial(() -> new boolean[1]);

    // ---- owned by the progress thread
    private MemorySegment context = MemorySegment.NULL;
    private MemorySegment worker = MemorySegment.NULL;
    private byte[] workerAddress = new byte[0];
    private MemorySegment requestParam;
    private MemorySegment closeForceParam;
    private MemorySegment closeFlushParam;
    private MemorySegment errorHandlerStub;
    private MemorySegment pollFd;
    private long lastEventNs;
    private final Map<String, Endpoint> endpointsByPeer = new HashMap<>();
    private final Map<Long, Endpoint> endpointsById = new HashMap<>();
    private long nextEndpointId = 1;
    private final ArrayList<InFlight> inFlight = new ArrayList<>();
    private final ArrayList<Closing> closing = new ArrayList<>();
    private final ArrayDeque<long[]> endpointErrors = new ArrayDeque<>();
    private volatile boolean stopping;
    private volatile boolean terminated;

    private UcxTransferEngine(EngineOptions options) {
        this.options = options;
        this.timeoutNs = options.transferTimeout().toNanos();
        this.label = "ucx engine " + options.name() + "#" + SEQUENCE.incrementAndGet();
        this.hub = new CompletionHub(label);
        this.thread = Thread.ofPlatform().daemon(true).name("kvledger-ucx-" + options.name() + "-" + SEQUENCE.get())
                .unstarted(this::run);
    }

    /**
     * Loads UCX (clearing {@code UCX_ERROR_SIGNALS} first), starts the progress thread, and
     * creates the context (tcp pinned to {@link EngineOptions#netDevices()}) and worker on it.
     *
     * @return the engine, or {@link FailureCode#ENGINE_UNAVAILABLE} saying why not
     */
    public static Result<UcxTransferEngine> open(EngineOptions options) {
        Ucx.Availability a = Ucx.load();
        if (!a.loaded()) {
            return Result.err(FailureCode.ENGINE_UNAVAILABLE, "UCX unavailable: " + a.detail());
        }
        UcxTransferEngine e = new UcxTransferEngine(options);
        e.thread.start();
        try {
            e.started.get(options.transferTimeout().toMillis(), TimeUnit.MILLISECONDS);
            return Result.ok(e);
        } catch (ExecutionException ex) {
            e.awaitStopped();
            e.arena.close();
            return Result.err(FailureCode.ENGINE_UNAVAILABLE, "UCX init failed: " + ex.getCause().getMessage());
        } catch (TimeoutException | InterruptedException ex) {
            e.close();
            return Result.err(FailureCode.ENGINE_UNAVAILABLE, "UCX init did not finish within "
                    + options.transferTimeout().toMillis() + " ms");
        }
    }

    @Override
    public String kind() {
        return KIND;
    }

    @Override
    public UUID id() {
        return id;
    }

    @Override
    public EngineOptions options() {
        return options;
    }

    /** What runs: library version, error handling and devices, for the log line. */
    public String describe() {
        String eh = switch (options.errorHandling()) {
            case AUTO -> "auto (none, i.e. shared memory, for peers on this host; peer for others)";
            case PEER -> "peer (posix shared memory for peers on this host)";
            case NONE -> "none";
        };
        return Ucx.load().detail() + ", error handling " + eh
                + ", NET_DEVICES=" + options.netDevices() + ", transfer timeout " + options.transferTimeout().toMillis()
                + " ms";
    }

    /** This worker's address, as peers see it in descriptors. */
    byte[] workerAddress() {
        return workerAddress.clone();
    }

    @Override
    public Flux<TransferEvent> completions() {
        return hub.flux();
    }

    @Override
    public EngineStats stats() {
        int liveRegions = 0;
        for (UcxRegion r : regions.values()) {
            if (r.isOpen()) {
                liveRegions++;
            }
        }
        return new EngineStats(liveRegions, sessions.size(), endpointCount.get(), hub.inFlight(), hub.posted(),
                hub.succeeded(), hub.failed(), hub.rejected());
    }

    // ================================================================== registration

    @Override
    public Result<MemoryRegion> register(String name, long lengthBytes) {
        if (name == null || name.isBlank()) {
            return Result.err(FailureCode.INVALID_ARGUMENT, "region name must not be blank");
        }
        if (lengthBytes <= 0) {
            return Result.err(FailureCode.INVALID_ARGUMENT, "region length must be positive, got " + lengthBytes);
        }
        if (!accepting) {
            return Result.err(FailureCode.ENGINE_CLOSED, label + " is closed");
        }
        long regionId = nextRegionId.getAndIncrement();
        CompletableFuture<Result<MemoryRegion>> f = call(() -> map(regionId, name, lengthBytes));
        try {
            return f.get(timeoutNs, TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            // the thread may still map it later: close it then, so nothing is left open
            f.thenAccept(r -> {
                if (r.valueOrNull() instanceof UcxRegion late) {
                    late.close();
                }
            });
            return Result.err(FailureCode.REGISTRATION_FAILED, label + " did not register within "
                    + options.transferTimeout().toMillis() + " ms");
        } catch (ExecutionException e) {
            return Result.err(FailureCode.REGISTRATION_FAILED, "registration failed: " + e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Result.err(FailureCode.REGISTRATION_FAILED, "interrupted while registering");
        }
    }

    /**
     * Progress thread: {@code ucp_mem_map} with {@code UCP_MEM_MAP_ALLOCATE}, so that UCX places
     * the region in memory its transports can map (a shared-memory segment on this host: a peer
     * here then reads and writes it directly, one-sided, without this process's progress), then
     * {@code ucp_rkey_pack}. The memory is handed out as a segment of a shared arena of the
     * engine's; when UCX cannot allocate, the engine allocates from that arena and maps it.
     */
    private Result<MemoryRegion> map(long regionId, String name, long length) {
        if (stopping) {
            return Result.err(FailureCode.ENGINE_CLOSED, label + " is closing");
        }
        Arena regionArena = Arena.ofShared();
        try (Arena tmp = Arena.ofConfined()) {
            MemorySegment memhOut = tmp.allocate(ADDRESS);
            MemorySegment segment;
            boolean ucxOwned;
            MemorySegment p = tmp.allocate(UCP_MEM_MAP_PARAMS);
            p.set(JAVA_LONG, offset(UCP_MEM_MAP_PARAMS, "field_mask"), UcxAbi.UCP_MEM_MAP_PARAM_FIELD_ADDRESS
                    | UcxAbi.UCP_MEM_MAP_PARAM_FIELD_LENGTH | UcxAbi.UCP_MEM_MAP_PARAM_FIELD_FLAGS);
            p.set(JAVA_LONG, offset(UCP_MEM_MAP_PARAMS, "length"), length);
            p.set(JAVA_INT, offset(UCP_MEM_MAP_PARAMS, "flags"), UcxAbi.UCP_MEM_MAP_ALLOCATE);
            int st = Ucx.memMap(context, p, memhOut);
            if (st == UCS_OK) {
                MemorySegment attr = tmp.allocate(UcxAbi.UCP_MEM_ATTR);
                attr.set(JAVA_LONG, offset(UcxAbi.UCP_MEM_ATTR, "field_mask"),
                        UcxAbi.UCP_MEM_ATTR_FIELD_ADDRESS | UcxAbi.UCP_MEM_ATTR_FIELD_LENGTH);
                st = Ucx.memQuery(memhOut.get(ADDRESS, 0), attr);
                long got = attr.get(JAVA_LONG, offset(UcxAbi.UCP_MEM_ATTR, "length"));
                MemorySegment at = attr.get(ADDRESS, offset(UcxAbi.UCP_MEM_ATTR, "address"));
                if (st != UCS_OK || got < length || at.address() == 0) {
                    Ucx.memUnmap(context, memhOut.get(ADDRESS, 0));
                    regionArena.close();
                    return Result.err(FailureCode.REGISTRATION_FAILED, "ucp_mem_query of an allocated region: "
                            + (st != UCS_OK ? Ucx.statusString(st) : got + " bytes at 0x" + Long.toHexString(at.address())));
                }
                // the segment lives as long as the region's arena, which is closed before UCX frees the memory
                segment = at.reinterpret(length, regionArena, null);
                segment.fill((byte) 0);
                ucxOwned = true;
            } else {
                LOG.log(System.Logger.Level.DEBUG, label + ": UCX cannot allocate " + length + " bytes ("
                        + Ucx.statusString(st) + "); registering engine memory");
                try {
                    segment = regionArena.allocate(length, 4096);
                } catch (OutOfMemoryError | IllegalArgumentException e) {
                    regionArena.close();
                    return Result.err(FailureCode.REGISTRATION_FAILED, "cannot allocate " + length + " bytes off-heap: " + e);
                }
                p.set(JAVA_LONG, offset(UCP_MEM_MAP_PARAMS, "field_mask"),
                        UcxAbi.UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UcxAbi.UCP_MEM_MAP_PARAM_FIELD_LENGTH);
                p.set(ADDRESS, offset(UCP_MEM_MAP_PARAMS, "address"), segment);
                st = Ucx.memMap(context, p, memhOut);
                if (st != UCS_OK) {
                    regionArena.close();
                    return Result.err(FailureCode.REGISTRATION_FAILED, "ucp_mem_map of " + length + " bytes: "
                            + Ucx.statusString(st));
                }
                ucxOwned = false;
            }
            MemorySegment memh = memhOut.get(ADDRESS, 0);
            MemorySegment bufOut = tmp.allocate(ADDRESS);
            MemorySegment sizeOut = tmp.allocate(JAVA_LONG);
            st = Ucx.rkeyPack(context, memh, bufOut, sizeOut);
            if (st != UCS_OK) {
                releaseRegion(regionArena, memh, ucxOwned);
                return Result.err(FailureCode.REGISTRATION_FAILED, "ucp_rkey_pack: " + Ucx.statusString(st));
            }
            MemorySegment buf = bufOut.get(ADDRESS, 0).reinterpret(sizeOut.get(JAVA_LONG, 0));
            byte[] rkey = buf.toArray(JAVA_BYTE);
            Ucx.rkeyBufferRelease(buf);
            RegionDescriptor d = RegionDescriptor.of(KIND, id, regionId, name, segment.address(), length,
                    workerAddress, rkey).orElseThrow();
            UcxRegion region = new UcxRegion(regionId, name, regionArena, segment, memh, ucxOwned, d);
            regions.put(regionId, region);
            return Result.ok(region);
        }
    }

    /**
     * Progress thread: invalidates a region's segment, then unmaps it (which frees memory UCX
     * allocated), in that order, so Java code can never touch freed memory.
     */
    private void releaseRegion(Arena regionArena, MemorySegment memh, boolean ucxOwned) {
        if (ucxOwned) {
            closeQuietly(regionArena);
        }
        int st = Ucx.memUnmap(context, memh);
        if (st != UCS_OK) {
            LOG.log(System.Logger.Level.WARNING, label + ": ucp_mem_unmap: " + Ucx.statusString(st));
        }
        if (!ucxOwned) {
            closeQuietly(regionArena);
        }
    }

    // ================================================================== sessions

    @Override
    public Result<Session> openSession(MemoryRegion local, RegionDescriptor remote) {
        TransferError bad = SessionRules.check(local, remote, accepting, label,
                local instanceof UcxRegion own && own.engine() == this, KIND, "UCX");
        if (bad != null) {
            return Result.err(bad);
        }
        UcxRegion r = (UcxRegion) local;
        UcxSession s = new UcxSession(r, remote);
        sessions.add(s);
        submit(() -> connect(s));
        return Result.ok(s);
    }

    /** Progress thread: endpoint (shared per peer worker) and remote key. */
    private void connect(UcxSession s) {
        if (s.state() != Session.State.CONNECTING) {
            return;
        }
        if (stopping) {
            s.fail(FailureCode.ENDPOINT_CLOSED, label + " is closing");
            return;
        }
        String peer = peerKey(s.remoteWorker);
        Endpoint ep = endpointsByPeer.get(peer);
        if (ep == null || ep.failed || ep.closing) {
            Result<Endpoint> created = createEndpoint(peer, s.remoteWorker, peerErrorHandling(s.remote()), s.remote());
            if (created.errorOrNull() != null) {
                s.fail(created.errorOrNull().code(), created.errorOrNull().message());
                sessions.remove(s);
                return;
            }
            ep = created.valueOrNull();
        }
        try (Arena tmp = Arena.ofConfined()) {
            MemorySegment buf = tmp.allocateFrom(JAVA_BYTE, s.remote().rkey());
            MemorySegment out = tmp.allocate(ADDRESS);
            int st = Ucx.epRkeyUnpack(ep.handle, buf, out);
            if (st != UCS_OK) {
                s.fail(FailureCode.BAD_RKEY, "ucp_ep_rkey_unpack for region '" + s.remote().name() + "': "
                        + Ucx.statusString(st));
                sessions.remove(s);
                if (ep.sessions.isEmpty()) {
                    closeEndpoint(ep, false);
                }
                return;
            }
            s.rkey = out.get(ADDRESS, 0);
            // not with peer error handling: a direct copy would not notice a dead peer
            if (options.inlineCopyMaxBytes() > 0 && !ep.peerMode
                    && Ucx.rkeyPtr(s.rkey, s.remote().baseAddress(), out) == UCS_OK
                    && out.get(ADDRESS, 0).address() != 0) {
                // the peer's region, mapped here; its arena closes before the key is destroyed
                s.directArena = Arena.ofShared();
                s.direct = out.get(ADDRESS, 0).reinterpret(s.remote().length(), s.directArena, null);
                s.directOpen = true;
            }
        }
        s.ep = ep;
        ep.sessions.add(s);
        if (!s.markOpen()) {
            disconnect(s); // closed while connecting
        }
    }

    /**
     * Whether an endpoint to {@code remote}'s owner gets peer error handling: per
     * {@link EngineOptions#errorHandling()}, and for {@code AUTO} exactly when the owner runs on
     * another host.
     */
    boolean peerErrorHandling(RegionDescriptor remote) {
        return switch (options.errorHandling()) {
            case PEER -> true;
            case NONE -> false;
            case AUTO -> !remote.isOnThisHost();
        };
    }

    private Result<Endpoint> createEndpoint(String peer, byte[] address, boolean peerMode, RegionDescriptor owner) {
        try (Arena tmp = Arena.ofConfined()) {
            long epId = nextEndpointId++;
            MemorySegment addr = tmp.allocateFrom(JAVA_BYTE, address);
            MemorySegment p = tmp.allocate(UCP_EP_PARAMS);
            long mask = UcxAbi.UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UcxAbi.UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE
                    | UcxAbi.UCP_EP_PARAM_FIELD_USER_DATA;
            if (peerMode) {
                mask |= UcxAbi.UCP_EP_PARAM_FIELD_ERR_HANDLER;
                long handler = offset(UCP_EP_PARAMS, "err_handler");
                p.set(ADDRESS, handler + offset(UcxAbi.UCP_ERR_HANDLER, "cb"), errorHandlerStub);
            }
            p.set(JAVA_LONG, offset(UCP_EP_PARAMS, "field_mask"), mask);
            p.set(ADDRESS, offset(UCP_EP_PARAMS, "address"), addr);
            p.set(JAVA_INT, offset(UCP_EP_PARAMS, "err_mode"),
                    peerMode ? UcxAbi.UCP_ERR_HANDLING_MODE_PEER : UcxAbi.UCP_ERR_HANDLING_MODE_NONE);
            p.set(ADDRESS, offset(UCP_EP_PARAMS, "user_data"), MemorySegment.ofAddress(epId));
            MemorySegment out = tmp.allocate(ADDRESS);
            int st = Ucx.epCreate(worker, p, out);
            if (st != UCS_OK) {
                return Result.err(FailureCode.PEER_UNREACHABLE, "ucp_ep_create to " + shortPeer(peer) + ": "
                        + Ucx.statusString(st));
            }
            Endpoint ep = new Endpoint(epId, peer, out.get(ADDRESS, 0), peerMode, owner);
            endpointsByPeer.put(peer, ep);
            endpointsById.put(epId, ep);
            endpointCount.incrementAndGet();
            return Result.ok(ep);
        }
    }

    /**
     * Upcall from UCX ({@code ucp_err_handler_cb_t}), on the progress thread inside a UCX call.
     * Only records the failure: the endpoint is closed after the UCX call returns.
     */
    @SuppressWarnings("unused")
    private void onEndpointError(MemorySegment arg, MemorySegment ep, int status) {
        try {
            endpointErrors.add(new long[] {arg.address(), status});
        } catch (Throwable t) {
            // an exception escaping an upcall kills the JVM; nothing here can be worth that
        }
    }

    private void handleEndpointErrors() {
        long[] e;
        while ((e = endpointErrors.poll()) != null) {
            Endpoint ep = endpointsById.get(e[0]);
            if (ep != null && !ep.failed) {
                failEndpoint(ep, FailureCode.PEER_FAILED, "peer failed: " + Ucx.statusString((int) e[1]), true);
            }
        }
    }

    /**
     * Progress thread: fails everything on {@code ep} and closes it.
     *
     * @param force force-close ({@code UCP_EP_CLOSE_FLAG_FORCE}): for a peer UCX reported failed,
     *              or one presumed dead without peer error handling (a graceful close would wait
     *              for it forever). A forced close is never used on a peer that may be alive and
     *              have peer error handling: over tcp it resets the connection, and UCX 1.13
     *              aborts the <em>peer's</em> process when its emulated-RMA handler then cannot
     *              answer a put still buffered there ("unexpected error: Endpoint timeout").
     */
    private void failEndpoint(Endpoint ep, FailureCode code, String why, boolean force) {
        if (ep.failed) {
            return;
        }
        ep.failed = true;
        ep.failureCode = code;
        ep.failure = why;
        for (InFlight f : inFlight) {
            if (f.ep == ep && !f.reported) {
                report(f, new TransferEvent.Failed(f.transferId, System.nanoTime(), f.op, code,
                        why + " (endpoint to " + ep.peer + ")"));
            }
        }
        for (UcxSession s : ep.sessions) {
            s.fail(FailureCode.ENDPOINT_CLOSED, "endpoint closed: " + why);
            sessions.remove(s);
        }
        closeEndpoint(ep, force);
    }

    /**
     * Progress thread. Graceful with nothing outstanding: remote keys are destroyed first and UCX
     * flushes the endpoint. Otherwise (forced, or operations still outstanding) the remote keys
     * are destroyed after the close completes, when nothing uses them any more.
     */
    private void closeEndpoint(Endpoint ep, boolean force) {
        if (ep.closing) {
            return;
        }
        ep.closing = true;
        endpointsByPeer.remove(ep.key, ep);
        boolean outstanding = false;
        for (InFlight f : inFlight) {
            outstanding |= f.ep == ep && f.flushRequest != null;
        }
        if (!force && !outstanding) {
            destroyRkeys(ep); // UCX wants them gone before the endpoint, and nothing uses them now
        }
        MemorySegment r = Ucx.epCloseNbx(ep.handle, force ? closeForceParam : closeFlushParam);
        if (Ucx.isRequest(r)) {
            closing.add(new Closing(ep, r, System.nanoTime() + timeoutNs));
        } else {
            endpointClosed(ep);
        }
    }

    private void endpointClosed(Endpoint ep) {
        destroyRkeys(ep);
        if (endpointsById.remove(ep.id) != null) {
            endpointCount.decrementAndGet();
        }
    }

    private void destroyRkeys(Endpoint ep) {
        for (UcxSession s : ep.sessions) {
            destroyRkey(s);
        }
    }

    /** Progress thread: ends direct copies of the session (waiting for running ones), then frees its key. */
    private void destroyRkey(UcxSession s) {
        if (s.directArena != null) {
            stopDirect(s);
            closeQuietly(s.directArena);
            s.directArena = null;
            s.direct = null;
        }
        if (s.rkey != null) {
            Ucx.rkeyDestroy(s.rkey);
            s.rkey = null;
        }
    }

    /**
     * Progress thread: no new direct copy of {@code s} starts after this returns, and none is
     * running. A poster announces itself in {@link #directUsers} before it checks
     * {@code directOpen}, so one that saw it open is counted here.
     */
    private void stopDirect(UcxSession s) {
        s.directOpen = false;
        awaitNoDirectCopies();
    }

    private void awaitNoDirectCopies() {
        // direct copies are at most inlineCopyMaxBytes: this waits for microseconds
        while (directUsers.get() != 0) {
            Thread.onSpinWait();
        }
    }

    /** Progress thread: a closed session leaves its endpoint once its batches are done. */
    private void disconnect(UcxSession s) {
        Endpoint ep = s.ep;
        if (stopping || ep == null || ep.failed || ep.closing || s.inFlight > 0 || !ep.sessions.contains(s)) {
            return;
        }
        destroyRkey(s);
        ep.sessions.remove(s);
        if (ep.sessions.isEmpty()) {
            closeEndpoint(ep, false);
        }
    }

    // ================================================================== batches

    private Result<PendingTransfer> post(UcxSession s, long transferId, TransferOp op, OffsetBatch batch) {
        if (op == null) {
            return hub.reject(Result.err(FailureCode.INVALID_ARGUMENT, "op is null"));
        }
        if (!accepting) {
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
        Result<PendingTransfer> admitted = hub.admit(transferId, op);
        if (admitted.isOk()) {
            long now = System.nanoTime();
            if (s.direct == null || batch.totalBytes() > options.inlineCopyMaxBytes() || !copyDirect(s, transferId, op, batch, now)) {
                InFlight f = new InFlight(transferId, op, s, batch, now, now + timeoutNs);
                s.queued().incrementAndGet();
                submit(() -> start(f));
            }
        }
        return admitted;
    }

    /**
     * Posting thread: the batch as {@link MemorySegment#copy}s between the local region and the
     * peer's region mapped here, completed before it returns; false (nothing done) when it must
     * go through the progress thread instead: a batch of the session still waits there, the call
     * comes from a completion callback or the progress thread, or the session is closing.
     */
    private boolean copyDirect(UcxSession s, long transferId, TransferOp op, OffsetBatch b, long postNs) {
        if (s.queued().get() != 0 || Thread.currentThread() == thread) {
            return false;
        }
        boolean[] inCallback = IN_CALLBACK.get();
        if (inCallback[0]) {
            return false;
        }
        TransferEvent event;
        directUsers.incrementAndGet();
        try {
            MemorySegment remote = s.direct;
            if (!s.directOpen || remote == null || s.state() != Session.State.OPEN || !s.local().isOpen() || !accepting) {
                return false;
            }
            MemorySegment local = s.local().segment();
            try {
                BatchRules.copy(op, local, remote, b);
                long now = System.nanoTime();
                event = new TransferEvent.Succeeded(transferId, now, op, b.size(), b.totalBytes(), now - postNs);
            } catch (IllegalStateException | IndexOutOfBoundsException e) {
                event = new TransferEvent.Failed(transferId, System.nanoTime(), op, FailureCode.ENDPOINT_CLOSED,
                        "direct copy into the peer's mapped region failed (session closing?): " + e.getMessage());
            }
        } finally {
            directUsers.decrementAndGet();
        }
        inCallback[0] = true;
        try {
            hub.complete(event);
        } finally {
            inCallback[0] = false;
        }
        return true;
    }

    /** Progress thread: posts every entry, then the flush that completes the batch. */
    private void start(InFlight f) {
        UcxSession s = f.session;
        if (stopping || closeRequested.get()) {
            report(f, failed(f, FailureCode.CANCELED, label + " closed before the batch was posted"));
            return;
        }
        if (s.state() != Session.State.OPEN) {
            TransferError why = s.failure();
            report(f, why == null
                    ? failed(f, FailureCode.ENDPOINT_CLOSED, "session is " + s.state())
                    : failed(f, why.code(), why.message()));
            return;
        }
        if (!s.local().isOpen()) {
            report(f, failed(f, FailureCode.REGION_CLOSED, "local region '" + s.local().name() + "' closed before posting"));
            return;
        }
        Endpoint ep = s.ep;
        if (ep == null || s.rkey == null || ep.failed || ep.closing) {
            report(f, failed(f, FailureCode.ENDPOINT_CLOSED, "endpoint to "
                    + (ep == null ? "?" : ep.peer) + " is closed"));
            return;
        }
        if (System.nanoTime() - f.deadlineNs > 0) {
            report(f, failed(f, FailureCode.TIMEOUT, "not posted within " + options.transferTimeout().toMillis()
                    + " ms"));
            return;
        }
        long localBase = s.local().segment().address();
        long remoteBase = s.remote().baseAddress();
        OffsetBatch b = f.batch;
        int firstError = UCS_OK;
        String failedCall = null;
        for (int i = 0; i < b.size(); i++) {
            MemorySegment buffer = MemorySegment.ofAddress(localBase + b.localOffset(i));
            long remote = remoteBase + b.remoteOffset(i);
            MemorySegment r = f.op == TransferOp.WRITE
                    ? Ucx.putNbx(ep.handle, buffer, b.sizeBytes(i), remote, s.rkey, requestParam)
                    : Ucx.getNbx(ep.handle, buffer, b.sizeBytes(i), remote, s.rkey, requestParam);
            if (Ucx.isErr(r)) {
                firstError = Ucx.status(r);
                failedCall = (f.op == TransferOp.WRITE ? "ucp_put_nbx" : "ucp_get_nbx") + " of entry " + i;
                break;
            }
            if (Ucx.isRequest(r)) {
                Ucx.requestFree(r);
            }
        }
        // the flush also waits for the entries posted before a failed one
        MemorySegment flush = Ucx.epFlushNbx(ep.handle, requestParam);
        f.ep = ep;
        f.firstError = firstError;
        f.failedCall = failedCall;
        if (Ucx.isRequest(flush)) {
            f.flushRequest = flush;
            s.inFlight++;
            inFlight.add(f);
        } else {
            if (firstError == UCS_OK && Ucx.status(flush) != UCS_OK) {
                f.firstError = Ucx.status(flush);
                f.failedCall = "ucp_ep_flush_nbx";
            }
            finish(f);
        }
    }

    /** Progress thread: completes finished flushes, times out late ones. */
    private boolean pollInFlight() {
        if (inFlight.isEmpty()) {
            return false;
        }
        long now = System.nanoTime();
        boolean any = false;
        List<InFlight> late = null;
        int kept = 0;
        for (int i = 0; i < inFlight.size(); i++) {
            InFlight f = inFlight.get(i);
            int st = Ucx.requestCheckStatus(f.flushRequest);
            if (st == UCS_INPROGRESS) {
                if (!f.reported && now - f.deadlineNs > 0) {
                    if (late == null) {
                        late = new ArrayList<>();
                    }
                    late.add(f);
                }
                inFlight.set(kept++, f);
                continue;
            }
            Ucx.requestFree(f.flushRequest);
            f.flushRequest = null;
            any = true;
            if (f.firstError == UCS_OK && st != UCS_OK) {
                f.firstError = st;
                f.failedCall = "ucp_ep_flush_nbx";
            }
            UcxSession s = f.session;
            s.inFlight--;
            if (!f.reported) {
                finish(f);
            }
            if (s.state() == Session.State.CLOSED && s.inFlight == 0) {
                disconnect(s);
            }
        }
        inFlight.subList(kept, inFlight.size()).clear();
        if (late != null) {
            for (InFlight f : late) {
                if (!f.reported) {
                    boolean force = !f.ep.peerMode;
                    report(f, failed(f, FailureCode.TIMEOUT, "no completion within "
                            + options.transferTimeout().toMillis() + " ms; endpoint to " + f.ep.peer
                            + " presumed dead and " + (force ? "force-closed" : "closed")));
                    failEndpoint(f.ep, FailureCode.ENDPOINT_CLOSED, "transfer " + f.transferId + " timed out", force);
                }
            }
            any = true;
        }
        return any;
    }

    private boolean pollClosing() {
        if (closing.isEmpty()) {
            return false;
        }
        long now = System.nanoTime();
        boolean any = false;
        for (int i = closing.size() - 1; i >= 0; i--) {
            Closing c = closing.get(i);
            int st = Ucx.requestCheckStatus(c.request);
            if (st != UCS_INPROGRESS) {
                Ucx.requestFree(c.request);
                closing.remove(i);
                endpointClosed(c.ep);
                any = true;
            } else if (!c.warned && now - c.deadlineNs > 0) {
                c.warned = true;
                LOG.log(System.Logger.Level.WARNING, label + ": closing the endpoint to " + c.ep.peer
                        + " has not finished after " + options.transferTimeout().toMillis()
                        + " ms; it is released when the engine closes");
            }
        }
        return any;
    }

    private void finish(InFlight f) {
        if (f.firstError == UCS_OK) {
            report(f, new TransferEvent.Succeeded(f.transferId, System.nanoTime(), f.op, f.batch.size(),
                    f.batch.totalBytes(), System.nanoTime() - f.postNs));
            return;
        }
        int st = f.firstError;
        Endpoint ep = f.ep;
        FailureCode code;
        if (ep != null && ep.failed) {
            code = ep.failureCode;
        } else if (st == UcxAbi.UCS_ERR_CANCELED) {
            code = FailureCode.CANCELED;
        } else if (st == UcxAbi.UCS_ERR_CONNECTION_RESET || st == UcxAbi.UCS_ERR_UNREACHABLE
                || (st <= -40 && st >= -89)) {
            code = FailureCode.PEER_FAILED;
        } else {
            code = FailureCode.TRANSPORT_ERROR;
        }
        report(f, failed(f, code, f.failedCall + ": " + Ucx.statusString(st)));
    }

    private static TransferEvent.Failed failed(InFlight f, FailureCode code, String why) {
        return new TransferEvent.Failed(f.transferId, System.nanoTime(), f.op, code, why);
    }

    private void report(InFlight f, TransferEvent e) {
        boolean first = !f.reported;
        f.reported = true;
        // after the event is emitted, so that a later direct copy of the session cannot overtake
        // it, and before its future completes, so that a caller woken by it may copy directly
        hub.complete(e, first ? f.session.queued()::decrementAndGet : null);
    }

    // ================================================================== the thread

    private void submit(Runnable command) {
        commands.add(command);
        if (blocked) {
            synchronized (signalLock) {
                if (workerAlive) {
                    Ucx.workerSignal(worker);
                }
            }
        }
        if (terminated) {
            // the thread is gone: run what is left here; every command checks `stopping` first
            // and only cancels or refuses, so nothing touches UCX
            synchronized (commands) {
                for (Runnable c; (c = commands.poll()) != null; ) {
                    c.run();
                }
            }
        }
    }

    private <T> CompletableFuture<T> call(Callable<T> c) {
        CompletableFuture<T> f = new CompletableFuture<>();
        submit(() -> {
            try {
                f.complete(c.call());
            } catch (Throwable t) {
                f.completeExceptionally(t);
            }
        });
        return f;
    }

    private void run() {
        try {
            init();
        } catch (Throwable t) {
            try {
                releaseNative();
            } finally {
                started.completeExceptionally(t);
                stopped.complete(null);
            }
            return;
        }
        accepting = true;
        started.complete(null);
        try {
            loop();
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, label + ": progress loop failed; failing everything in flight", t);
            accepting = false;
            stopping = true;
        } finally {
            try {
                shutdown();
            } catch (Throwable t) {
                LOG.log(System.Logger.Level.ERROR, label + ": shutdown failed", t);
            } finally {
                terminated = true;
                synchronized (commands) {
                    for (Runnable c; (c = commands.poll()) != null; ) {
                        c.run();
                    }
                }
                hub.close();
                stopped.complete(null);
                if (closeRequested.get()) {
                    freeMemory();
                }
            }
        }
    }

    private void init() throws Exception {
        MemorySegment cfgOut = arena.allocate(ADDRESS);
        check(Ucx.configRead(cfgOut), "ucp_config_read");
        MemorySegment cfg = cfgOut.get(ADDRESS, 0);
        try {
            // keep UCX's tcp on the devices asked for (lo by default): tests never leave the host
            check(Ucx.configModify(cfg, arena.allocateFrom("NET_DEVICES"), arena.allocateFrom(options.netDevices())),
                    "ucp_config_modify NET_DEVICES=" + options.netDevices());
            for (String[] kv : survivalConfig(options.transferTimeout().toMillis())) {
                int st = Ucx.configModify(cfg, arena.allocateFrom(kv[0]), arena.allocateFrom(kv[1]));
                if (st != UCS_OK) {
                    LOG.log(System.Logger.Level.WARNING, label + ": ucp_config_modify " + kv[0] + "=" + kv[1] + ": "
                            + Ucx.statusString(st) + "; a peer on this host may fall back to RMA emulated over tcp");
                }
            }
            MemorySegment p = arena.allocate(UCP_PARAMS);
            p.set(JAVA_LONG, offset(UCP_PARAMS, "field_mask"), UcxAbi.UCP_PARAM_FIELD_FEATURES | UcxAbi.UCP_PARAM_FIELD_NAME);
            // WAKEUP: an idle worker waits in poll(2) instead of spinning (selects the same transports here)
            p.set(JAVA_LONG, offset(UCP_PARAMS, "features"), UcxAbi.UCP_FEATURE_RMA | UcxAbi.UCP_FEATURE_WAKEUP);
            p.set(ADDRESS, offset(UCP_PARAMS, "name"), arena.allocateFrom(options.name()));
            MemorySegment ctxOut = arena.allocate(ADDRESS);
            check(Ucx.initVersion(UcxAbi.API_MAJOR, UcxAbi.API_MINOR, p, cfg, ctxOut), "ucp_init_version");
            context = ctxOut.get(ADDRESS, 0);
        } finally {
            Ucx.configRelease(cfg);
        }
        MemorySegment wp = arena.allocate(UCP_WORKER_PARAMS);
        wp.set(JAVA_LONG, offset(UCP_WORKER_PARAMS, "field_mask"),
                UcxAbi.UCP_WORKER_PARAM_FIELD_THREAD_MODE | UcxAbi.UCP_WORKER_PARAM_FIELD_NAME);
        wp.set(JAVA_INT, offset(UCP_WORKER_PARAMS, "thread_mode"), UcxAbi.UCS_THREAD_MODE_SINGLE);
        wp.set(ADDRESS, offset(UCP_WORKER_PARAMS, "name"), arena.allocateFrom(thread.getName()));
        MemorySegment wOut = arena.allocate(ADDRESS);
        check(Ucx.workerCreate(context, wp, wOut), "ucp_worker_create");
        worker = wOut.get(ADDRESS, 0);
        synchronized (signalLock) {
            workerAlive = true;
        }
        MemorySegment fdOut = arena.allocate(JAVA_INT);
        check(Ucx.workerGetEfd(worker, fdOut), "ucp_worker_get_efd");
        pollFd = arena.allocate(UcxAbi.POLLFD);
        pollFd.set(JAVA_INT, offset(UcxAbi.POLLFD, "fd"), fdOut.get(JAVA_INT, 0));
        pollFd.set(JAVA_SHORT, offset(UcxAbi.POLLFD, "events"), (short) UcxAbi.POLLIN);
        MemorySegment addrOut = arena.allocate(ADDRESS);
        MemorySegment lenOut = arena.allocate(JAVA_LONG);
        check(Ucx.workerGetAddress(worker, addrOut, lenOut), "ucp_worker_get_address");
        MemorySegment addr = addrOut.get(ADDRESS, 0).reinterpret(lenOut.get(JAVA_LONG, 0));
        workerAddress = addr.toArray(JAVA_BYTE);
        Ucx.workerReleaseAddress(worker, addr);

        requestParam = arena.allocate(UCP_REQUEST_PARAM);
        closeFlushParam = arena.allocate(UCP_REQUEST_PARAM);
        closeForceParam = arena.allocate(UCP_REQUEST_PARAM);
        closeForceParam.set(JAVA_INT, offset(UCP_REQUEST_PARAM, "op_attr_mask"), UcxAbi.UCP_OP_ATTR_FIELD_FLAGS);
        closeForceParam.set(JAVA_INT, offset(UCP_REQUEST_PARAM, "flags"), UcxAbi.UCP_EP_CLOSE_FLAG_FORCE);
        MethodHandle onError = MethodHandles.lookup().findVirtual(UcxTransferEngine.class, "onEndpointError",
                MethodType.methodType(void.class, MemorySegment.class, MemorySegment.class, int.class)).bindTo(this);
        errorHandlerStub = Linker.nativeLinker().upcallStub(onError,
                FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, JAVA_INT), arena);
    }

    /**
     * The UCX settings that keep this process from serving RMA emulated by active messages for
     * a peer on this host. UCX 1.13 (and later) aborts the process that serves an emulated put or
     * get when the reply cannot be sent: {@code ucp_put_handler} and {@code ucp_get_req_handler}
     * send it with {@code ucp_request_send}, which calls {@code ucs_fatal} ("unexpected error:
     * Endpoint timeout") for any error, whatever the endpoints' error-handling mode. Over tcp that
     * happens whenever an initiator dies with puts still buffered in this process's socket: the
     * first reply after its reset fails. Peer error handling used to mean tcp between two
     * processes of this host, so a same-host initiator killed mid-transfer took this process down.
     * <ul>
     * <li>{@code MM_ERROR_HANDLING=y}: the posix shared-memory transport offers peer failure
     *     handling (it checks the peer process like keepalive does), so endpoints with peer error
     *     handling to this host use posix shared memory instead of tcp;</li>
     * <li>{@code ALLOC_PRIO} posix first: regions are allocated in posix shared memory, so their
     *     remote keys carry a posix key and a put or get by a peer on this host is a one-sided
     *     copy by the peer (with a sysv key only, an endpoint limited to posix would still emulate
     *     RMA over its active messages);</li>
     * <li>{@code KEEPALIVE_INTERVAL} half the transfer timeout (at most UCX's 20 s): endpoints with
     *     peer error handling hear that an idle peer died within the timeout.</li>
     * </ul>
     * Peers on other hosts still use tcp without RDMA devices, with RMA emulated: see
     * {@code package-info}.
     */
    static List<String[]> survivalConfig(long transferTimeoutMs) {
        long keepaliveMs = Math.max(100, Math.min(20_000, transferTimeoutMs / 2));
        return List.of(
                new String[] {"MM_ERROR_HANDLING", "y"},
                new String[] {"ALLOC_PRIO", "md:posix,md:sysv,huge,thp,md:*,mmap,heap"},
                new String[] {"KEEPALIVE_INTERVAL", keepaliveMs + "ms"});
    }

    private static void check(int status, String what) {
        if (status != UCS_OK) {
            throw new IllegalStateException(what + ": " + Ucx.statusString(status));
        }
    }

    /**
     * Drive UCX until stopped. With work outstanding (batches in flight, endpoints closing) the
     * thread keeps progressing, yielding between rounds so that the peer's and the callers'
     * threads get the CPU on small machines; after {@link #STALL_NS} without any event it waits
     * on the event descriptor in slices of 1 ms (a stalled peer costs no CPU, deadlines are still
     * checked every millisecond). Idle, it spins {@link #SPIN_NS}, then arms the worker and waits
     * in poll(2) until a peer's message or a caller's command ({@code ucp_worker_signal}) wakes it.
     */
    private void loop() {
        long idleSince = 0;
        lastEventNs = System.nanoTime();
        while (true) {
            boolean busy = runCommands();
            if (stopping) {
                return;
            }
            int events = 0;
            for (int i = 0; i < 16; i++) {
                int n = Ucx.workerProgress(worker);
                if (n == 0) {
                    break;
                }
                events += n;
            }
            if (!endpointErrors.isEmpty()) {
                handleEndpointErrors();
                busy = true;
            }
            busy |= events > 0;
            busy |= pollInFlight();
            busy |= pollClosing();
            long now = System.nanoTime();
            busy |= checkPeers(now);
            if (busy) {
                lastEventNs = now;
                idleSince = 0;
                continue;
            }
            boolean outstanding = !inFlight.isEmpty() || hasFreshClosing(now);
            if (outstanding) {
                if (now - lastEventNs < STALL_NS) {
                    Thread.yield();
                } else {
                    waitForEvent(1);
                }
                continue;
            }
            if (idleSince == 0) {
                idleSince = now;
            }
            if (now - idleSince < SPIN_NS) {
                Thread.yield();
            } else {
                waitForEvent(IDLE_WAIT_MS);
            }
        }
    }

    /**
     * Fails the endpoints whose peer process on this host has exited. Shared memory reports no
     * peer failure: a put into a dead peer's segment even succeeds. So the thread looks, every
     * {@link #PEER_CHECK_BUSY_NS} while batches are in flight and every time it wakes otherwise,
     * whether each same-host peer (pid and start time from its descriptor) still runs.
     */
    private boolean checkPeers(long now) {
        if (now - nextPeerCheckNs < 0 || endpointsById.isEmpty()) {
            return false;
        }
        nextPeerCheckNs = now + (inFlight.isEmpty() ? PEER_CHECK_IDLE_NS : PEER_CHECK_BUSY_NS);
        boolean any = false;
        for (Endpoint ep : new ArrayList<>(endpointsById.values())) {
            if (!ep.failed && !ep.closing && ep.sameHost && !ep.owner.ownerAlive()) {
                failEndpoint(ep, FailureCode.PEER_FAILED, "peer process " + ep.owner.ownerPid()
                        + " on this host has exited", true);
                any = true;
            }
        }
        return any;
    }

    private long nextPeerCheckNs;
    private static final long PEER_CHECK_BUSY_NS = 10_000_000;
    private static final long PEER_CHECK_IDLE_NS = 200_000_000;

    /** Spin before waiting when idle. */
    private static final long SPIN_NS = 100_000;
    /** Without an event for this long, in-flight work is waited for instead of spun on. */
    private static final long STALL_NS = 2_000_000;
    /** Longest idle wait; the loop re-checks its state at least this often. */
    private static final int IDLE_WAIT_MS = 200;

    private boolean hasFreshClosing(long now) {
        for (Closing c : closing) {
            if (now - c.deadlineNs < 0) {
                return true;
            }
        }
        return false;
    }

    /** Arms the worker and waits in poll(2), unless a command or an event is already there. */
    private void waitForEvent(int timeoutMs) {
        blocked = true;
        try {
            if (!commands.isEmpty()) {
                return;
            }
            int st = Ucx.workerArm(worker);
            if (st == UCS_OK) {
                Ucx.Libc.poll(pollFd, 1, timeoutMs);
            } else if (st != UcxAbi.UCS_ERR_BUSY) {
                LOG.log(System.Logger.Level.WARNING, label + ": ucp_worker_arm: " + Ucx.statusString(st));
                Thread.yield();
            }
        } finally {
            blocked = false;
        }
    }

    /**
     * Runs queued commands for at most {@link #COMMANDS_PER_ROUND} commands or
     * {@link #COMMAND_SLICE_NS}: a put into a peer's mapped shared memory is a synchronous copy,
     * so a long queue of large batches must not keep the thread from progressing, polling and
     * checking peers.
     */
    private boolean runCommands() {
        boolean any = false;
        long start = System.nanoTime();
        for (int i = 0; i < COMMANDS_PER_ROUND && (i == 0 || System.nanoTime() - start < COMMAND_SLICE_NS); i++) {
            Runnable c = commands.poll();
            if (c == null) {
                break;
            }
            any = true;
            try {
                c.run();
            } catch (Throwable t) {
                LOG.log(System.Logger.Level.ERROR, label + ": command failed", t);
            }
        }
        return any;
    }

    @Override
    public void close() {
        if (!closeRequested.compareAndSet(false, true)) {
            awaitStopped();
            return;
        }
        accepting = false;
        if (Thread.currentThread() == thread) {
            // called from a completion subscriber on the progress thread: stop after this round
            stopping = true;
            return;
        }
        if (thread.isAlive()) {
            submit(() -> stopping = true);
            awaitStopped();
            try {
                thread.join(TimeUnit.SECONDS.toMillis(5));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (thread.isAlive()) {
            LOG.log(System.Logger.Level.ERROR, label + ": progress thread did not stop; native resources kept");
            return;
        }
        freeMemory();
    }

    /** After the thread has stopped: frees every region's memory and the engine's own arena. */
    private void freeMemory() {
        if (!memoryFreed.compareAndSet(false, true)) {
            return;
        }
        // regions were released by the thread (their memory may be UCX's); what is left is ours
        for (UcxRegion r : regions.values()) {
            if (!r.ucxOwned) {
                closeQuietly(r.arena());
            }
        }
        regions.clear();
        closeQuietly(arena);
    }

    private void awaitStopped() {
        try {
            stopped.get(2 * timeoutNs + TimeUnit.SECONDS.toNanos(5), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            // reported by the caller through thread.isAlive()
        }
    }

    private static void closeQuietly(Arena a) {
        try {
            a.close();
        } catch (IllegalStateException alreadyClosed) {
            // closed by a failed registration
        }
    }

    /** Progress thread, last: cancel, close endpoints (bounded), unmap, destroy worker and context. */
    private void shutdown() {
        stopping = true;
        for (UcxSession s : sessions) {
            s.directOpen = false;
        }
        awaitNoDirectCopies();
        for (Runnable c; (c = commands.poll()) != null; ) {
            try {
                c.run();
            } catch (Throwable t) {
                LOG.log(System.Logger.Level.ERROR, label + ": command failed during close", t);
            }
        }
        for (InFlight f : inFlight) {
            if (!f.reported) {
                report(f, failed(f, FailureCode.CANCELED, label + " closed while the batch was in flight"));
            }
        }
        for (UcxSession s : sessions) {
            s.fail(FailureCode.ENDPOINT_CLOSED, label + " closed");
        }
        sessions.clear();
        if (worker.address() != 0) {
            // let UCX finish what is in flight before closing: a live peer must never see a forced
            // close in the middle of serving our operations (see failEndpoint)
            long drain = System.nanoTime() + Math.min(timeoutNs, TimeUnit.SECONDS.toNanos(5));
            while (!inFlight.isEmpty() && System.nanoTime() - drain < 0) {
                Ucx.workerProgress(worker);
                pollInFlight();
                if (!endpointErrors.isEmpty()) {
                    handleEndpointErrors();
                }
            }
            if (inFlight.isEmpty()) {
                // let operations still queued inside UCX finish before the endpoints go
                MemorySegment flush = Ucx.workerFlushNbx(worker, requestParam);
                long until = System.nanoTime() + Math.min(timeoutNs, TimeUnit.SECONDS.toNanos(1));
                if (Ucx.isRequest(flush)) {
                    while (Ucx.requestCheckStatus(flush) == UCS_INPROGRESS && System.nanoTime() - until < 0) {
                        Ucx.workerProgress(worker);
                    }
                    Ucx.requestFree(flush);
                }
            }
            for (Endpoint ep : new ArrayList<>(endpointsById.values())) {
                boolean busy = false;
                for (InFlight f : inFlight) {
                    busy |= f.ep == ep;
                }
                // graceful when nothing is outstanding (the peer sees a clean close), else forced
                closeEndpoint(ep, busy || ep.failed);
            }
            long deadline = System.nanoTime() + Math.min(timeoutNs, TimeUnit.SECONDS.toNanos(2));
            while ((!closing.isEmpty() || !inFlight.isEmpty()) && System.nanoTime() - deadline < 0) {
                Ucx.workerProgress(worker);
                pollInFlight();
                pollClosing();
            }
            for (InFlight f : inFlight) {
                if (f.flushRequest != null) {
                    Ucx.requestFree(f.flushRequest);
                }
            }
            inFlight.clear();
            for (Closing c : closing) {
                Ucx.requestFree(c.request);
                destroyRkeys(c.ep);
            }
            closing.clear();
            for (UcxRegion r : regions.values()) {
                r.close();
                releaseRegion(r.arena(), r.memh, r.ucxOwned);
            }
            regions.clear();
        }
        releaseNative();
    }

    private void releaseNative() {
        synchronized (signalLock) {
            workerAlive = false;
        }
        if (worker.address() != 0) {
            Ucx.workerDestroy(worker);
            worker = MemorySegment.NULL;
        }
        if (context.address() != 0) {
            Ucx.cleanup(context);
            context = MemorySegment.NULL;
        }
        endpointCount.set(0);
        endpointsById.clear();
        endpointsByPeer.clear();
    }

    private static String peerKey(byte[] workerAddress) {
        return Integer.toHexString(Arrays.hashCode(workerAddress)) + ":" + workerAddress.length + ":"
                + java.util.HexFormat.of().formatHex(workerAddress);
    }

    /** "worker 8839fddc (186 B)" for a {@link #peerKey}. */
    private static String shortPeer(String key) {
        String[] p = key.split(":", 3);
        return p.length < 2 ? key : "worker " + p[0] + " (" + p[1] + " B address)";
    }

    // ================================================================== state objects

    private final class UcxRegion extends EngineRegion {
        final MemorySegment memh;
        final boolean ucxOwned;  // allocated by ucp_mem_map(ALLOCATE), freed by ucp_mem_unmap

        UcxRegion(long id, String name, Arena arena, MemorySegment segment, MemorySegment memh, boolean ucxOwned,
                  RegionDescriptor d) {
            super(id, name, arena, segment, d);
            this.memh = memh;
            this.ucxOwned = ucxOwned;
        }

        UcxTransferEngine engine() {
            return UcxTransferEngine.this;
        }

        @Override
        public String toString() {
            return "UcxRegion[" + name() + " id " + id() + ", " + segment().byteSize() + " B" + (isOpen() ? "" : ", closed") + "]";
        }
    }

    private final class UcxSession extends EngineSession<UcxRegion> {
        final byte[] remoteWorker;
        Endpoint ep;              // progress thread
        MemorySegment rkey;       // progress thread
        int inFlight;             // progress thread
        /** The peer's region mapped into this process, or null; set before the session opens. */
        volatile MemorySegment direct;
        Arena directArena;        // progress thread
        volatile boolean directOpen;

        UcxSession(UcxRegion local, RegionDescriptor remote) {
            super(local, remote);
            this.remoteWorker = remote.workerAddress();
        }

        void fail(FailureCode code, String why) {
            markFailed(code, why);
        }

        @Override
        public Result<PendingTransfer> post(long transferId, TransferOp op, OffsetBatch batch) {
            return UcxTransferEngine.this.post(this, transferId, op, batch);
        }

        @Override
        public void close() {
            if (!markClosed()) {
                return;
            }
            sessions.remove(this);
            if (!closeRequested.get()) {
                submit(() -> disconnect(this));
            }
        }

        @Override
        public String toString() {
            return "UcxSession[" + local().name() + " -> " + remote().name() + " " + state() + "]";
        }
    }

    private static final class Endpoint {
        final long id;
        final String key;   // the full peer key of endpointsByPeer
        final String peer;  // a short form for messages
        final MemorySegment handle;
        final boolean peerMode;
        final RegionDescriptor owner;   // whose process this endpoint reaches
        final boolean sameHost;
        final List<UcxSession> sessions = new ArrayList<>();
        boolean failed;
        boolean closing;
        FailureCode failureCode;
        String failure;

        Endpoint(long id, String key, MemorySegment handle, boolean peerMode, RegionDescriptor owner) {
            this.id = id;
            this.key = key;
            this.peerMode = peerMode;
            this.owner = owner;
            this.sameHost = owner.isOnThisHost();
            this.peer = shortPeer(key);
            this.handle = handle;
        }
    }

    private static final class InFlight {
        final long transferId;
        final TransferOp op;
        final UcxSession session;
        final OffsetBatch batch;
        final long postNs;
        final long deadlineNs;
        Endpoint ep;
        MemorySegment flushRequest;
        int firstError;
        String failedCall;
        boolean reported;

        InFlight(long transferId, TransferOp op, UcxSession session, OffsetBatch batch, long postNs, long deadlineNs) {
            this.transferId = transferId;
            this.op = op;
            this.session = session;
            this.batch = batch;
            this.postNs = postNs;
            this.deadlineNs = deadlineNs;
        }
    }

    private static final class Closing {
        final Endpoint ep;
        final MemorySegment request;
        final long deadlineNs;
        boolean warned;

        Closing(Endpoint ep, MemorySegment request, long deadlineNs) {
            this.ep = ep;
            this.request = request;
            this.deadlineNs = deadlineNs;
        }
    }
}
