package io.kvledger.core.node;

import io.kvledger.core.config.Role;
import io.kvledger.core.config.Switch;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.KvTransferParams;
import io.kvledger.core.model.ReqMeta;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.model.TransferId;
import io.kvledger.core.moriio.ExtraConfig;
import io.kvledger.core.moriio.PortMath;
import io.kvledger.core.moriio.RequestIds;
import io.kvledger.core.moriio.ZmqAddress;
import io.kvledger.core.node.NodeReducer.Ctx;
import io.kvledger.core.node.NodeState.Deferral;
import io.kvledger.core.node.NodeState.Req;
import io.kvledger.core.node.NodeState.Stage;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The scheduler side of the connector ({@code MoRIIOConnectorScheduler} and the scheduler-side
 * methods of {@code MoRIIOConnector}): its tables, one instance per {@link NodeState}, and its
 * hooks, one per method.
 *
 * <p>The tables are private: only these hooks write them. The state's renderings, the
 * {@link Invariants} and the worker side read them through the package-private accessors; what
 * the worker must get from the scheduler (the step's metadata, a freed request's pending
 * handshake wait) goes through {@link WorkerSide}'s own methods.
 */
final class SchedulerSide {

    private static final Pattern INPUT_PROCESSOR_SUFFIX = Pattern.compile("-[0-9a-f]{8}");
    private static final long READ_ABORT_REQUEST_TIMEOUT_NS =
            ExtraConfig.READ_ABORT_REQUEST_TIMEOUT_S * 1_000_000_000L;

    /** {@code _MAX_LOCAL_MAMBA_TAIL_BLOCKS}: the extra local blocks a mamba group's READ alignment tolerates. */
    private static final int MAX_LOCAL_MAMBA_TAIL_BLOCKS = 1;

    /** The keys of the params request_finished returns, in the connector's order. */
    private static final String[] FINISHED_PARAM_KEYS = {
        "do_remote_prefill", "do_remote_decode", "remote_block_ids", "remote_engine_id", "remote_host",
        "remote_handshake_port", "remote_notify_port", "remote_dp_rank", "remote_dp_rank_override", "remote_dp_size",
        "remote_dp_size_local", "tp_size", "transfer_id",
    };

    /** The keys of the params vLLM 239b5ff30's request_finished returns, in its order. */
    private static final String[] FINISHED_PARAM_KEYS_239B5FF30 = {
        "do_remote_prefill", "do_remote_decode", "remote_block_ids", "remote_engine_id", "tp_size", "transfer_id",
    };

    /** The reply of a step that surfaces nothing (a record of an immutable empty list: one will do). */
    private static final Effect.FinishedSendingRewritten NOTHING_SURFACED = new Effect.FinishedSendingRewritten(List.of());


    // ------------------------------------------------------------ the scheduler side's tables (written only here)
    /** Bumped on every change of the transfer-id map, so a step's snapshot is copied only when it changed. */
    private long mappingVersion;
    private long metaMappingVersion = -1;
    /**
     * The snapshot of {@link #transferIdToRequestId} the last metadata carried to the worker
     * (immutable, replaced whole when the map changed since; see refreshMetaMapping).
     */
    private Map<String, String> metaMapping = new LinkedHashMap<>();
    /**
     * The last peer address text parsed out of a request id in each direction, and its parse
     * result (a cache: parsing is a pure function of the text; see SchedulerSide.peer).
     */
    private String lastPrefillPeerText;
    private Object lastPrefillPeer;
    private String lastDecodePeerText;
    private Object lastDecodePeer;
    /** The last {@code [remote_host]} built for a ReqMeta and its host (immutable; see SchedulerSide.addNewReq). */
    private String lastPodsHost;
    private List<String> lastPods;
    private final RequestSlots.Table<Stage> reqsNeedRecv;
    private final RequestSlots.Table<Stage> reqsNeedSave;
    private final RequestSlots.Table<Stage> reqsNeedPendingSave;
    private final RequestSlots.Table<KvParams> reqKvParams;
    private final RequestSlots.Table<Long> reqsNeedSend;
    private final RequestSlots.Table<Deferral> deferredSendDeadlines;
    private final RequestSlots.Table<Long> pendingSentAcks;
    private final LinkedHashMap<String, String> transferIdToRequestId = new LinkedHashMap<>();
    private final RequestSlots.Table<String> requestIdToTransferId;
    /** Requests reaped recently, to recognise a late ACK (bounded). */
    private final LinkedHashSet<String> reapedRequests = NodeState.boundedSet();
    private final Map<String, String> transferIdToRequestIdView = Collections.unmodifiableMap(transferIdToRequestId);
    private final Set<String> reapedRequestsView = Collections.unmodifiableSet(reapedRequests);

    SchedulerSide(RequestSlots slots) {
        this.reqsNeedRecv = slots.table(RequestSlots.NEED_RECV);
        this.reqsNeedSave = slots.table(RequestSlots.NEED_SAVE);
        this.reqsNeedPendingSave = slots.table(RequestSlots.NEED_PENDING_SAVE);
        this.reqKvParams = slots.table(RequestSlots.KV_PARAMS);
        this.reqsNeedSend = slots.table(RequestSlots.NEED_SEND);
        this.deferredSendDeadlines = slots.table(RequestSlots.DEFERRED);
        this.pendingSentAcks = slots.table(RequestSlots.PARKED_ACKS);
        deferredSendDeadlines.trackDeadlines(Deferral::deadlineNs);
        pendingSentAcks.trackDeadlines(Long::longValue);
        this.requestIdToTransferId = slots.table(RequestSlots.RID_TO_TID);
    }

    // ------------------------------------------------------------ read access
    // For the state's renderings, the invariants and the other side: they read, never write.

    long mappingVersion() {
        return mappingVersion;
    }

    RequestSlots.View<Stage> reqsNeedRecv() {
        return reqsNeedRecv;
    }

    RequestSlots.View<Stage> reqsNeedSave() {
        return reqsNeedSave;
    }

    RequestSlots.View<Stage> reqsNeedPendingSave() {
        return reqsNeedPendingSave;
    }

    RequestSlots.View<KvParams> reqKvParams() {
        return reqKvParams;
    }

    RequestSlots.View<Long> reqsNeedSend() {
        return reqsNeedSend;
    }

    RequestSlots.View<Deferral> deferredSendDeadlines() {
        return deferredSendDeadlines;
    }

    RequestSlots.View<Long> pendingSentAcks() {
        return pendingSentAcks;
    }

    Map<String, String> transferIdToRequestId() {
        return transferIdToRequestIdView;
    }

    RequestSlots.View<String> requestIdToTransferId() {
        return requestIdToTransferId;
    }

    Set<String> reapedRequests() {
        return reapedRequestsView;
    }

    // ------------------------------------------------------------ write access for the invariants' tests

    /**
     * The tables themselves, for tests that build states no sequence of hooks reaches (to see an
     * invariant fail). Nothing in main code calls it.
     */
    Tamper tamperForTests() {
        return new Tamper();
    }

    /** See {@link #tamperForTests()}. */
    final class Tamper {
        RequestSlots.Table<Stage> reqsNeedRecv() {
            return reqsNeedRecv;
        }

        RequestSlots.Table<Deferral> deferredSendDeadlines() {
            return deferredSendDeadlines;
        }

        RequestSlots.Table<Long> pendingSentAcks() {
            return pendingSentAcks;
        }

        LinkedHashMap<String, String> transferIdToRequestId() {
            return transferIdToRequestId;
        }

        LinkedHashSet<String> reapedRequests() {
            return reapedRequests;
        }
    }

    // ------------------------------------------------------------------ admission

    static void admitted(Ctx c, NodeEvent.RequestAdmitted e) {
        RequestSlots.Slot sl = c.s.slots.get(e.requestId());
        Req live = c.s.requests.get(sl);
        if (live != null) {
            c.anomaly(AnomalyKind.REQUEST_ADMITTED_TWICE, e.requestId(), tid(live), "still " + live.phase);
            return;
        }
        // parsed once; the event's map is copied only when the connector first writes to it
        KvTransferParams params = e.params() == null ? null : KvTransferParams.of(e.params());
        Req r = new Req(e.requestId(), e.numPromptTokens(), e.promptTokenIds(), params, c.now);
        r.slot = sl != null ? sl : c.s.slots.add(r.requestId);
        c.s.requests.put(r.slot, r);
        RequestPhase before = c.s.phases.admit(r, RequestPhase.ADMITTED);
        c.emit(new Effect.PhaseChanged(r.requestId, before, RequestPhase.ADMITTED, before == null ? "admitted" : "admitted again"));
        // on_new_request (#51052): a hybrid producer drops the last prompt token once.
        if (c.on(Switch.ON_NEW_REQUEST_P_TRUNCATION) && c.s.hybrid && c.cfg.isProducer() && params != null
                && params.doRemoteDecode() && !params.pSideTruncated()
                && r.numPromptTokens > 1) {
            r.numPromptTokens -= 1;
            if (r.promptTokenIds > 0) {
                r.promptTokenIds -= 1;
            }
            params.markPSideTruncated();
            c.anomaly(AnomalyKind.PROMPT_TRUNCATED, r.requestId, params.transferId().asString(),
                    "prompt now " + r.numPromptTokens + " tokens; decode recomputes the last one");
        }
    }

    // ------------------------------------------------------------------ get_num_new_matched_tokens

    static void matchedTokens(Ctx c, NodeEvent.MatchedTokensQueried e) {
        Req r = c.s.requests.get(e.requestId());
        if (r == null) {
            c.anomaly(AnomalyKind.REQUEST_UNKNOWN, e.requestId(), null, "get_num_new_matched_tokens");
            c.emit(new Effect.MatchedTokens(e.requestId(), 0, false));
            return;
        }
        int count;
        boolean async;
        if (c.cfg.isProducer()) {
            count = 0;
            async = false;
        } else {
            int tokens = c.on(Switch.MATCH_COUNTS_NUM_PROMPT_TOKENS)
                    ? r.numPromptTokens
                    : Math.max(r.promptTokenIds, 0);
            boolean clamp = c.on(Switch.MATCH_CLAMPS_AT_ZERO);
            KvTransferParams p = r.params;
            if (c.cfg.mode() == TransferMode.WRITE) {
                if (c.on(Switch.WRITE_MATCH_AFTER_RECV_DONE) && r.recvDone) {
                    count = 0;
                    async = false;
                } else {
                    count = tokens - e.numComputedTokens();
                    if (clamp) {
                        count = Math.max(count, 0);
                    }
                    async = true;
                    if (r.recvDone) {
                        c.anomaly(AnomalyKind.WRITE_RECV_REPARKED, r.requestId, tid(r),
                                "asked again after finished_recving: (" + count + ", True) parks it again (#57705)");
                    }
                }
            } else {
                boolean remotePrefill = p != null && p.doRemotePrefill();
                if (c.on(Switch.READ_MATCH_REQUIRES_REMOTE_PREFILL) && !remotePrefill) {
                    count = 0;
                    async = false;
                } else {
                    count = tokens - 1 - e.numComputedTokens();
                    if (clamp) {
                        count = Math.max(count, 0);
                    }
                    async = c.on(Switch.READ_ASYNC_LOAD) && count > 0;
                    if (!remotePrefill && count > 0) {
                        c.anomaly(AnomalyKind.READ_MATCH_WITHOUT_RECV, r.requestId, tid(r),
                                count + " tokens declared loaded but nothing will read them");
                    }
                }
            }
            if (count < 0) {
                c.anomaly(AnomalyKind.NEGATIVE_MATCHED_TOKENS, r.requestId, tid(r), "count " + count);
            }
        }
        r.lastMatchedCount = count;
        r.lastMatchedAsync = async;
        c.emit(new Effect.MatchedTokens(r.requestId, count, async));
    }

