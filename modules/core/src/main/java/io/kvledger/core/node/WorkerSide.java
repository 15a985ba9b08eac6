package io.kvledger.core.node;

import io.kvledger.core.config.Switch;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.ReqMeta;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.moriio.Checked;
import io.kvledger.core.moriio.ExtraConfig;
import io.kvledger.core.moriio.PortMath;
import io.kvledger.core.node.NodeReducer.Ctx;
import io.kvledger.core.node.NodeState.Ack;
import io.kvledger.core.node.NodeState.PendingAck;
import io.kvledger.core.node.NodeState.RecvTransfer;
import io.kvledger.core.node.NodeState.RemoteAlloc;
import io.kvledger.core.node.NodeState.StatusRecord;
import io.kvledger.core.node.NodeState.WriteTask;
import io.kvledger.core.node.NodeState.WriteTransfer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The worker side of the connector ({@code MoRIIOConnectorWorker}, its notify listener and the
 * {@code MoRIIOWriter} thread), as protocol section 5 describes it for the newest connector.
 *
 * <p>The writer thread is modelled as running whenever the reducer sees an event: tasks are
 * processed as they are scheduled, deferred tasks are retried on every worker event and
 * {@link NodeEvent.Tick}, and the blocking status waits become waits for
 * {@link NodeEvent.TransferCompleted} bounded by {@code transfer_timeout}.
 *
 * <p>Its tables, one instance per {@link NodeState}, are private: only the hooks below and the
 * few methods the scheduler side calls (binding the step's metadata, dropping a freed request's
 * handshake wait) write them; the rest of the package reads them through package-private
 * accessors.
 */
final class WorkerSide {

    private static final int PENDING = 0;
    private static final int SUCCEEDED = 1;
    private static final int FAILED = 2;

    // ------------------------------------------------------------ the worker side's tables (written only here)
    // ------------------------------------------------------------ shared
    /** The worker's copy of the transfer-id map, replaced by each step's metadata. */
    private Map<String, String> workerTransferIds = new LinkedHashMap<>();
    /** The newest connector metadata (what start_load_kv and save_kv_layer read). */
    private List<ReqMeta> metaRecv = List.of();
    private List<ReqMeta> metaSave = List.of();
    private Map<String, String> metaMapping = new LinkedHashMap<>();
    private long nextStatusId = 1;
    /**
     * How many times a transfer was put into {@link #writes} or {@link #recvingTransfers}: with
     * their sizes, what tells the incremental invariant check that one replaced another (not
     * state: not hashed, not part of the engine's view).
     */
    private long transfersPut;
    private final LinkedHashMap<Long, StatusRecord> statuses = new LinkedHashMap<>();
    private final LinkedHashSet<String> remoteAgents = new LinkedHashSet<>();
    private final LinkedHashSet<String> handshakesStarted = new LinkedHashSet<>();
    private final LinkedHashSet<String> handshakesFailed = new LinkedHashSet<>();
    private boolean pythonListenerDead;
    private long framesAfterPythonListenerDeath;

    // ------------------------------------------------------------ producer worker: ACKs
    private final ArrayList<Ack> doneAcks = new ArrayList<>();
    private ArrayList<PendingAck> pendingUnmappedAcks = new ArrayList<>();
    private final LinkedHashMap<String, Integer> ackCounts = new LinkedHashMap<>();
    private final LinkedHashSet<String> completedTransfers = new LinkedHashSet<>();

    // ------------------------------------------------------------ producer worker: WRITE
    private final LinkedHashMap<String, RemoteAlloc> remoteAllocs = new LinkedHashMap<>();
    private final LinkedHashSet<String> terminalTransfers = NodeState.boundedSet();
    private final LinkedHashMap<String, WriteTransfer> writes = new LinkedHashMap<>();
    private final ArrayList<WriteTask> deferredTasks = new ArrayList<>();
    private final LinkedHashMap<String, List<ReqMeta>> awaitingHandshake = new LinkedHashMap<>();
    private final ArrayList<ReqMeta> readyRequests = new ArrayList<>();
    /** The last scheduled write's request (its pod hosts), read by write_done under {@code write-done-worker-pod-hosts}. */
    private ReqMeta lastScheduledWrite;

    // ------------------------------------------------------------ consumer worker
    private final ArrayList<String> doneWriteIds = new ArrayList<>();
    private ArrayList<String> unmatchedWriteCompletions = new ArrayList<>();
    private final LinkedHashSet<String> reportedUnmatched = NodeState.boundedSet();
    /**
     * The {@link #workerTransferIds} map (immutable, replaced whole) against which the last pass of
     * a WRITE consumer's get_finished found no kept id mapped and added nothing to
     * {@link #reportedUnmatched}; {@code null} when that pass changed something. Not state: a
     * shortcut for the next pass, which would find the same (see WorkerSide).
     */
    private Map<String, String> unmatchedSettledAgainst;
    /**
     * The last few handshake engine ids made ({@code host:port} and its {@code _dp0} agent key),
     * by remote host and handshake port: save_kv_layer asks for them per staged request and
     * layer, and a node writes to a few decode engines. Not state: strings equal to what
     * {@link ReqMeta#handshakeEngineId()} makes, kept to spare the concatenation and the hashing.
     */
    private final String[] engineIdHosts = new String[4];
    private final int[] engineIdPorts = new int[4];
    private final String[] engineIds = new String[4];
    private final String[] agentKeysDp0 = new String[4];
    private int engineIdNext;

    /** The memo slot of {@code m}'s handshake engine id (made when missing). */
    private int engineIdSlot(ReqMeta m) {
        String host = m.remoteHost();
        int port = m.remoteHandshakePort();
        for (int i = 0; i < engineIds.length; i++) {
            if (engineIds[i] != null && engineIdPorts[i] == port && java.util.Objects.equals(engineIdHosts[i], host)) {
                return i;
            }
        }
        int i = engineIdNext;
        engineIdNext = (i + 1) & (engineIds.length - 1);
        engineIdHosts[i] = host;
        engineIdPorts[i] = port;
        engineIds[i] = m.handshakeEngineId();
        agentKeysDp0[i] = engineIds[i] + "_dp0";
        return i;
    }

    /** {@link ReqMeta#handshakeEngineId()}, from the memo. */
    String engineId(ReqMeta m) {
        return engineIds[engineIdSlot(m)];
    }

    /** The agent key of {@code m}'s engine at DP rank 0 ({@code host:port_dp0}), from the memo. */
    String agentKeyDp0(ReqMeta m) {
        return agentKeysDp0[engineIdSlot(m)];
    }

    private final LinkedHashMap<String, RecvTransfer> recvingTransfers = new LinkedHashMap<>();
    private final ArrayList<ReqMeta> recvAwaitingHandshake = new ArrayList<>();
    /** Remote engines whose TP-wide eager-handshake vote passed ({@code _eager_handshaked_engines}). */
    private final LinkedHashSet<String> votedEngines = new LinkedHashSet<>();
    /** Engines of the held step whose vote has not come yet (only with {@code awaitsTpVote}). */
    private final LinkedHashSet<String> votesOutstanding = new LinkedHashSet<>();
    /** The step's receives, held in start_load_kv until every engine of the step voted. */
    private final ArrayList<ReqMeta> recvAwaitingVote = new ArrayList<>();
    private final LinkedHashSet<Integer> loadErrorBlocks = new LinkedHashSet<>();

