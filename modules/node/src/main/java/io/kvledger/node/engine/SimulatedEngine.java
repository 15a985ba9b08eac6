package io.kvledger.node.engine;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.node.data.KvLayout;
import io.kvledger.node.data.KvPattern;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * The built-in engine of a live node: a small vLLM-like engine on its own thread that owns a
 * block pool and calls the connector's hooks through a {@link HookPort} in the order vLLM's
 * scheduler and model runner do, one step at a time:
 * <ol>
 *   <li>new requests ({@code RequestAdmitted}) and aborts ({@code RequestFinished} with
 *       {@code FINISHED_ABORTED});</li>
 *   <li>scheduling: running requests first (the next prefill chunk, or one decode token; new
 *       blocks go into {@code StepScheduled.cachedRequests}), then waiting requests in arrival
 *       order while blocks last ({@code MatchedTokensQueried}, then {@code BlocksAllocated};
 *       a request whose KV comes from a peer waits in WAITING_FOR_REMOTE_KVS), then
 *       {@code StepScheduled};</li>
 *   <li>the forward: {@code LoadStarted}, {@code LayerSaved} per layer, {@code SaveWaited};
 *       a prefill writes its verifiable pattern ({@link KvPattern}) into the blocks it computed
 *       before the layers are saved;</li>
 *   <li>the output: {@code FinishedPolled}, {@code RequestFinished} for requests that finished
 *       this step, {@code ConnectorOutputReceived} with the worker's report; blocks are freed
 *       when {@code request_finished} does not delay the free, or when the rewritten
 *       {@code finished_sending} names the request.</li>
 * </ol>
 * A decode whose KV arrived ({@code finished_recving}) checks every transferred byte against the
 * prefill's pattern. The engine steps while it has requests (every {@code idleStepNs} while all
 * of them only wait for a peer) and sleeps when it has none.
 *
 * <p>With TP > 1 the engine is the engine core of its DP rank and the node it runs in is TP rank
 * 0's (its worker 0): it hands every hook call to the nodes of the other TP ranks too
 * ({@link TpWorkers}), the scheduler calls first (a worker sees the scheduler output before the
 * forward), the forward calls to every rank at once (each rank's node answers once its own
 * handshakes and reads settled), and it aggregates the ranks' {@code get_finished} as vLLM's
 * {@code KVOutputAggregator} does: a request is finished sending (receiving) once every TP rank
 * reported it, and the load-error blocks are the union. Each rank's node fills and checks its own
 * KV region ({@link SimulatedWorker}).
 *
 * <p>Deviations from vLLM, for simplicity: no preemption (a request that cannot get a block
 * waits), no prefix cache, one token per decode step, and the connector is asked about a
 * waiting request only when the pool can hold its prompt.
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

    private enum Status { WAITING, WAITING_FOR_REMOTE_KVS, RUNNING, HELD }

    private static final class Req {
        final String id;
        final int prompt;
        final int maxTokens;
        final KvParams params;
        final String transferId;
        final boolean prefillLeg;
        final CompletableFuture<Completion> done;
        final List<Integer> blocks = new ArrayList<>();
        Status status = Status.WAITING;
        int computed;
        int output;
        int external;
        boolean recvDone;
        boolean syncLoad;
        boolean loadFailed;
        long verified;
        String mismatch;
        boolean finished;

        Req(String id, int prompt, int maxTokens, KvParams params, CompletableFuture<Completion> done) {
            this.id = id;
            this.prompt = prompt;
            this.maxTokens = maxTokens;
            this.params = params;
            this.transferId = params != null && params.get("transfer_id") instanceof String s ? s : null;
            this.prefillLeg = params != null && params.truthy("do_remote_decode");
            this.done = done;
        }

        int[] blockArray() {
            int[] a = new int[blocks.size()];
            for (int i = 0; i < a.length; i++) {
                a[i] = blocks.get(i);
            }
            return a;
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
    private final ArrayDeque<Integer> free = new ArrayDeque<>();
    private final LinkedHashMap<String, Req> requests = new LinkedHashMap<>();
    /** The other TP ranks' nodes, or {@code null} with TP 1. */
    private final TpWorkers workers;
    /** Per request id, how many more TP ranks must report it finished sending (receiving). */
    private final Map<String, Integer> sendRemaining = new java.util.HashMap<>();
    private final Map<String, Integer> recvRemaining = new java.util.HashMap<>();
    private final Thread thread;
    private volatile boolean running;
    private long step;
    /** Engines whose TP-wide eager-handshake vote passed (with {@code awaitsTpVote}). */
    private final java.util.Set<String> votedEngines = new java.util.LinkedHashSet<>();
    /** A wait of the forward that timed out: the next hooks check again. */
    private boolean forwardHeld;

    private final AtomicLong submitted = new AtomicLong();
    private final AtomicLong completed = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicLong verifiedBytes = new AtomicLong();
    private final AtomicLong corruptRequests = new AtomicLong();
    private final AtomicLong steps = new AtomicLong();
    private final java.util.concurrent.atomic.AtomicInteger held = new java.util.concurrent.atomic.AtomicInteger();

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
        for (int b = 0; b < layout.numBlocks(); b++) {
            free.add(b);
        }
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
        for (Req r : requests.values()) {
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
        java.util.LinkedHashSet<String> engines = new java.util.LinkedHashSet<>();
        if (built != null && built.reqsToRecv() != null) {
            for (io.kvledger.core.model.ReqMeta m : built.reqsToRecv()) {
                if (!votedEngines.contains(m.handshakeEngineId())) {
                    engines.add(m.handshakeEngineId());
                }
            }
        }
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
            List<String> keys = new ArrayList<>();
            if (r.result() != null && r.result().get("failed_handshakes") instanceof List<?> l) {
                for (Object o : l) {
                    keys.add(String.valueOf(o));
                }
            }
            failedByRank.add(keys);
        }
        for (String eid : engines) {
            List<Integer> failedRanks = new ArrayList<>();
            for (int rank = 0; rank < failedByRank.size(); rank++) {
                for (String key : failedByRank.get(rank)) {
                    if (key.startsWith(eid + "_dp")) {
                        failedRanks.add(rank);
                        break;
                    }
                }
            }
            int vote = failedRanks.isEmpty() ? 1 : 0;
            forward(new NodeEvent.HandshakeVoted(clock.getAsLong(), eid, vote, failedRanks), true);
            if (vote == 0) {
                LOG.log(System.Logger.Level.WARNING, "engine " + name + ": eager handshake vote with " + eid
                        + " failed on TP rank(s) " + failedRanks);
                break;
            }
            votedEngines.add(eid);
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
    private Effect.FinishedReported poll() {
        NodeEvent e = new NodeEvent.FinishedPolled(clock.getAsLong());
        long[] ids = workers == null ? null : sendQuietly(e);
        Effect.FinishedReported own = reply(port.call(e), Effect.FinishedReported.class);
        if (ids == null) {
            return own;
        }
        List<TpWorkers.Polled> all = new ArrayList<>(TpWorkers.polled(awaitQuietly(ids)));
        all.add(0, own == null ? new TpWorkers.Polled(List.of(), List.of(), List.of())
                : new TpWorkers.Polled(orEmpty(own.doneSending()), orEmpty(own.doneRecving()), orEmpty(own.loadErrorBlocks())));
        int ranks = all.size();
        List<String> sending = new ArrayList<>();
        List<String> recving = new ArrayList<>();
        java.util.LinkedHashSet<Integer> errors = new java.util.LinkedHashSet<>();
        for (TpWorkers.Polled p : all) {
            count(p.doneSending(), sendRemaining, ranks, sending);
            count(p.doneRecving(), recvRemaining, ranks, recving);
            errors.addAll(p.loadErrorBlocks());
        }
        return new Effect.FinishedReported(sending.isEmpty() ? null : sending, recving.isEmpty() ? null : recving,
                List.copyOf(errors));
    }

    private static void count(List<String> ids, Map<String, Integer> remaining, int ranks, List<String> done) {
        for (String id : ids) {
            int left = remaining.getOrDefault(id, ranks) - 1;
            if (left <= 0) {
                remaining.remove(id);
                done.add(id);
            } else {
                remaining.put(id, left);
            }
        }
    }

    private static <T> List<T> orEmpty(List<T> l) {
        return l == null ? List.of() : l;
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
        if (requests.isEmpty()) {
            Input in = inputs.poll(100, TimeUnit.MILLISECONDS);
            if (in == null) {
                return false;
            }
            accept(in);
            return true;
        }
        boolean busy = false;
        for (Req r : requests.values()) {
            if (r.status == Status.RUNNING || r.status == Status.WAITING || r.recvDone && r.status == Status.WAITING_FOR_REMOTE_KVS) {
                busy = true;
                break;
            }
        }
        long pause = busy ? options.stepPauseNs() : options.idleStepNs();
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
                case Input.Add a -> admit(a.req());
                case Input.Abort a -> abortNow(a.requestId());
            }
        }
        pending.clear();

        // ---- scheduling
        List<NodeEvent.CachedRequest> cached = new ArrayList<>();
        List<Req> computedThisStep = new ArrayList<>();
        List<Req> syncLoads = new ArrayList<>();
        int budget = options.tokenBudget();
        for (Req r : requests.values()) {
            if (r.status != Status.RUNNING || budget <= 0) {
                continue;
            }
            int tokens = r.computed < r.prompt ? Math.min(r.prompt - r.computed, budget) : 1;
            int[] fresh = grow(r, r.computed + tokens);
            if (fresh == null) {
                continue; // no block: waits (no preemption)
            }
            if (fresh.length > 0) {
                cached.add(new NodeEvent.CachedRequest(r.id, BlockGroups.single(fresh)));
            }
            budget -= tokens;
            r.computed += tokens;
            computedThisStep.add(r);
        }
        for (Req r : requests.values()) {
            if (r.status == Status.WAITING_FOR_REMOTE_KVS && r.recvDone) {
                // vLLM moves it back to the waiting queue with its external tokens computed.
                r.status = Status.RUNNING;
                r.computed = Math.max(r.computed, Math.min(r.external, r.prompt));
            }
        }
        for (Req r : new ArrayList<>(requests.values())) {
            if (r.status != Status.WAITING || budget <= 0) {
                continue;
            }
            int promptBlocks = ceilDiv(r.prompt, blockTokens);
            if (free.size() < promptBlocks) {
                break; // FCFS: later requests wait too
            }
            Effect.MatchedTokens mt = reply(sched(new NodeEvent.MatchedTokensQueried(clock.getAsLong(), r.id, 0)),
                    Effect.MatchedTokens.class);
            int ext = mt == null ? 0 : Math.max(0, mt.count());
            boolean async = mt != null && mt.loadAsync() && ext > 0;
            if (async) {
                int[] blocks = grow(r, r.prompt);
                r.external = ext;
                clear(blocks);
                sched(new NodeEvent.BlocksAllocated(clock.getAsLong(), r.id, BlockGroups.single(blocks), ext));
                r.status = Status.WAITING_FOR_REMOTE_KVS;
                continue;
            }
            if (ext > 0) {
                // A synchronous load (READ): the blocks for the whole prompt, the external tokens
                // read during this step's forward, the rest computed after them.
                int[] blocks = grow(r, r.prompt);
                r.external = ext;
                r.syncLoad = true;
                clear(blocks);
                sched(new NodeEvent.BlocksAllocated(clock.getAsLong(), r.id, BlockGroups.single(blocks), ext));
                r.status = Status.RUNNING;
                r.computed = Math.min(r.prompt, ext + Math.max(1, Math.min(r.prompt - ext, budget)));
                budget -= r.computed - ext;
                computedThisStep.add(r);
                syncLoads.add(r);
                continue;
            }
            int tokens = Math.min(r.prompt, budget);
            int[] blocks = grow(r, tokens);
            sched(new NodeEvent.BlocksAllocated(clock.getAsLong(), r.id, BlockGroups.single(blocks), 0));
            r.status = Status.RUNNING;
            r.computed = tokens;
            budget -= tokens;
            computedThisStep.add(r);
        }
        Effect.MetadataBuilt built = reply(sched(new NodeEvent.StepScheduled(clock.getAsLong(), step, cached)),
                Effect.MetadataBuilt.class);

        // ---- the forward
        for (Req r : computedThisStep) {
            if (r.prefillLeg && r.transferId != null && kv != null) {
                KvPattern.fill(kv, layout, r.transferId, r.blockArray());
            }
        }
        startLoad(built);
        for (String layer : config.layerNames()) {
            forward(new NodeEvent.LayerSaved(clock.getAsLong(), layer), true);
        }
        forward(new NodeEvent.SaveWaited(clock.getAsLong()), false);

        // ---- the output
        Effect.FinishedReported fin = poll();
        List<String> doneSending = fin == null ? null : fin.doneSending();
        List<String> doneRecving = fin == null ? null : fin.doneRecving();
        if (fin != null && fin.loadErrorBlocks() != null && !fin.loadErrorBlocks().isEmpty()) {
            markLoadErrors(fin.loadErrorBlocks());
        }
        // KV that arrived is checked before anything finishes: synchronous loads once the
        // barrier let the forward through (a failed read is a load error, not a mismatch)...
        for (Req r : syncLoads) {
            if (!r.recvDone && !r.loadFailed) {
                r.recvDone = true;
                verify(r);
            }
        }
        // ...and asynchronous ones when finished_recving names them.
        if (doneRecving != null) {
            for (String id : doneRecving) {
                Req r = requests.get(id);
                if (r != null && !r.recvDone && r.status == Status.WAITING_FOR_REMOTE_KVS) {
                    r.recvDone = true;
                    verify(r);
                }
            }
        }
        for (Req r : computedThisStep) {
            if (r.computed >= r.prompt && r.status == Status.RUNNING) {
                r.output++;
                if (r.output >= r.maxTokens) {
                    finish(r, FinishStatus.FINISHED_LENGTH_CAPPED);
                }
            }
        }
        Effect.FinishedSendingRewritten safe = reply(schedLast(new NodeEvent.ConnectorOutputReceived(
                clock.getAsLong(), doneSending, doneRecving)), Effect.FinishedSendingRewritten.class);
        if (safe != null) {
            for (String id : safe.safe()) {
                Req r = requests.get(id);
                if (r != null && r.status == Status.HELD) {
                    release(r);
                }
            }
        }
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

    private void admit(Req r) {
        if (requests.containsKey(r.id)) {
            r.done.completeExceptionally(new IllegalArgumentException("request " + r.id + " is already running"));
            failed.incrementAndGet();
            return;
        }
        requests.put(r.id, r);
        held.incrementAndGet();
        sched(new NodeEvent.RequestAdmitted(clock.getAsLong(), r.id, r.prompt, r.prompt, r.params));
    }

    private void abortNow(String id) {
        Req r = requests.get(id);
        if (r == null || r.finished) {
            return;
        }
        finish(r, FinishStatus.FINISHED_ABORTED);
    }

    private void finish(Req r, FinishStatus status) {
        r.finished = true;
        Effect.FinishDecision d = reply(sched(new NodeEvent.RequestFinished(clock.getAsLong(), r.id, status,
                BlockGroups.single(r.blockArray()))), Effect.FinishDecision.class);
        Map<String, Object> params = d == null || d.params() == null ? null : d.params().asMap();
        String error = status == FinishStatus.FINISHED_ABORTED ? "aborted" : null;
        if (r.mismatch != null) {
            error = "KV bytes differ from the prefill's after " + r.verified + " verified bytes: " + r.mismatch;
        }
        Completion c = new Completion(r.id, status, r.prompt, r.output, params, r.verified, r.mismatch, r.loadFailed,
                error);
        if (d != null && d.delayFree()) {
            r.status = Status.HELD;
        } else {
            release(r);
        }
        if (error == null) {
            completed.incrementAndGet();
        } else {
            failed.incrementAndGet();
        }
        r.done.complete(c);
    }

    private void release(Req r) {
        free.addAll(r.blocks);
        r.blocks.clear();
        if (requests.remove(r.id) != null) {
            held.decrementAndGet();
        }
    }

    /** Extends a request's blocks to cover {@code tokens}; the new ids, or null when the pool is short. */
    private int[] grow(Req r, int tokens) {
        int need = ceilDiv(tokens, blockTokens) - r.blocks.size();
        if (need <= 0) {
            return new int[0];
        }
        if (free.size() < need) {
            return null;
        }
        int[] fresh = new int[need];
        for (int i = 0; i < need; i++) {
            fresh[i] = free.poll();
            r.blocks.add(fresh[i]);
        }
        return fresh;
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
        int positions = ceilDiv(Math.min(r.external, r.prompt), blockTokens);
        KvPattern.Check check = KvPattern.verify(kv, layout, r.transferId, r.blockArray(), positions);
        r.verified = check.bytesOk();
        verifiedBytes.addAndGet(check.bytesOk());
        if (!check.passed()) {
            r.mismatch = check.mismatch();
            corruptRequests.incrementAndGet();
        }
    }

    private void markLoadErrors(List<Integer> errorBlocks) {
        for (Req r : requests.values()) {
            for (int b : r.blocks) {
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
        return free.size();
    }
}
