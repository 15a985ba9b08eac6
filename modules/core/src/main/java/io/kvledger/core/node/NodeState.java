package io.kvledger.core.node;

import io.kvledger.core.config.GroupKind;
import io.kvledger.core.config.KvGroupSpec;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Switch;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.KvTransferParams;
import io.kvledger.core.model.ReqMeta;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.model.TransferId;
import io.kvledger.core.moriio.ExtraConfig;
import io.kvledger.core.moriio.PortMath;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;

/**
 * The whole connector state of one engine rank: the engine's view of each request and its phase,
 * the scheduler side's tables ({@link SchedulerSide}) and the worker side's ({@link WorkerSide}),
 * each side's tables written only by that side's own methods. The reducer's per-event context
 * (the event's time, the effect sink) is not part of it: {@link NodeReducer} makes one per event.
 *
 * <p>Mutable, owned by the single reducer thread, and updated in place by
 * {@link NodeReducer#apply}: the reducer is a deterministic function of (state, event), but it
 * does not allocate a new state per event (the reducer benchmark's allocation budget is 500 bytes
 * an event). Every table is insertion-ordered, as Python dicts are, so iteration order, and thus
 * the order of effects, is the connector's.
 */
public final class NodeState {

    private static final int TERMINAL_LRU = ExtraConfig.MAX_TERMINAL_TRANSFER_IDS;
    private static final int FINISHED_PHASE_MEMORY = 1 << 16;

    final NodeConfig config;

    // ------------------------------------------------------------ derived configuration
    final int[] transferGroups;
    final int[] attentionGroups;
    final int[] mambaGroups;
    final int[] swaKeep;
    final int coverageGroup;
    final int coverageBlockSize;
    final int maxDecodeTailBlocks;
    final boolean hybrid;
    final boolean hmaActive;
    final boolean isKvMaster;
    /** {@code engine_id} ({@link NodeConfig#engineId()}), rendered once: request_finished returns it with every deferral. */
    final String engineId;

    // ------------------------------------------------------------ the engine's view
    /** One record per request id for the tables that are keyed by it (see {@link RequestSlots}). */
    final RequestSlots slots = new RequestSlots();
    /** What {@link #checkInvariantsSinceLastCheck()} remembers between calls (not state: not hashed). */
    final Invariants.Memo invariantsMemo = new Invariants.Memo();
    /** Requests vLLM still holds (admitted and not yet freed). */
    final RequestSlots.Table<Req> requests = slots.table(RequestSlots.REQUESTS);
    /** The phase of live requests and of recently finished ones (bounded). */
    final PhaseTable phases = new PhaseTable(FINISHED_PHASE_MEMORY);

    // ------------------------------------------------------------ the two sides
    /** The scheduler side's tables, written only by {@link SchedulerSide}'s hooks. */
    final SchedulerSide scheduler = new SchedulerSide(slots);
    /** The worker side's tables, written only by {@link WorkerSide}'s hooks. */
    final WorkerSide worker = new WorkerSide();