    // ------------------------------------------------------------------ update_state_after_alloc

    static void afterAlloc(Ctx c, NodeEvent.BlocksAllocated e) {
        Req r = c.s.requests.get(e.requestId());
        if (r == null) {
            c.anomaly(AnomalyKind.REQUEST_UNKNOWN, e.requestId(), null, "update_state_after_alloc");
            return;
        }
        String rid = r.requestId;
        boolean waitsForRemote = !c.cfg.isProducer() && r.lastMatchedAsync && e.numExternalTokens() > 0;
        KvTransferParams params = r.params;
        if (params == null || params.isEmpty()) {
            c.allocPhase(r, c.cfg.isProducer() ? RequestPhase.PREFILLING : runningOrWaiting(waitsForRemote),
                    "allocated; no kv_transfer_params");
            waitWithoutTransfer(c, r, waitsForRemote);
            return;
        }
        TransferId given = params.transferId();
        String transferId;
        if (c.on(Switch.TRANSFER_ID_REQUIRED)) {
            // 239b5ff30: transfer_id = params["transfer_id"], taken as it is
            if (!params.hasTransferId()) {
                c.anomaly(AnomalyKind.TRANSFER_ID_MISSING, rid, null, "update_state_after_alloc");
                return;
            }
            transferId = given.pythonStr();
        } else {
            boolean givenTrue = given.isTrue();
            transferId = givenTrue ? given.pythonStr() : RequestIds.synthesizedTransferId(rid);
            if (!givenTrue) {
                c.anomaly(AnomalyKind.TRANSFER_ID_SYNTHESIZED, rid, transferId,
                        params.hasTransferId() ? "transfer_id present but empty; params keep the empty value"
                                : "transfer_id absent; written back into the params");
            }
            params.setDefaultTransferId(transferId);
        }
        boolean mapped = map(c, r.slot, rid, transferId);

        if (params.doRemoteDecode()) {
            if (!c.on(Switch.SAVE_STAGING_WRITE_ONLY) || c.cfg.mode() == TransferMode.WRITE) {
                if (mapped) {
                    BlockGroups local = c.on(Switch.SAVE_BLOCK_IDS_GROUPED) ? e.blocks() : e.blocks().firstOnly();
                    c.s.scheduler.reqsNeedSave.put(r.slot, new Stage(r, local));
                    c.s.scheduler.reqKvParams.put(r.slot, params.share());
                }
            }
        }
        if (c.cfg.isProducer()) {
            c.allocPhase(r, RequestPhase.PREFILLING, mapped ? "allocated; transfer id mapped"
                    : "allocated; transfer id refused (owned by another request)");
        }

        if (params.doRemotePrefill()) {
            if (c.cfg.mode() == TransferMode.READ) {
                boolean aborted = !readRecv(c, r, e, mapped);
                if (aborted) {
                    return; // the Python code raised: do_remote_prefill stays set
                }
            } else {
                if (!writeNotify(c, r, e)) {
                    return;
                }
                if (!c.cfg.isProducer()) {
                    c.allocPhase(r, runningOrWaiting(waitsForRemote), "allocated; waiting for the producer's write_done");
                }
            }
            params.clearRemotePrefill();
        } else if (!c.cfg.isProducer()) {
            c.allocPhase(r, runningOrWaiting(waitsForRemote), "allocated; no remote prefill");
            waitWithoutTransfer(c, r, waitsForRemote);
        }
    }

    /** A WRITE consumer that loads asynchronously without a remote prefill waits for nothing. */
    private static void waitWithoutTransfer(Ctx c, Req r, boolean waitsForRemote) {
        if (waitsForRemote && r.phase == RequestPhase.WAITING_FOR_REMOTE_KVS) {
            c.anomaly(AnomalyKind.WRITE_WAIT_WITHOUT_TRANSFER, r.requestId, tid(r),
                    r.lastMatchedCount + " tokens declared as loading asynchronously, but nothing was asked of a producer");
        }
    }

    private static RequestPhase runningOrWaiting(boolean waits) {
        return waits ? RequestPhase.WAITING_FOR_REMOTE_KVS : RequestPhase.RUNNING;
    }

    /** READ consumer: stage the receive. Returns false when the Python code would have raised. */
    private static boolean readRecv(Ctx c, Req r, NodeEvent.BlocksAllocated e, boolean mapped) {
        KvTransferParams params = r.params;
        String rid = r.requestId;
        boolean remoteGiven = params.remoteBlockIdsTrue();
        if (!remoteGiven || !params.hasRemoteEngineId()) {
            // Upstream is silent when remote_block_ids is missing or empty (the walrus test fails
            // quietly) and warns "Got invalid KVTransferParams" only for a missing remote_engine_id.
            if (!remoteGiven) {
                c.anomaly(AnomalyKind.READ_RECV_WITHOUT_REMOTE_BLOCKS, rid, tid(r), "remote_block_ids "
                        + (params.hasRemoteBlockIds() ? "is " + params.remoteBlockIdsText() : "missing")
                                + "; upstream logs nothing, computes locally and never releases the producer's blocks");
            } else {
                c.anomaly(AnomalyKind.READ_INVALID_PARAMS, rid, tid(r), "remote_engine_id missing: Got invalid KVTransferParams");
            }
            if (!c.cfg.isProducer()) {
                c.allocPhase(r, RequestPhase.RUNNING, "allocated; invalid KVTransferParams, computes locally");
            }
            return true;
        }
        if (!mapped) {
            // first-owner-wins (#56468): a colliding request is not staged.
            if (!c.cfg.isProducer()) {
                c.allocPhase(r, RequestPhase.RUNNING, "allocated; receive not staged (transfer id owned by another request)");
            }
            return true;
        }
        BlockGroups local;
        KvParams snapshot = params.share();
        if (!c.on(Switch.READ_RECV_GROUPED_CLIPPED)) {
            // The seed: group 0 only, and remote_block_ids must be a flat list.
            if (!params.remoteBlockIdsFlat()) {
                if (!c.on(Switch.READ_ALIGN_LOCAL_REMOTE)) {
                    BlockGroups grouped = seedStagesGroupedRemote(c, r, e, params.remoteBlockGroups());
                    if (grouped == null) {
                        return false;
                    }
                    return stageRecv(c, r, grouped, snapshot, e);
                }
                c.anomaly(AnomalyKind.READ_ALIGNMENT_FAILED, rid, tid(r),
                        "remote_block_ids is a list of lists; this decode expects a flat list (assert)");
                return false;
            }
            // converted once: build_connector_meta's add_new_req reads the same groups
            BlockGroups remoteGroups = params.remoteBlockGroups();
            if (remoteGroups == null) {
                c.anomaly(AnomalyKind.READ_ALIGNMENT_FAILED, rid, tid(r), "remote_block_ids holds non-integer ids (TypeError)");
                return false;
            }
            int[] remote = remoteGroups.first();
            int[] l;
            // 239b5ff30 aligns the allocation's blocks whatever num_external_tokens is
            if (e.numExternalTokens() > 0 || c.on(Switch.READ_RECV_ALIGNS_FULL_HIT)) {
                l = e.blocks().first();
                if (!c.on(Switch.READ_ALIGN_LOCAL_REMOTE)) {
                    if (l.length > remote.length) {
                        c.anomaly(AnomalyKind.READ_ALIGNMENT_FAILED, rid, tid(r),
                                "assert len(local)=" + l.length + " <= len(remote)=" + remote.length + " fails");
                        return false;
                    }
                    if (l.length != remote.length) {
                        // Python remote[-len(local):]: with len(local) == 0 this is the whole list.
                        l = l.length == 0 ? remote : Arrays.copyOfRange(remote, remote.length - l.length, remote.length);
                    }
                } else {
                    int[][] pair = align(c, r, l, remote, c.s.maxDecodeTailBlocks);
                    if (pair == null) {
                        return false;
                    }
                    l = pair[0];
                    if (c.on(Switch.READ_SNAPSHOT_ADJUSTED_REMOTE)) {
                        snapshot = snapshot.copy(); // the live params keep theirs
                        snapshot.put("remote_block_ids", BlockGroups.flatValue(pair[1]));
                    }
                }
            } else {
                l = new int[0];
            }
            // The allocation's own group 0 is not copied (block groups never change once built).
            local = e.blocks().size() > 0 && l == e.blocks().group(0) ? e.blocks().firstOnly() : BlockGroups.single(l);
        } else {
            BlockGroups remote = params.remoteBlockGroups();
            boolean flat = remote != null && params.remoteBlockIdsFlat();
            // Without external tokens the remote ids are only counted ([[] for _ in remote_block_ids]):
            // a flat list (an older producer's) stages one empty group per id, nothing raises.
            if (remote == null || flat && e.numExternalTokens() > 0) {
                c.anomaly(AnomalyKind.READ_ALIGNMENT_FAILED, rid, tid(r),
                        "remote_block_ids is not a list of lists (an older producer's flat list?)");
                return false;
            }
            int[] localIdx = recvGroupIndices(c.s);
            if (e.numExternalTokens() > 0) {
                BlockGroups allocated = e.blocks().select(localIdx);
                if (allocated.size() != remote.size()) {
                    c.anomaly(AnomalyKind.READ_ALIGNMENT_FAILED, rid, tid(r),
                            "local has " + allocated.size() + " transfer groups, remote " + remote.size());
                    return false;
                }
                int[][] l = new int[allocated.size()][];
                int[][] rm = new int[allocated.size()][];
                for (int g = 0; g < allocated.size(); g++) {
                    int[] li = allocated.group(g);
                    // get_exchange_clipped_blocks clips sliding-window groups only under the hybrid
                    // KV-cache manager; a hybrid (mamba) model's receive pairs its groups unclipped
                    boolean mamba = isMamba(c.s, localIdx[g]);
                    int keep = c.s.hmaActive && !c.s.hybrid && c.s.swaKeep.length > localIdx[g] && !mamba
                            ? c.s.swaKeep[localIdx[g]] : 0;
                    li = BlockGroups.tail(li, keep);
                    // a mamba group tolerates one extra local block (_MAX_LOCAL_MAMBA_TAIL_BLOCKS), an
                    // attention group the decode tail
                    int[][] pair = c.on(Switch.READ_ALIGN_LOCAL_REMOTE)
                            ? align(c, r, li, remote.group(g), mamba ? MAX_LOCAL_MAMBA_TAIL_BLOCKS : c.s.maxDecodeTailBlocks)
                            : new int[][] {li, remote.group(g)};
                    if (pair == null) {
                        return false;
                    }
                    l[g] = pair[0];
                    rm[g] = pair[1];
                }
                local = BlockGroups.of(l);
                if (c.on(Switch.READ_SNAPSHOT_ADJUSTED_REMOTE)) {
                    snapshot = snapshot.copy(); // the live params keep theirs
                    snapshot.put("remote_block_ids", BlockGroups.of(rm).toGroupedValue());
                }
            } else if (c.on(Switch.READ_FULL_HIT_EMPTY_GROUPS)) {
                if (c.s.hybrid) {
                    int[][] g = new int[1 + c.s.mambaGroups.length][];
                    g[0] = new int[0];
                    for (int i = 0; i < c.s.mambaGroups.length; i++) {
                        g[i + 1] = e.blocks().size() > c.s.mambaGroups[i] ? e.blocks().group(c.s.mambaGroups[i]) : new int[0];
                    }
                    local = BlockGroups.of(g);
                } else {
                    local = BlockGroups.empty(flat ? remote.first().length : remote.size());
                }
            } else {
                local = BlockGroups.single();
            }
        }
        return stageRecv(c, r, local, snapshot, e);
    }

