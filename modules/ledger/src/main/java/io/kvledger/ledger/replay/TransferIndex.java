package io.kvledger.ledger.replay;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.ReqMeta;
import io.kvledger.core.model.TransferId;
import io.kvledger.journal.JournalEntry;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Correlates the entries of several node journals by transfer id (the key both legs of a MoRIIO
 * transfer share): for each transfer, which node saw it, under which request id, in how many
 * entries and over which span of time and seqs. Fed in merged time order ({@link TimeMerge}); a
 * transfer is listed in the order it was first seen.
 *
 * <p>An entry names its transfer directly (remote_blocks, release, write_done, posted reads and
 * writes, deferrals, ACKs, unmaps, anomalies, the {@code transfer_id} of the params at admission
 * and in the metadata) or through its request id once the node has tied that request to a
 * transfer (phase changes, finishes, allocations).
 */
public final class TransferIndex {

    /** One node's part in a transfer. */
    public static final class Leg {
        final String node;
        final boolean producer;
        String requestId;
        long entries;
        long firstSeq = -1;
        long lastSeq = -1;

        Leg(String node, boolean producer) {
            this.node = node;
            this.producer = producer;
        }

        /** The node (journal) this leg is on. */
        public String node() {
            return node;
        }

        /** Whether the node is a producer (prefill). */
        public boolean producer() {
            return producer;
        }

        /** The request id the node tied to this transfer, or null. */
        public String requestId() {
            return requestId;
        }

        /** How many of the node's entries named this transfer. */
        public long entries() {
            return entries;
        }

        /** The first seq on the node that named it, or -1. */
        public long firstSeq() {
            return firstSeq;
        }

        /** The last seq on the node that named it, or -1. */
        public long lastSeq() {
            return lastSeq;
        }
    }

    /** One transfer id, with every node that saw it. */
    public static final class Transfer {
        final String transferId;
        long firstAtNs = Long.MAX_VALUE;
        long lastAtNs = Long.MIN_VALUE;
        final LinkedHashMap<String, Leg> legs = new LinkedHashMap<>();

        Transfer(String transferId) {
            this.transferId = transferId;
        }

        /** The transfer id. */
        public String transferId() {
            return transferId;
        }

        /** The time of the first entry that named it. */
        public long firstAtNs() {
            return firstAtNs;
        }

        /** The time of the last entry that named it. */
        public long lastAtNs() {
            return lastAtNs;
        }

        /** Per node, in the order the nodes first saw it (read-only). */
        public Map<String, Leg> legs() {
            return Collections.unmodifiableMap(legs);
        }

        /** Whether both a producer and a consumer saw it. */
        public boolean bothSides() {
            boolean p = false;
            boolean c = false;
            for (Leg l : legs.values()) {
                p |= l.producer;
                c |= !l.producer;
            }
            return p && c;
        }
    }

    private final LinkedHashMap<String, Transfer> transfers = new LinkedHashMap<>();
    /** Per node: request id to the transfer id it is tied to. */
    private final Map<String, HashMap<String, String>> ridToTid = new HashMap<>();
    private final Map<String, Boolean> producers = new HashMap<>();

    /** Registers a node before its entries. */
    public void node(String node, boolean producer) {
        producers.put(node, producer);
        ridToTid.put(node, new HashMap<>());
    }

    /** Every transfer seen so far, in the order first seen (read-only). */
    public Map<String, Transfer> transfers() {
        return Collections.unmodifiableMap(transfers);
    }

    /** One entry of {@code node}'s journal, in merged order. */
    public void add(String node, JournalEntry e) {
        switch (e) {
            case JournalEntry.Input in -> input(node, in.seq(), in.atNs(), in.event());
            case JournalEntry.Derived d -> derived(node, d.seq(), d.atNs(), d.effect());
            case JournalEntry.Header _, JournalEntry.Unknown _, JournalEntry.Proxy _ -> { }
        }
    }

    private void input(String node, long seq, long at, NodeEvent event) {
        switch (event) {
            case NodeEvent.RequestAdmitted e -> {
                KvParams p = e.params();
                String tid = p == null ? null : tidOf(p.get("transfer_id"));
                see(node, seq, at, tid, e.requestId());
            }
            case NodeEvent.RemoteBlocksReceived e -> see(node, seq, at, e.transferId(), null);
            case NodeEvent.WriteDoneReceived e -> see(node, seq, at, e.transferId(), null);
            case NodeEvent.ReleaseReceived e -> see(node, seq, at, e.transferId(), null);
            case NodeEvent.RawCompletionReceived e -> {
                // a raw completion carries a transfer id, or (the seed-002 bug) a request id
                if (transfers.containsKey(e.completionId())) {
                    see(node, seq, at, e.completionId(), null);
                }
            }
            case NodeEvent.RequestFinished e -> {
                if (e.admittedRequestId() != null && ridToTid.get(node).containsKey(e.admittedRequestId())) {
                    ridToTid.get(node).putIfAbsent(e.requestId(), ridToTid.get(node).get(e.admittedRequestId()));
                }
                viaRequest(node, seq, at, e.requestId());
            }
            case NodeEvent.MatchedTokensQueried e -> viaRequest(node, seq, at, e.requestId());
            case NodeEvent.BlocksAllocated e -> viaRequest(node, seq, at, e.requestId());
            case NodeEvent.StepScheduled _, NodeEvent.ConnectorOutputReceived _, NodeEvent.LoadStarted _,
                    NodeEvent.LayerSaved _, NodeEvent.SaveWaited _, NodeEvent.FinishedPolled _,
                    NodeEvent.HandshakeCompleted _, NodeEvent.HandshakeFailed _, NodeEvent.HandshakeVoted _,
                    NodeEvent.TransferCompleted _, NodeEvent.FrameRejected _, NodeEvent.NotifySendFailed _, NodeEvent.Tick _, NodeEvent.ShutDown _,
                    NodeEvent.KvCachesRegistered _, NodeEvent.ForwardDone _ -> { }
        }
    }