    private NodeState(NodeConfig config) {
        this.config = config;
        List<KvGroupSpec> groups = config.groups();
        boolean filter = config.on(Switch.SCHED_CTOR_KV_CACHE_CONFIG);
        List<Integer> transfer = new ArrayList<>();
        List<Integer> attention = new ArrayList<>();
        List<Integer> mamba = new ArrayList<>();
        for (int i = 0; i < groups.size(); i++) {
            KvGroupSpec g = groups.get(i);
            if (filter && !g.enableKvTransfer()) {
                continue;
            }
            transfer.add(i);
            if (g.kind() == GroupKind.MAMBA) {
                mamba.add(i);
            } else {
                attention.add(i);
            }
        }
        transferGroups = toArray(transfer);
        attentionGroups = toArray(attention);
        mambaGroups = toArray(mamba);
        hybrid = filter && !mamba.isEmpty();
        hmaActive = config.hmaEnabled() && config.on(Switch.CONNECTOR_SUPPORTS_HMA);
        swaKeep = new int[groups.size()];
        if (config.on(Switch.SWA_BLOCKS_PER_GROUP)) {
            for (int i = 0; i < groups.size(); i++) {
                KvGroupSpec g = groups.get(i);
                if (g.kind() == GroupKind.SLIDING_WINDOW && g.blockSizeTokens() > 0) {
                    swaKeep[i] = ceilDiv(g.slidingWindowTokens(), g.blockSizeTokens()) + 1;
                }
            }
        }
        int cg = 0;
        int cbs = config.cacheBlockSize();
        if (config.on(Switch.CHUNK_COVERAGE_FULL_ATTN_GROUP)) {
            for (int i = 0; i < groups.size(); i++) {
                if (groups.get(i).kind() == GroupKind.FULL_ATTENTION) {
                    cg = i;
                    cbs = groups.get(i).blockSizeTokens();
                    break;
                }
            }
        }
        coverageGroup = cg;
        coverageBlockSize = cbs;
        // the attention group's block size for a hybrid model, else the cache's (3c201bf2's self.block_size)
        int attnBlock = !hybrid || attention.isEmpty() ? config.cacheBlockSize() : groups.get(attention.get(0)).blockSizeTokens();
        int tailTokens = 1 + config.lookaheadTokens() + (hybrid ? config.speculativeTokens() : 0);
        maxDecodeTailBlocks = config.on(Switch.DECODE_TAIL_TOLERANCE) ? ceilDiv(tailTokens, Math.max(attnBlock, 1)) : 0;
        isKvMaster = PortMath.podIndex(config.dpRank(), config.dpSizeLocal()) == 0;
        engineId = config.engineId();
    }

    /** A fresh node with nothing admitted. */
    public static NodeState initial(NodeConfig config) {
        return new NodeState(config);
    }

    public NodeConfig config() {
        return config;
    }

    /** The phase of {@code requestId}, or {@code null} if this node never saw it (or forgot it). */
    public RequestPhase phaseOf(String requestId) {
        return phases.get(requestId);
    }

    /** Every request this node remembers with its phase, in admission order. */
    public Map<String, RequestPhase> phases() {
        return Collections.unmodifiableMap(phases);
    }

    /** Requests vLLM still holds blocks or bookkeeping for. */
    public int liveRequests() {
        return requests.size();
    }

    /** Whether the same frames would have ended the Python listener thread by now. */
    public boolean pythonListenerDead() {
        return worker.pythonListenerDead();
    }

    /**
     * The scheduler and worker tables that still hold entries, by name and size: after every
     * request has finished and been freed, anything listed here is a leak (which the reducer
     * should also have reported as an anomaly).
     */
    public Map<String, Integer> leftovers() {
        LinkedHashMap<String, Integer> m = new LinkedHashMap<>();
        put(m, "requests", requests.size());
        put(m, "reqs_need_recv", scheduler.reqsNeedRecv().size());
        put(m, "reqs_need_save", scheduler.reqsNeedSave().size());
        put(m, "reqs_need_pending_save", scheduler.reqsNeedPendingSave().size());
        put(m, "req_kv_params", scheduler.reqKvParams().size());
        put(m, "deferred_send_deadlines", scheduler.deferredSendDeadlines().size());
        put(m, "pending_sent_acks", scheduler.pendingSentAcks().size());
        put(m, "transfer_id_to_request_id", scheduler.transferIdToRequestId().size());
        put(m, "request_id_to_transfer_id", scheduler.requestIdToTransferId().size());
        put(m, "pending_unmapped_acks", worker.pendingUnmappedAcks().size());
        put(m, "ack_counts", worker.ackCounts().size());
        put(m, "remote_allocs", worker.remoteAllocs().size());
        put(m, "worker.writes()", worker.writes().size());
        put(m, "deferred_write_tasks", worker.deferredTasks().size());
        put(m, "unmatched_write_completions", worker.unmatchedWriteCompletions().size());
        put(m, "recving_transfers", worker.recvingTransfers().size());
        put(m, "recv_awaiting_handshake", worker.recvAwaitingHandshake().size());
        put(m, "recv_awaiting_vote", worker.recvAwaitingVote().size());
        return m;
    }

    /** Live entries of the transfer-id map (transfer id to request id), in insertion order. */
    public Map<String, String> transferIdMap() {
        return scheduler.transferIdToRequestId();
    }

    /** Live entries of the request-id map (request id to transfer id). */
    public Map<String, String> requestIdMap() {
        return scheduler.requestIdToTransferId().asMap();
    }