    private static boolean stageRecv(Ctx c, Req r, BlockGroups local, KvParams snapshot, NodeEvent.BlocksAllocated e) {
        c.s.scheduler.reqsNeedRecv.put(r.slot, new Stage(r, local));
        c.s.scheduler.reqKvParams.put(r.slot, snapshot);
        if (!c.cfg.isProducer()) {
            c.allocPhase(r, RequestPhase.RECV_STAGED, e.numExternalTokens() > 0
                    ? "allocated; receive staged"
                    : "allocated; full prefix hit, release staged");
        }
        return true;
    }

    /**
     * The seed's flat READ receive given a newest producer's grouped {@code remote_block_ids}
     * (seed-vs-newest #24): the seed code takes the value as it is, so {@code len(remote_block_ids)}
     * counts groups. {@code assert len(local) <= len(remote)} holds for a full prefix hit (nothing
     * is asserted, the local list is {@code []}) and for a local list no longer than the number of
     * groups; a shorter local list is replaced by {@code remote[-len(local):]}, whole groups (all of
     * them for an empty one). Returns the local ids to stage, or null where the assert fails.
     */
    private static BlockGroups seedStagesGroupedRemote(Ctx c, Req r, NodeEvent.BlocksAllocated e, BlockGroups remote) {
        if (remote == null) {
            c.anomaly(AnomalyKind.READ_ALIGNMENT_FAILED, r.requestId, tid(r), "remote_block_ids holds non-integer ids (TypeError)");
            return null;
        }
        if (e.numExternalTokens() <= 0) {
            return BlockGroups.single();
        }
        int[] l = e.blocks().first();
        int n = remote.size();
        if (l.length > n) {
            c.anomaly(AnomalyKind.READ_ALIGNMENT_FAILED, r.requestId, tid(r), "assert len(local)=" + l.length
                    + " <= len(remote)=" + n + " fails: remote_block_ids is a list of " + n + " group(s) (a newest producer's)");
            return null;
        }
        if (l.length == n) {
            return BlockGroups.single(l);
        }
        int[] idx = new int[l.length == 0 ? n : l.length];
        for (int i = 0; i < idx.length; i++) {
            idx[i] = n - idx.length + i;
        }
        return remote.select(idx);
    }

    private static boolean isMamba(NodeState s, int group) {
        for (int m : s.mambaGroups) {
            if (m == group) {
                return true;
            }
        }
        return false;
    }

    /** The groups a READ receive pairs: [attention, *mamba] for hybrid models, else the transfer groups. */
    private static int[] recvGroupIndices(NodeState s) {
        if (s.hybrid) {
            int[] idx = new int[1 + s.mambaGroups.length];
            idx[0] = s.attentionGroups[0];
            System.arraycopy(s.mambaGroups, 0, idx, 1, s.mambaGroups.length);
            return idx;
        }
        return s.transferGroups;
    }

    /** {@code _align_read_blocks} for one group: returns {local, remote} or null (ValueError). */
    private static int[][] align(Ctx c, Req r, int[] local, int[] remote, int maxTailBlocks) {
        if (local.length < remote.length) {
            int[] rt = local.length == 0 ? new int[0] : Arrays.copyOfRange(remote, remote.length - local.length, remote.length);
            return new int[][] {local, rt};
        }
        if (local.length > remote.length) {
            int extra = local.length - remote.length;
            if (extra > maxTailBlocks) {
                c.anomaly(AnomalyKind.READ_ALIGNMENT_FAILED, r.requestId, tid(r),
                        "local has " + extra + " more blocks than remote; tolerance " + maxTailBlocks + " (ValueError)");
                return null;
            }
            return new int[][] {Arrays.copyOf(local, remote.length), remote};
        }
        return new int[][] {local, remote};
    }

    /** WRITE consumer: the decode-to-prefill remote_blocks notify. Returns false when Python would raise. */
    private static boolean writeNotify(Ctx c, Req r, NodeEvent.BlocksAllocated e) {
        if (c.on(Switch.WRITE_NOTIFY_DECODE_ADDRESS)) {
            return writeNotifyToDecodeAddress(c, r, e);
        }
        KvTransferParams p = r.params;
        String rid = r.requestId;
        // params.get("remote_dp_rank", 0) is used as it is: a value that is no number (None, a
        // string) never equals the own rank in the gate and raises TypeError in the port arithmetic
        boolean rankNumeric = p.remoteDpRankIsNumber();
        Long rank = p.remoteDpRankOrZeroInt();
        int remoteDpRank = rank == null ? 0 : (int) (long) rank;
        // int(params.get("remote_dp_size", 1) or 1) sits outside the try: a non-numeric value raises
        // ValueError out of update_state_after_alloc before any notify is sent.
        boolean dpSizeGiven = p.remoteDpSizeTrue();
        Long dpSizeV = dpSizeGiven ? p.remoteDpSizeInt() : Long.valueOf(1);
        if (dpSizeV == null) {
            c.anomaly(AnomalyKind.PARAM_NOT_AN_INT, rid, tid(r), "update_state_after_alloc: int(" + p.remoteDpSizeText()
                    + ") for remote_dp_size raises " + p.remoteDpSizeIntError());
            return false;
        }
        int dpSize = (int) (long) dpSizeV;
        Long dpLocalV = p.remoteDpSizeLocalTrue() ? p.remoteDpSizeLocalInt() : Long.valueOf(0);
        int dpLocal = dpLocalV == null ? 0 : (int) (long) dpLocalV;
        if (dpLocal > 0) {
            dpSize = Math.min(dpSize, dpLocal);
        }
        if (dpSize > 1 && !p.hasRemoteDpRank() && !p.hasIsRequestLeader()) {
            c.anomaly(AnomalyKind.UNPINNED_DP_RANK, rid, tid(r),
                    "remote_dp_size=" + dpSize + "; the router must pin remote_dp_rank");
        }
        boolean notify;
        String gate;
        if (!p.isRequestLeaderNone()) {
            notify = p.isRequestLeaderTrue();
            gate = "is_request_leader=" + p.isRequestLeaderText();
        } else if (p.remoteDpRankOverride()) {
            notify = rankNumeric && c.cfg.dpRank() == remoteDpRank;
            gate = "remote_dp_rank_override: own rank " + c.cfg.dpRank() + " vs remote_dp_rank "
                    + (rankNumeric ? String.valueOf(remoteDpRank) : p.remoteDpRankOrZeroText());
        } else {
            notify = c.s.isKvMaster;
            gate = "kv master (pod " + PortMath.podIndex(c.cfg.dpRank(), c.cfg.dpSizeLocal()) + ")";
        }
        if (!notify) {
            return true;
        }
        String host;
        int notifyPort;
        var parsed = peer(c, r, rid, false);
        if (parsed != null) {
            if (!parsed.isOk()) {
                c.anomaly(AnomalyKind.NOTIFY_ADDRESS_UNRESOLVED, rid, tid(r), parsed.error());
                return false;
            }
            host = parsed.value().host();
            notifyPort = parsed.value().notifyPort();
        } else {
            String h = p.remoteHostIfTrue();
            host = h == null ? "" : h;
            Long n = p.remoteNotifyPortTrue() ? p.remoteNotifyPortInt() : Long.valueOf(0);
            notifyPort = n == null ? 0 : (int) (long) n;
            if (host.isEmpty() || notifyPort == 0) {
                c.anomaly(AnomalyKind.NOTIFY_ADDRESS_UNRESOLVED, rid, tid(r),
                        "request_id has no embedded peer zmq_address and kv_transfer_params is missing remote_host / remote_notify_port");
                return false;
            }
        }
        if (!rankNumeric) {
            c.anomaly(AnomalyKind.PARAM_NOT_AN_INT, rid, tid(r), "update_state_after_alloc: remote_dp_rank "
                    + p.remoteDpRankOrZeroText() + " in the port arithmetic raises TypeError");
            return false;
        }
        List<Integer> blocks = e.numExternalTokens() > 0 ? BlockGroups.intView(e.blocks().first()) : List.of();
        int portRank = PortMath.foldLocalRank(remoteDpRank, dpLocal);
        List<String> hosts = dpLocal > 0 ? p.remoteHostList() : null;
        if (hosts != null) {
            int pod = PortMath.podIndex(remoteDpRank, dpLocal);
            if (pod >= 0 && pod < hosts.size()) {
                host = hosts.get(pod);
            }
        }
        TransferId transferId = p.transferId();
        for (int tpIndex = 0; tpIndex < c.cfg.tpSize(); tpIndex++) {
            c.emit(new Effect.SendRemoteBlocks(host, notifyPort + PortMath.portOffset(portRank, tpIndex), rid,
                    transferId, blocks, c.cfg.dpRank()));
        }
        return true;
    }

    /**
     * vLLM 239b5ff30's WRITE notify: every rank sends, per TP index, to the notify port of the
     * DECODE address embedded in the request id ({@code get_peer_zmq_from_request_id(rid,
     * is_producer=True)}) plus {@code remote_dp_rank + tp_index}, the allocation's first group as
     * the block list. No address in the request id raises ValueError (the engine core dies).
     */
    private static boolean writeNotifyToDecodeAddress(Ctx c, Req r, NodeEvent.BlocksAllocated e) {
        KvTransferParams p = r.params;
        String rid = r.requestId;
        Long rank = p.remoteDpRankOrZeroIntOrBool();
        var parsed = peer(c, r, rid, true);
        if (parsed == null || !parsed.isOk()) {
            c.anomaly(AnomalyKind.NOTIFY_ADDRESS_UNRESOLVED, rid, tid(r), parsed == null
                    ? "Cannot parse peer zmq_address from request_id (ValueError)" : parsed.error());
            return false;
        }
        if (rank == null) {
            c.anomaly(AnomalyKind.PARAM_NOT_AN_INT, rid, tid(r), "update_state_after_alloc: remote_dp_rank "
                    + p.remoteDpRankOrZeroText() + " in the port arithmetic raises TypeError");
            return false;
        }
        List<Integer> blocks = BlockGroups.intView(e.blocks().size() > 0 ? e.blocks().first() : new int[0]);
        TransferId transferId = p.transferId();
        for (int tpIndex = 0; tpIndex < c.cfg.tpSize(); tpIndex++) {
            c.emit(new Effect.SendRemoteBlocks(parsed.value().host(),
                    parsed.value().notifyPort() + PortMath.portOffset((int) (long) rank, tpIndex), rid, transferId, blocks,
                    c.cfg.dpRank()));
        }
        return true;
    }

