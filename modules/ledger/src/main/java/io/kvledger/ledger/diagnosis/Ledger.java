package io.kvledger.ledger.diagnosis;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.moriio.PortMath;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The transfer lifecycle across nodes: joins what every node of a deployment (prefill and decode
 * ranks, or a tap on their wire) saw, keyed by transfer id, so that a cross-node hang can be
 * explained in one line. Fed with each node's configuration and, in order, every event it applied
 * with the effects the node reducer produced for it (from a journal replay or a live run).
 *
 * <p>Streaming and bounded: a request that reaches a terminal phase cleanly is forgotten, as is a
 * transfer whose every leg did; only what may still need explaining is kept. Pure and
 * single-threaded like the node reducer.
 */
public final class Ledger {

    /** A phase a request left, with how long it stayed there (for latency statistics). */
    public interface PhaseListener {
        void phaseLeft(String node, String requestId, RequestPhase phase, long durationNs);
    }

    /** The detail prefix of a {@code REQUEST_RENAMED_AT_FINISH} anomaly, followed by the admitted id. */
    static final String RENAMED_PREFIX = "admitted as ";

    /** The kv_transfer_params keys add_new_req reads by key, whose presence at admission a request keeps (class 14 or 16). */
    static final List<String> META_KEYS = List.of("transfer_id", "remote_block_ids", "remote_engine_id");

    /** How many requests per multi-pod peer engine a READ consumer's view keeps (class 37 evidence). */
    static final int MAX_POD_PEER_REQUESTS = 32;

    final LinkedHashMap<String, NodeView> nodes = new LinkedHashMap<>();

    /** Nodes whose scheduler-side notifies are another node's ({@link #schedulerReplica}). */

    private final java.util.Set<String> replicas = new java.util.LinkedHashSet<>();
    final LinkedHashMap<String, TransferView> transfers = new LinkedHashMap<>();
    /** Class 6 evidence (the WRITE completion race), kept apart from the rest. */
    final WriteCompletionRace writeRace = new WriteCompletionRace();
    /** How far two nodes' stamps can be compared, measured from the notifies between them. */
    final ClockSkew clocks = new ClockSkew();
    long firstAtNs = Long.MAX_VALUE;
    long lastAtNs = Long.MIN_VALUE;
    private PhaseListener phaseListener = (n, r, p, d) -> { };

    public void onPhaseLeft(PhaseListener l) {
        this.phaseListener = l;
    }

    /**
     * Marks a node as a TP rank's worker whose scheduler side replays its DP rank's one scheduler
     * (a {@code kvledger node --engine sim-worker}): the scheduler's notifies it journals
     * ({@code remote_blocks}, the scheduler's {@code release}) were sent by TP rank 0's node, so the
     * ledger does not count them as sent by this one.
     */
    public void schedulerReplica(String node) {
        replicas.add(node);
    }

    /**
     * Marks a node's journal as a tap's ({@code kvledger tap}, the live demo's): it journals the
     * frames that crossed the tap listening at {@code tapHost:tapPort} on their way to the rank its
     * header names (its config's host and notify port). A notify sent to the tap's port is then
     * followed through it to that rank instead of being taken for one sent where nobody listens.
     */
    public void tap(String node, String tapHost, int tapPort) {
        NodeView n = nodes.get(node);
        if (n != null) {
            n.tapHost = tapHost;
            n.tapPort = tapPort;
            n.nodeAnomalies.clear(); // the startup checks of a rank's config the tap only names
        }
    }

    /**
     * Marks a node's journal as a live process's ({@code kvledger node}, a vLLM bridge recording),
     * which journals a shutdown when it stops: one that ends without it, before the other journals
     * end, is a process that died (or was still running when they were read), and its requests
     * waited only until its own journal ends.
     */
    public void liveNode(String node) {
        NodeView n = nodes.get(node);
        if (n != null) {
            n.live = true;
        }
    }

    /** Registers a node (before its events) with what its startup checks found. */
    public void nodeStarted(String node, NodeConfig config, List<Effect> startupEffects) {
        NodeView v = new NodeView(node, config);
        nodes.put(node, v);
        for (Effect e : startupEffects) {
            if (e instanceof Effect.Anomaly a) {
                v.nodeAnomalies.add(new Seen(a, Long.MIN_VALUE));
            }
        }
    }

    /** The time of the earliest and latest event seen. */
    public long firstAtNs() {
        return firstAtNs;
    }

    public long lastAtNs() {
        return lastAtNs;
    }

    /** One event a node applied, with the effects its reducer produced. */
    public void observe(String node, NodeEvent event, List<Effect> effects) {
        NodeView n = nodes.get(node);
        if (n == null) {
            throw new IllegalStateException("nodeStarted was not called for " + node);
        }
        long at = event.atNs();
        if (n.tap()) {
            // a tap's journal is what crossed it, on the tap's own clock: it says whether a frame crossed,
            // not when the nodes' journals begin and end, and what a reducer would decide from it belongs to no node
            onEvent(n, event, at);
            return;
        }
        firstAtNs = Math.min(firstAtNs, at);
        lastAtNs = Math.max(lastAtNs, at);
        n.lastAtNs = Math.max(n.lastAtNs, at);
        writeRace.observe(this, n, event, effects);
        onEvent(n, event, at);
        for (Effect e : effects) {
            onEffect(n, e, at);
        }
    }