    /** Requests whose free is deferred, with their deadlines. */
    public Map<String, Long> deferredDeadlines() {
        LinkedHashMap<String, Long> m = new LinkedHashMap<>();
        scheduler.deferredSendDeadlines().asMap().forEach((k, v) -> m.put(k, v.deadlineNs()));
        return m;
    }

    /** Parked early ACKs with their deadlines. */
    public Map<String, Long> parkedAcks() {
        return scheduler.pendingSentAcks().asMap();
    }

    /** Requests staged for save, with their block groups. */
    public Map<String, BlockGroups> stagedSaves() {
        LinkedHashMap<String, BlockGroups> m = new LinkedHashMap<>();
        scheduler.reqsNeedSave().asMap().forEach((k, v) -> m.put(k, v.blocks()));
        return m;
    }

    /** Requests staged for receive, with their local block groups. */
    public Map<String, BlockGroups> stagedRecvs() {
        LinkedHashMap<String, BlockGroups> m = new LinkedHashMap<>();
        scheduler.reqsNeedRecv().asMap().forEach((k, v) -> m.put(k, v.blocks()));
        return m;
    }

    /** Chunked-prefill saves waiting for their final chunk. */
    public Map<String, BlockGroups> pendingSaves() {
        LinkedHashMap<String, BlockGroups> m = new LinkedHashMap<>();
        scheduler.reqsNeedPendingSave().asMap().forEach((k, v) -> m.put(k, v.blocks()));
        return m;
    }

    /** Params snapshots, by request id. */
    public Map<String, KvParams> paramSnapshots() {
        return scheduler.reqKvParams().asMap();
    }

    /** The live params of a request vLLM still holds, or {@code null}. */
    public KvParams liveParams(String requestId) {
        Req r = requests.get(requestId);
        return r == null || r.params == null ? null : r.params.raw();
    }

    /** ACKs waiting for the worker's mapping. */
    public int pendingUnmappedAckCount() {
        return worker.pendingUnmappedAcks().size();
    }

    /** In-flight READ receives by request id. */
    public int recvingTransferCount() {
        return worker.recvingTransfers().size();
    }

    /** Whether the worker holds a remote allocation for the transfer (WRITE producer). */
    public boolean hasRemoteAlloc(String transferId) {
        return worker.remoteAllocs().containsKey(transferId);
    }

    /** Whether the transfer is terminal on this worker (WRITE producer, release). */
    public boolean isTerminal(String transferId) {
        return worker.terminalTransfers().contains(transferId);
    }

    /**
     * READ loads this worker is still waiting for: posted read statuses without a completion,
     * plus requests whose reads wait for a handshake. The worker's per-layer read barrier holds
     * the forward while this is above zero (a live engine polls it; pure, allocates nothing).
     */
    public int readsInFlight() {
        int n = worker.recvAwaitingHandshake().size() + worker.recvAwaitingVote().size();
        for (StatusRecord st : worker.statuses().values()) {
            if (!st.write && st.state == 0) {
                n++;
            }
        }
        return n;
    }

    /**
     * Engines of a held step whose TP-wide vote has not come yet ({@code awaitsTpVote}): while
     * above zero the step's reads wait for {@code HandshakeVoted}, not for a transfer.
     */
    public int votesPending() {
        return worker.votesOutstanding().size();
    }

    /** The handshake keys ({@code engine_dpN}) whose last handshake failed (read-only view). */
    public java.util.Set<String> failedHandshakes() {
        return java.util.Collections.unmodifiableSet(worker.handshakesFailed());
    }

    /**
     * Handshakes this worker started that have neither completed nor failed. The Python worker
     * busy-waits in {@code save_kv_layer} and {@code start_load_kv} while one is pending, so a
     * live engine holds its forward on this too (pure, allocates nothing).
     */
    public int handshakesInFlight() {
        int n = 0;
        for (String key : worker.handshakesStarted()) {
            if (!worker.remoteAgents().contains(key)) {
                n++;
            }
        }
        return n;
    }