    // ------------------------------------------------------------ read-only views (one per table, made once)
    private final Map<Long, StatusRecord> statusesView = Collections.unmodifiableMap(statuses);
    private final Map<String, Integer> ackCountsView = Collections.unmodifiableMap(ackCounts);
    private final Map<String, RemoteAlloc> remoteAllocsView = Collections.unmodifiableMap(remoteAllocs);
    private final Map<String, WriteTransfer> writesView = Collections.unmodifiableMap(writes);
    private final Map<String, List<ReqMeta>> awaitingHandshakeView = Collections.unmodifiableMap(awaitingHandshake);
    private final Map<String, RecvTransfer> recvingTransfersView = Collections.unmodifiableMap(recvingTransfers);
    private final Set<String> remoteAgentsView = Collections.unmodifiableSet(remoteAgents);
    private final Set<String> handshakesStartedView = Collections.unmodifiableSet(handshakesStarted);
    private final Set<String> handshakesFailedView = Collections.unmodifiableSet(handshakesFailed);
    private final Set<String> completedTransfersView = Collections.unmodifiableSet(completedTransfers);
    private final Set<String> terminalTransfersView = Collections.unmodifiableSet(terminalTransfers);
    private final Set<String> reportedUnmatchedView = Collections.unmodifiableSet(reportedUnmatched);
    private final Set<String> votedEnginesView = Collections.unmodifiableSet(votedEngines);
    private final Set<String> votesOutstandingView = Collections.unmodifiableSet(votesOutstanding);
    private final Set<Integer> loadErrorBlocksView = Collections.unmodifiableSet(loadErrorBlocks);
    private final List<Ack> doneAcksView = Collections.unmodifiableList(doneAcks);
    private final List<WriteTask> deferredTasksView = Collections.unmodifiableList(deferredTasks);
    private final List<ReqMeta> readyRequestsView = Collections.unmodifiableList(readyRequests);
    private final List<String> doneWriteIdsView = Collections.unmodifiableList(doneWriteIds);
    private final List<ReqMeta> recvAwaitingHandshakeView = Collections.unmodifiableList(recvAwaitingHandshake);
    private final List<ReqMeta> recvAwaitingVoteView = Collections.unmodifiableList(recvAwaitingVote);

    WorkerSide() {}

    /**
     * {@code bind_connector_metadata}: the metadata the scheduler built this step reaches the
     * worker (its receives, its saves and its snapshot of the transfer-id map).
     */
    void bindMetadata(List<ReqMeta> recv, List<ReqMeta> save, Map<String, String> mapping) {
        metaRecv = recv;
        metaSave = save;
        metaMapping = mapping;
    }

    /** build_connector_meta raised: no metadata reaches the worker this step (the mapping stays). */
    void bindNoMetadata() {
        metaRecv = List.of();
        metaSave = List.of();
    }

    /**
     * The scheduler freed {@code rid} while its read waited for a handshake: the wait is dropped
     * (no release will be sent). Whether there was one.
     */
    boolean dropRecvAwaitingHandshake(String rid) {
        return !recvAwaitingHandshake.isEmpty() && recvAwaitingHandshake.removeIf(m -> m.requestId().equals(rid));
    }

    /** Makes the next status id {@code next}: for a test that builds a worker state by hand. */
    void skipStatusIdsTo(long next) {
        nextStatusId = next;
    }

    // ------------------------------------------------------------ read access
    // For the state's renderings, the invariants and the other side: read-only views, so they
    // cannot write.

    /**
     * The tables themselves, for tests that build states no sequence of hooks reaches (to see an
     * invariant fail). Nothing in main code calls it.
     */
    Tamper tamperForTests() {
        return new Tamper();
    }

    /** See {@link #tamperForTests()}. */
    final class Tamper {
        LinkedHashMap<String, RecvTransfer> recvingTransfers() {
            return recvingTransfers;
        }

        LinkedHashMap<Long, StatusRecord> statuses() {
            return statuses;
        }

        LinkedHashMap<String, WriteTransfer> writes() {
            return writes;
        }

        ArrayList<PendingAck> pendingUnmappedAcks() {
            return pendingUnmappedAcks;
        }

        LinkedHashMap<String, Integer> ackCounts() {
            return ackCounts;
        }

        LinkedHashSet<String> completedTransfers() {
            return completedTransfers;
        }
    }

    Map<String, String> workerTransferIds() {
        return Collections.unmodifiableMap(workerTransferIds); // the field is rebound: wrapped per call (renderings and invariants only)
    }

    List<ReqMeta> metaRecv() {
        return Collections.unmodifiableList(metaRecv); // the field is rebound: wrapped per call (renderings and invariants only)
    }

    List<ReqMeta> metaSave() {
        return Collections.unmodifiableList(metaSave); // the field is rebound: wrapped per call (renderings and invariants only)
    }

    Map<String, String> metaMapping() {
        return Collections.unmodifiableMap(metaMapping); // the field is rebound: wrapped per call (renderings and invariants only)
    }

    long nextStatusId() {
        return nextStatusId;
    }

    long transfersPut() {
        return transfersPut;
    }

    Map<Long, StatusRecord> statuses() {
        return statusesView;
    }

    Set<String> remoteAgents() {
        return remoteAgentsView;
    }

    Set<String> handshakesStarted() {
        return handshakesStartedView;
    }

    Set<String> handshakesFailed() {
        return handshakesFailedView;
    }

    boolean pythonListenerDead() {
        return pythonListenerDead;
    }

    long framesAfterPythonListenerDeath() {
        return framesAfterPythonListenerDeath;
    }

    List<Ack> doneAcks() {
        return doneAcksView;
    }

    List<PendingAck> pendingUnmappedAcks() {
        return Collections.unmodifiableList(pendingUnmappedAcks); // the field is rebound: wrapped per call (renderings and invariants only)
    }

    Map<String, Integer> ackCounts() {
        return ackCountsView;
    }

    Set<String> completedTransfers() {
        return completedTransfersView;
    }

    Map<String, RemoteAlloc> remoteAllocs() {
        return remoteAllocsView;
    }

    Set<String> terminalTransfers() {
        return terminalTransfersView;
    }

    Map<String, WriteTransfer> writes() {
        return writesView;
    }

    List<WriteTask> deferredTasks() {
        return deferredTasksView;
    }

    Map<String, List<ReqMeta>> awaitingHandshake() {
        return awaitingHandshakeView;
    }

    List<ReqMeta> readyRequests() {
        return readyRequestsView;
    }

    List<String> doneWriteIds() {
        return doneWriteIdsView;
    }

    List<String> unmatchedWriteCompletions() {
        return Collections.unmodifiableList(unmatchedWriteCompletions); // the field is rebound: wrapped per call (renderings and invariants only)
    }

    Set<String> reportedUnmatched() {
        return reportedUnmatchedView;
    }

    Map<String, RecvTransfer> recvingTransfers() {
        return recvingTransfersView;
    }

    List<ReqMeta> recvAwaitingHandshake() {
        return recvAwaitingHandshakeView;
    }

    Set<String> votedEngines() {
        return votedEnginesView;
    }

    Set<String> votesOutstanding() {
        return votesOutstandingView;
    }

    List<ReqMeta> recvAwaitingVote() {
        return recvAwaitingVoteView;
    }