    private void onEvent(NodeView n, NodeEvent event, long at) {
        switch (event) {
            case NodeEvent.RequestAdmitted e -> {
                ReqView r = n.request(e.requestId(), at);
                r.lastEventNs = at;
                r.promptTokens = e.numPromptTokens();
                r.promptTokenIds = e.promptTokenIds();
                KvParams p = e.params();
                if (p != null && p.get("transfer_id") instanceof String t && !t.isEmpty()) {
                    bind(n, r, t);
                }
                if (p != null && p.get("remote_host") instanceof String h && !h.isEmpty()
                        && KvParams.asLong(p.get("remote_handshake_port")) != null) {
                    r.handshakeEngine = h + ":" + KvParams.asLong(p.get("remote_handshake_port"));
                }
                if (r.handshakeEngine == null && (n.producer() == (n.config.mode() == io.kvledger.core.config.TransferMode.WRITE))) {
                    // a WRITE prefill handshakes the decode whose address its request id embeds, a READ
                    // decode the prefill whose address it embeds
                    var peer = io.kvledger.core.moriio.RequestIds.peerZmqFromRequestId(e.requestId(), n.producer())
                            .map(io.kvledger.core.moriio.ZmqAddress::parse);
                    if (peer.isPresent() && peer.get().isOk()) {
                        r.handshakeEngine = peer.get().value().host() + ":" + peer.get().value().handshakePort();
                    }
                }
                if (p != null) {
                    r.remoteDpRank = intParam(p, "remote_dp_rank", -1);
                    r.remoteDpSize = intParam(p, "remote_dp_size", -1);
                    r.remoteDpSizeLocal = intParam(p, "remote_dp_size_local", -1);
                    if (p.get("remote_hosts") instanceof List<?> hosts) {
                        for (Object o : hosts) {
                            r.remoteHosts.add(String.valueOf(o));
                        }
                    }
                    r.remoteBlocksGiven = p.get("remote_block_ids");
                    for (String key : META_KEYS) {
                        if (p.has(key)) {
                            r.admittedKeys.add(key);
                        }
                    }
                    r.disagg = p.truthy("do_remote_decode") || p.truthy("do_remote_prefill");
                    if (!n.producer() && n.config.mode() == io.kvledger.core.config.TransferMode.READ
                            && r.handshakeEngine != null && r.remoteDpSizeLocal > 0 && r.remoteDpSize > r.remoteDpSizeLocal) {
                        List<ReqView> peers = n.podPeers.computeIfAbsent(r.handshakeEngine, k -> new ArrayList<>());
                        if (peers.size() < MAX_POD_PEER_REQUESTS) {
                            peers.add(r);
                        }
                    }
                }
            }
            case NodeEvent.MatchedTokensQueried e -> {
                touch(n, e.requestId(), at);
                ReqView r = n.requests.get(e.requestId());
                if (r != null) {
                    r.lastComputedTokens = e.numComputedTokens();
                }
            }
            case NodeEvent.BlocksAllocated e -> touch(n, e.requestId(), at);
            case NodeEvent.RequestFinished e -> touch(n, e.requestId(), at);
            case NodeEvent.StepScheduled e -> {
                n.steps++;
                n.prevStepAt = n.lastStepAt;
                n.lastStepAt = at;
                if (e.cachedRequests() != null) {
                    for (NodeEvent.CachedRequest c : e.cachedRequests()) {
                        touch(n, c.requestId(), at);
                    }
                }
            }
            case NodeEvent.ConnectorOutputReceived e -> {
                touchAll(n, e.finishedSending(), at);
                touchAll(n, e.finishedRecving(), at);
            }
            case NodeEvent.RemoteBlocksReceived e -> {
                receipt(n, e.transferId(), "remote_blocks", at);
                transfer(e.transferId()).remoteBlocksAt.add(new Seen2(n.name, at, e.blockNotifyList().isEmpty()));
                touchLeg(n, e.transferId(), at);
            }
            case NodeEvent.WriteDoneReceived e -> {
                receipt(n, e.transferId(), "write_done", at);
                transfer(e.transferId()).writeDoneReceivedBy.add(n.name);
                touchLeg(n, e.transferId(), at);
            }
            case NodeEvent.ReleaseReceived e -> {
                receipt(n, e.transferId(), "release", at);
                touchLeg(n, e.transferId(), at);
                TransferView t = transfer(e.transferId());
                t.releasesReceived.merge(n.name, 1, Integer::sum);
                t.consumerTpSize = e.consumerTpSize() == null ? 1 : e.consumerTpSize();
            }
            case NodeEvent.NotifySendFailed e -> {
                if (e.transferId() != null && !e.transferId().isEmpty()) {
                    transfer(e.transferId()).sendFailures.add(new SendFailure(n.name, e.messageType(), e.endpoint(), at,
                            e.reason()));
                }
            }
            case NodeEvent.RawCompletionReceived e -> {
                if (transfers.containsKey(e.completionId())) {
                    transfer(e.completionId()).releasesReceived.merge(n.name, 1, Integer::sum);
                }
            }
            case NodeEvent.TransferCompleted e -> {
                n.postedAt.remove(e.statusId());
                String readOf = n.readStatuses.contains(e.statusId()) ? n.inFlight.get(e.statusId()) : null;
                if (readOf != null && e.succeeded()) {
                    n.readsDone.merge(readOf, 1, Integer::sum);
                    n.lastReadDoneAt.put(readOf, at);
                }
                if (e.succeeded()) {
                    n.failedSinceSuccessAt = Long.MIN_VALUE;
                } else if (n.failedSinceSuccessAt == Long.MIN_VALUE) {
                    n.failedSinceSuccessAt = at;
                    n.failedDetail = e.code() + " " + e.message();
                    n.failedTransfer = n.inFlight.get(e.statusId());
                }
                String tid = n.inFlight.remove(e.statusId());
                if (!e.succeeded() && tid != null && e.message() != null
                        && e.message().toLowerCase(java.util.Locale.ROOT).contains("sq full")) {
                    transfer(tid).sqFull.add(new SqFull(n.name, e.statusId(), at, e.code() + " " + e.message(),
                            n.readStatuses.contains(e.statusId())));
                }
                if (tid != null) {
                    touchLeg(n, tid, at);
                    TransferView t = transfers.get(tid);
                    if (t != null) {
                        t.lastCompletionAt = at;
                        t.lastCompletionNode = n.name;
                        if (!e.succeeded() && n.readStatuses.remove(e.statusId()) && t.firstFailedReadAt == Long.MIN_VALUE) {
                            t.firstFailedReadAt = at;
                            t.failedReadNode = n.name;
                            t.failedReadDetail = e.code() + " " + e.message();
                        }
                    }
                }
                n.readStatuses.remove(e.statusId());
            }
            case NodeEvent.HandshakeCompleted e -> {
                Handshake h = n.handshakes.get(e.key());
                if (h != null) {
                    h.completedAt = at;
                }
            }
            case NodeEvent.HandshakeFailed e -> {
                Handshake h = n.handshakes.computeIfAbsent(e.key(), k -> new Handshake(k, null, -1, at));
                h.failedAt = at;
                h.failReason = e.reason();
            }
            case NodeEvent.HandshakeVoted e -> n.votes.add(new Vote(e.remoteEngineId(), at, e.vote(), e.failedTpRanks()));
            case NodeEvent.ShutDown _ -> n.shutDownAt = n.shutDownAt == Long.MIN_VALUE ? at : n.shutDownAt;
            case NodeEvent.KvCachesRegistered e -> n.registered = e;
            case NodeEvent.ForwardDone e -> {
                for (String rid : e.readsPosted()) {
                    if (!n.readsAwaited.containsKey(rid) && n.readsAwaited.size() < MAX_READS_AWAITED) {
                        n.readsAwaited.put(rid, new ReadAwaited(rid, e));
                    }
                }
            }
            case NodeEvent.LoadStarted _, NodeEvent.LayerSaved _, NodeEvent.SaveWaited _, NodeEvent.FinishedPolled _, NodeEvent.FrameRejected _, NodeEvent.Tick _ -> { }
        }
        if (n.listenerDeathAt != Long.MIN_VALUE && (isFrame(event) || event instanceof NodeEvent.FrameRejected)) {
            n.framesAfterDeath++;
        }
    }