    // ------------------------------------------------------------------ the transfer-id map

    /**
     * {@code map_request_id}, given the slot of {@code rid} (or null when it has none); returns
     * false when first-owner-wins refuses the mapping.
     */
    static boolean map(Ctx c, RequestSlots.Slot sl, String rid, String tid) {
        String owner = c.s.scheduler.transferIdToRequestId.get(tid);
        if (owner != null && !owner.equals(rid)) {
            if (c.on(Switch.MAP_FIRST_OWNER_WINS)) {
                c.anomaly(AnomalyKind.TRANSFER_ID_COLLISION, rid, tid, "refused: owned by " + owner);
                return false;
            }
            c.anomaly(AnomalyKind.TRANSFER_ID_COLLISION, rid, tid, "overwrote owner " + owner + " (last write wins)");
        }
        c.s.scheduler.transferIdToRequestId.put(tid, rid);
        c.s.scheduler.requestIdToTransferId.put(sl != null ? sl : c.s.slots.obtain(rid), tid);
        c.s.scheduler.mappingVersion++;
        return true;
    }

    /**
     * {@code unmap_request_id(rid, transfer_id)}, given the slot of {@code rid} (or null when it
     * has none): exact, then the transfer-id fallback, else a miss.
     */
    static void unmap(Ctx c, RequestSlots.Slot sl, String rid, String tid) {
        NodeState s = c.s;
        String mappedTid = s.scheduler.requestIdToTransferId.remove(sl);
        if (mappedTid != null) {
            s.scheduler.transferIdToRequestId.remove(mappedTid);
            s.scheduler.mappingVersion++;
            c.emit(new Effect.Unmapped(rid, mappedTid, rid, Effect.UnmapKind.EXACT));
            return;
        }
        if (tid != null && s.scheduler.transferIdToRequestId.containsKey(tid)) {
            String original = s.scheduler.transferIdToRequestId.get(tid);
            boolean allowed = !c.on(Switch.MAP_FIRST_OWNER_WINS) || original.equals(rid)
                    || (rid.startsWith(original) && INPUT_PROCESSOR_SUFFIX.matcher(rid.substring(original.length())).matches());
            if (allowed) {
                s.scheduler.requestIdToTransferId.remove(original);
                s.scheduler.transferIdToRequestId.remove(tid);
                s.scheduler.mappingVersion++;
                c.emit(new Effect.Unmapped(rid, tid, original, Effect.UnmapKind.BY_TRANSFER_ID));
                return;
            }
        }
        c.emit(new Effect.Unmapped(rid, tid, null, Effect.UnmapKind.MISS));
        c.anomaly(AnomalyKind.UNMAP_MISS, rid, tid, "table_size=" + s.scheduler.requestIdToTransferId.size());
    }

    // ------------------------------------------------------------------ build_connector_meta

    /**
     * {@code build_connector_meta}. When {@code add_new_req} raises (KeyError, ValueError,
     * TypeError) the Python method unwinds at that entry: what the loops did before it stays done
     * (pending saves updated, moved or finished, the final chunk's snapshot popped), and nothing
     * after it runs: no snapshot is reclaimed, {@code _reqs_need_recv} and {@code _reqs_need_save}
     * are not cleared and {@code _reqs_need_send} is not rebound, so the next step finds the same
     * staged entries (and raises again on the same one). The reducer leaves its tables exactly so;
     * the worker gets empty metadata for the step, where the engine core's step would have failed.
     */
    static void buildMeta(Ctx c, NodeEvent.StepScheduled e) {
        NodeState s = c.s;
        List<ReqMeta> recv = s.scheduler.reqsNeedRecv.isEmpty() && (e.scheduledNewReqs() == null || e.scheduledNewReqs().isEmpty())
                ? List.of() : new ArrayList<>(s.scheduler.reqsNeedRecv.size());
        List<ReqMeta> save = s.scheduler.reqsNeedSave.isEmpty() && s.scheduler.reqsNeedPendingSave.isEmpty()
                ? List.of() : new ArrayList<>(s.scheduler.reqsNeedSave.size());
        if (c.on(Switch.WRITE_CONSUMER_RECV_NEW_REQS) && c.cfg.mode() == TransferMode.WRITE && !c.cfg.isProducer()
                && !recvNewRequests(c, e, recv)) {
            metaRaised(c, e);
            return;
        }
        boolean skipsUnknown = !c.on(Switch.PENDING_SAVE_UNKNOWN_RAISES);
        if (c.cfg.mode() == TransferMode.WRITE && c.cfg.role() == Role.PRODUCER
                && (!s.scheduler.reqsNeedPendingSave.isEmpty() || !skipsUnknown)) {
            for (NodeEvent.CachedRequest cr : e.cachedRequests()) {
                if (cr.newBlockIds() == null) {
                    continue;
                }
                Stage pending = s.scheduler.reqsNeedPendingSave.get(cr.requestId());
                if (pending == null) {
                    if (skipsUnknown) {
                        continue; // a non-disagg request (#45043): skipped, not a KeyError
                    }
                    c.anomaly(AnomalyKind.PENDING_SAVE_UNKNOWN_REQUEST, cr.requestId(), null,
                            "build_connector_meta raises KeyError: a request scheduled with new blocks (a later chunk of a "
                                    + "request without a pending save, a resumed or a non-disagg request)");
                    metaRaised(c, e);
                    return;
                }
                BlockGroups updated = c.on(Switch.PENDING_SAVE_PER_GROUP_APPEND)
                        ? pending.blocks().appendPerGroup(cr.newBlockIds())
                        : BlockGroups.concatFlat(pending.blocks().first(), cr.newBlockIds().first());
                s.scheduler.reqsNeedPendingSave.put(cr.requestId(), new Stage(pending.req(), updated));
                if (covered(c, updated) >= pending.req().numPromptTokens) {
                    KvTransferParams kv = metaParams(c, pending.req(), s.scheduler.reqKvParams.remove(cr.requestId()));
                    ReqMeta m = addNewReq(c, pending.req(), cr.requestId(), updated, kv, true);
                    if (m == null) {
                        metaRaised(c, e);
                        return;
                    }
                    save.add(m);
                    s.scheduler.reqsNeedPendingSave.remove(cr.requestId());
                    c.phase(pending.req(), RequestPhase.PREFILLING, "final chunk: save staged for the worker");
                }
            }
        }
        for (RequestSlots.Slot en = s.scheduler.reqsNeedRecv.first(); en != null; en = s.scheduler.reqsNeedRecv.next(en)) {
            Stage st = s.scheduler.reqsNeedRecv.get(en);
            KvTransferParams kv = metaParams(c, st.req(), s.scheduler.reqKvParams.get(en));
            ReqMeta m = addNewReq(c, st.req(), en.rid, st.blocks(), kv, false);
            if (m == null) {
                metaRaised(c, e);
                return;
            }
            putMeta(recv, m);
        }
        for (RequestSlots.Slot en = s.scheduler.reqsNeedSave.first(); en != null; en = s.scheduler.reqsNeedSave.next(en)) {
            Stage st = s.scheduler.reqsNeedSave.get(en);
            KvTransferParams kv = metaParams(c, st.req(), s.scheduler.reqKvParams.get(en));
            if (st.req().numPromptTokens > covered(c, st.blocks())) {
                s.scheduler.reqsNeedPendingSave.put(en, st);
                if (st.req().phase.terminal()) {
                    c.anomaly(AnomalyKind.PENDING_SAVE_LEAK, en.rid, tid(st.req()), "a finished request's save moved to pending; it is never removed"
                            + pendingSaveLeakWhose(c));
                } else if (c.cfg.isProducer()) {
                    c.phase(st.req(), RequestPhase.PENDING_SAVE, "prompt not covered yet (chunked prefill)");
                }
                continue;
            }
            ReqMeta m = addNewReq(c, st.req(), en.rid, st.blocks(), kv, true);
            if (m == null) {
                metaRaised(c, e);
                return;
            }
            save.add(m);
        }
        List<String> toSend;
        if (s.scheduler.reqsNeedSend.isEmpty()) {
            toSend = List.of(); // rebinding an empty dict to a new empty one changes nothing
        } else {
            toSend = new ArrayList<>(s.scheduler.reqsNeedSend.size());
            for (RequestSlots.Slot en = s.scheduler.reqsNeedSend.first(); en != null; en = s.scheduler.reqsNeedSend.next(en)) {
                toSend.add(en.rid);
            }
            s.scheduler.reqsNeedSend.clear(); // as rebinding to a new dict: nothing else holds the old one
        }
        if (!s.scheduler.reqsNeedRecv.isEmpty()) {
            for (RequestSlots.Slot en = s.scheduler.reqsNeedRecv.first(); en != null; en = s.scheduler.reqsNeedRecv.next(en)) {
                s.scheduler.reqKvParams.remove(en);
            }
            s.scheduler.reqsNeedRecv.clear();
        }
        if (!s.scheduler.reqsNeedSave.isEmpty()) {
            for (RequestSlots.Slot en = s.scheduler.reqsNeedSave.first(); en != null; en = s.scheduler.reqsNeedSave.next(en)) {
                if (!s.scheduler.reqsNeedPendingSave.has(en)) {
                    s.scheduler.reqKvParams.remove(en);
                }
            }
            s.scheduler.reqsNeedSave.clear();
        }
        refreshMetaMapping(s);
        s.worker.bindMetadata(recv, save, s.scheduler.metaMapping);
        c.emit(new Effect.MetadataBuilt(e.step(), recv, save, toSend, s.scheduler.metaMapping.size()));
    }

    /**
     * vLLM 239b5ff30's WRITE consumer: every request in {@code scheduled_new_reqs} goes to
     * {@code reqs_to_recv} ({@code add_new_req} with its group 0 and the kv_transfer_params of its
     * sampling params, {@code {}} when it has none). Returns false where that raises.
     */
    private static boolean recvNewRequests(Ctx c, NodeEvent.StepScheduled e, List<ReqMeta> recv) {
        if (e.scheduledNewReqs() == null) {
            c.anomaly(AnomalyKind.INPUT_NOT_RECORDED, null, null, "step " + e.step() + ": scheduled_new_reqs, from which "
                    + "this connector builds reqs_to_recv, was not recorded; the step's receives are not known");
            return true;
        }
        for (NodeEvent.NewRequest nr : e.scheduledNewReqs()) {
            KvTransferParams kv = c.metaParams().parseInto(nr.params() == null ? NO_PARAMS : nr.params(), null);
            if (nr.blockIds() == null || nr.blockIds().size() == 0) {
                c.anomaly(AnomalyKind.META_PARAM_MISSING, nr.requestId(), null, "list(new_req.block_ids)[0] raises IndexError");
                return false;
            }
            ReqMeta m = addNewReq(c, c.s.requests.get(nr.requestId()), nr.requestId(), nr.blockIds().firstOnly(), kv, false);
            if (m == null) {
                return false;
            }
            putMeta(recv, m);
        }
        return true;
    }