    Set<Integer> loadErrorBlocks() {
        return loadErrorBlocksView;
    }

    // ------------------------------------------------------------------ start_load_kv

    static void startLoad(Ctx c) {
        NodeState s = c.s;
        s.worker.workerTransferIds = s.worker.metaMapping;
        if (c.cfg.workerIsProducer()) {
            if (c.cfg.role() == io.kvledger.core.config.Role.BOTH && !s.worker.metaRecv.isEmpty()) {
                // kv_both: the consumer scheduler staged receives; the producer worker returns before reading
                for (ReqMeta m : s.worker.metaRecv) {
                    c.anomaly(AnomalyKind.KV_BOTH_ROLE_ASYMMETRY, m.requestId(), m.transferIdString(),
                            "receive staged by the consumer scheduler, ignored by the producer worker: no read, no release");
                }
                s.worker.metaRecv = List.of();
            }
            // Prune fan-in counters and the completed set to transfers that are still live.
            s.worker.ackCounts.keySet().removeIf(t -> !s.worker.workerTransferIds.containsKey(t));
            s.worker.completedTransfers.removeIf(t -> !s.worker.workerTransferIds.containsKey(t));
            return;
        }
        if (c.cfg.mode() == TransferMode.WRITE) {
            return;
        }
        // READ consumer: eager handshake with every remote DP rank of each engine, once per engine.
        LinkedHashSet<String> engines = new LinkedHashSet<>();
        for (ReqMeta m : s.worker.metaRecv) {
            if (engines.add(m.handshakeEngineId())) {
                for (int r = 0; r < Math.max(m.remoteDpSize(), 1); r++) {
                    String key = m.handshakeEngineId() + "_dp" + r;
                    if (!s.worker.remoteAgents.contains(key) && s.worker.handshakesStarted.add(key)) {
                        int dialTp = PortMath.effectiveRemoteTpRank(c.cfg.tpRank(), c.cfg.tpSize(), m.remoteTpSize()).orElse(c.cfg.tpRank());
                        c.emit(new Effect.StartHandshake(key, m.remoteHost(),
                                m.remoteHandshakePort() + PortMath.portOffset(r, dialTp, m.remoteTpSize()), m.handshakeEngineId(), r));
                    }
                }
            }
        }
        List<ReqMeta> recv = s.worker.metaRecv;
        s.worker.metaRecv = List.of(); // one start_load_kv per step's metadata: never read twice
        if (c.cfg.awaitsTpVote()) {
            // The eager handshake ends in the TP-wide all_reduce(MIN); start_load_kv reads nothing
            // until every engine of the step not yet eagerly handshaken has been voted on.
            for (String eid : engines) {
                if (!s.worker.votedEngines.contains(eid)) {
                    s.worker.votesOutstanding.add(eid);
                }
            }
            if (!s.worker.votesOutstanding.isEmpty()) {
                s.worker.recvAwaitingVote.addAll(recv);
                return;
            }
        }
        for (ReqMeta m : recv) {
            if (readHandshakeReady(s, m)) {
                readBlocks(c, m);
            } else {
                s.worker.recvAwaitingHandshake.add(m);
            }
        }
    }

    private static boolean readHandshakeReady(NodeState s, ReqMeta m) {
        if (m.localBlockIds().allEmpty()) {
            return true; // the release path needs no session
        }
        for (int r = 0; r < Math.max(m.remoteDpSize(), 1); r++) {
            if (!s.worker.remoteAgents.contains(m.handshakeEngineId() + "_dp" + r)) {
                return false;
            }
        }
        return true;
    }

    /** {@code _read_blocks}: release at once without local blocks, else one batch read per layer. */
    private static void readBlocks(Ctx c, ReqMeta m) {
        NodeState s = c.s;
        Checked<Integer> effTp = PortMath.effectiveRemoteTpRank(c.cfg.tpRank(), c.cfg.tpSize(), m.remoteTpSize());
        if (!effTp.isOk()) {
            c.anomaly(AnomalyKind.ACK_FANIN_INVALID, m.requestId(), m.transferIdString(), effTp.error());
            return;
        }
        String host = m.remoteHost();
        int port = m.remoteNotifyPort() + PortMath.portOffset(m.remoteDpRank(), effTp.value(), m.remoteTpSize());
        NodeState.Req r = s.requests.get(m.requestId());
        if (m.localBlockIds().allEmpty()) {
            c.emit(new Effect.SendRelease(Effect.Sender.WORKER, host, port, m.transferId(), c.cfg.tpSize()));
            c.anomaly(AnomalyKind.RECV_WITHOUT_LOCAL_BLOCKS, m.requestId(), m.transferIdString(),
                    "release to " + host + ":" + port);
            if (r != null && !r.phase.terminal()) {
                c.phase(r, RequestPhase.RUNNING, "full prefix hit: nothing to read, release sent");
            }
            return;
        }
        String session = m.handshakeEngineId() + "_dp" + m.remoteDpRank();
        int[] local = m.localBlockIds().first();
        int[] remote = m.remoteBlockIds() == null ? new int[0] : m.remoteBlockIds().first();
        List<Long> ids = new ArrayList<>(c.cfg.layerNames().size());
        for (String layer : c.cfg.layerNames()) {
            long id = s.worker.nextStatusId++;
            s.worker.statuses.put(id, new StatusRecord(m.transferIdString(), m.requestId(), false));
            ids.add(id);
            c.emit(new Effect.PostRead(id, m.requestId(), m.transferIdString(), layer, session, local, remote));
        }
        s.worker.transfersPut++;
        s.worker.recvingTransfers.put(m.requestId(), new RecvTransfer(m.transferId(), c.now, m.localBlockIds(), host, port, ids));
        if (r == null || r.phase.terminal() || r.phase == RequestPhase.READS_IN_FLIGHT) {
            return;
        }
        if (r.phase == RequestPhase.RECV_STAGED) {
            c.phase(r, RequestPhase.READS_IN_FLIGHT, "layer reads posted");
        } else {
            // the worker acts on the receive it was given (as Python does); the scheduler has moved on
            c.anomaly(AnomalyKind.READS_POSTED_OUT_OF_PHASE, m.requestId(), m.transferIdString(),
                    "reads posted for a request in " + r.phase + " (stale receive metadata)");
        }
    }

    // ------------------------------------------------------------------ save_kv_layer / wait_for_save

    static void saveLayer(Ctx c, String layer) {
        if (!c.cfg.workerIsProducer() || c.cfg.mode() != TransferMode.WRITE) {
            return;
        }
        NodeState s = c.s;
        for (ReqMeta m : s.worker.metaSave) {
            if (!s.worker.remoteAgents.contains(s.worker.agentKeyDp0(m))) {
                String eid = s.worker.engineId(m);
                startWriteHandshakes(c, m, eid);
                List<ReqMeta> waiting = s.worker.awaitingHandshake.computeIfAbsent(eid, k -> new ArrayList<>());
                if (!waiting.contains(m)) {
                    waiting.add(m);
                }
                continue;
            }
            scheduleWrite(c, m, layer);
        }
        if (!s.worker.readyRequests.isEmpty()) {
            scheduleWrite(c, s.worker.readyRequests.remove(0), layer);
        }
        processDeferred(c);
    }