    private static boolean isFrame(NodeEvent e) {
        return e instanceof NodeEvent.RemoteBlocksReceived || e instanceof NodeEvent.WriteDoneReceived
                || e instanceof NodeEvent.ReleaseReceived || e instanceof NodeEvent.RawCompletionReceived;
    }

    private void onEffect(NodeView n, Effect effect, long at) {
        switch (effect) {
            case Effect.PhaseChanged e -> {
                ReqView r = n.request(e.requestId(), at);
                if (r.phase != null && r.sinceNs != Long.MIN_VALUE) {
                    phaseListener.phaseLeft(n.name, r.requestId, r.phase, at - r.sinceNs);
                }
                r.phase = e.to();
                r.sinceNs = at;
                r.stepsAtSince = n.steps;
                r.lastEventNs = at;
                r.reason = e.reason();
                if (e.to().terminal()) {
                    r.endedAt = at;
                    maybeForget(n, r);
                }
            }
            case Effect.DeferralStarted e -> bind(n, n.request(e.requestId(), at), e.transferId());
            case Effect.AckSurfaced e -> {
                ReqView r = n.request(e.requestId(), at);
                bind(n, r, e.transferId());
                if (e.reason() == Effect.SurfaceReason.REAPED && r.transferId != null) {
                    transfer(r.transferId).reapedOn.put(n.name, at);
                }
            }
            case Effect.Unmapped e -> {
                if (e.requestId() != null && e.transferId() != null && e.kind() != Effect.UnmapKind.MISS) {
                    bind(n, n.request(e.requestId(), at), e.transferId());
                }
            }
            case Effect.SendRemoteBlocks e -> {
                if (!replicas.contains(n.name)) {
                    send(n, e.reqId(), e.transferId().asString(), "remote_blocks", e.host(), e.port(), at, e.blockNotifyList().isEmpty());
                }
            }
            case Effect.SendRelease e -> {
                if (e.sender() == Effect.Sender.WORKER || !replicas.contains(n.name)) {
                    send(n, null, e.transferId().asString(), "release", e.host(), e.port(), at, false);
                }
            }
            case Effect.SendWriteDone e -> send(n, null, e.transferId(), "write_done", e.host(), e.port(), at, false);
            case Effect.PostRead e -> {
                touch(n, e.requestId(), at);
                if (e.transferId() != null) {
                    n.inFlight.put(e.statusId(), e.transferId());
                    n.readStatuses.add(e.statusId());
                    n.postedAt.put(e.statusId(), at);
                    n.request(e.requestId(), at).transferPosted = true;
                    TransferView tv = transfer(e.transferId());
                    tv.readsPosted++;
                    bind(n, n.request(e.requestId(), at), e.transferId());
                    if (tv.reads.stream().noneMatch(x -> x.node().equals(n.name) && x.requestId().equals(e.requestId())
                            && x.sessionKey().equals(e.sessionKey()))) {
                        tv.reads.add(new ReadPost(n.name, e.requestId(), e.sessionKey(), at, n.request(e.requestId(), at).remoteDpRank));
                    }
                }
            }
            case Effect.PostWrite e -> {
                if (e.transferId() != null) {
                    touchLeg(n, e.transferId(), at);
                    TransferView tv = transfers.get(e.transferId());
                    ReqView w = tv == null || tv.legs.get(n.name) == null ? null : n.requests.get(tv.legs.get(n.name));
                    if (w != null) {
                        w.transferPosted = true;
                    }
                    n.inFlight.put(e.statusId(), e.transferId());
                    transfer(e.transferId()).writesPosted++;
                    n.postedAt.put(e.statusId(), at);
                }
            }
            case Effect.Anomaly e -> {
                if (e.kind() == AnomalyKind.REQUEST_RENAMED_AT_FINISH && e.requestId() != null && e.detail() != null
                        && e.detail().startsWith(RENAMED_PREFIX)) {
                    rename(n, e.detail().substring(RENAMED_PREFIX.length()), e.requestId(), at);
                }
                Seen s = new Seen(e, at);
                if (e.kind() == AnomalyKind.LISTENER_WOULD_DIE_IN_PYTHON && n.listenerDeathAt == Long.MIN_VALUE) {
                    n.listenerDeathAt = at;
                    n.listenerDeath = e;
                }
                if (e.requestId() != null) {
                    ReqView r = n.request(e.requestId(), at);
                    r.anomalies.add(s);
                    if (e.transferId() != null) {
                        bind(n, r, e.transferId());
                    }
                } else if (e.transferId() != null && transfers.containsKey(e.transferId())
                        && transfers.get(e.transferId()).legs.containsKey(n.name)) {
                    ReqView r = n.requests.get(transfers.get(e.transferId()).legs.get(n.name));
                    if (r != null) {
                        r.anomalies.add(s);
                    } else {
                        n.nodeAnomalies.add(s);
                    }
                } else {
                    n.nodeAnomalies.add(s);
                }
            }
            case Effect.StartHandshake e -> {
                Handshake h = n.handshakes.get(e.key());
                if (h == null || h.completedAt != Long.MIN_VALUE) {
                    h = new Handshake(e.key(), e.host(), e.port(), at);
                    h.rank = e.remoteDpRank();
                    h.stepsAtStart = n.steps;
                    n.handshakes.put(e.key(), h);
                } else {
                    h.attempts++;
                    if (h.host == null) {
                        h.host = e.host();
                        h.port = e.port();
                    }
                }
            }
            case Effect.FinishedReported e -> {
                // a producer's worker reported these finished sending: every ACK its rank expects came
                if (e.doneSending() != null) {
                    for (String rid : e.doneSending()) {
                        ReqView r = n.requests.get(rid);
                        if (r != null && r.transferId != null) {
                            transfer(r.transferId).workerReported.putIfAbsent(n.name, at);
                        }
                    }
                }
                // a consumer's worker reported these received (WRITE: its write_done came)
                if (e.doneRecving() != null) {
                    for (String rid : e.doneRecving()) {
                        ReqView r = n.requests.get(rid);
                        if (r != null && r.transferId != null) {
                            transfer(r.transferId).workerReported.putIfAbsent(n.name, at);
                        }
                    }
                }
            }
            case Effect.MatchedTokens e -> {
                if (e.requestId() != null && !n.producer() && n.config.mode() == io.kvledger.core.config.TransferMode.READ) {
                    n.loadAsync.put(e.requestId(), e.loadAsync());
                }
            }
            case Effect.HookReply _, Effect.SendWriteFailed _, Effect.AckParked _,
                    Effect.StaleAckDropped _ -> { }
        }
    }