    /**
     * The earliest deadline this state holds that is later than {@code afterNs}, or
     * {@link Long#MAX_VALUE} when there is none: deferred WRITE tasks ({@code defer_timeout}),
     * writes waiting for their statuses ({@code transfer_timeout}), in-flight READs
     * ({@code recv_abort_timeout}), ACKs waiting for the worker mapping (the unmapped-ACK TTL),
     * deferred frees and parked ACKs. A live node fires a {@code Tick} at that time; the
     * deadlines that only an engine hook evaluates (the scheduler's reaps in
     * {@code update_connector_output}, receive aborts and unmapped ACKs in {@code get_finished})
     * are included so the loop wakes for them too, and {@code afterNs} (the time of the last
     * tick) keeps a deadline the tick did not clear from waking the loop twice.
     *
     * <p>Pure: it reads the tables and allocates nothing.
     */
    public long nextDeadlineAfter(long afterNs) {
        long best = Long.MAX_VALUE;
        for (WriteTask t : worker.deferredTasks()) {
            best = earliest(best, afterNs, sum(t.enqueueNs(), config.deferTimeoutNs()));
        }
        for (WriteTransfer w : worker.writes().values()) {
            if (w.waitStartNs >= 0 && !w.completionNotified) {
                best = earliest(best, afterNs, sum(w.waitStartNs, config.transferTimeoutNs()));
            }
        }
        for (RecvTransfer r : worker.recvingTransfers().values()) {
            best = earliest(best, afterNs, sum(r.startNs(), config.recvAbortTimeoutNs()));
        }
        for (PendingAck a : worker.pendingUnmappedAcks()) {
            best = earliest(best, afterNs, sum(a.firstSeenNs, config.unmappedAckTtlNs()));
        }
        best = earliestOf(scheduler.deferredSendDeadlines(), best, afterNs);
        return earliestOf(scheduler.pendingSentAcks(), best, afterNs);
    }

    /**
     * {@link #earliest} over a table of deadlines: its smallest deadline when that one is later
     * than {@code afterNs} (then so is every other), else a walk over its entries (a deadline
     * passed and not cleared yet: a tick fired for it, an engine hook reaps it).
     */
    private static <V> long earliestOf(RequestSlots.View<V> table, long best, long afterNs) {
        if (table.isEmpty()) {
            return best;
        }
        long first = table.earliestDeadline();
        if (first == Long.MAX_VALUE) {
            return best; // none fires
        }
        if (first != Long.MIN_VALUE && first + 1 > afterNs) {
            return first + 1 < best ? first + 1 : best;
        }
        for (RequestSlots.Slot s = table.first(); s != null; s = table.next(s)) {
            V v = table.get(s);
            best = earliest(best, afterNs, v instanceof Deferral d ? d.deadlineNs() : (Long) v);
        }
        return best;
    }

    /** Deadlines compare with {@code >}: a deadline fires one nanosecond after it is reached. */
    static long earliest(long best, long afterNs, long deadlineNs) {
        long fireAt = deadlineNs == Long.MAX_VALUE ? Long.MAX_VALUE : deadlineNs + 1;
        return fireAt > afterNs && fireAt < best ? fireAt : best;
    }

    static long sum(long a, long b) {
        long s = a + b;
        return ((a ^ s) & (b ^ s)) < 0 ? Long.MAX_VALUE : s;
    }

    /**
     * The {@link Invariants} this state breaks, as named values; empty when it holds every one
     * (as every state the reducer reaches must). Pure: it reads the tables, changes nothing, never
     * throws, and allocates nothing when every check passes.
     */
    public List<Invariants.Violation> checkInvariants() {
        return Invariants.check(this);
    }

    /**
     * The same checks as {@link #checkInvariants()}, of what the events since the previous call
     * changed (everything on the first call): for a caller that checks after every event, at the
     * cost of what each event changed rather than of the whole state. Finds what the full check
     * finds for every change the reducer makes; a change made to the tables from outside it (a
     * test's) may need the full check.
     */
    public List<Invariants.Violation> checkInvariantsSinceLastCheck() {
        return Invariants.checkSinceLast(this);
    }

    /**
     * A deterministic 64-bit hash of the whole state (FNV-1a over a canonical rendering): the same
     * events from the same initial state give the same hash.
     */
    public long stateHash() {
        return fnv(canonical());
    }