    /** {@code meta.reqs_to_recv[rid] = ...}: a request already there is replaced in place. */
    private static void putMeta(List<ReqMeta> metas, ReqMeta m) {
        for (int i = 0; i < metas.size(); i++) {
            if (metas.get(i).requestId().equals(m.requestId())) {
                metas.set(i, m);
                return;
            }
        }
        metas.add(m);
    }

    /**
     * {@code build_connector_meta} raised (the anomaly is already recorded): no metadata reaches
     * the worker this step, and the staging tables stay as the unwound Python left them.
     */
    private static void metaRaised(Ctx c, NodeEvent.StepScheduled e) {
        NodeState s = c.s;
        s.worker.bindNoMetadata();
        c.emit(new Effect.MetadataBuilt(e.step(), List.of(), List.of(), List.of(), s.scheduler.metaMapping.size()));
    }

    private static void refreshMetaMapping(NodeState s) {
        if (s.scheduler.metaMappingVersion != s.scheduler.mappingVersion) {
            // The worker's copy of the map: a snapshot, as when the metadata crosses to the
            // worker process. Copied only when the map changed since the last step's snapshot.
            s.scheduler.metaMapping = MappingSnapshot.of(s.scheduler.transferIdToRequestId);
            s.scheduler.metaMappingVersion = s.scheduler.mappingVersion;
        }
    }

    /** Params that no request carries ({@code {}}): never written. */
    private static final KvParams NO_PARAMS = KvParams.empty();

    /**
     * The params {@code add_new_req} reads for a staged request: its snapshot when one was taken,
     * else its live params ({@code {}} when it has none). A snapshot that is still the very map
     * the live params hold (nothing was written since) is read from the live params' fields;
     * another is parsed into the context's reused instance, valid until the next call.
     */
    private static KvTransferParams metaParams(Ctx c, Req req, KvParams snapshot) {
        KvTransferParams live = req == null ? null : req.params;
        if (snapshot == null) {
            return live != null ? live : c.metaParams().parseInto(NO_PARAMS, null);
        }
        if (live != null && live.raw() == snapshot) {
            return live;
        }
        return c.metaParams().parseIntoLike(snapshot, live);
    }

    /** Tokens covered by the blocks: the coverage group's length times its block size. */
    private static long covered(Ctx c, BlockGroups blocks) {
        int g = c.on(Switch.CHUNK_COVERAGE_FULL_ATTN_GROUP) ? c.s.coverageGroup : 0;
        int len = blocks.size() > g ? blocks.group(g).length : 0;
        return (long) len * c.s.coverageBlockSize;
    }

    /**
     * {@code add_new_req} ({@code MoRIIOConnectorMetadata}, the same in the seed and the newest
     * common), in the order the Python code evaluates it: {@code transfer_id} by key (KeyError),
     * the peer address (the request-id address first, the explicit params as fallback;
     * ValueError), {@code multi_pod_hosts} = {@code remote_hosts or [remote_host]},
     * {@code remote_dp_size_local} = {@code int(params.get("remote_dp_size_local",
     * params.get("remote_dp_size", 1)))} (0, the external-DP sentinel, stays 0; None or a
     * non-numeric value raises), {@code remote_block_ids} by key (KeyError),
     * {@code remote_engine_id} as given (None when absent; never synthesized), the remote TP size
     * {@code int(remote_tp_size or tp_size or 0)}.
     *
     * @return the entry, or {@code null} with a named anomaly where the Python code raises
     */
    static ReqMeta addNewReq(Ctx c, Req req, String rid, BlockGroups local, KvTransferParams kv, boolean writeMode) {
        if (!kv.hasTransferId()) {
            c.anomaly(AnomalyKind.META_PARAM_MISSING, rid, null,
                    "kv_transfer_params['transfer_id'] raises KeyError in add_new_req ("
                            + (writeMode ? "reqs_to_save" : "reqs_to_recv") + ")");
            return null;
        }
        TransferId transferId = kv.transferId();
        String tidString = transferId.asString();
        if (c.on(Switch.META_WITHOUT_ROUTING_FIELDS)) {
            return addNewReqWithoutRouting(c, req, rid, local, kv, writeMode, transferId, tidString);
        }
        String host;
        int hs;
        int np;
        var parsed = peer(c, req, rid, writeMode);
        if (parsed != null) {
            if (!parsed.isOk()) {
                c.anomaly(AnomalyKind.META_ADDRESS_UNRESOLVED, rid, tidString, parsed.error());
                return null;
            }
            host = parsed.value().host();
            hs = parsed.value().handshakePort();
            np = parsed.value().notifyPort();
        } else {
            String h = kv.remoteHostIfTrue();
            Long hsv = kv.remoteHandshakePortInt();
            Long npv = kv.remoteNotifyPortInt();
            if (h == null || hsv == null || npv == null) {
                c.anomaly(AnomalyKind.META_ADDRESS_UNRESOLVED, rid, tidString,
                        "no zmq_address in the request id and remote_host/remote_handshake_port/remote_notify_port incomplete");
                return null;
            }
            host = h;
            hs = (int) (long) hsv;
            np = (int) (long) npv;
        }
        List<String> pods;
        if (!kv.remoteHostsTrue()) {
            // [remote_host]: one immutable list per peer host, shared by its requests' metadata
            NodeState s = c.s;
            if (s.scheduler.lastPodsHost != host || s.scheduler.lastPods == null) {
                s.scheduler.lastPods = List.of(host);
                s.scheduler.lastPodsHost = host;
            }
            pods = s.scheduler.lastPods;
        } else if (kv.remoteHostList() instanceof List<String> l) {
            pods = l;
        } else {
            pods = List.of(kv.remoteHostsText());
        }
        Long dpLocal = kv.hasRemoteDpSizeLocal() ? kv.remoteDpSizeLocalInt()
                : kv.hasRemoteDpSize() ? kv.remoteDpSizeInt() : Long.valueOf(1);
        if (dpLocal == null) {
            boolean sizeLocal = kv.hasRemoteDpSizeLocal();
            c.anomaly(AnomalyKind.PARAM_NOT_AN_INT, rid, tidString, "add_new_req: int("
                    + (sizeLocal ? kv.remoteDpSizeLocalText() : kv.remoteDpSizeText()) + ") for remote_dp_size_local raises "
                    + (sizeLocal ? kv.remoteDpSizeLocalIntError() : kv.remoteDpSizeIntError()));
            return null;
        }
        if (!kv.hasRemoteBlockIds()) {
            c.anomaly(AnomalyKind.META_PARAM_MISSING, rid, tidString,
                    "kv_transfer_params['remote_block_ids'] raises KeyError in add_new_req ("
                            + (writeMode ? "reqs_to_save" : "reqs_to_recv") + ")");
            return null;
        }
        // converted once per params (the receive that staged them converted them already)
        BlockGroups remote = kv.remoteBlockGroups();
        String engineId = kv.remoteEngineIdStr();
        // int(remote_tp_size or tp_size or 0)
        boolean remoteTpGiven = kv.remoteTpSizeTrue();
        boolean ownTpGiven = !remoteTpGiven && kv.tpSizeTrue();
        Long tp = remoteTpGiven ? kv.remoteTpSizeInt() : ownTpGiven ? kv.tpSizeInt() : Long.valueOf(0);
        if (tp == null) {
            c.anomaly(AnomalyKind.PARAM_NOT_AN_INT, rid, tidString, "add_new_req: int("
                    + (remoteTpGiven ? kv.remoteTpSizeText() : kv.tpSizeText()) + ") for the remote TP size raises ValueError");
            return null;
        }
        Long dpRankValue = kv.remoteDpRankTrue() ? kv.remoteDpRankInt() : null;
        int dpRank = dpRankValue == null ? 0 : (int) (long) dpRankValue;
        // kv_transfer_params.get("remote_dp_size", 1): only an absent key defaults; a present 0 stays 0
        Long dpSizeValue = kv.hasRemoteDpSize() ? kv.remoteDpSizeInt() : null;
        int dpSize = dpSizeValue == null ? 1 : (int) (long) dpSizeValue;
        return new ReqMeta(rid, local, remote, engineId, host, hs, np, dpRank, dpSize, (int) (long) dpLocal,
                (int) (long) tp, transferId, pods, writeMode);
    }

    /**
     * {@code add_new_req} of vLLM 239b5ff30 after its {@code transfer_id}: host and ports only from
     * the request id (ValueError without them), {@code remote_block_ids} and
     * {@code remote_engine_id} required (KeyError), {@code tp_size} and {@code remote_dp_size}
     * read with default 1; its ReqMeta has no DP rank, local DP size or pod hosts (recorded as not
     * compared).
     */
    private static ReqMeta addNewReqWithoutRouting(Ctx c, Req req, String rid, BlockGroups local, KvTransferParams kv,
            boolean writeMode, TransferId transferId, String tidString) {
        var parsed = peer(c, req, rid, writeMode);
        if (parsed == null || !parsed.isOk()) {
            c.anomaly(AnomalyKind.META_ADDRESS_UNRESOLVED, rid, tidString, parsed == null
                    ? "Cannot parse peer zmq_address from request_id (ValueError in add_new_req)" : parsed.error());
            return null;
        }
        for (String key : new String[] {"remote_block_ids", "remote_engine_id"}) {
            if (key.equals("remote_block_ids") ? !kv.hasRemoteBlockIds() : !kv.hasRemoteEngineId()) {
                c.anomaly(AnomalyKind.META_PARAM_MISSING, rid, tidString, "kv_transfer_params['" + key
                        + "'] raises KeyError in add_new_req (" + (writeMode ? "reqs_to_save" : "reqs_to_recv") + ")");
                return null;
            }
        }
        String engineId = kv.remoteEngineIdStr();
        Long tp = kv.hasTpSize() ? kv.tpSizeInt() : Long.valueOf(1);
        Long dpSize = kv.hasRemoteDpSize() ? kv.remoteDpSizeInt() : Long.valueOf(1);
        return new ReqMeta(rid, local, kv.remoteBlockGroups(),
                engineId, parsed.value().host(),
                parsed.value().handshakePort(), parsed.value().notifyPort(), 0, dpSize == null ? 0 : (int) (long) dpSize,
                0, tp == null ? 0 : (int) (long) tp, transferId, List.of(), writeMode);
    }

    // ------------------------------------------------------------------ answers vLLM acted on

    /**
     * Drive mode took {@code get_num_new_matched_tokens}' answer from the inner connector: the
     * reducer's own answer (the {@code MatchedTokens} among the effects from {@code from}) must be
     * the one vLLM acted on, or the two are named {@link AnomalyKind#DRIVE_ANSWER_DIVERGED}.
     */
    static void actedMatched(Ctx c, NodeEvent.MatchedTokensQueried e, int from) {
        NodeEvent.MatchedAnswer acted = e.acted();
        Effect.MatchedTokens mine = null;
        for (int i = from; i < c.out.size(); i++) {
            if (c.out.get(i) instanceof Effect.MatchedTokens m) {
                mine = m;
            }
        }
        if (mine != null && acted.numTokens() != null && acted.numTokens() == mine.count()
                && acted.loadAsync() == mine.loadAsync()) {
            return;
        }
        c.anomaly(AnomalyKind.DRIVE_ANSWER_DIVERGED, e.requestId(), null, "get_num_new_matched_tokens: vLLM acted on ("
                + (acted.numTokens() == null ? "None" : acted.numTokens()) + ", " + py(acted.loadAsync())
                + ") from the inner connector; this node answers "
                + (mine == null ? "nothing" : "(" + mine.count() + ", " + py(mine.loadAsync()) + ")"));
    }

