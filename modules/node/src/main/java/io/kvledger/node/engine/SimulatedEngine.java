package io.kvledger.node.engine;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.node.data.KvLayout;
import io.kvledger.node.data.KvPattern;
import io.kvledger.sim.EngineModel;
import io.kvledger.sim.KvOutputAggregator;
import io.kvledger.sim.TpHandshakeVote;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * The built-in engine of a live node: the simulator's {@link EngineModel} (the toy vLLM engine,
 * written once) driven by its own thread in real time, its hook calls going through a
 * {@link HookPort} to the node loop. It steps while it has requests (every {@code idleStepNs}
 * while all of them only wait for a peer) and sleeps when it has none; each step is the model's
 * scheduler half, then the forward ({@code LoadStarted}, {@code LayerSaved} per layer), then the
 * model's output half ({@code SaveWaited}, {@code FinishedPolled}, {@code RequestFinished} for the
 * requests that finished, {@code ConnectorOutputReceived}). What this driver adds is the live
 * part: the forward's waits (after a hook that started a handshake or posted reads, the forward
 * goes on once they settled or {@code transfer_timeout} passed), the data plane (a prefill writes
 * its verifiable pattern ({@link KvPattern}) into the blocks it computed before the layers are
 * saved, blocks that receive KV are zeroed when allocated, and a decode whose KV arrived checks
 * every transferred byte against the prefill's pattern), and each request's {@link Completion}.
 *
 * <p>With TP > 1 the engine is the engine core of its DP rank and the node it runs in is TP rank
 * 0's (its worker 0): it hands every hook call to the nodes of the other TP ranks too
 * ({@link TpWorkers}), the scheduler calls first (a worker sees the scheduler output before the
 * forward), the forward calls to every rank at once (each rank's node answers once its own
 * handshakes and reads settled), and it aggregates the ranks' {@code get_finished} as vLLM's
 * {@code KVOutputAggregator} does: a request is finished sending (receiving) once every TP rank
 * reported it, and the load-error blocks are the union. Each rank's node fills and checks its own
 * KV region ({@link SimulatedWorker}).
 */
public final class SimulatedEngine implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger("io.kvledger.node");

    /**
     * @param tokenBudget tokens scheduled per step (chunked prefill cuts prompts to it)
     * @param stepPauseNs pause between two steps with work
     * @param idleStepNs  pause between steps while every request only waits for a peer
     */
    public record Options(int tokenBudget, long stepPauseNs, long idleStepNs) {
        public static final Options DEFAULT = new Options(512, 200_000L, 2_000_000L);
    }

    /** A request in the engine, with what the live driver keeps for its completion. */
    private static final class Req extends EngineModel.Request {
        final String transferId;
        final boolean prefillLeg;
        final CompletableFuture<Completion> done;
        /** The tokens a peer provides ({@code BlocksAllocated}'s external tokens). */
        int external;
        boolean syncLoad;
        boolean loadFailed;
        /** Whether the received KV was checked (or skipped for a failed load). */
        boolean checked;
        long verified;
        String mismatch;

        Req(String id, int prompt, int maxTokens, KvParams params, CompletableFuture<Completion> done) {
            super(id, prompt, maxTokens, FinishStatus.FINISHED_LENGTH_CAPPED, params);
            this.transferId = params != null && params.get("transfer_id") instanceof String s ? s : null;
            this.prefillLeg = params != null && params.truthy("do_remote_decode");
            this.done = done;
        }
    }

    private sealed interface Input {
        record Add(Req req) implements Input {}
        record Abort(String requestId) implements Input {}
    }

    private final String name;
    private final NodeConfig config;
    private final HookPort port;
    private final LongSupplier clock;
    private final KvLayout layout;
    private final MemorySegment kv;
    private final Options options;
    private final int blockTokens;
    private final LinkedBlockingQueue<Input> inputs = new LinkedBlockingQueue<>();
    /** The engine itself; only the engine thread touches it. */
    private final EngineModel model;
    /** The step's {@code build_connector_meta} reply, for the TP vote of {@code start_load_kv}. */
    private Effect.MetadataBuilt built;
    /** Whether the last {@code get_num_new_matched_tokens} reply loads asynchronously. */
    private boolean lastMatchAsync;
    /** Requests whose KV a peer provides during this step's forward (synchronous loads). */
    private final List<Req> syncLoads = new ArrayList<>();
    /** The other TP ranks' nodes, or {@code null} with TP 1. */
    private final TpWorkers workers;
    /** The TP ranks' {@code get_finished} made into the engine's (with TP > 1). */
    private final KvOutputAggregator aggregator = new KvOutputAggregator();
    private final Thread thread;
    private volatile boolean running;
    private long step;
    /** The TP-wide eager-handshake vote (with {@code awaitsTpVote}): which engines passed, and each step's ballots. */
    private final TpHandshakeVote tpVote = new TpHandshakeVote();
    /** A wait of the forward that timed out: the next hooks check again. */
    private boolean forwardHeld;

    private final AtomicLong submitted = new AtomicLong();
    private final AtomicLong completed = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicLong verifiedBytes = new AtomicLong();
    private final AtomicLong corruptRequests = new AtomicLong();
    private final AtomicLong steps = new AtomicLong();
    private final java.util.concurrent.atomic.AtomicInteger held = new java.util.concurrent.atomic.AtomicInteger();
    private final java.util.concurrent.atomic.AtomicInteger freeBlocks = new java.util.concurrent.atomic.AtomicInteger();

    /**
     * @param kv the region holding {@code layout} (the data plane's memory), or {@code null} when
     *           the node moves no bytes
     */
    public SimulatedEngine(String name, NodeConfig config, HookPort port, LongSupplier clock, KvLayout layout,
                           MemorySegment kv, Options options) {
        this(name, config, port, clock, layout, kv, options, null);
    }

    /**
     * @param workers the nodes of this DP rank's other TP ranks, or {@code null} (TP 1); the engine
     *                closes them when it stops
     */
    public SimulatedEngine(String name, NodeConfig config, HookPort port, LongSupplier clock, KvLayout layout,
                           MemorySegment kv, Options options, TpWorkers workers) {
        this.workers = workers == null || workers.size() == 0 ? null : workers;
        this.name = name;
        this.config = config;
        this.port = port;
        this.clock = clock;
        this.layout = layout;
        this.kv = kv;
        this.options = options;
        this.blockTokens = Math.max(1, config.cacheBlockSize());
        this.model = new EngineModel(new EngineModel.Rules(blockTokens, layout.numBlocks(), options.tokenBudget(),
                Integer.MAX_VALUE, false, false), new Host());
        this.freeBlocks.set(layout.numBlocks());
        this.thread = new Thread(this::run, "kvledger-sim-engine-" + name);
    }

    public void start() {
        running = true;
        thread.start();
    }

    /**
     * Adds a request (as vLLM's {@code add_request}); the future completes when it finishes in the
     * engine (for a prefill leg: when {@code request_finished} returned, whether or not its
     * blocks are still held).
     */
    public CompletableFuture<Completion> submit(String requestId, int promptTokens, int maxTokens, KvParams params) {
        CompletableFuture<Completion> done = new CompletableFuture<>();
        if (!running) {
            done.completeExceptionally(new IllegalStateException("engine " + name + " is not running"));
            return done;
        }
        if (promptTokens < 1 || maxTokens < 1) {
            done.completeExceptionally(new IllegalArgumentException("prompt and max tokens must be at least 1"));
            return done;
        }
        submitted.incrementAndGet();
        inputs.add(new Input.Add(new Req(requestId, promptTokens, maxTokens, params, done)));
        return done;
    }

    /** Aborts a request (the client went away). */
    public void abort(String requestId) {
        inputs.add(new Input.Abort(requestId));
    }

    @Override
    public void close() {
        running = false;
        thread.interrupt();
        try {
            thread.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (EngineModel.Request m : model.held()) {
            Req r = (Req) m;
            if (!r.done.isDone()) {
                r.done.completeExceptionally(new IllegalStateException("engine " + name + " stopped"));
            }
        }
        if (workers != null && !thread.isAlive()) {
            // the engine thread owns the bridge sockets: closed only once it is gone
            workers.close();
        }
    }

    /**
     * A scheduler hook: the other TP ranks first (their workers get the scheduler output before the
     * forward; a decode's blocks are zeroed on every rank before rank 0's scheduler asks for the KV),
     * then this one. So a deadline the scheduler starts ({@code request_finished}'s deferred free)
     * starts on the other ranks' replicas no later than here.
     */
    private List<Effect> sched(NodeEvent e) {
        if (workers != null) {
            try {
                workers.call(e);
            } catch (RuntimeException x) {
                throw new HookPort.HookCallException("TP ranks: " + x.getMessage(), x);
            }
        }
        return port.call(e);
    }

    /**
     * {@code update_connector_output}: this rank first, then the others, so a replica applies it no
     * earlier than rank 0 and reaps (or drops a parked ACK) whenever rank 0 did.
     */
    private List<Effect> schedLast(NodeEvent e) {
        List<Effect> effects = port.call(e);
        if (workers != null) {
            try {
                workers.call(e);
            } catch (RuntimeException x) {
                throw new HookPort.HookCallException("TP ranks: " + x.getMessage(), x);
            }
        }
        return effects;
    }

    /** A forward hook: every TP rank at once; this rank's own waits, then the others' replies. */
    private List<Effect> forward(NodeEvent e, boolean waits) {
        long[] ids = workers == null ? null : sendQuietly(e);
        List<Effect> effects = port.call(e);
        if (waits) {
            awaitForward(effects);
        }
        if (ids != null) {
            awaitQuietly(ids);
        }
        return effects;
    }

    /**
     * {@code start_load_kv} on every TP rank. When the ranks await the TP vote
     * ({@code awaits_tp_vote}: a READ decode with TP > 1), this is the engine core's side of the
     * eager handshake's {@code all_reduce(MIN)}: every rank answers start_load_kv once its own
     * handshakes to the step's engines finished (succeeded or failed) and its reads wait for the
     * vote; the engine then takes each rank's vote per engine the step names and has not passed
     * yet (0 when one of the rank's handshakes with it failed), and hands the minimum
     * ({@code HandshakeVoted}) to every rank, itself included, before the forward goes on. A
     * failed vote raises in vLLM's start_load_kv, so the engines after it are not voted on.
     */
    private void startLoad(Effect.MetadataBuilt built) {
        NodeEvent e = new NodeEvent.LoadStarted(clock.getAsLong());
        if (!config.awaitsTpVote()) {
            forward(e, true);
            return;
        }
        java.util.Set<String> engines = tpVote.pending(built);
        long[] ids = workers == null ? null : sendQuietly(e);
        List<Effect> effects = port.call(e);
        awaitForward(effects);
        List<io.kvledger.wire.bridge.BridgeReply> replies = ids == null ? List.of() : awaitQuietly(ids);
        if (engines.isEmpty()) {
            return;
        }
        List<List<String>> failedByRank = new ArrayList<>();
        failedByRank.add(port.failedHandshakes());
        for (io.kvledger.wire.bridge.BridgeReply r : replies) {
            failedByRank.add(r.result() == null ? new ArrayList<>() : TpWorkers.strings(r.result().get("failed_handshakes")));
        }
        for (TpHandshakeVote.Ballot b : tpVote.ballots(engines, failedByRank)) {
            forward(b.event(clock.getAsLong()), true);
            if (b.vote() == 0) {
                LOG.log(System.Logger.Level.WARNING, "engine " + name + ": eager handshake vote with " + b.remoteEngineId()
                        + " failed on TP rank(s) " + b.failedTpRanks());
                break;
            }
            tpVote.passed(b.remoteEngineId());
        }
    }

    private long[] sendQuietly(NodeEvent e) {
        try {
            return workers.send(e);
        } catch (RuntimeException x) {
            throw new HookPort.HookCallException("TP ranks: " + x.getMessage(), x);
        }
    }

    private List<io.kvledger.wire.bridge.BridgeReply> awaitQuietly(long[] ids) {
        try {
            return workers.await(ids);
        } catch (RuntimeException x) {
            throw new HookPort.HookCallException("TP ranks: " + x.getMessage(), x);
        }
    }

    /**
     * {@code get_finished} on every TP rank, aggregated: a request id is reported once every rank
     * reported it (each rank once), the load-error blocks of all ranks together.
     */
    private Effect.FinishedReported poll(NodeEvent e) {
        long[] ids = workers == null ? null : sendQuietly(e);
        Effect.FinishedReported own = reply(port.call(e), Effect.FinishedReported.class);
        if (ids == null) {
            return own;
        }
        List<Effect.FinishedReported> all = new ArrayList<>();
        all.add(own == null ? new Effect.FinishedReported(List.of(), List.of(), List.of()) : own);
        for (TpWorkers.Polled p : TpWorkers.polled(awaitQuietly(ids))) {
            all.add(new Effect.FinishedReported(p.doneSending(), p.doneRecving(), p.loadErrorBlocks()));
        }
        return aggregator.aggregate(all);
    }

    private void run() {
        while (running) {
            try {
                if (!awaitWork()) {
                    continue;
                }
                step();
            } catch (InterruptedException e) {
                break;
            } catch (HookPort.HookCallException e) {
                if (running) {
                    LOG.log(System.Logger.Level.WARNING, "engine " + name + ": " + e.getMessage());
                    sleepQuietly(10_000_000L);
                }
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.ERROR, "engine " + name + " step failed: " + e, e);
                sleepQuietly(10_000_000L);
            }
        }
    }

    private static void sleepQuietly(long ns) {
        try {
            TimeUnit.NANOSECONDS.sleep(ns);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Waits until there is something to step for; false when it should look again. */
    private boolean awaitWork() throws InterruptedException {
        if (model.retained() == 0 && pending.isEmpty()) {
            Input in = inputs.poll(100, TimeUnit.MILLISECONDS);
            if (in == null) {
                return false;
            }
            accept(in);
            return true;
        }
        long pause = model.hasWork() ? options.stepPauseNs() : options.idleStepNs();
        Input in = inputs.poll(pause, TimeUnit.NANOSECONDS);
        if (in != null) {
            accept(in);
        }
        return true;
    }

    private final List<Input> pending = new ArrayList<>();

    private void accept(Input in) {
        pending.add(in);
    }

    private void step() {
        step++;
        steps.incrementAndGet();
        inputs.drainTo(pending);
        for (Input in : pending) {
            switch (in) {
                case Input.Add a -> model.add(a.req());
                case Input.Abort a -> model.abort(a.requestId());
            }
        }
        pending.clear();
        built = null;
        syncLoads.clear();
        model.beginStep(clock, step);
        freeBlocks.set(model.blocksFree());
        // the forward: a prefill computes (writes) its KV before the layers are saved
        if (kv != null) {
            for (EngineModel.Request m : model.scheduled()) {
                Req r = (Req) m;
                if (r.prefillLeg && r.transferId != null) {
                    KvPattern.fill(kv, layout, r.transferId, r.blocks());
                }
            }
        }
        startLoad(built);
        for (String layer : config.layerNames()) {
            forward(new NodeEvent.LayerSaved(clock.getAsLong(), layer), true);
        }
        model.finishStep(clock);
        freeBlocks.set(model.blocksFree());
    }

    /** Where the model's hook calls go, and what the live driver does around them. */
    private final class Host implements EngineModel.Host {

        @Override
        public List<Effect> call(NodeEvent e) {
            return switch (e) {
                case NodeEvent.MatchedTokensQueried q -> {
                    List<Effect> effects = sched(q);
                    Effect.MatchedTokens mt = reply(effects, Effect.MatchedTokens.class);
                    lastMatchAsync = mt != null && mt.loadAsync();
                    yield effects;
                }
                case NodeEvent.BlocksAllocated b -> {
                    Req r = (Req) model.request(b.requestId());
                    if (r != null && b.numExternalTokens() > 0) {
                        // blocks a peer fills: zeroed first, so what arrives is checked, not what was there
                        r.external = b.numExternalTokens();
                        r.syncLoad = !lastMatchAsync;
                        clear(r.blocks());
                        if (r.syncLoad) {
                            syncLoads.add(r);
                        }
                    }
                    yield sched(b);
                }
                case NodeEvent.StepScheduled s -> {
                    List<Effect> effects = sched(s);
                    built = reply(effects, Effect.MetadataBuilt.class);
                    yield effects;
                }
                case NodeEvent.SaveWaited w -> forward(w, false);
                case NodeEvent.FinishedPolled p -> {
                    Effect.FinishedReported fin = poll(p);
                    received(fin);
                    yield fin == null ? List.of() : List.of(fin);
                }
                case NodeEvent.ConnectorOutputReceived c -> schedLast(c);
                // the scheduler's other hooks, and what the model never calls (worker and peer
                // inputs reach the node by their own paths): to the scheduler like any hook
                case NodeEvent.RequestAdmitted a -> sched(a);
                case NodeEvent.RequestFinished f -> sched(f);
                case NodeEvent.ShutDown d -> sched(d);
                case NodeEvent.Tick t -> sched(t);
                case NodeEvent.LoadStarted l -> sched(l);
                case NodeEvent.LayerSaved l -> sched(l);
                case NodeEvent.HandshakeCompleted h -> sched(h);
                case NodeEvent.HandshakeFailed h -> sched(h);
                case NodeEvent.HandshakeVoted h -> sched(h);
                case NodeEvent.KvCachesRegistered k -> sched(k);
                case NodeEvent.ForwardDone f -> sched(f);
                case NodeEvent.TransferCompleted t -> sched(t);
                case NodeEvent.RemoteBlocksReceived r -> sched(r);
                case NodeEvent.WriteDoneReceived w -> sched(w);
                case NodeEvent.ReleaseReceived r -> sched(r);
                case NodeEvent.RawCompletionReceived r -> sched(r);
                case NodeEvent.FrameRejected r -> sched(r);
                case NodeEvent.NotifySendFailed n -> sched(n);
            };
        }

        @Override
        public void admitted(EngineModel.Request r) {
            held.set(model.retained());
        }

        @Override
        public void rejected(EngineModel.Request m) {
            Req r = (Req) m;
            r.done.completeExceptionally(new IllegalArgumentException("request " + r.id() + " is already running"));
            failed.incrementAndGet();
        }

        @Override
        public void released(EngineModel.Request r) {
            held.set(model.retained());
            freeBlocks.set(model.blocksFree());
        }

        @Override
        public void finished(EngineModel.Request m, FinishStatus status, KvParams returned) {
            Req r = (Req) m;
            Map<String, Object> params = returned == null ? null : returned.asMap();
            String error = status == FinishStatus.FINISHED_ABORTED ? "aborted" : null;
            if (r.mismatch != null) {
                error = "KV bytes differ from the prefill's after " + r.verified + " verified bytes: " + r.mismatch;
            }
            Completion c = new Completion(r.id(), status, r.promptTokens(), r.outputTokens(), params, r.verified,
                    r.mismatch, r.loadFailed, error);
            if (error == null) {
                completed.incrementAndGet();
            } else {
                failed.incrementAndGet();
            }
            freeBlocks.set(model.blocksFree());
            r.done.complete(c);
        }
    }

    /**
     * After {@code get_finished}: requests holding a block that failed to load are marked, then
     * the KV that arrived is checked before anything finishes: synchronous loads once the barrier
     * let the forward through (a failed read is a load error, not a mismatch), asynchronous ones
     * when {@code finished_recving} names them.
     */
    private void received(Effect.FinishedReported fin) {
        if (fin != null && fin.loadErrorBlocks() != null && !fin.loadErrorBlocks().isEmpty()) {
            markLoadErrors(fin.loadErrorBlocks());
        }
        for (Req r : syncLoads) {
            if (!r.checked && !r.loadFailed) {
                r.checked = true;
                verify(r);
            }
        }
        if (fin != null && fin.doneRecving() != null) {
            for (String id : fin.doneRecving()) {
                Req r = (Req) model.request(id);
                if (r != null && !r.checked && r.status() == EngineModel.Status.WAITING_FOR_REMOTE_KVS) {
                    r.checked = true;
                    verify(r);
                }
            }
        }
        freeBlocks.set(model.blocksFree());
    }

    /**
     * The worker's blocking waits: after a hook that started a handshake or posted reads, the
     * forward goes on only when they are done, or after {@code transfer_timeout} (the reducer
     * then fails them on its own deadline).
     */
    private void awaitForward(List<Effect> effects) {
        boolean wait = forwardHeld;
        for (Effect e : effects) {
            wait |= e instanceof Effect.StartHandshake || e instanceof Effect.PostRead;
        }
        if (!wait) {
            return;
        }
        long end = System.nanoTime() + config.transferTimeoutNs();
        long pause = 20_000;
        forwardHeld = !port.forwardSettled();
        while (running && forwardHeld && System.nanoTime() < end) {
            java.util.concurrent.locks.LockSupport.parkNanos(pause);
            pause = Math.min(pause * 2, 2_000_000);
            forwardHeld = !port.forwardSettled();
        }
    }

    private void clear(int[] blocks) {
        if (kv != null && blocks != null && blocks.length > 0) {
            KvPattern.clear(kv, layout, blocks);
        }
    }

    private void verify(Req r) {
        if (kv == null || r.transferId == null || r.loadFailed) {
            return;
        }
        int positions = ceilDiv(Math.min(r.external, r.promptTokens()), blockTokens);
        KvPattern.Check check = KvPattern.verify(kv, layout, r.transferId, r.blocks(), positions);
        r.verified = check.bytesOk();
        verifiedBytes.addAndGet(check.bytesOk());
        if (!check.passed()) {
            r.mismatch = check.mismatch();
            corruptRequests.incrementAndGet();
        }
    }

    private void markLoadErrors(List<Integer> errorBlocks) {
        for (EngineModel.Request m : model.held()) {
            Req r = (Req) m;
            for (int b : r.blocks()) {
                if (errorBlocks.contains(b)) {
                    r.loadFailed = true;
                    break;
                }
            }
        }
    }

    private static <T extends Effect> T reply(List<Effect> effects, Class<T> type) {
        for (Effect e : effects) {
            if (type.isInstance(e)) {
                return type.cast(e);
            }
        }
        return null;
    }

    private static int ceilDiv(int a, int b) {
        return (a + b - 1) / b;
    }

    public long submitted() {
        return submitted.get();
    }

    /** Requests that finished without an error. */
    public long completed() {
        return completed.get();
    }

    /** Requests that finished with an error (aborted, corrupt KV). */
    public long failed() {
        return failed.get();
    }

    /** KV bytes checked against the prefill's pattern. */
    public long verifiedBytes() {
        return verifiedBytes.get();
    }

    /** Decode requests whose received KV differed from the prefill's. */
    public long corruptRequests() {
        return corruptRequests.get();
    }

    public long steps() {
        return steps.get();
    }

    /** Requests the engine still holds: running, waiting, or finished with their free deferred. */
    public int heldRequests() {
        return held.get();
    }

    /** Free blocks in the pool (read racily; for metrics). */
    public int freeBlocks() {
        return freeBlocks.get();
    }
}