    /**
     * The replies a vLLM bridge worker stream recorded for one of its inputs ({@code get_finished}'s
     * {@code finished_reported}): what the real connector reported, which the reducer cannot
     * recompute from the stream. A READ consumer's {@code done_recving} is when a forward's reads
     * were first seen complete ({@code forward-before-read-complete}, class 25).
     */
    public void recorded(String node, NodeEvent event, List<? extends Effect> recorded) {
        NodeView n = nodes.get(node);
        if (n == null || n.readsAwaited.isEmpty()) {
            return;
        }
        for (Effect e : recorded) {
            if (e instanceof Effect.FinishedReported f) {
                List<String> done = f.doneRecving() == null ? List.of() : f.doneRecving();
                long at = event.atNs();
                for (var it = n.readsAwaited.values().iterator(); it.hasNext(); ) {
                    ReadAwaited r = it.next();
                    if (at < r.forward.atNs()) {
                        continue;
                    }
                    if (done.contains(r.requestId)) {
                        it.remove();
                        if (r.pollsWithout > 0 && n.readsConsumedUnfinished.size() < MAX_READS_AWAITED) {
                            r.doneAt = at;
                            n.readsConsumedUnfinished.add(r);
                        }
                    } else if (r.pollsWithout++ == 0) {
                        r.firstPollAt = at;
                    }
                }
            }
        }
    }