    /**
     * Drive mode took {@code request_finished}' answer from the inner connector: the reducer's own
     * {@code FinishDecision} must have the same {@code delay_free} and the same params, key for key
     * (the decode leg acts on every key: the address it dials, the blocks it reads, the transfer
     * id), or the two are named {@link AnomalyKind#DRIVE_ANSWER_DIVERGED}.
     */
    static void actedFinished(Ctx c, NodeEvent.RequestFinished e, int from) {
        NodeEvent.FinishAnswer acted = e.acted();
        Effect.FinishDecision mine = null;
        for (int i = from; i < c.out.size(); i++) {
            if (c.out.get(i) instanceof Effect.FinishDecision d) {
                mine = d;
            }
        }
        if (mine != null && mine.delayFree() == acted.delayFree() && java.util.Objects.equals(mine.params(), acted.params())) {
            return;
        }
        String what;
        if (mine == null) {
            what = "nothing";
        } else if (mine.delayFree() != acted.delayFree()) {
            what = "delay_free=" + py(mine.delayFree());
        } else {
            what = "delay_free=" + py(mine.delayFree()) + " with other params: " + paramsDiff(acted.params(), mine.params());
        }
        String rid = mine != null && mine.requestId() != null ? mine.requestId() : e.requestId();
        String tid = mine != null && mine.params() != null && mine.params().get("transfer_id") instanceof String t ? t : null;
        c.anomaly(AnomalyKind.DRIVE_ANSWER_DIVERGED, rid, tid, "request_finished: vLLM acted on delay_free="
                + py(acted.delayFree()) + " from the inner connector; this node answers " + what);
    }

    /**
     * Drive mode kept the inner connector's rewrite of a producer's {@code finished_sending} (the
     * requests whose blocks vLLM frees now): the reducer's own ({@code FinishedSendingRewritten}
     * among the effects from {@code from}; a node that rewrites nothing leaves the set as it came)
     * must hold the same requests, in any order, or each request in one and not the other is named
     * {@link AnomalyKind#DRIVE_ANSWER_DIVERGED}: one vLLM freed that this node still holds, or one
     * this node frees that vLLM still holds.
     */
    static void actedFreed(Ctx c, NodeEvent.ConnectorOutputReceived e, int from) {
        List<String> mine = e.finishedSending();
        Map<String, String> surfacedTid = Map.of();
        for (int i = from; i < c.out.size(); i++) {
            if (c.out.get(i) instanceof Effect.FinishedSendingRewritten f) {
                mine = f.safe();
            } else if (c.out.get(i) instanceof Effect.AckSurfaced a && a.transferId() != null) {
                if (surfacedTid.isEmpty()) {
                    surfacedTid = new LinkedHashMap<>();
                }
                surfacedTid.put(a.requestId(), a.transferId());
            }
        }
        List<String> acted = e.acted().finishedSending();
        Set<String> vllm = acted == null ? Set.of() : new LinkedHashSet<>(acted);
        Set<String> node = mine == null ? Set.of() : new LinkedHashSet<>(mine);
        if (vllm.equals(node)) {
            return;
        }
        for (String rid : vllm) {
            if (!node.contains(rid)) {
                c.anomaly(AnomalyKind.DRIVE_ANSWER_DIVERGED, rid, c.s.scheduler.requestIdToTransferId.get(rid),
                        "update_connector_output: vLLM freed its blocks (the inner connector's finished_sending); "
                                + "this node does not surface it this step");
            }
        }
        for (String rid : node) {
            if (!vllm.contains(rid)) {
                c.anomaly(AnomalyKind.DRIVE_ANSWER_DIVERGED, rid, surfacedTid.get(rid),
                        "update_connector_output: this node surfaces it (frees its blocks); vLLM kept them "
                                + "(the inner connector's finished_sending leaves it out)");
            }
        }
    }

    private static String py(boolean b) {
        return b ? "True" : "False";
    }

    /** The keys whose values differ, as {@code key: acted != node's} (sorted by key). */
    private static String paramsDiff(KvParams acted, KvParams mine) {
        if (acted == null || mine == null) {
            return (acted == null ? "None" : "a dict") + " != " + (mine == null ? "None" : "a dict");
        }
        java.util.TreeSet<String> keys = new java.util.TreeSet<>(acted.asMap().keySet());
        keys.addAll(mine.asMap().keySet());
        StringBuilder b = new StringBuilder();
        for (String k : keys) {
            boolean a = acted.asMap().containsKey(k);
            boolean m = mine.asMap().containsKey(k);
            Object av = acted.asMap().get(k);
            Object mv = mine.asMap().get(k);
            if (a != m || !java.util.Objects.equals(av, mv)) {
                b.append(b.isEmpty() ? "" : ", ").append(k).append(": ").append(a ? String.valueOf(av) : "absent")
                        .append(" != ").append(m ? String.valueOf(mv) : "absent");
            }
        }
        return b.toString();
    }

    // ------------------------------------------------------------------ request_finished

    static void finished(Ctx c, NodeEvent.RequestFinished e) {
        NodeState s = c.s;
        Req r = s.requests.get(e.requestId());
        if (r == null) {
            r = renamedAtFinish(c, e);
        }
        if (r == null) {
            c.anomaly(AnomalyKind.REQUEST_UNKNOWN, e.requestId(), null, "request_finished");
            c.emit(new Effect.FinishDecision(e.requestId(), false, null));
            return;
        }
        String rid = r.requestId;
        BlockGroups blocks = e.blockIds();
        if (!c.on(Switch.CONNECTOR_SUPPORTS_HMA) && blocks.size() > 1) {
            c.anomaly(AnomalyKind.HMA_MULTI_GROUP_ASSERT, rid, tid(r), blocks.size() + " groups passed to a non-HMA connector");
            blocks = blocks.firstOnly();
        }
        KvTransferParams params = r.params;
        boolean consumerOnly = !c.on(Switch.FINISH_UNMAP_EVERY_ROLE);
        if (!consumerOnly) {
            unmap(c, r.slot, rid, null); // 239b5ff30: every role, by the request id only
        }
        if (!c.cfg.isProducer()) {
            String t = params != null ? params.transferId().asString() : null;
            if (consumerOnly) {
                unmap(c, r.slot, rid, t);
            }
            if (s.worker.recvingTransfers().containsKey(rid)) {
                c.anomaly(AnomalyKind.FREE_WHILE_TRANSFER_IN_FLIGHT, rid, t,
                        "request finished while its READ is still in flight; its blocks return to the pool");
            }
            if (s.worker.dropRecvAwaitingHandshake(rid)) {
                c.anomaly(AnomalyKind.HANDSHAKE_FAILED, rid, t,
                        "request finished before the handshake its read waited for completed; no release will be sent");
            }
        }
        if (s.scheduler.reqsNeedPendingSave.has(r.slot)) {
            c.anomaly(AnomalyKind.PENDING_SAVE_LEAK, rid, tid(r),
                    "finished with a chunked-prefill save still pending; the entry is never removed" + pendingSaveLeakWhose(c));
        }
        if (params == null || params.isEmpty()) {
            c.emit(new Effect.FinishDecision(rid, false, null));
            finishNow(c, r, RequestPhase.FINISHED, "finished; no kv_transfer_params");
            return;
        }
        if (params.doRemotePrefill()) {
            boolean writeRelease = c.cfg.mode() == TransferMode.WRITE && !c.on(Switch.WRITE_ABORT_STAGES_RECV);
            if (writeRelease && !releaseWritePrefillBlocks(c, r, params)) {
                // the release raised TypeError: do_remote_prefill stays set
                c.emit(new Effect.FinishDecision(rid, false, null));
                finishNow(c, r, RequestPhase.ABORTED_BEFORE_ALLOC, "finished before allocation; the release raised (TypeError)");
                return;
            }
            if (!writeRelease) {
                BlockGroups empty;
                if (!c.on(Switch.READ_ABORT_RECV_BLOCKS_SHAPE)) {
                    empty = BlockGroups.single();
                } else if (s.hybrid) {
                    // 3c201bf2: the allocated attention blocks and the mamba slots, as they are
                    empty = blocks.select(recvGroupIndices(s));
                } else {
                    empty = BlockGroups.empty(s.transferGroups.length);
                }
                s.scheduler.reqsNeedRecv.put(r.slot, new Stage(r, empty));
            }
            params.clearRemotePrefill();
            c.emit(new Effect.FinishDecision(rid, false, null));
            finishNow(c, r, RequestPhase.ABORTED_BEFORE_ALLOC, writeRelease
                    ? "finished before allocation; release sent to the producer"
                    : "finished before allocation; release staged for the worker");
            return;
        }
        if (!params.doRemoteDecode() || e.status() != FinishStatus.FINISHED_LENGTH_CAPPED) {
            c.emit(new Effect.FinishDecision(rid, false, null));
            leakCheck(c, r);
            finishNow(c, r, RequestPhase.FINISHED, params.doRemoteDecode()
                    ? "finished not length-capped; freed now" : "finished; no remote decode");
            return;
        }
        Object remoteValue;
        boolean delay;
        if (!c.on(Switch.REMOTE_BLOCK_IDS_GROUPED) && !c.on(Switch.FINISH_ALL_GROUPS_ENTRY)) {
            int[] flat = blocks.first();
            remoteValue = BlockGroups.flatValue(flat);
            delay = flat.length > 0;
        } else {
            BlockGroups groups;
            if (s.hybrid && c.on(Switch.REMOTE_BLOCK_IDS_HYBRID_LAYOUT)) {
                if (s.mambaGroups.length == 0 || blocks.size() <= s.mambaGroups[0]) {
                    c.anomaly(AnomalyKind.HYBRID_FINISH_WITHOUT_MAMBA, rid, tid(r), "no mamba groups in the finished blocks");
                    c.emit(new Effect.FinishDecision(rid, false, null));
                    finishNow(c, r, RequestPhase.FINISHED, "finished; hybrid completion raised (MoRIIOError)");
                    return;
                }
                groups = blocks.select(recvGroupIndices(s));
            } else {
                int[] idx = blocks.size() == 1 ? new int[] {0} : s.transferGroups;
                groups = blocks.select(idx);
                if (c.on(Switch.REMOTE_BLOCK_IDS_SWA_CLIPPED) && s.hmaActive) {
                    for (int g = 0; g < groups.size(); g++) {
                        int keep = idx[g] < s.swaKeep.length ? s.swaKeep[idx[g]] : 0;
                        groups = groups.withGroup(g, BlockGroups.tail(groups.group(g), keep));
                    }
                }
            }
            remoteValue = c.on(Switch.REMOTE_BLOCK_IDS_GROUPED) ? groups.toGroupedValue() : BlockGroups.flatValue(groups.first());
            delay = c.on(Switch.DELAY_FREE_ANY_GROUP) ? !groups.allEmpty() : groups.first().length > 0;
        }
        // the returned dict is plain Python values, as every key of it: the id's as the params held it
        Object tidValue = params.transferIdValue();
        String tidString = params.transferId().asString();
        if (delay && !c.cfg.isProducer()) {
            c.anomaly(AnomalyKind.CONSUMER_DEFERRED_FREE, rid, tidString,
                    "request_finished on a consumer returned delay_free=True (do_remote_decode on a decode leg?)");
        }
        if (delay) {
            s.scheduler.reqsNeedSend.put(r.slot, plus(c.now, READ_ABORT_REQUEST_TIMEOUT_NS));
            if (!c.on(Switch.NO_CONNECTOR_OUTPUT_HOOK)) {
                long deadline = plus(c.now, c.cfg.deferTimeoutNs());
                s.scheduler.deferredSendDeadlines.put(r.slot, new NodeState.Deferral(deadline, tidString));
                c.emit(new Effect.DeferralStarted(rid, tidString, deadline));
            }
        }
        KvParams out;
        if (!c.on(Switch.FINISH_PARAMS_SIX_KEYS)) {
            out = KvParams.ofDistinct(FINISHED_PARAM_KEYS, new Object[] {
                Boolean.TRUE, Boolean.FALSE, remoteValue, c.s.engineId, c.cfg.hostIp(), c.cfg.handshakePort(),
                c.cfg.notifyPort(), (long) c.cfg.dpRank(), Boolean.TRUE, (long) c.cfg.dpSize(), (long) c.cfg.dpSizeLocal(),
                (long) c.cfg.tpSize(), tidValue});
        } else {
            if (!params.hasTransferId()) {
                // params["transfer_id"] in the returned dict: raised after the send was staged
                c.anomaly(AnomalyKind.TRANSFER_ID_MISSING, rid, null, "request_finished");
                c.emit(new Effect.FinishDecision(rid, false, null));
                finishNow(c, r, RequestPhase.FINISHED, "finished; request_finished raised KeyError");
                return;
            }
            out = KvParams.ofDistinct(FINISHED_PARAM_KEYS_239B5FF30, new Object[] {
                Boolean.TRUE, Boolean.FALSE, remoteValue, c.s.engineId, (long) c.cfg.tpSize(), tidValue});
        }
        c.emit(new Effect.FinishDecision(rid, delay, out));
        if (delay) {
            c.phase(r, RequestPhase.DEFERRED_FREE, "finished length-capped; free deferred until ACK or defer_timeout");
        } else {
            leakCheck(c, r);
            finishNow(c, r, RequestPhase.FINISHED, "finished length-capped with no blocks; freed now");
        }
    }