    private static void startWriteHandshakes(Ctx c, ReqMeta m, String eid) {
        NodeState s = c.s;
        int n = Math.max(m.remoteDpSize(), 1);
        for (int r = 0; r < n; r++) {
            String key = eid + "_dp" + r;
            if (s.worker.remoteAgents.contains(key) || !s.worker.handshakesStarted.add(key)) {
                continue;
            }
            int pod = PortMath.podIndex(r, m.remoteDpSizeLocal());
            String host = pod >= 0 && pod < m.multiPodHosts().size() ? m.multiPodHosts().get(pod) : m.remoteHost();
            int dial = PortMath.foldLocalRank(r, m.remoteDpSizeLocal());
            int dialTp = PortMath.effectiveRemoteTpRank(c.cfg.tpRank(), c.cfg.tpSize(), m.remoteTpSize()).orElse(c.cfg.tpRank());
            c.emit(new Effect.StartHandshake(key, host, m.remoteHandshakePort() + PortMath.portOffset(dial, dialTp, m.remoteTpSize()),
                    eid, r));
        }
    }

    static void waitForSave(Ctx c) {
        if (!c.cfg.workerIsProducer() || c.cfg.mode() != TransferMode.WRITE) {
            return;
        }
        if (c.on(Switch.WRITE_UNSEALED_COMPLETION)) {
            // the writer before #40344: no re-invocation for layers without a hook, no seal; the
            // expected count was fixed at the transfer's first write (one per registered layer)
            return;
        }
        for (String layer : c.cfg.layerNames()) {
            saveLayer(c, layer);
        }
        // seal_pending_transfers: the scheduled count becomes the expected count.
        for (WriteTransfer w : new ArrayList<>(c.s.worker.writes.values())) {
            if (w.sealed == null) {
                w.sealed = w.scheduled;
                if (c.s.worker.remoteAllocs.containsKey(w.transferId)) {
                    w.writesExpected = w.sealed;
                    tryFinalize(c, w);
                }
            }
        }
    }

    /** {@code schedule_write_blocks}: one task per (transfer, layer), never twice. */
    private static void scheduleWrite(Ctx c, ReqMeta m, String layer) {
        String tid = m.transferIdString();
        if (tid == null || tid.isEmpty()) {
            c.anomaly(AnomalyKind.UNKNOWN_TRANSFER_ID, m.requestId(), null, "save staged without a transfer id");
            return;
        }
        NodeState s = c.s;
        if (s.worker.terminalTransfers.contains(tid)) {
            return;
        }
        WriteTransfer w = s.worker.writes.get(tid);
        boolean unsealed = c.on(Switch.WRITE_UNSEALED_COMPLETION);
        if (w == null) {
            w = new WriteTransfer(tid, m);
            if (unsealed) {
                w.writesExpected = c.cfg.layerNames().size();
            }
            s.worker.writes.put(tid, w);
            s.worker.transfersPut++;
        }
        if (!w.scheduledLayers.add(layer) && !unsealed) {
            return;
        }
        w.scheduled++;
        s.worker.lastScheduledWrite = m;
        processTask(c, new WriteTask(tid, layer, c.now));
    }

    /** The writer thread's handling of one task. */
    private static void processTask(Ctx c, WriteTask t) {
        NodeState s = c.s;
        if (s.worker.terminalTransfers.contains(t.transferId())) {
            return;
        }
        NodeState.RemoteAlloc alloc = s.worker.remoteAllocs.get(t.transferId());
        WriteTransfer w = s.worker.writes.get(t.transferId());
        if (w == null) {
            return;
        }
        if (alloc == null) {
            s.worker.deferredTasks.add(t);
            return;
        }
        int[] local = w.meta.localBlockIds().first();
        if (local.length != alloc.blockIds().length) {
            c.anomaly(AnomalyKind.WRITE_FAILED, w.meta.requestId(), t.transferId(),
                    "compute_block_transfer_offsets: " + local.length + " local vs " + alloc.blockIds().length + " remote blocks (ValueError)");
            markDone(c, t.transferId(), "block count mismatch");
            return;
        }
        long id = s.worker.nextStatusId++;
        s.worker.statuses.put(id, new StatusRecord(t.transferId(), w.meta.requestId(), true));
        w.statusIds.add(id);
        String eid = w.meta.remoteHost() + ":" + w.meta.remoteHandshakePort();
        c.emit(new Effect.PostWrite(id, t.transferId(), t.layerName(), eid + "_dp" + alloc.decodeDpRank(), local, alloc.blockIds()));
        w.writesDone++;
        tryFinalize(c, w);
    }

    /** Deferred tasks: run those whose remote_blocks arrived, expire those older than defer_timeout. */
    private static void processDeferred(Ctx c) {
        NodeState s = c.s;
        int first = s.worker.deferredTasks.isEmpty() ? -1 : firstDeferredDue(c);
        if (first < 0) {
            return;
        }
        // the tasks before the first due one would only be put back, in their order: they stay
        List<WriteTask> due = s.worker.deferredTasks.subList(first, s.worker.deferredTasks.size());
        List<WriteTask> tasks = new ArrayList<>(due);
        due.clear();
        // A transfer's tasks (one per layer) sit next to each other, and each save_kv_layer walks
        // them all again. A task put back changed nothing, so the next task of the same transfer
        // id would get the same three answers below: only its own age is left to check.
        String keptTid = null;
        for (WriteTask t : tasks) {
            if (t.transferId() == keptTid && c.now - t.enqueueNs() <= c.cfg.deferTimeoutNs()) {
                s.worker.deferredTasks.add(t);
                continue;
            }
            keptTid = null;
            if (s.worker.terminalTransfers.contains(t.transferId()) || !s.worker.writes.containsKey(t.transferId())) {
                continue;
            }
            if (s.worker.remoteAllocs.containsKey(t.transferId())) {
                processTask(c, t);
            } else if (c.now - t.enqueueNs() > c.cfg.deferTimeoutNs()) {
                WriteTransfer w = s.worker.writes.get(t.transferId());
                int decodeTp = w.meta.remoteTpSize();
                if (decodeTp > 0 && c.cfg.tpRank() >= decodeTp) {
                    // every version's decode scheduler loops range(its own tp_size) over the 2-argument
                    // port offset: with fewer decode than prefill TP ranks, this rank's port is never a
                    // target, so nothing was lost (section 2.1, issue #41211)
                    c.anomaly(AnomalyKind.WRITE_RANK_NOT_NOTIFIED, w.meta.requestId(), t.transferId(),
                            "prefill TP rank " + c.cfg.tpRank() + " of " + c.cfg.tpSize() + ": the decode (TP " + decodeTp
                                    + ") sends remote_blocks to prefill TP ranks 0.." + (decodeTp - 1)
                                    + " only; self-ACK at defer_timeout, decode is not told");
                } else {
                    c.anomaly(AnomalyKind.WRITE_TASK_EXPIRED, w.meta.requestId(), t.transferId(),
                            "no remote_blocks within defer_timeout; self-ACK, decode is not told");
                }
                if (c.on(Switch.WRITE_FAILED_NOTIFY)) {
                    c.emit(new Effect.SendWriteFailed(w.meta.remoteHost(), writeDonePort(c, w.meta, w.meta, 0), t.transferId(), "deferred write expired"));
                }
                markDone(c, t.transferId(), "deferred write expired");
            } else {
                s.worker.deferredTasks.add(t);
                keptTid = t.transferId();
            }
        }
    }