    /**
     * A lifecycle event of a request this ledger holds: the scheduler named it (queried, allocated,
     * scheduled, finished, reported), its phase changed, or its transfer moved (a frame for it
     * arrived, a transfer was posted or completed). Anomalies and ticks are not progress.
     */
    private static void touch(NodeView n, String rid, long at) {
        ReqView r = n.find(rid);
        if (r != null && at > r.lastEventNs) {
            r.lastEventNs = at;
        }
    }

    private static void touchAll(NodeView n, List<String> rids, long at) {
        if (rids != null) {
            for (String rid : rids) {
                touch(n, rid, at);
            }
        }
    }

    /** A lifecycle event of this node's leg of a transfer. */
    private void touchLeg(NodeView n, String tid, long at) {
        TransferView t = tid == null ? null : transfers.get(tid);
        if (t != null) {
            for (String rid : t.rids(n.name)) {
                touch(n, rid, at);
            }
        }
    }

    private void send(NodeView n, String rid, Object tidValue, String kind, String host, int port, long at, boolean empty) {
        if (!(tidValue instanceof String tid)) {
            return;
        }
        TransferView t = transfer(tid);
        t.sends.add(new Send(n.name, kind, host, port, at, empty));
        NodeView to = receiver(host, port);
        if (to != null) {
            clocks.sent(tid, kind, n.name, to.name, at);
        }
        if (rid != null) {
            bind(n, n.request(rid, at), tid);
        }
    }

    /** A notify of {@code kind} received by {@code n} (not a tap: its clock is no node's). */
    private void receipt(NodeView n, String tid, String kind, long at) {
        if (!n.tap() && tid != null && !tid.isEmpty()) {
            clocks.received(tid, kind, n.name, at);
        }
    }

    /** The journaled node a notify sent to {@code host:port} reaches, through a tap listening there if one does; or null. */
    private NodeView receiver(String host, int port) {
        for (NodeView v : nodes.values()) {
            if (v.tap() && v.tapPort == port && v.tapHost.equals(host)) {
                return listening(v.config.hostIp(), listenPort(v.config));
            }
        }
        return listening(host, port);
    }

    private NodeView listening(String host, int port) {
        for (NodeView v : nodes.values()) {
            if (!v.tap() && v.config.hostIp().equals(host) && listenPort(v.config) == port) {
                return v;
            }
        }
        return null;
    }

    private void bind(NodeView n, ReqView r, String tid) {
        if (tid == null || tid.isEmpty()) {
            return;
        }
        r.transferId = tid;
        TransferView t = transfer(tid);
        t.legs.put(n.name, r.requestId);
        t.legRids.computeIfAbsent(n.name, k -> new java.util.LinkedHashSet<>()).add(r.requestId);
    }

    /**
     * The request finished under another id than it was admitted with: its view, and its place in
     * its transfer's legs, follow it to the new id; later mentions of the old id (the worker's
     * ACK, a park) resolve to it.
     */
    private void rename(NodeView n, String oldId, String newId, long at) {
        ReqView r = n.requests.remove(oldId);
        if (r == null || n.requests.containsKey(newId)) {
            if (r != null) {
                n.requests.put(oldId, r);
            }
            return;
        }
        r.admittedAs = oldId;
        r.requestId = newId;
        r.renamedAt = at;
        n.requests.put(newId, r);
        n.aliases.put(oldId, newId);
        for (TransferView t : transfers.values()) {
            if (oldId.equals(t.legs.get(n.name))) {
                t.legs.put(n.name, newId);
            }
            java.util.LinkedHashSet<String> rids = t.legRids.get(n.name);
            if (rids != null && rids.remove(oldId)) {
                rids.add(newId);
            }
        }
    }