    /** A canonical rendering of every table (for hashing and for test failure messages). */
    public String canonical() {
        StringBuilder b = new StringBuilder(1024);
        b.append("requests=");
        requests.forEach((k, v) -> b.append(k).append(':').append(v.describe()).append(';'));
        b.append("\nphases=").append(phases);
        b.append("\nrecv=");
        scheduler.reqsNeedRecv().asMap().forEach((k, v) -> b.append(k).append(':').append(v.blocks()).append(';'));
        b.append("\nsave=");
        scheduler.reqsNeedSave().asMap().forEach((k, v) -> b.append(k).append(':').append(v.blocks()).append(';'));
        b.append("\npending_save=");
        scheduler.reqsNeedPendingSave().asMap().forEach((k, v) -> b.append(k).append(':').append(v.blocks()).append(';'));
        b.append("\nkv_params=").append(scheduler.reqKvParams());
        b.append("\nneed_send=").append(scheduler.reqsNeedSend());
        b.append("\ndeferred=").append(scheduler.deferredSendDeadlines());
        b.append("\nparked=").append(scheduler.pendingSentAcks());
        b.append("\ntid2rid=").append(scheduler.transferIdToRequestId());
        b.append("\nrid2tid=").append(scheduler.requestIdToTransferId());
        b.append("\nreaped=").append(scheduler.reapedRequests());
        b.append("\nworker_map=").append(worker.workerTransferIds());
        b.append("\nmeta_recv=").append(worker.metaRecv());
        b.append("\nmeta_save=").append(worker.metaSave());
        b.append("\nnext_status=").append(worker.nextStatusId());
        b.append("\nstatuses=").append(worker.statuses());
        b.append("\nagents=").append(worker.remoteAgents()).append(worker.handshakesStarted()).append(worker.handshakesFailed());
        b.append("\nlistener_dead=").append(worker.pythonListenerDead()).append('/').append(worker.framesAfterPythonListenerDeath());
        b.append("\nacks=").append(worker.doneAcks()).append(worker.pendingUnmappedAcks()).append(worker.ackCounts()).append(worker.completedTransfers());
        b.append("\nallocs=").append(worker.remoteAllocs());
        b.append("\nterminal=").append(worker.terminalTransfers());
        b.append("\nwrites=").append(worker.writes());
        b.append("\ndeferred_tasks=").append(worker.deferredTasks());
        b.append("\nawaiting_hs=").append(worker.awaitingHandshake()).append(worker.readyRequests());
        b.append("\nwrite_done=").append(worker.doneWriteIds()).append(worker.unmatchedWriteCompletions());
        b.append("\nrecving=").append(worker.recvingTransfers()).append(worker.recvAwaitingHandshake());
        if (!worker.votedEngines().isEmpty() || !worker.votesOutstanding().isEmpty() || !worker.recvAwaitingVote().isEmpty()) {
            // only when a vote was ever seen, so that states of journals without one dump as before
            b.append("\nvotes=").append(worker.votedEngines()).append(worker.votesOutstanding()).append(worker.recvAwaitingVote());
        }
        b.append("\nload_errors=").append(worker.loadErrorBlocks());
        return b.toString();
    }

    private static long fnv(String s) {
        long h = 0xcbf29ce484222325L;
        for (int i = 0; i < s.length(); i++) {
            h ^= s.charAt(i);
            h *= 0x100000001b3L;
        }
        return h;
    }

    private static void put(Map<String, Integer> m, String k, int n) {
        if (n > 0) {
            m.put(k, n);
        }
    }

    private static int[] toArray(List<Integer> l) {
        int[] a = new int[l.size()];
        for (int i = 0; i < a.length; i++) {
            a[i] = l.get(i);
        }
        return a;
    }

    static int ceilDiv(int a, int b) {
        return Math.floorDiv(a + b - 1, b);
    }

    static <T> LinkedHashSet<T> boundedSet() {
        return new LinkedHashSet<>() {
            @Override
            public boolean add(T t) {
                boolean added = super.add(t);
                if (added && size() > TERMINAL_LRU) {
                    remove(iterator().next());
                }
                return added;
            }
        };
    }

    // ------------------------------------------------------------ records of the tables