    /**
     * The position of the first deferred task that {@link #processDeferred} would not simply put
     * back (its transfer ended, its remote_blocks came, or it expired), or -1: the same tests,
     * without taking the list apart (most calls find nothing to do).
     */
    private static int firstDeferredDue(Ctx c) {
        NodeState s = c.s;
        String keptTid = null;
        for (int i = 0; i < s.worker.deferredTasks.size(); i++) {
            WriteTask t = s.worker.deferredTasks.get(i);
            if (c.now - t.enqueueNs() > c.cfg.deferTimeoutNs()) {
                return i;
            }
            if (t.transferId() == keptTid) {
                continue;
            }
            if (s.worker.terminalTransfers.contains(t.transferId()) || !s.worker.writes.containsKey(t.transferId())
                    || s.worker.remoteAllocs.containsKey(t.transferId())) {
                return i;
            }
            keptTid = t.transferId();
        }
        return -1;
    }

    /** {@code _finalize_if_complete}: once, when every expected write is done and its status settled. */
    private static void tryFinalize(Ctx c, WriteTransfer w) {
        NodeState s = c.s;
        if (w.completionNotified) {
            return;
        }
        if (w.writesExpected == null && w.sealed != null && s.worker.remoteAllocs.containsKey(w.transferId)) {
            w.writesExpected = w.sealed;
        }
        if (w.writesExpected == null || w.writesDone < w.writesExpected) {
            return;
        }
        boolean failed = false;
        boolean pending = false;
        for (long id : w.statusIds) {
            StatusRecord st = s.worker.statuses.get(id);
            int state = st == null ? SUCCEEDED : st.state;
            failed |= state == FAILED;
            pending |= state == PENDING;
        }
        if (failed) {
            c.anomaly(AnomalyKind.WRITE_FAILED, w.meta.requestId(), w.transferId, "a layer write failed; self-ACK, decode is not told");
            if (c.on(Switch.WRITE_FAILED_NOTIFY)) {
                NodeState.RemoteAlloc a = s.worker.remoteAllocs.get(w.transferId);
                c.emit(new Effect.SendWriteFailed(w.meta.remoteHost(), writeDonePort(c, w.meta, w.meta, a == null ? 0 : a.decodeDpRank()),
                        w.transferId, "write failed"));
            }
            markDone(c, w.transferId, "write failed");
            return;
        }
        if (pending) {
            if (w.waitStartNs < 0) {
                w.waitStartNs = c.now;
            }
            return;
        }
        NodeState.RemoteAlloc alloc = s.worker.remoteAllocs.get(w.transferId);
        int decodeRank = alloc == null ? 0 : alloc.decodeDpRank();
        // the older worker's race (class 32): the pod hosts and local DP size of whichever request
        // scheduled a write last, with this request's own remote_host as the fallback
        ReqMeta pods = c.on(Switch.WRITE_DONE_WORKER_POD_HOSTS) && s.worker.lastScheduledWrite != null
                ? s.worker.lastScheduledWrite : w.meta;
        String host = writeDoneHost(w.meta, pods, decodeRank);
        c.emit(new Effect.SendWriteDone(host, writeDonePort(c, w.meta, pods, decodeRank), w.transferId));
        w.completionNotified = true;
        markDone(c, w.transferId, null);
    }

    private static String writeDoneHost(ReqMeta own, ReqMeta podsOf, int decodeRank) {
        List<String> pods = podsOf.multiPodHosts();
        int local = podsOf.remoteDpSizeLocal();
        if (!pods.isEmpty() && local > 0) {
            int pod = PortMath.podIndex(decodeRank, local);
            if (pod >= 0 && pod < pods.size()) {
                return pods.get(pod);
            }
        }
        return own.remoteHost();
    }

    private static int writeDonePort(Ctx c, ReqMeta own, ReqMeta podsOf, int decodeRank) {
        int rank = podsOf.multiPodHosts().isEmpty() ? decodeRank : PortMath.foldLocalRank(decodeRank, podsOf.remoteDpSizeLocal());
        return own.remoteNotifyPort() + PortMath.portOffset(rank, c.cfg.tpRank());
    }

    /** {@code _mark_request_done}: the self-ACK; the remote alloc is dropped and the tid made terminal. */
    private static void markDone(Ctx c, String tid, String why) {
        NodeState s = c.s;
        s.worker.doneAcks.add(new Ack(tid, 1));
        s.worker.remoteAllocs.remove(tid);
        s.worker.terminalTransfers.add(tid);
        WriteTransfer w = s.worker.writes.remove(tid);
        if (w != null) {
            for (long id : w.statusIds) {
                s.worker.statuses.remove(id);
            }
        }
        s.worker.deferredTasks.removeIf(t -> t.transferId().equals(tid));
    }

    // ------------------------------------------------------------------ notify listener

    private static boolean listenerWouldDie(Ctx c, String rid, String tid, String why) {
        if (!c.s.worker.pythonListenerDead) {
            c.s.worker.pythonListenerDead = true;
            c.anomaly(AnomalyKind.LISTENER_WOULD_DIE_IN_PYTHON, rid, tid, why);
        }
        return true;
    }

    private static void countFrame(Ctx c) {
        if (c.s.worker.pythonListenerDead) {
            c.s.worker.framesAfterPythonListenerDeath++;
        }
    }