    private static int intParam(KvParams p, String key, int absent) {
        Long v = KvParams.asLong(p.get(key));
        return v == null ? absent : (int) (long) v;
    }

    TransferView transfer(String tid) {
        return transfers.computeIfAbsent(tid, TransferView::new);
    }

    private void maybeForget(NodeView n, ReqView r) {
        boolean clean = r.anomalies.stream().noneMatch(s -> serious(s.anomaly.kind())
                || s.anomaly.kind() == AnomalyKind.NEGATIVE_MATCHED_TOKENS
                || s.anomaly.kind() == AnomalyKind.DEFERRAL_EXPIRED_AT_ACK
                || (r.disagg && (s.anomaly.kind() == AnomalyKind.TRANSFER_ID_SYNTHESIZED
                        || s.anomaly.kind() == AnomalyKind.READ_RECV_WITHOUT_REMOTE_BLOCKS)));
        if (!clean || r.phase == RequestPhase.REAPED) {
            return;
        }
        n.requests.remove(r.requestId);
        if (r.transferId != null && CHILD_ID.matcher(r.requestId).matches()) {
            // an n > 1 child that ended cleanly: a sibling admitted later under its transfer id is class 29
            n.endedChildren.put(r.transferId, r.requestId);
        }
        if (r.transferId != null) {
            TransferView t = transfers.get(r.transferId);
            if (t != null && t.rids(n.name).stream().noneMatch(n.requests::containsKey)) {
                t.doneLegs.add(n.name);
                t.legEnds.put(n.name, r.phase + " (" + r.reason + ")");
                if (t.doneLegs.containsAll(t.legs.keySet()) && t.legs.size() >= 2 && t.reapedOn.isEmpty()
                        && t.firstFailedReadAt == Long.MIN_VALUE && t.sqFull.isEmpty()) {
                    transfers.remove(r.transferId);
                }
            }
        }
    }

    /** vLLM's id of an n > 1 child request, {@code <index>_<parent id>}. */
    static final java.util.regex.Pattern CHILD_ID = java.util.regex.Pattern.compile("(\\d+)_(.+)");

    /** How many ended n > 1 children a node remembers per transfer id (class 29 evidence). */
    static final int MAX_ENDED_CHILDREN = 4096;

    static boolean serious(AnomalyKind k) {
        return k.severity() == AnomalyKind.Severity.HANG_RISK || k.severity() == AnomalyKind.Severity.WOULD_RAISE;
    }

    /** Every node's listen address for notifies: host and base + offset(dp_local, tp), 2-argument form. */
    static int listenPort(NodeConfig c) {
        return c.notifyPortBase() + PortMath.portOffset(PortMath.foldLocalRank(c.dpRank(), c.dpSizeLocal()), c.tpRank());
    }

    /** The port the 3-argument form would give the same rank. */
    static int threeArgPort(NodeConfig c) {
        return c.notifyPortBase() + PortMath.portOffset(PortMath.foldLocalRank(c.dpRank(), c.dpSizeLocal()), c.tpRank(), c.tpSize());
    }

    // ------------------------------------------------------------------ views

    record Seen(Effect.Anomaly anomaly, long atNs) {}

    record Seen2(String node, long atNs, boolean empty) {}

    /** A transfer status that failed with "SQ full" (a transient send-queue overflow, class 24): where, when, read or write. */
    record SqFull(String node, long statusId, long atNs, String detail, boolean read) {}

    /** A read posted by {@code node} for {@code requestId} on session {@code sessionKey} ("{eid}_dp{R}"). */
    record ReadPost(String node, String requestId, String sessionKey, long atNs, int paramsDpRank) {}

    /** How many reads awaiting their completion report (and evidence of class 25) a node keeps. */
    static final int MAX_READS_AWAITED = 4096;

    /**
     * A request whose reads a recorded forward posted ({@code forward_done}), and the
     * {@code get_finished} polls after that forward that did not report it received.
     */
    static final class ReadAwaited {
        final String requestId;
        final NodeEvent.ForwardDone forward;
        int pollsWithout;
        long firstPollAt = Long.MIN_VALUE;
        long doneAt = Long.MIN_VALUE;

        ReadAwaited(String requestId, NodeEvent.ForwardDone forward) {
            this.requestId = requestId;
            this.forward = forward;
        }
    }

    /** A TP-wide eager-handshake vote this node journaled ({@code HandshakeVoted}). */
    record Vote(String engine, long atNs, int vote, List<Integer> failedTpRanks) {}

    record Send(String fromNode, String kind, String host, int port, long atNs, boolean empty) {}

    /** A notify its sender's publisher could not send ({@code NotifySendFailed}). */
    record SendFailure(String fromNode, String kind, String endpoint, long atNs, String reason) {}