    private void derived(String node, long seq, long at, Effect effect) {
        switch (effect) {
            case Effect.DeferralStarted e -> see(node, seq, at, e.transferId(), e.requestId());
            case Effect.AckSurfaced e -> see(node, seq, at, e.transferId(), e.requestId());
            case Effect.Unmapped e -> see(node, seq, at, e.transferId(),
                    e.kind() == Effect.UnmapKind.MISS ? null : e.requestId());
            case Effect.SendRemoteBlocks e -> see(node, seq, at, tidOf(e.transferId()), e.reqId());
            case Effect.SendRelease e -> see(node, seq, at, tidOf(e.transferId()), null);
            case Effect.SendWriteDone e -> see(node, seq, at, e.transferId(), null);
            case Effect.SendWriteFailed e -> see(node, seq, at, e.transferId(), null);
            case Effect.PostWrite e -> see(node, seq, at, e.transferId(), null);
            case Effect.PostRead e -> see(node, seq, at, e.transferId(), e.requestId());
            case Effect.Anomaly e -> {
                if (e.transferId() != null) {
                    see(node, seq, at, e.transferId(), e.requestId());
                } else {
                    viaRequest(node, seq, at, e.requestId());
                }
            }
            case Effect.FinishDecision e -> {
                String tid = e.params() == null ? null : tidOf(e.params().get("transfer_id"));
                if (tid != null) {
                    see(node, seq, at, tid, e.requestId());
                } else {
                    viaRequest(node, seq, at, e.requestId());
                }
            }
            case Effect.MetadataBuilt e -> {
                metas(node, seq, at, e.reqsToRecv());
                metas(node, seq, at, e.reqsToSave());
            }
            case Effect.PhaseChanged e -> viaRequest(node, seq, at, e.requestId());
            case Effect.AckParked e -> viaRequest(node, seq, at, e.requestId());
            case Effect.StaleAckDropped e -> viaRequest(node, seq, at, e.requestId());
            case Effect.MatchedTokens e -> viaRequest(node, seq, at, e.requestId());
            case Effect.FinishedReported _, Effect.FinishedSendingRewritten _, Effect.StartHandshake _ -> { }
        }
    }

    private void metas(String node, long seq, long at, List<ReqMeta> metas) {
        if (metas == null) {
            return;
        }
        for (ReqMeta m : metas) {
            see(node, seq, at, tidOf(m.transferId()), m.requestId());
        }
    }

    /** The key a params' {@code transfer_id} value is filed under, as {@link #tidOf(TransferId)}. */
    private static String tidOf(Object v) {
        return v instanceof String s && !s.isEmpty() ? s : null;
    }

    /** The key a transfer id is filed under: a non-empty str id; ids of other types key nothing. */
    private static String tidOf(TransferId id) {
        String s = id.asString();
        return s != null && !s.isEmpty() ? s : null;
    }

    private void viaRequest(String node, long seq, long at, String rid) {
        if (rid == null) {
            return;
        }
        String tid = ridToTid.get(node).get(rid);
        if (tid != null) {
            see(node, seq, at, tid, null);
        }
    }

    private void see(String node, long seq, long at, String tid, String rid) {
        if (tid == null) {
            viaRequest(node, seq, at, rid);
            return;
        }
        Transfer t = transfers.computeIfAbsent(tid, Transfer::new);
        t.firstAtNs = Math.min(t.firstAtNs, at);
        t.lastAtNs = Math.max(t.lastAtNs, at);
        Leg leg = t.legs.computeIfAbsent(node, n -> new Leg(n, producers.getOrDefault(n, false)));
        if (leg.lastSeq != seq) {
            leg.entries++;
        }
        if (leg.firstSeq < 0) {
            leg.firstSeq = seq;
        }
        leg.lastSeq = seq;
        if (rid != null) {
            // the remote_blocks a decode sends carries its own request id: that is its leg's id too
            if (leg.requestId == null) {
                leg.requestId = rid;
            }
            ridToTid.get(node).put(rid, tid);
        }
    }
}