    /**
     * A finish under an id the scheduler never admitted, for a request admitted under another one:
     * the id the event names as admitted, or else the one live request whose id plus vLLM's
     * input-processor suffix ({@code -<8 hex>}) is the finishing id. Upstream's connector never
     * knows the two are one request: {@code request_finished} works with the id it is given (the
     * deferral, the reap and the unmap use it) while every table filled at admission and
     * allocation (the transfer-id map, the staged saves and receives) keeps the admitted id. The
     * reducer does the same; only its own phase tracking follows the request to its new id.
     * Returns the renamed request, or null when the finish is for no live request.
     */
    private static Req renamedAtFinish(Ctx c, NodeEvent.RequestFinished e) {
        NodeState s = c.s;
        String newId = e.requestId();
        String old = e.admittedRequestId();
        if (old == null) {
            for (String rid : s.requests.keySet()) {
                if (newId.length() == rid.length() + 9 && newId.startsWith(rid)
                        && INPUT_PROCESSOR_SUFFIX.matcher(newId.substring(rid.length())).matches()) {
                    old = rid;
                    break;
                }
            }
        }
        Req r = old == null || old.equals(newId) ? null : s.requests.get(old);
        if (r == null) {
            return null;
        }
        c.anomaly(AnomalyKind.REQUEST_RENAMED_AT_FINISH, newId, tid(r), "admitted as " + old);
        s.requests.remove(old);
        s.phases.remove(old);
        r.requestId = newId;
        r.admittedAs = old;
        s.requests.put(newId, r);
        r.slot = s.slots.get(newId);
        r.phaseSeq = s.phases.putAndLocate(newId, r.phase);
        return r;
    }

    /**
     * Whose leak a {@link AnomalyKind#PENDING_SAVE_LEAK} is: the connector's own, which kvledger
     * reproduces (its state holds what MoRIIO's would), never a leak of kvledger's. In READ mode
     * only the seed stages saves (seed-vs-newest #15, {@link Switch#SAVE_STAGING_WRITE_ONLY} off)
     * and its finaliser runs only in WRITE, so every chunked prompt leaks; in WRITE a request that
     * finishes before its final chunk is never scheduled again, so its finaliser never runs.
     */
    private static String pendingSaveLeakWhose(Ctx c) {
        return c.cfg.mode() == TransferMode.READ
                ? ": a real leak of the seed connector, which kvledger reproduces (seed-vs-newest #15: the seed stages "
                        + "saves in READ mode too and finalizes them only in WRITE; newest stages none in READ)"
                : ": a real leak of the connector, which kvledger reproduces (MoRIIO finalizes a pending save only when "
                        + "the request is scheduled again, and a finished request is not)";
    }

    /** A producer's mapping is only removed by update_connector_output: one freed here leaks. */
    private static void leakCheck(Ctx c, Req r) {
        if (c.cfg.isProducer() && c.s.scheduler.requestIdToTransferId.has(r.slot)) {
            c.anomaly(AnomalyKind.MAPPING_LEAK, r.requestId, c.s.scheduler.requestIdToTransferId.get(r.slot),
                    "freed without a deferral: the transfer-id mapping stays (class 35)");
        }
    }

    private static void finishNow(Ctx c, Req r, RequestPhase phase, String reason) {
        c.phase(r, phase, reason);
        c.free(r);
    }

    /** Whether Python arithmetic takes this params value as a number (int, bool, float). */
    /**
     * {@code _release_write_prefill_blocks}: explicit params first, then the request id. Returns
     * false when Python raises (a {@code remote_dp_rank} that is no number, in the port arithmetic).
     */
    private static boolean releaseWritePrefillBlocks(Ctx c, Req r, KvTransferParams params) {
        TransferId transferId = params.transferId();
        if (transferId.isNone()) {
            c.anomaly(AnomalyKind.RELEASE_NOT_SENT, r.requestId, null, "missing transfer_id");
            return true;
        }
        Long rankV = params.remoteDpRankOrZeroInt();
        int remoteDpRank = rankV == null ? 0 : (int) (long) rankV;
        String host = params.remoteHostStr();
        String h;
        Long p;
        if (host == null || params.remoteNotifyPortNone()) {
            var parsed = peer(c, r, r.requestId, false);
            if (parsed == null || !parsed.isOk()) {
                c.anomaly(AnomalyKind.RELEASE_NOT_SENT, r.requestId, transferId.pythonStr(),
                        "missing remote notify address");
                return true;
            }
            h = parsed.value().host();
            p = (long) parsed.value().notifyPort();
        } else {
            h = host;
            p = params.remoteNotifyPortInt();
            if (p == null) {
                c.anomaly(AnomalyKind.RELEASE_NOT_SENT, r.requestId, transferId.pythonStr(),
                        "remote_notify_port " + params.remoteNotifyPortText() + " is not an int (ValueError)");
                return true;
            }
        }
        if (!params.remoteDpRankIsNumber()) {
            c.anomaly(AnomalyKind.PARAM_NOT_AN_INT, r.requestId, transferId.pythonStr(), "request_finished: remote_dp_rank "
                    + params.remoteDpRankOrZeroText() + " in the release's port arithmetic raises TypeError");
            return false;
        }
        for (int tpIndex = 0; tpIndex < c.cfg.tpSize(); tpIndex++) {
            c.emit(new Effect.SendRelease(Effect.Sender.SCHEDULER, h, (int) (long) p + PortMath.portOffset(remoteDpRank, tpIndex),
                    transferId, c.cfg.tpSize()));
        }
        return true;
    }

    // ------------------------------------------------------------------ update_connector_output