    /**
     * A handshake this node started (a {@code StartHandshake} effect), keyed as the worker keys it
     * ({@code <remote_host>:<handshake_port>_dp<rank>}): the peer endpoint dialled and what became
     * of it. A failure seen for a key never started here has no endpoint.
     */
    static final class Handshake {
        final String key;
        String host;
        int port;
        final long startedAt;
        /** The remote DP rank the handshake is for (-1 when unknown). */
        int rank = -1;
        int attempts = 1;
        /** The node's scheduler steps ({@code NodeView.steps}) when it started. */
        long stepsAtStart;
        long completedAt = Long.MIN_VALUE;
        long failedAt = Long.MIN_VALUE;
        String failReason;

        Handshake(String key, String host, int port, long startedAt) {
            this.key = key;
            this.host = host;
            this.port = port;
            this.startedAt = startedAt;
        }

        /** The engine part of the key (what requests' params name as remote_host:remote_handshake_port). */
        String engine() {
            int i = key.lastIndexOf("_dp");
            return i < 0 ? key : key.substring(0, i);
        }

        String endpoint() {
            return host == null ? "an endpoint this node did not journal" : host + ":" + port;
        }
    }

    static final class NodeView {
        final String name;
        /** Handshakes this node started or saw fail, in the order it first did. */
        final LinkedHashMap<String, Handshake> handshakes = new LinkedHashMap<>();
        /** The TP-wide eager-handshake votes this node journaled, in order. */
        final List<Vote> votes = new ArrayList<>();
        final NodeConfig config;
        final LinkedHashMap<String, ReqView> requests = new LinkedHashMap<>();
        /** Admitted id to the id a request finished under (see {@code REQUEST_RENAMED_AT_FINISH}). */
        final LinkedHashMap<String, String> aliases = new LinkedHashMap<>();
        /**
         * READ consumers: per peer engine spread over several pods (remote_dp_size_local below
         * remote_dp_size), the first requests that named it, kept after they end (class 37).
         */
        final LinkedHashMap<String, List<ReqView>> podPeers = new LinkedHashMap<>();
        final List<Seen> nodeAnomalies = new ArrayList<>();
        /** The latest n > 1 children ({@code <index>_<parent id>}) that ended cleanly and were forgotten, by transfer id. */
        final LinkedHashMap<String, String> endedChildren = new LinkedHashMap<>(16, 0.75f, false) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, String> eldest) {
                return size() > MAX_ENDED_CHILDREN;
            }
        };
        final LinkedHashMap<Long, String> inFlight = new LinkedHashMap<>();
        /** Posted read statuses not yet completed. */
        final java.util.LinkedHashSet<Long> readStatuses = new java.util.LinkedHashSet<>();
        /** When each posted status still in flight was posted. */
        final LinkedHashMap<Long, Long> postedAt = new LinkedHashMap<>();
        /** Per transfer id, how many of its reads completed successfully on this node, and when the last did. */
        final LinkedHashMap<String, Integer> readsDone = new LinkedHashMap<>();
        final LinkedHashMap<String, Long> lastReadDoneAt = new LinkedHashMap<>();
        /**
         * The first failed completion since this engine's last successful one (MIN_VALUE when the
         * latest completion succeeded), its code and message, and its transfer.
         */
        long failedSinceSuccessAt = Long.MIN_VALUE;
        String failedDetail;
        String failedTransfer;
        long listenerDeathAt = Long.MIN_VALUE;
        Effect.Anomaly listenerDeath;
        /** When the connector's shutdown() was journaled (MIN_VALUE: never). */
        long shutDownAt = Long.MIN_VALUE;
        long framesAfterDeath;
        /** The scheduler steps this node journaled ({@code step_scheduled}), and when the last was. */
        long steps;
        long lastStepAt = Long.MIN_VALUE;
        /** When the step before the last was scheduled. */
        long prevStepAt = Long.MIN_VALUE;
        /** A live process's journal ({@link Ledger#liveNode}). */
        boolean live;
        /** The worker's KV-cache registration, when its journal records it (the latest; null: none). */
        NodeEvent.KvCachesRegistered registered;
        /** A READ consumer's worker: requests whose reads a recorded forward posted, not yet reported received. */
        final LinkedHashMap<String, ReadAwaited> readsAwaited = new LinkedHashMap<>();
        /** Those reported received only after a poll that followed their forward had not (class 25). */
        final List<ReadAwaited> readsConsumedUnfinished = new ArrayList<>();
        /** A READ consumer's scheduler: the load_kv_async it answered per request. */
        final LinkedHashMap<String, Boolean> loadAsync = new LinkedHashMap<>(16, 0.75f, false) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
                return size() > MAX_READS_AWAITED;
            }
        };
        /** The time of this node's last event (MIN_VALUE: none). */
        long lastAtNs = Long.MIN_VALUE;
        /** For a tap's journal ({@link Ledger#tap}): where the tap listens; null for a node. */
        String tapHost;
        int tapPort = -1;

        NodeView(String name, NodeConfig config) {
            this.name = name;
            this.config = config;
        }

        ReqView request(String rid, long at) {
            return requests.computeIfAbsent(aliases.getOrDefault(rid, rid), k -> {
                ReqView r = new ReqView(k, at);
                r.stepsAtSince = steps;
                return r;
            });
        }

        /** The view of {@code rid} (or of the request it was renamed to), or null. */
        ReqView find(String rid) {
            return rid == null ? null : requests.get(aliases.getOrDefault(rid, rid));
        }

        boolean producer() {
            return config.role() == Role.PRODUCER;
        }

        /** Whether this is a tap's journal, not a node's. */
        boolean tap() {
            return tapHost != null;
        }
    }

    static final class ReqView {
        String requestId;
        /** The id it was admitted under when it finished under another one (else null), and when. */
        String admittedAs;
        long renamedAt = Long.MIN_VALUE;
        /** From its admission params: remote_dp_rank, remote_dp_size, remote_dp_size_local (-1 when absent), remote_hosts. */
        int remoteDpRank = -1;
        int remoteDpSize = -1;
        int remoteDpSizeLocal = -1;
        final List<String> remoteHosts = new ArrayList<>();
        /** The remote_block_ids value its admission params carried (null when absent or None). */
        Object remoteBlocksGiven;
        /** Which of {@link Ledger#META_KEYS} its admission params carried. */
        final java.util.Set<String> admittedKeys = new java.util.TreeSet<>();
        /** Whether its admission params asked for a transfer (do_remote_decode or do_remote_prefill). */
        boolean disagg;
        final long firstSeenNs;
        String transferId;
        RequestPhase phase;
        long sinceNs = Long.MIN_VALUE;
        /** The node's {@code steps} when the request entered its phase (or was first seen). */
        long stepsAtSince;
        long endedAt = Long.MIN_VALUE;
        String reason;
        /** {@code remote_host:remote_handshake_port} from its admission params (the engine whose handshake it needs), or null. */
        String handshakeEngine;
        /** num_prompt_tokens and len(prompt_token_ids) at admission, and num_computed_tokens of its latest matched-tokens query (-1 when unseen). */
        int promptTokens = -1;
        int promptTokenIds = -1;
        int lastComputedTokens = -1;
        /** Whether this node posted a read or write for it (so it no longer waits on a handshake). */
        boolean transferPosted;
        /** The time of its latest lifecycle event (see {@code Ledger.touch}). */
        long lastEventNs;
        final List<Seen> anomalies = new ArrayList<>();

        ReqView(String requestId, long firstSeenNs) {
            this.requestId = requestId;
            this.firstSeenNs = firstSeenNs;
            this.lastEventNs = firstSeenNs;
        }
    }

    static final class TransferView {
        final String transferId;
        /** Per node, the request that last claimed this transfer there. */
        final LinkedHashMap<String, String> legs = new LinkedHashMap<>();
        /** Per node, every request that claimed this transfer there (siblings share a transfer id). */
        final LinkedHashMap<String, java.util.LinkedHashSet<String>> legRids = new LinkedHashMap<>();
        /** The reads posted for this transfer: by which node and request, on which session. */
        final List<ReadPost> reads = new ArrayList<>();
        final java.util.LinkedHashSet<String> doneLegs = new java.util.LinkedHashSet<>();
        /** How each forgotten leg ended: phase and reason. */
        final LinkedHashMap<String, String> legEnds = new LinkedHashMap<>();
        final List<Send> sends = new ArrayList<>();
        final List<SendFailure> sendFailures = new ArrayList<>();
        /** Statuses of this transfer that failed with "SQ full". */
        final List<SqFull> sqFull = new ArrayList<>();
        final List<Seen2> remoteBlocksAt = new ArrayList<>();
        final java.util.LinkedHashSet<String> writeDoneReceivedBy = new java.util.LinkedHashSet<>();
        final LinkedHashMap<String, Integer> releasesReceived = new LinkedHashMap<>();
        final LinkedHashMap<String, Long> reapedOn = new LinkedHashMap<>();
        /**
         * Per node, when its worker first reported this transfer's request finished sending (a
         * producer) or receiving (a consumer).
         */
        final LinkedHashMap<String, Long> workerReported = new LinkedHashMap<>();
        int consumerTpSize = 1;
        /** The first failed read status of this transfer, on which node, and its code and message. */
        long firstFailedReadAt = Long.MIN_VALUE;
        String failedReadNode;
        String failedReadDetail;
        int readsPosted;
        int writesPosted;
        long lastCompletionAt = Long.MIN_VALUE;
        /** The node whose transfer completion {@link #lastCompletionAt} is (its clock). */
        String lastCompletionNode;

        TransferView(String transferId) {
            this.transferId = transferId;
        }

        /** Every request of {@code node} on this transfer, in the order they claimed it. */
        java.util.Set<String> rids(String node) {
            java.util.LinkedHashSet<String> r = legRids.get(node);
            return r == null ? java.util.Set.of() : r;
        }
    }

    /** The nodes this ledger knows, with their configurations. */
    Map<String, NodeConfig> nodeConfigs() {
        LinkedHashMap<String, NodeConfig> m = new LinkedHashMap<>();
        nodes.forEach((k, v) -> m.put(k, v.config));
        return m;
    }
}