    static void remoteBlocks(Ctx c, NodeEvent.RemoteBlocksReceived e) {
        countFrame(c);
        NodeState s = c.s;
        if (!c.cfg.workerIsProducer()) {
            c.anomaly(AnomalyKind.NOTIFY_ROLE_MISMATCH, e.reqId(), e.transferId(), "remote_blocks received by a consumer");
            listenerWouldDie(c, e.reqId(), e.transferId(), "role assertion on remote_blocks");
            return;
        }
        if (e.blockNotifyList().isEmpty()) {
            c.anomaly(AnomalyKind.EMPTY_REMOTE_BLOCKS, e.reqId(), e.transferId(),
                    "block_notify_list=[] from decode rank " + e.decodeRank());
            listenerWouldDie(c, e.reqId(), e.transferId(), "MoRIIOError on empty remote_blocks");
            return;
        }
        if (s.worker.terminalTransfers.contains(e.transferId())) {
            c.anomaly(AnomalyKind.REMOTE_BLOCKS_FOR_TERMINAL, e.reqId(), e.transferId(), "late remote_blocks ignored");
            return;
        }
        int[] ids = new int[e.blockNotifyList().size()];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = e.blockNotifyList().get(i);
        }
        s.worker.remoteAllocs.put(e.transferId(), new NodeState.RemoteAlloc(ids, e.decodeRank()));
        processDeferred(c);
        WriteTransfer w = s.worker.writes.get(e.transferId());
        if (w != null) {
            tryFinalize(c, w);
        }
    }

    static void writeDone(Ctx c, String tid) {
        countFrame(c);
        if (c.cfg.workerIsProducer()) {
            c.anomaly(AnomalyKind.NOTIFY_ROLE_MISMATCH, null, tid, "write_done received by a producer");
            listenerWouldDie(c, null, tid, "role assertion on write_done");
            return;
        }
        c.s.worker.doneWriteIds.add(tid);
    }

    static void release(Ctx c, String tid, Integer consumerTpSize) {
        countFrame(c);
        NodeState s = c.s;
        if (!c.cfg.workerIsProducer()) {
            c.anomaly(AnomalyKind.NOTIFY_ROLE_MISMATCH, null, tid, "release received by a consumer");
            listenerWouldDie(c, null, tid, "role assertion on release");
            return;
        }
        int tp = consumerTpSize == null ? 1 : consumerTpSize;
        if (tp <= 0) {
            c.anomaly(AnomalyKind.RELEASE_INVALID_TP_SIZE, null, tid, "consumer_tp_size=" + tp);
            listenerWouldDie(c, null, tid, "ValueError on consumer_tp_size <= 0");
            return;
        }
        if (c.on(Switch.REJECT_TERMINAL_DUPLICATE_RELEASE) && s.worker.terminalTransfers.contains(tid) && s.worker.completedTransfers.contains(tid)) {
            c.anomaly(AnomalyKind.DUPLICATE_ACK, null, tid, "duplicate release for a terminal transfer rejected (#50674)");
            return;
        }
        s.worker.doneAcks.add(new Ack(tid, tp));
        s.worker.remoteAllocs.remove(tid);
        s.worker.terminalTransfers.add(tid);
    }

    static void rawCompletion(Ctx c, String id) {
        countFrame(c);
        if (c.cfg.workerIsProducer()) {
            c.s.worker.doneAcks.add(new Ack(id, 1));
        } else {
            c.s.worker.doneWriteIds.add(id);
        }
    }

    static void frameRejected(Ctx c, NodeEvent.FrameRejected e) {
        countFrame(c);
        if (e.wouldKillPythonListener()) {
            listenerWouldDie(c, null, null, e.reason());
        }
    }

    /**
     * A notify of this node never left: recorded against the request that owns its transfer id
     * (the scheduler's map, else the worker's copy), so that a hang report names the lost
     * notify. Nothing is retried: Python would not retry either.
     */
    static void notifySendFailed(Ctx c, NodeEvent.NotifySendFailed e) {
        String tid = e.transferId();
        String rid = tid == null ? null : c.s.scheduler.transferIdToRequestId().get(tid);
        if (rid == null && tid != null) {
            rid = c.s.worker.workerTransferIds.get(tid);
        }
        c.anomaly(AnomalyKind.NOTIFY_SEND_FAILED, rid, tid, e.messageType() + " to " + e.endpoint() + ": " + e.reason());
    }

    // ------------------------------------------------------------------ get_finished

    static void getFinished(Ctx c) {
        if (c.cfg.workerIsProducer()) {
            producerFinished(c);
        } else if (c.cfg.mode() == TransferMode.WRITE) {
            writeConsumerFinished(c);
        } else {
            readConsumerFinished(c);
        }
    }

    private static List<Integer> drainLoadErrors(NodeState s) {
        if (s.worker.loadErrorBlocks.isEmpty()) {
            return List.of();
        }
        List<Integer> l = new ArrayList<>(s.worker.loadErrorBlocks);
        s.worker.loadErrorBlocks.clear();
        return l;
    }

    private static void producerFinished(Ctx c) {
        NodeState s = c.s;
        processDeferred(c);
        ArrayList<PendingAck> acks = new ArrayList<>(s.worker.pendingUnmappedAcks.size() + s.worker.doneAcks.size());
        acks.addAll(s.worker.pendingUnmappedAcks);
        int firstFresh = acks.size();
        for (Ack a : s.worker.doneAcks) {
            acks.add(new PendingAck(a, c.now));
        }
        s.worker.doneAcks.clear();
        ArrayList<PendingAck> stillPending = new ArrayList<>();
        LinkedHashSet<String> done = new LinkedHashSet<>();
        boolean bounded = c.on(Switch.UNMAPPED_ACK_BOUNDS);
        for (int i = 0; i < acks.size(); i++) {
            PendingAck pa = acks.get(i);
            boolean fresh = i >= firstFresh;
            String tid = pa.ack.transferId();
            String rid = s.worker.workerTransferIds.get(tid);
            if (rid == null) {
                if (!c.on(Switch.RETRY_UNMAPPED_ACKS)) {
                    c.anomaly(AnomalyKind.ACK_UNMAPPED_DROPPED, null, tid, "Could not find the request for this ACK: possible hang");
                    continue;
                }
                long age = c.now - pa.firstSeenNs;
                if (bounded && age > c.cfg.unmappedAckTtlNs()) {
                    c.anomaly(AnomalyKind.ACK_UNMAPPED_DROPPED, null, tid, "unmapped ACK expired after its TTL (#50674)");
                    continue;
                }
                if (bounded && stillPending.size() >= c.cfg.unmappedAckCap()) {
                    c.anomaly(AnomalyKind.ACK_UNMAPPED_DROPPED, null, tid, "unmapped ACK buffer full (#50674)");
                    continue;
                }
                if (fresh && s.worker.reportedUnmatched.add(tid)) {
                    c.anomaly(AnomalyKind.ACK_BEFORE_WORKER_MAPPING, null, tid, "retried on the next get_finished");
                }
                if (!bounded && !pa.reportedStuck && age > c.cfg.unmappedAckTtlNs()) {
                    pa.reportedStuck = true;
                    c.anomaly(AnomalyKind.ACK_UNMAPPED_STUCK, null, tid,
                            "waiting " + (age / 1_000_000) + " ms; no request on this node maps this id");
                }
                stillPending.add(pa);
                continue;
            }
            if (resolveAck(c, pa.ack, rid)) {
                done.add(rid);
            }
        }
        s.worker.pendingUnmappedAcks = stillPending;
        c.emit(new Effect.FinishedReported(new ArrayList<>(done), List.of(), drainLoadErrors(s)));
    }

    /** {@code resolve_moriio_transfer_ack}: counts fan-in; true when the transfer is now complete. */
    private static boolean resolveAck(Ctx c, Ack ack, String rid) {
        NodeState s = c.s;
        String tid = ack.transferId();
        if (!s.worker.workerTransferIds.containsKey(tid)) {
            c.anomaly(AnomalyKind.ACK_FOR_NON_LIVE_TRANSFER, rid, tid, "ignored");
            return false;
        }
        if (s.worker.completedTransfers.contains(tid)) {
            c.anomaly(AnomalyKind.DUPLICATE_ACK, rid, tid, "transfer already completed");
            return false;
        }
        Checked<Integer> expected = PortMath.expectedAckCount(c.cfg.tpSize(), ack.consumerTpSize());
        if (!expected.isOk()) {
            c.anomaly(AnomalyKind.ACK_FANIN_INVALID, rid, tid, expected.error());
            return false;
        }
        int count = s.worker.ackCounts.getOrDefault(tid, 0) + 1;
        if (count < expected.value()) {
            s.worker.ackCounts.put(tid, count);
            return false;
        }
        s.worker.ackCounts.remove(tid);
        s.worker.completedTransfers.add(tid);
        return true;
    }

    private static void writeConsumerFinished(Ctx c) {
        NodeState s = c.s;
        ArrayList<String> pending = s.worker.unmatchedWriteCompletions;
        if (s.worker.doneWriteIds.isEmpty() && s.worker.unmatchedSettledAgainst == s.worker.workerTransferIds) {
            // Nothing new since the last pass, which found none of the kept ids mapped and each
            // already reported: the map is the same (immutable) one, and reportedUnmatched, which
            // only this pass adds to on a consumer and which loses members only when one is
            // added, is as that pass left it. This pass would find the same and keep them all.
            c.emit(new Effect.FinishedReported(List.of(), new ArrayList<>(), drainLoadErrors(s)));
            return;
        }
        pending.addAll(s.worker.doneWriteIds);
        s.worker.doneWriteIds.clear();
        ArrayList<String> remaining = new ArrayList<>();
        LinkedHashSet<String> recving = new LinkedHashSet<>();
        boolean settled = true;
        for (String tid : pending) {
            String rid = s.worker.workerTransferIds.get(tid);
            if (rid != null) {
                recving.add(rid);
                settled = false;
            } else {
                remaining.add(tid);
                if (s.worker.reportedUnmatched.add(tid)) {
                    settled = false;
                    c.anomaly(AnomalyKind.WRITE_DONE_UNMATCHED, null, tid, "kept for retry");
                }
            }
        }
        s.worker.unmatchedWriteCompletions = remaining;
        s.worker.unmatchedSettledAgainst = settled ? s.worker.workerTransferIds : null;
        c.emit(new Effect.FinishedReported(List.of(), new ArrayList<>(recving), drainLoadErrors(s)));
    }

    /** {@code _pop_done_transfers}: the batch verdict of every in-flight READ. */
    private static void readConsumerFinished(Ctx c) {
        NodeState s = c.s;
        Iterator<Map.Entry<String, RecvTransfer>> it = s.worker.recvingTransfers.entrySet().iterator();
        List<String[]> released = new ArrayList<>();
        while (it.hasNext()) {
            Map.Entry<String, RecvTransfer> en = it.next();
            String rid = en.getKey();
            RecvTransfer rt = en.getValue();
            String tid = rt.transferId().asString();
            boolean anyFailed = false;
            boolean anyPending = false;
            for (long id : rt.statusIds()) {
                StatusRecord st = s.worker.statuses.get(id);
                int state = st == null ? PENDING : st.state;
                anyFailed |= state == FAILED;
                anyPending |= state == PENDING;
            }
            int verdict;
            if (c.on(Switch.READ_BATCH_VERDICT)) {
                verdict = anyFailed ? FAILED : anyPending ? PENDING : SUCCEEDED;
            } else {
                StatusRecord last = s.worker.statuses.get(rt.statusIds().get(rt.statusIds().size() - 1));
                verdict = last != null && last.state == SUCCEEDED ? SUCCEEDED : PENDING;
                if (verdict == SUCCEEDED && (anyFailed || anyPending)) {
                    c.anomaly(AnomalyKind.READ_RELEASED_WHILE_PENDING, rid, tid,
                            "last status succeeded while an earlier layer is " + (anyFailed ? "failed" : "pending"));
                }
            }
            NodeState.Req r = s.requests.get(rid);
            if (verdict == SUCCEEDED) {
                c.emit(new Effect.SendRelease(Effect.Sender.WORKER, rt.host(), rt.port(), rt.transferId(), c.cfg.tpSize()));
                dropStatuses(s, rt);
                it.remove();
                if (r != null && !r.phase.terminal()) {
                    c.phase(r, RequestPhase.RUNNING, "reads done; release sent");
                }
            } else if (verdict == FAILED) {
                if (s.hybrid) {
                    c.anomaly(AnomalyKind.HYBRID_READ_RAISES, rid, tid, "TransferError: read failed; all state kept");
                    continue;
                }
                addLoadErrors(s, rt);
                c.emit(new Effect.SendRelease(Effect.Sender.WORKER, rt.host(), rt.port(), rt.transferId(), c.cfg.tpSize()));
                c.anomaly(AnomalyKind.READ_FAILED, rid, tid, rt.localBlocks().totalBlocks() + " blocks reported as load errors");
                dropStatuses(s, rt);
                it.remove();
                if (r != null && !r.phase.terminal()) {
                    c.phase(r, RequestPhase.LOAD_FAILED, "a read failed: load error, release sent");
                }
            } else if (c.now - rt.startNs() > c.cfg.recvAbortTimeoutNs()) {
                if (s.hybrid) {
                    c.anomaly(AnomalyKind.HYBRID_READ_RAISES, rid, tid, "TransferError: read timed out; all state kept");
                    continue;
                }
                addLoadErrors(s, rt);
                c.anomaly(AnomalyKind.READ_RECV_TIMEOUT, rid, tid, "pending for " + ((c.now - rt.startNs()) / 1_000_000)
                        + " ms; producer freed only by its reap" + (c.on(Switch.RELEASE_ON_RECV_TIMEOUT) ? " (release sent: #56465)" : ""));
                if (c.on(Switch.RELEASE_ON_RECV_TIMEOUT)) {
                    c.emit(new Effect.SendRelease(Effect.Sender.WORKER, rt.host(), rt.port(), rt.transferId(), c.cfg.tpSize()));
                }
                dropStatuses(s, rt);
                it.remove();
                if (r != null && !r.phase.terminal()) {
                    c.phase(r, RequestPhase.LOAD_FAILED, "read aborted after recv_abort_timeout: load error");
                }
            }
        }
        c.emit(new Effect.FinishedReported(List.of(), List.of(), drainLoadErrors(s)));
    }

    private static void addLoadErrors(NodeState s, RecvTransfer rt) {
        for (int g = 0; g < rt.localBlocks().size(); g++) {
            for (int b : rt.localBlocks().group(g)) {
                s.worker.loadErrorBlocks.add(b);
            }
        }
    }

    private static void dropStatuses(NodeState s, RecvTransfer rt) {
        for (long id : rt.statusIds()) {
            s.worker.statuses.remove(id);
        }
    }

    // ------------------------------------------------------------------ handshakes, transfers, time

    static void handshakeCompleted(Ctx c, String key) {
        NodeState s = c.s;
        s.worker.remoteAgents.add(key);
        s.worker.handshakesFailed.remove(key);
        int dp = key.lastIndexOf("_dp");
        if (dp > 0) {
            releaseWritersOnceEveryRankHandshook(s, key.substring(0, dp));
        }
        if (!s.worker.recvAwaitingHandshake.isEmpty()) {
            List<ReqMeta> waiting = new ArrayList<>(s.worker.recvAwaitingHandshake);
            s.worker.recvAwaitingHandshake.clear();
            for (ReqMeta m : waiting) {
                if (readHandshakeReady(s, m)) {
                    readBlocks(c, m);
                } else {
                    s.worker.recvAwaitingHandshake.add(m);
                }
            }
        }
    }

    /**
     * {@code _background_moriio_handshake}'s {@code request_ready}: it runs when the handshakes
     * with every remote DP rank are done ({@code wait_all_dp}), not when rank 0's is. A write
     * released on rank 0 alone would target a rank still handshaking when its decode is another
     * rank, and fail with no session (then self-ACK, and the decode waits forever).
     */
    private static void releaseWritersOnceEveryRankHandshook(NodeState s, String eid) {
        List<ReqMeta> waiting = s.worker.awaitingHandshake.get(eid);
        if (waiting == null) {
            return;
        }
        for (Iterator<ReqMeta> it = waiting.iterator(); it.hasNext(); ) {
            ReqMeta m = it.next();
            if (everyRankHandshook(s, eid, m.remoteDpSize())) {
                s.worker.readyRequests.add(m);
                it.remove();
            }
        }
        if (waiting.isEmpty()) {
            s.worker.awaitingHandshake.remove(eid);
        }
    }

    private static boolean everyRankHandshook(NodeState s, String eid, int remoteDpSize) {
        for (int r = 0; r < Math.max(remoteDpSize, 1); r++) {
            if (!s.worker.remoteAgents.contains(eid + "_dp" + r)) {
                return false;
            }
        }
        return true;
    }

    /**
     * A failed handshake. The Python initiator raises HandshakeError (or blocks forever); here the
     * key may be tried again by the next step that needs it, and every request waiting on it is
     * named in its own anomaly.
     */
    static void handshakeFailed(Ctx c, String key, String reason) {
        NodeState s = c.s;
        s.worker.handshakesFailed.add(key);
        s.worker.handshakesStarted.remove(key);
        c.anomaly(AnomalyKind.HANDSHAKE_FAILED, null, null, key + ": " + reason);
        String eid = key.contains("_dp") ? key.substring(0, key.lastIndexOf("_dp")) : key;
        for (ReqMeta m : s.worker.recvAwaitingHandshake) {
            if (m.handshakeEngineId().equals(eid)) {
                c.anomaly(AnomalyKind.HANDSHAKE_FAILED, m.requestId(), m.transferIdString(), "its read waits for " + key);
            }
        }
        for (ReqMeta m : s.worker.recvAwaitingVote) {
            if (m.handshakeEngineId().equals(eid)) {
                c.anomaly(AnomalyKind.HANDSHAKE_FAILED, m.requestId(), m.transferIdString(),
                        "its read waits for the TP-wide vote after " + key);
            }
        }
        List<ReqMeta> writers = s.worker.awaitingHandshake.get(eid);
        if (writers != null) {
            for (ReqMeta m : writers) {
                c.anomaly(AnomalyKind.HANDSHAKE_FAILED, m.requestId(), m.transferIdString(), "its writes wait for " + key);
            }
        }
    }

    /**
     * The TP-wide vote of {@code _eager_handshake_all_dp_ranks} (#46116) for one engine. Passed:
     * the engine counts as eagerly handshaken ({@code _eager_handshaked_engines}) and, once every
     * engine of a held step has passed, the step's reads go out. Failed: every TP rank raises
     * {@code HandshakeError} after the collective, this one too when its own handshakes
     * succeeded; the raise unwinds start_load_kv before any {@code _read_blocks_for_req}, so the
     * step's receives are never read and no release is sent for them (the prefill is freed only
     * by its reap), the engine is not marked handshaken (the next step that names it handshakes
     * and votes again), and handshakes that succeeded stay known. The connector changes nothing
     * else: the requests keep their phase, and what vLLM's engine core does with the raised step
     * is outside it. Each lost receive is named in a {@code HANDSHAKE_VOTE_FAILED} anomaly (one
     * without a request when none was lost). Votes exist only in a READ consumer's start_load_kv;
     * one journaled on another role is ignored.
     */
    static void handshakeVoted(Ctx c, NodeEvent.HandshakeVoted e) {
        NodeState s = c.s;
        if (c.cfg.workerIsProducer() || c.cfg.mode() != TransferMode.READ) {
            return;
        }
        String eid = e.remoteEngineId();
        boolean held = s.worker.votesOutstanding.remove(eid);
        if (e.passed()) {
            s.worker.votedEngines.add(eid);
            if (held && s.worker.votesOutstanding.isEmpty() && !s.worker.recvAwaitingVote.isEmpty()) {
                List<ReqMeta> batch = new ArrayList<>(s.worker.recvAwaitingVote);
                s.worker.recvAwaitingVote.clear();
                for (ReqMeta m : batch) {
                    if (readHandshakeReady(s, m)) {
                        readBlocks(c, m);
                    } else {
                        s.worker.recvAwaitingHandshake.add(m);
                    }
                }
            }
            return;
        }
        List<String> ownFailed = new ArrayList<>();
        for (String key : s.worker.handshakesFailed) {
            if (key.startsWith(eid + "_dp")) {
                ownFailed.add(key);
            }
        }
        String err = "HandshakeError: eager MoRIIO handshake failed for " + eid + " on "
                + (e.failedTpRanks() == null || e.failedTpRanks().isEmpty() ? "at least one TP rank"
                        : "TP rank(s) " + e.failedTpRanks())
                + " (all_reduce MIN " + e.vote() + "); "
                + (ownFailed.isEmpty() ? "this rank's own handshakes with " + eid + " succeeded"
                        : "this rank's own handshake " + String.join(", ", ownFailed) + " failed");
        List<ReqMeta> lost = new ArrayList<>();
        if (held || !s.worker.recvAwaitingVote.isEmpty()) {
            // the raise ends the whole start_load_kv: engines after this one are not voted on
            lost.addAll(s.worker.recvAwaitingVote);
            s.worker.recvAwaitingVote.clear();
            s.worker.votesOutstanding.clear();
        } else {
            for (Iterator<ReqMeta> it = s.worker.recvAwaitingHandshake.iterator(); it.hasNext(); ) {
                ReqMeta m = it.next();
                if (m.handshakeEngineId().equals(eid)) {
                    lost.add(m);
                    it.remove();
                }
            }
        }
        if (lost.isEmpty()) {
            c.anomaly(AnomalyKind.HANDSHAKE_VOTE_FAILED, null, null, err);
        }
        for (ReqMeta m : lost) {
            c.anomaly(AnomalyKind.HANDSHAKE_VOTE_FAILED, m.requestId(), m.transferIdString(),
                    err + "; its read is never posted and no release is sent");
        }
    }

    static void transferCompleted(Ctx c, NodeEvent.TransferCompleted e) {
        NodeState s = c.s;
        StatusRecord st = s.worker.statuses.get(e.statusId());
        if (st == null) {
            // Status ids are handed out in order from 1, so an id below the next one was posted here:
            // its transfer was settled or given up (a failed layer, a timeout, a release, a receive
            // abort) before this completion came, and its status record went with it. The Python
            // worker no longer polls such a status either; only an id never handed out is unknown.
            if (e.statusId() < 1 || e.statusId() >= s.worker.nextStatusId) {
                c.anomaly(AnomalyKind.UNKNOWN_STATUS, null, null, "status " + e.statusId() + (e.succeeded() ? " succeeded" : " failed"));
            }
            return;
        }
        st.state = e.succeeded() ? SUCCEEDED : FAILED;
        if (st.write) {
            WriteTransfer w = s.worker.writes.get(st.transferId);
            if (w != null) {
                tryFinalize(c, w);
            }
        }
    }

    static void tick(Ctx c) {
        NodeState s = c.s;
        processDeferred(c);
        if (s.worker.writes.isEmpty()) {
            return;
        }
        for (WriteTransfer w : new ArrayList<>(s.worker.writes.values())) {
            if (w.waitStartNs >= 0 && !w.completionNotified && c.now - w.waitStartNs > c.cfg.transferTimeoutNs()) {
                c.anomaly(AnomalyKind.WRITE_TIMEOUT, w.meta.requestId(), w.transferId,
                        "statuses pending for " + ((c.now - w.waitStartNs) / 1_000_000) + " ms; TransferError, self-ACK");
                markDone(c, w.transferId, "transfer timeout");
            }
        }
    }
}