    /** What vLLM's scheduler holds for a request, including its live (mutated) params. */
    static final class Req {
        /** The id vLLM names the request by; changes once if it finishes under a suffixed id. */
        String requestId;
        /** The id it was admitted under, when it finished under another one; else null. */
        String admittedAs;
        int numPromptTokens;
        int promptTokenIds;
        /** Its {@code kv_transfer_params}, or null when it has none. */
        final KvTransferParams params;
        RequestPhase phase = RequestPhase.ADMITTED;
        int lastMatchedCount;
        boolean lastMatchedAsync;
        boolean recvDone;
        final long admittedAtNs;
        /** The peer address embedded in the request id, parsed once per direction (see SchedulerSide.peer). */
        Object prefillPeer;
        Object decodePeer;
        /**
         * The sequence number of this request's entry in {@link NodeState#phases} (see
         * {@link PhaseTable#set}), or {@link PhaseTable#NONE}.
         */
        long phaseSeq = PhaseTable.NONE;
        /**
         * The slot of {@link #requestId} in {@link NodeState#slots}, set when the request goes into
         * {@link NodeState#requests}: its tables' entries without a lookup (a slot dropped since
         * stands for the id's slot now, see {@link RequestSlots.Table}).
         */
        RequestSlots.Slot slot;

        Req(String requestId, int numPromptTokens, int promptTokenIds, KvTransferParams params, long admittedAtNs) {
            this.requestId = requestId;
            this.numPromptTokens = numPromptTokens;
            this.promptTokenIds = promptTokenIds;
            this.params = params;
            this.admittedAtNs = admittedAtNs;
        }

        String describe() {
            return phase.name() + "/" + numPromptTokens + "/" + promptTokenIds + "/" + params + "/" + lastMatchedCount
                    + "/" + lastMatchedAsync + "/" + recvDone + "/" + admittedAtNs;
        }
    }

    /** A staged request: the request object and its block groups ({@code (req, block_ids)}). */
    record Stage(Req req, BlockGroups blocks) {
        @Override
        public String toString() {
            return req.requestId + blocks;
        }
    }

    /** {@code _deferred_send_deadlines[rid] = (deadline, transfer_id)}. */
    record Deferral(long deadlineNs, String transferId) {}

    /** One ACK in the worker's buffer: a transfer id and the consumer TP size it counts for. */
    record Ack(String transferId, int consumerTpSize) {}

    /** An ACK retried until the worker's mapping holds its transfer id. */
    static final class PendingAck {
        final Ack ack;
        final long firstSeenNs;
        boolean reportedStuck;

        PendingAck(Ack ack, long firstSeenNs) {
            this.ack = ack;
            this.firstSeenNs = firstSeenNs;
        }

        @Override
        public String toString() {
            return ack + "@" + firstSeenNs + (reportedStuck ? "!" : "");
        }
    }

    /** {@code done_remote_allocate_req_dict[tid] = RemoteAllocInfo(block_ids, decode_dp_rank)}. */
    record RemoteAlloc(int[] blockIds, int decodeDpRank) {
        @Override
        public String toString() {
            return java.util.Arrays.toString(blockIds) + "@dp" + decodeDpRank;
        }
    }

    /** One scheduled (transfer, layer) write. */
    record WriteTask(String transferId, String layerName, long enqueueNs) {}

    /** The writer's bookkeeping for one transfer id. */
    static final class WriteTransfer {
        final String transferId;
        final ReqMeta meta;
        final LinkedHashSet<String> scheduledLayers = new LinkedHashSet<>();
        int scheduled;
        Integer sealed;
        Integer writesExpected;
        int writesDone;
        final ArrayList<Long> statusIds = new ArrayList<>();
        boolean completionNotified;
        long waitStartNs = -1;

        WriteTransfer(String transferId, ReqMeta meta) {
            this.transferId = transferId;
            this.meta = meta;
        }

        @Override
        public String toString() {
            return transferId + scheduledLayers + "/" + scheduled + "/" + sealed + "/" + writesExpected + "/" + writesDone
                    + statusIds + completionNotified + waitStartNs;
        }
    }

    /** What a posted status belongs to and where it is. */
    static final class StatusRecord {
        final String transferId;
        final String requestId;
        final boolean write;
        /** 0 pending, 1 succeeded, 2 failed. */
        int state;

        StatusRecord(String transferId, String requestId, boolean write) {
            this.transferId = transferId;
            this.requestId = requestId;
            this.write = write;
        }

        @Override
        public String toString() {
            return transferId + "/" + requestId + "/" + write + "/" + state;
        }
    }

    /** An in-flight READ receive ({@code _recving_transfers} and its companions). */
    record RecvTransfer(TransferId transferId, long startNs, BlockGroups localBlocks, String host, int port,
                        List<Long> statusIds) {}
}
