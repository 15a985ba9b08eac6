package io.kvledger.sim;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.event.NodeEvent.CachedRequest;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * The engine of one DP rank, without a clock or threads: a toy vLLM engine core that owns a block
 * pool and a request table and makes the connector's hook calls in the order vLLM's scheduler and
 * model runner make them. Whoever drives it decides when a step runs and what a hook call reaches
 * ({@link Host}): the simulator's agenda ({@code SimNode}, seeded virtual time, the forward split
 * into stages so frames can arrive between them) or a thread in real time.
 *
 * <p>A step is {@link #beginStep} (input processing: {@code RequestAdmitted} for new requests,
 * {@code RequestFinished} with {@code FINISHED_ABORTED} for aborts; then scheduling: running
 * requests first, next prefill chunk or one decode token, new blocks in
 * {@code StepScheduled.cachedRequests}; then requests whose remote KV arrived; then waiting ones,
 * {@code MatchedTokensQueried}, {@code BlocksAllocated}; then {@code StepScheduled}), the forward
 * ({@code LoadStarted}, {@code LayerSaved} per layer: the driver's, since its waits are), and
 * {@link #finishStep} ({@code SaveWaited}, {@code FinishedPolled}, {@code RequestFinished} for
 * requests that finished this step, {@code ConnectorOutputReceived} with the worker's report and
 * the frees its rewrite allows, in vLLM's {@code update_from_output} order or, with
 * {@link Rules#connectorOutputFirst()}, the connector output first; then {@code Tick}).
 *
 * <p>Deviation from vLLM, for simplicity: the scheduler checks the pool before asking the
 * connector about a waiting request, so a request is never queried twice for lack of blocks; a
 * running request that cannot get a block skips the step instead of preempting another.
 */
public final class EngineModel {

    /** What the engine's hook calls reach, and what it tells its driver. */
    public interface Host {

        /** One hook call on the connector (every TP rank's, when the driver has several); its effects. */
        List<Effect> call(NodeEvent event);

        /** {@code RequestAdmitted} ran for {@code r}. */
        default void admitted(Request r) { }

        /** {@code r} was not admitted: the engine holds a request of that id already. */
        default void rejected(Request r) { }

        /** {@code request_finished} ran for {@code r}; {@code returned} is the params it returned. */
        default void finished(Request r, FinishStatus status, KvParams returned) { }

        /** The engine freed {@code r}'s blocks and dropped it. */
        default void released(Request r) { }

        /** The worker reported these blocks as failed to load (every TP rank's, as reported). */
        default void loadErrors(List<Integer> blocks) { }

        /** {@code finished_recving} named a request that does not wait for its KV. */
        default void unexpectedRecv() { }

        /** The rewritten {@code finished_sending} named a request whose blocks are not held. */
        default void unexpectedFree() { }
    }

    /**
     * @param blockSize            tokens per KV block
     * @param blocks               blocks in the pool
     * @param tokenBudget          tokens scheduled per step (chunked prefill cuts prompts to it)
     * @param maxRunning           requests running at once
     * @param connectorOutputFirst {@code update_connector_output} before the finished requests'
     *                             {@code request_finished} (vLLM versions differ)
     * @param tickAtStepEnd        a {@code Tick} ends every step (the simulator's; a live node has
     *                             its own timer)
     */
    public record Rules(int blockSize, int blocks, int tokenBudget, int maxRunning, boolean connectorOutputFirst,
                        boolean tickAtStepEnd) {}

    /** Where a request is in the engine (not in the connector: that is the reducer's phase). */
    public enum Status { WAITING, WAITING_FOR_REMOTE_KVS, RUNNING, HELD, DONE }

    /** A request inside the engine. */
    public static class Request {
        final String id;
        final int promptTokens;
        final int maxOutputTokens;
        final FinishStatus naturalFinish;
        final KvParams params;
        final List<Integer> blocks = new ArrayList<>();
        Status status = Status.WAITING;
        int computedTokens;
        int outputTokens;
        boolean promptDone;
        int scheduledTokens;
        boolean recvDone;

        /**
         * @param maxOutputTokens tokens after which it stops (a prefill leg's is 1)
         * @param naturalFinish   how it ends when it reaches them
         */
        public Request(String id, int promptTokens, int maxOutputTokens, FinishStatus naturalFinish, KvParams params) {
            this.id = id;
            this.promptTokens = promptTokens;
            this.maxOutputTokens = maxOutputTokens;
            this.naturalFinish = naturalFinish;
            this.params = params;
        }

        public String id() {
            return id;
        }

        public Status status() {
            return status;
        }

        public int promptTokens() {
            return promptTokens;
        }

        public int outputTokens() {
            return outputTokens;
        }

        public KvParams params() {
            return params;
        }

        /** The request's blocks now, in order. */
        public int[] blocks() {
            int[] ids = new int[blocks.size()];
            for (int i = 0; i < ids.length; i++) {
                ids[i] = blocks.get(i);
            }
            return ids;
        }
    }

    /** What reaches the engine core between steps. */
    private sealed interface Input {
        record Add(Request req) implements Input {}
        record Abort(String requestId) implements Input {}
    }

    private final Rules rules;
    private final Host host;
    private final BlockAllocator pool;
    private final ArrayDeque<Input> inputs = new ArrayDeque<>();
    /** Requests the engine still holds: admitted and not yet done (a done request is dropped). */
    private final LinkedHashMap<String, Request> requests = new LinkedHashMap<>();
    /** The most requests {@link #requests} held at once. */
    private int peakRetained;
    private final List<Request> waiting = new ArrayList<>();
    private final List<Request> remoteKvs = new ArrayList<>();
    private final List<Request> running = new ArrayList<>();
    private int live;

    public EngineModel(Rules rules, Host host) {
        this.rules = rules;
        this.host = host;
        this.pool = new BlockAllocator(rules.blocks());
    }

    /** A request reaches the engine core ({@code add_request}); it is admitted at the next step. */
    public void add(Request req) {
        inputs.addLast(new Input.Add(req));
    }

    /** An abort reaches the engine core; it is processed at the next step. */
    public void abort(String requestId) {
        inputs.addLast(new Input.Abort(requestId));
    }

    /** The requests the engine holds (admitted, not done), in admission order; a view for the driver's thread. */
    public java.util.Collection<Request> held() {
        return java.util.Collections.unmodifiableCollection(requests.values());
    }

    /** Whether adds or aborts wait for the next step. */
    boolean hasInputs() {
        return !inputs.isEmpty();
    }

    /** Requests admitted and not done (waiting, running, or holding blocks after they finished). */
    public int live() {
        return live;
    }

    /** Requests the engine holds now. */
    public int retained() {
        return requests.size();
    }

    /** The most requests the engine held at once. */
    int peakRetained() {
        return peakRetained;
    }

    int blocksInUse() {
        return pool.inUse();
    }

    public int blocksFree() {
        return pool.free();
    }

    /** The request of that id the engine holds, or {@code null}. */
    public Request request(String id) {
        return requests.get(id);
    }

    /** Whether a step would schedule something: a request runs, waits, or has its remote KV. */
    public boolean hasWork() {
        if (!running.isEmpty() || !waiting.isEmpty()) {
            return true;
        }
        for (Request r : remoteKvs) {
            if (r.recvDone) {
                return true;
            }
        }
        return false;
    }

    /** The requests {@link #beginStep} scheduled tokens for, until {@link #finishStep} books them. */
    public List<Request> scheduled() {
        List<Request> out = new ArrayList<>();
        for (Request r : running) {
            if (r.scheduledTokens > 0) {
                out.add(r);
            }
        }
        return out;
    }

    /**
     * The scheduler's half of step {@code stepNo}: inputs, then scheduling, ending with
     * {@code StepScheduled}, each hook stamped with {@code now} as it is called. Returns whether
     * any token was scheduled.
     */
    public boolean beginStep(LongSupplier now, long stepNo) {
        processInputs(now);
        return schedule(now, stepNo);
    }

    private void processInputs(LongSupplier now) {
        while (!inputs.isEmpty()) {
            switch (inputs.pollFirst()) {
                case Input.Add a -> {
                    Request r = a.req();
                    if (requests.containsKey(r.id)) {
                        host.rejected(r);
                        continue;
                    }
                    requests.put(r.id, r);
                    peakRetained = Math.max(peakRetained, requests.size());
                    live++;
                    host.call(new NodeEvent.RequestAdmitted(now.getAsLong(), r.id, r.promptTokens, r.promptTokens, r.params));
                    host.admitted(r);
                    waiting.add(r);
                }
                case Input.Abort b -> {
                    Request r = requests.get(b.requestId());
                    // vLLM ignores aborts of requests it no longer runs (finished, maybe still holding blocks).
                    if (r != null && r.status != Status.HELD && r.status != Status.DONE) {
                        finish(now, r, FinishStatus.FINISHED_ABORTED);
                    }
                }
            }
        }
    }

    private int blocksFor(int tokens) {
        return (tokens + rules.blockSize() - 1) / rules.blockSize();
    }

    private boolean schedule(LongSupplier now, long stepNo) {
        int budget = rules.tokenBudget();
        boolean busy = false;
        List<CachedRequest> cached = new ArrayList<>();
        for (Request r : running) {
            r.scheduledTokens = 0;
            if (budget <= 0) {
                continue;
            }
            int n = r.promptDone ? 1 : Math.min(r.promptTokens - r.computedTokens, budget);
            int need = blocksFor(r.computedTokens + n) - r.blocks.size();
            if (need > pool.free()) {
                continue;
            }
            int[] fresh = grow(r, need);
            r.scheduledTokens = n;
            budget -= n;
            busy = true;
            cached.add(new CachedRequest(r.id, fresh.length > 0 ? BlockGroups.single(fresh) : null));
        }
        // WRITE consumers whose KV arrived rejoin as new requests and recompute the last prompt token.
        for (Iterator<Request> it = remoteKvs.iterator(); it.hasNext(); ) {
            Request r = it.next();
            if (!r.recvDone || budget <= 0 || running.size() >= rules.maxRunning()) {
                continue;
            }
            int need = blocksFor(r.promptTokens) - r.blocks.size();
            if (need > pool.free()) {
                continue;
            }
            grow(r, need);
            it.remove();
            r.computedTokens = r.promptTokens - 1;
            r.status = Status.RUNNING;
            r.scheduledTokens = 1;
            budget -= 1;
            busy = true;
            running.add(r);
        }
        while (!waiting.isEmpty() && budget > 0 && running.size() < rules.maxRunning()) {
            Request r = waiting.get(0);
            if (pool.free() < blocksFor(r.promptTokens) + 1) {
                break;
            }
            Effect.MatchedTokens mt = reply(host.call(new NodeEvent.MatchedTokensQueried(now.getAsLong(), r.id, 0)),
                    Effect.MatchedTokens.class, r.id);
            int count = mt == null ? 0 : Math.max(0, Math.min(mt.count(), r.promptTokens));
            waiting.remove(0);
            if (mt != null && mt.loadAsync()) {
                int[] ids = grow(r, blocksFor(count));
                host.call(new NodeEvent.BlocksAllocated(now.getAsLong(), r.id, BlockGroups.single(ids), count));
                r.status = Status.WAITING_FOR_REMOTE_KVS;
                remoteKvs.add(r);
                continue;
            }
            // vLLM always computes at least the last prompt token itself.
            count = Math.min(count, r.promptTokens - 1);
            int n = Math.min(r.promptTokens - count, budget);
            int[] ids = grow(r, blocksFor(count + n));
            host.call(new NodeEvent.BlocksAllocated(now.getAsLong(), r.id, BlockGroups.single(ids), count));
            r.computedTokens = count;
            r.status = Status.RUNNING;
            r.scheduledTokens = n;
            budget -= n;
            busy = true;
            running.add(r);
        }
        host.call(new NodeEvent.StepScheduled(now.getAsLong(), stepNo, cached));
        return busy;
    }

    private int[] grow(Request r, int n) {
        int[] ids = pool.allocate(Math.max(0, n));
        for (int id : ids) {
            r.blocks.add(id);
        }
        return ids;
    }

    /**
     * The end of a step: the worker's {@code wait_for_save} and {@code get_finished}, then the
     * scheduler's {@code update_from_output}: tokens are booked, requests that stopped are finished
     * ({@code request_finished}), then {@code update_connector_output} runs and the requests it names
     * are freed or marked received (or, with {@link Rules#connectorOutputFirst()}, the connector
     * output first), then {@code Tick}.
     */
    public void finishStep(LongSupplier now) {
        host.call(new NodeEvent.SaveWaited(now.getAsLong()));
        Effect.FinishedReported report = first(host.call(new NodeEvent.FinishedPolled(now.getAsLong())), Effect.FinishedReported.class);
        if (report != null && report.loadErrorBlocks() != null) {
            host.loadErrors(report.loadErrorBlocks());
        }
        List<Request> finishing = bookTokens();
        if (rules.connectorOutputFirst()) {
            connectorOutput(now, report);
        }
        for (Request r : finishing) {
            finish(now, r, r.naturalFinish);
        }
        if (!rules.connectorOutputFirst()) {
            connectorOutput(now, report);
        }
        if (rules.tickAtStepEnd()) {
            host.call(new NodeEvent.Tick(now.getAsLong()));
        }
    }

    /** Advances every request scheduled this step; returns those that produced their last token. */
    private List<Request> bookTokens() {
        List<Request> finishing = new ArrayList<>();
        for (Request r : running) {
            if (r.scheduledTokens == 0) {
                continue;
            }
            if (!r.promptDone) {
                r.computedTokens += r.scheduledTokens;
                if (r.computedTokens >= r.promptTokens) {
                    r.promptDone = true;
                    r.outputTokens = 1;
                }
            } else {
                r.computedTokens += 1;
                r.outputTokens += 1;
            }
            r.scheduledTokens = 0;
            if (r.promptDone && r.outputTokens >= r.maxOutputTokens) {
                finishing.add(r);
            }
        }
        return finishing;
    }

    /** {@code _update_from_kv_xfer_finished}: {@code update_connector_output}, then the frees and receives. */
    private void connectorOutput(LongSupplier now, Effect.FinishedReported report) {
        List<String> sending = report == null || report.doneSending() == null ? List.of() : report.doneSending();
        List<String> recving = report == null || report.doneRecving() == null ? List.of() : report.doneRecving();
        // vLLM's output aggregator turns empty sets into None.
        List<Effect> out = host.call(new NodeEvent.ConnectorOutputReceived(now.getAsLong(),
                sending.isEmpty() ? null : List.copyOf(sending), recving.isEmpty() ? null : List.copyOf(recving)));
        for (String id : recving) {
            Request r = requests.get(id);
            if (r != null && r.status == Status.WAITING_FOR_REMOTE_KVS) {
                r.recvDone = true;
            } else if (r != null && r.status == Status.HELD) {
                done(r); // finished while receiving: vLLM frees the delayed blocks now
            } else {
                host.unexpectedRecv();
            }
        }
        Effect.FinishedSendingRewritten rewrite = first(out, Effect.FinishedSendingRewritten.class);
        if (rewrite != null) {
            for (String id : rewrite.safe()) {
                Request r = requests.get(id);
                if (r != null && r.status == Status.HELD) {
                    done(r);
                } else {
                    host.unexpectedFree();
                }
            }
        }
    }

    /** {@code request_finished}, then vLLM frees the blocks now or keeps them until the rewrite names the request. */
    private void finish(LongSupplier now, Request r, FinishStatus status) {
        waiting.remove(r);
        remoteKvs.remove(r);
        running.remove(r);
        int[] ids = new int[r.blocks.size()];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = r.blocks.get(i);
        }
        Effect.FinishDecision decision = reply(
                host.call(new NodeEvent.RequestFinished(now.getAsLong(), r.id, status, BlockGroups.single(ids))),
                Effect.FinishDecision.class, r.id);
        if (decision != null && decision.delayFree()) {
            r.status = Status.HELD;
        } else {
            done(r);
        }
        host.finished(r, status, decision == null ? null : decision.params());
    }

    private void done(Request r) {
        pool.release(r.blocks);
        r.blocks.clear();
        r.status = Status.DONE;
        live--;
        // Nothing asks about a done request again: an abort or a worker report naming it finds no
        // request, which is handled as for a done one.
        requests.remove(r.id, r);
        host.released(r);
    }

    private static <T extends Effect> T first(List<Effect> effects, Class<T> type) {
        for (Effect e : effects) {
            if (type.isInstance(e)) {
                return type.cast(e);
            }
        }
        return null;
    }

    /** The hook reply of {@code type} for {@code requestId}, or {@code null}. */
    private static <T extends Effect> T reply(List<Effect> effects, Class<T> type, String requestId) {
        for (Effect e : effects) {
            if (type.isInstance(e)) {
                String id = switch (e) {
                    case Effect.MatchedTokens m -> m.requestId();
                    case Effect.FinishDecision f -> f.requestId();
                    case Effect.MetadataBuilt _, Effect.FinishedReported _, Effect.FinishedSendingRewritten _,
                            Effect.IoCommand _, Effect.Decision _ -> requestId;
                };
                if (requestId.equals(id)) {
                    return type.cast(e);
                }
            }
        }
        return null;
    }
}