    static void connectorOutput(Ctx c, NodeEvent.ConnectorOutputReceived e) {
        NodeState s = c.s;
        if (!c.cfg.isProducer()) {
            if (e.finishedRecving() != null) {
                for (String rid : e.finishedRecving()) {
                    Req r = s.requests.get(rid);
                    if (r == null) {
                        c.anomaly(AnomalyKind.FINISHED_RECVING_UNEXPECTED, rid, null,
                                "the scheduler no longer holds this request (assert req_id in self.requests)");
                    } else if (r.recvDone || r.phase != RequestPhase.WAITING_FOR_REMOTE_KVS) {
                        c.anomaly(AnomalyKind.FINISHED_RECVING_UNEXPECTED, rid, tid(r),
                                "request is " + r.phase + (r.recvDone ? " and already received its KV" : ""));
                    } else {
                        r.recvDone = true;
                        c.phase(r, RequestPhase.KV_RECEIVED, "in finished_recving");
                    }
                }
            }
            return;
        }
        if (c.on(Switch.NO_CONNECTOR_OUTPUT_HOOK)) {
            passThrough(c, e);
            return;
        }
        // set(finished_sending or ()): a one-element list needs no de-duplication. The tables
        // below are allocated only when something goes into them (most steps surface nothing).
        List<String> sending = e.finishedSending();
        java.util.Collection<String> incoming = sending == null || sending.size() <= 1
                ? (sending == null ? List.of() : sending)
                : new LinkedHashSet<>(sending);
        long now = c.now;
        Surfacing safe = null;
        for (String rid : incoming) {
            RequestSlots.Slot sl = s.slots.get(rid);
            if (s.scheduler.deferredSendDeadlines.has(sl)) {
                if (safe == null) {
                    safe = new Surfacing();
                }
                safe.putIfAbsent(rid, Effect.SurfaceReason.ACKED); // incoming ids are distinct: a put
            } else if (!s.scheduler.pendingSentAcks.has(sl)) {
                long deadline = plus(now, c.cfg.deferTimeoutNs());
                s.scheduler.pendingSentAcks.put(rid, deadline);
                c.emit(new Effect.AckParked(rid, deadline));
                if (s.scheduler.reapedRequests.contains(rid)) {
                    c.anomaly(AnomalyKind.REAP_THEN_LATE_ACK, rid, null,
                            "ACK arrived after the request was reaped; its blocks may already hold another request's KV");
                } else {
                    c.anomaly(AnomalyKind.EARLY_ACK_PARKED, rid, s.scheduler.requestIdToTransferId.get(rid),
                            "ACK before request_finished");
                }
            }
        }
        if (!s.scheduler.pendingSentAcks.isEmpty()) {
            for (RequestSlots.Slot p = s.scheduler.pendingSentAcks.first(); p != null; p = s.scheduler.pendingSentAcks.next(p)) {
                if (s.scheduler.deferredSendDeadlines.has(p)) {
                    if (safe == null) {
                        safe = new Surfacing();
                    }
                    safe.putIfAbsent(p.rid, Effect.SurfaceReason.PARKED_ACK_RELEASED);
                }
            }
        }
        // (none past its deadline when the earliest is not: no walk over every deferral each step)
        if (!c.on(Switch.HOLD_UNTIL_REAL_ACK) && !s.scheduler.deferredSendDeadlines.isEmpty()
                && now >= s.scheduler.deferredSendDeadlines.earliestDeadline()) {
            // expired is every deferral past its deadline, whether or not its ACK is in SAFE
            // already: upstream's "Reaped %d deferred sends" warning counts len(expired).
            List<String> expired = List.of();
            for (RequestSlots.Slot d = s.scheduler.deferredSendDeadlines.first(); d != null; d = s.scheduler.deferredSendDeadlines.next(d)) {
                if (now >= s.scheduler.deferredSendDeadlines.get(d).deadlineNs()) {
                    if (expired.isEmpty()) {
                        expired = new ArrayList<>();
                    }
                    expired.add(d.rid);
                    if (safe == null) {
                        safe = new Surfacing();
                    }
                    safe.putIfAbsent(d.rid, Effect.SurfaceReason.REAPED);
                }
            }
            String count = expired.isEmpty() ? "" : " (" + expired.size() + " reaped this step)";
            for (String rid : expired) {
                String t = s.scheduler.deferredSendDeadlines.get(rid).transferId();
                if (safe.get(rid) == Effect.SurfaceReason.REAPED) {
                    c.anomaly(AnomalyKind.DEFERRAL_REAPED, rid, t, "no finished_sending after "
                            + (c.cfg.deferTimeoutNs() / 1_000_000) + " ms; blocks force-freed" + count);
                } else {
                    c.anomaly(AnomalyKind.DEFERRAL_EXPIRED_AT_ACK, rid, t, "past its deadline of "
                            + (c.cfg.deferTimeoutNs() / 1_000_000) + " ms when its ACK arrived; freed by the ACK" + count);
                }
            }
        }
        if (safe == null) {
            dropStaleAcks(c, now);
            c.emit(NOTHING_SURFACED);
            return;
        }
        List<String> surfaced = new ArrayList<>(safe.size());
        for (int k = 0; k < safe.size(); k++) {
            String rid = safe.rid(k);
            Effect.SurfaceReason reason = safe.reason(k);
            RequestSlots.Slot sl = s.slots.get(rid);
            NodeState.Deferral d = s.scheduler.deferredSendDeadlines.remove(sl);
            String transferId = d != null ? d.transferId() : null;
            s.scheduler.pendingSentAcks.remove(sl);
            unmap(c, sl, rid, transferId);
            c.emit(new Effect.AckSurfaced(rid, transferId, reason));
            surfaced.add(rid);
            Req r = s.requests.get(sl);
            if (r == null) {
                c.anomaly(AnomalyKind.FINISHED_SENDING_UNKNOWN_REQUEST, rid, transferId, "assert req_id in self.requests");
                continue;
            }
            if (reason == Effect.SurfaceReason.REAPED) {
                s.scheduler.reapedRequests.add(rid);
                c.phase(r, RequestPhase.REAPED, "reaped after defer_timeout without an ACK");
            } else {
                c.phase(r, RequestPhase.FREED_AFTER_ACK, reason == Effect.SurfaceReason.ACKED
                        ? "ACK received; blocks freed" : "parked ACK matched the deferral; blocks freed");
            }
            c.free(r);
        }
        dropStaleAcks(c, now);
        c.emit(new Effect.FinishedSendingRewritten(surfaced));
    }

    /**
     * A producer whose connector has no {@code update_connector_output} (vLLM 239b5ff30: the base's
     * does nothing): {@code finished_sending} reaches the scheduler as the worker reported it, and
     * the scheduler frees each request's blocks ({@code assert req_id in self.requests}).
     */
    private static void passThrough(Ctx c, NodeEvent.ConnectorOutputReceived e) {
        NodeState s = c.s;
        List<String> sending = e.finishedSending();
        if (sending == null || sending.isEmpty()) {
            c.emit(NOTHING_SURFACED);
            return;
        }
        List<String> surfaced = new ArrayList<>(new LinkedHashSet<>(sending));
        for (String rid : surfaced) {
            Req r = s.requests.get(rid);
            if (r == null) {
                c.anomaly(AnomalyKind.FINISHED_SENDING_UNKNOWN_REQUEST, rid, null, "assert req_id in self.requests");
                continue;
            }
            if (r.phase != RequestPhase.DEFERRED_FREE) {
                c.anomaly(AnomalyKind.FINISHED_SENDING_LIVE_REQUEST, rid, tid(r), "request is " + r.phase);
            }
            c.emit(new Effect.AckSurfaced(rid, tid(r), Effect.SurfaceReason.ACKED));
            c.phase(r, RequestPhase.FREED_AFTER_ACK, "finished_sending: blocks freed");
            c.free(r);
        }
        c.emit(new Effect.FinishedSendingRewritten(surfaced));
    }

    /**
     * {@code SAFE} of {@code update_connector_output}: request ids with the reason each surfaces,
     * in insertion order, a put of a present id leaving it as it is ({@code putIfAbsent}). Most
     * steps surface one ACK: a few entries sit in one array, searched linearly; past
     * {@value #SMALL} a {@code LinkedHashMap} from id to position takes over the search.
     */
    static final class Surfacing {
        private static final int SMALL = 8;
        private Object[] cells = new Object[4];
        private int n;
        private LinkedHashMap<String, Integer> positions;

        int size() {
            return n;
        }

        String rid(int k) {
            return (String) cells[2 * k];
        }

        Effect.SurfaceReason reason(int k) {
            return (Effect.SurfaceReason) cells[2 * k + 1];
        }

        private int indexOf(String rid) {
            if (positions != null) {
                Integer k = positions.get(rid);
                return k == null ? -1 : k;
            }
            for (int k = 0; k < n; k++) {
                if (java.util.Objects.equals(cells[2 * k], rid)) {
                    return k;
                }
            }
            return -1;
        }

        /** The reason of {@code rid}, or {@code null}. */
        Effect.SurfaceReason get(String rid) {
            int k = indexOf(rid);
            return k < 0 ? null : reason(k);
        }

        void putIfAbsent(String rid, Effect.SurfaceReason reason) {
            if (indexOf(rid) >= 0) {
                return;
            }
            if (2 * n == cells.length) {
                cells = Arrays.copyOf(cells, 2 * cells.length);
            }
            cells[2 * n] = rid;
            cells[2 * n + 1] = reason;
            n++;
            if (positions != null) {
                positions.put(rid, n - 1);
            } else if (n > SMALL) {
                positions = new LinkedHashMap<>();
                for (int k = 0; k < n; k++) {
                    positions.put(rid(k), k);
                }
            }
        }
    }

    /** Parked ACKs past their deadline that never matched a deferral are dropped. */
    private static void dropStaleAcks(Ctx c, long now) {
        NodeState s = c.s;
        if (s.scheduler.pendingSentAcks.isEmpty()) {
            return;
        }
        List<String> stale = new ArrayList<>();
        for (Map.Entry<String, Long> p : s.scheduler.pendingSentAcks.entrySet()) {
            if (now >= p.getValue()) {
                stale.add(p.getKey());
            }
        }
        for (String rid : stale) {
            s.scheduler.pendingSentAcks.remove(rid);
            c.emit(new Effect.StaleAckDropped(rid));
            c.anomaly(AnomalyKind.STALE_ACK_DROPPED, rid, null, "parked ACK never matched a deferral");
        }
    }

    // ------------------------------------------------------------------ shutdown

    /**
     * {@code shutdown()}: each cached notify socket is closed (a failure is only logged) and the
     * cache cleared. Requests still held are left as they are (the engine is going away); one
     * anomaly names them so that a hang report can say their node stopped.
     */
    static void shutDown(Ctx c, NodeEvent.ShutDown e) {
        if (e.closeFailures() != null) {
            for (String f : e.closeFailures()) {
                c.anomaly(AnomalyKind.NOTIFY_SOCKET_CLOSE_FAILED, null, null, f);
            }
        }
        if (!c.s.requests.isEmpty()) {
            StringBuilder held = new StringBuilder();
            int shown = 0;
            for (Req r : c.s.requests.values()) {
                if (shown++ == 8) {
                    held.append(", ...");
                    break;
                }
                held.append(held.isEmpty() ? "" : ", ").append(r.requestId).append(" (").append(r.phase).append(')');
            }
            c.anomaly(AnomalyKind.SHUT_DOWN_WITH_REQUESTS_HELD, null, null, c.s.requests.size() + " held: " + held);
        }
    }

    // ------------------------------------------------------------------ helpers

    private static final Object NO_PEER = new Object();

    /**
     * The peer zmq_address embedded in the request id ({@code get_peer_zmq_from_request_id} then
     * {@code parse_moriio_zmq_address}): {@code null} when the id embeds none, else the parse
     * result. Parsed once per request and direction; request ids never change.
     */
    @SuppressWarnings("unchecked")
    static io.kvledger.core.moriio.Checked<ZmqAddress> peer(Ctx c, Req r, String rid, boolean isProducer) {
        Object cached = r == null ? null : (isProducer ? r.decodePeer : r.prefillPeer);
        if (cached == null) {
            long span = RequestIds.peerZmqSpan(rid, isProducer);
            if (span < 0) {
                cached = NO_PEER;
            } else {
                // Requests from the same peers embed the same address text: the node keeps the
                // last text parsed in each direction and its (immutable) parse result.
                NodeState s = c.s;
                int from = RequestIds.spanStart(span);
                int len = RequestIds.spanEnd(span) - from;
                String last = isProducer ? s.scheduler.lastDecodePeerText : s.scheduler.lastPrefillPeerText;
                if (last != null && last.length() == len && rid.regionMatches(from, last, 0, len)) {
                    cached = isProducer ? s.scheduler.lastDecodePeer : s.scheduler.lastPrefillPeer;
                } else {
                    String text = rid.substring(from, from + len);
                    var parsed = ZmqAddress.parse(text);
                    if (isProducer) {
                        s.scheduler.lastDecodePeerText = text;
                        s.scheduler.lastDecodePeer = parsed;
                    } else {
                        s.scheduler.lastPrefillPeerText = text;
                        s.scheduler.lastPrefillPeer = parsed;
                    }
                    cached = parsed;
                }
            }
            if (r != null) {
                if (isProducer) {
                    r.decodePeer = cached;
                } else {
                    r.prefillPeer = cached;
                }
            }
        }
        return cached == NO_PEER ? null : (io.kvledger.core.moriio.Checked<ZmqAddress>) cached;
    }

    /** Saturating addition: an infinite timeout gives a deadline that never passes. */
    static long plus(long now, long timeoutNs) {
        long r = now + timeoutNs;
        return ((now ^ r) & (timeoutNs ^ r)) < 0 ? (timeoutNs > 0 ? Long.MAX_VALUE : Long.MIN_VALUE) : r;
    }

    private static String tid(Req r) {
        return r.params == null ? null : r.params.transferId().asString();
    }
}
