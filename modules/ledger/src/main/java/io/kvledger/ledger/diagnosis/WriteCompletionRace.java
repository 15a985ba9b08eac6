package io.kvledger.ledger.diagnosis;

import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.ledger.diagnosis.Ledger.NodeView;
import io.kvledger.ledger.diagnosis.Ledger.ReqView;
import io.kvledger.ledger.diagnosis.Ledger.TransferView;
import io.kvledger.ledger.text.Seconds;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Class 6, the WRITE completion race (moriio-protocol.md sections 5.3 and 7): a prefill's writer
 * that counts its writes wrong sends {@code write_done} before every layer of the transfer is
 * written (the decode then reads half-written blocks), or never (the decode waits for good and the
 * prefill's blocks are reaped). The sealed writer (every preset; #40344) writes each registered
 * layer once and sends write_done when the writes scheduled by the end of the forward are done; the
 * writer before it (switch {@code write-unsealed-completion}) expected one write per registered
 * layer and counted every {@code save_kv_layer} call.
 *
 * <p>Evidence, per prefill rank and transfer id, from what the prefill's journal carries: the
 * layer writes it posted ({@code PostWrite}, by layer) and their completions, the
 * {@code remote_blocks} it received, the write_done it sent, and its registered layers (the
 * header's layer names); from the decode's journal, when it received write_done. Named:
 * <ul>
 *   <li>a write_done sent while a write of the transfer was still in flight, or after a layer was
 *       written twice (writes_done above the layers' count), or followed by a write of the
 *       transfer; a write_done a decode received before the prefill rank of its TP index posted a
 *       write of the transfer, when no send of the rank explains it (below). Fewer layers written
 *       than registered is said, but is no evidence alone: the sealed writer seals what was
 *       scheduled by the end of the forward, and a request whose handshake ended after it is
 *       written from {@code _ready_requests} one layer per call (the residual of class 4, not this
 *       race);</li>
 *   <li>no write_done from a prefill rank whose writes of the transfer all completed, with the
 *       remote blocks given, no failure, expiry or self-ACK, for longer than the stuck bound (or
 *       until its request was reaped).</li>
 * </ul>
 * Both legs are named: the prefill request and the decode legs of the transfer; when the decode's
 * journal is not among those read, the finding says so. A decode's journal alone cannot show the
 * race: its stranded request stays a generic finding.
 *
 * <p>A receipt is stamped by the decode's clock and a write by the prefill's: two clocks, which
 * differ by NTP's error across hosts (and did by milliseconds on one host when a node's anchor was
 * taken across a preemption), so their raw order proves nothing. Each write_done the rank sent
 * explains one receipt per decode of its TP index, the latest: a receipt follows its send whatever
 * the stamps say, and a send explaining a receipt stamped before it measures how far that decode's
 * clock is behind the prefill's (the most measured per pair of nodes is a lower bound of the
 * skew; kept in the ledger's {@link ClockSkew} with what its other notifies measure). Only a
 * receipt left unexplained (the rank sent no write_done for the transfer, or fewer than the decode
 * received) is evidence, and only when stamped before the rank's last write of the
 * transfer by more than the pair's measured skew plus {@link ClockSkew#MARGIN_NS}. The finding gives both
 * stamps, the skew and the counts.
 *
 * <p>Fed by {@link Ledger#observe} before the ledger's own bookkeeping (which forgets legs that
 * ended cleanly, as an early write_done's do); its memory is bounded by the transfers still in
 * flight plus two fixed-size windows of recent ones.
 */
final class WriteCompletionRace {

    /** Clean write_dones and decode receipts remembered, to see a write posted after them. */
    private static final int WINDOW = 1 << 14;

    /** One prefill rank's writes of one transfer. */
    static final class Writer {
        final String node;
        final String transferId;
        String requestId;
        final LinkedHashMap<String, Integer> layers = new LinkedHashMap<>();
        int posted;
        int pending;
        int failed;
        long firstPostAt = Long.MIN_VALUE;
        long lastEventAt = Long.MIN_VALUE;
        long writeDoneAt = Long.MIN_VALUE;
        int layersAtDone;
        int postedAtDone;
        int pendingAtDone;
        String twiceAtDone;
        int postedAfterDone;
        /** The stamp of this rank's last write of the transfer posted. */
        long lastPostAt = Long.MIN_VALUE;
        /** write_dones this rank sent for the transfer. */
        int sends;
        boolean reaped;
        RequestPhase phase;
        long phaseSince = Long.MIN_VALUE;

        Writer(String node, String transferId) {
            this.node = node;
            this.transferId = transferId;
        }
    }

    /** A decode's receipt of write_done. */
    record Receipt(String node, String requestId, int tpRank, long atNs) {}

    /**
     * A receipt no send of the rank explains, stamped before the rank's last write ({@code postAt})
     * by more than the pair's measured skew plus {@link ClockSkew#MARGIN_NS}; {@code received} receipts by
     * that decode, {@code sent} write_dones by the rank.
     */
    record Unexplained(Receipt receipt, long postAt, int received, int sent, long skewNs) {}

    private final LinkedHashMap<String, Writer> writers = new LinkedHashMap<>();
    /** Per {@code node|status id}, the transfer of a write in flight. */
    private final LinkedHashMap<String, String> statusTid = new LinkedHashMap<>();
    private final LinkedHashMap<String, Writer> cleanDone = window();
    private final LinkedHashMap<String, List<Receipt>> receipts = window();

    private static <V> LinkedHashMap<String, V> window() {
        return new LinkedHashMap<>(16, 0.75f, false) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, V> eldest) {
                return size() > WINDOW;
            }
        };
    }

    private static boolean writeProducer(NodeView n) {
        return n.config.mode() == TransferMode.WRITE && n.config.role() == Role.PRODUCER;
    }

    /** One event of {@code n} with its effects; {@code l} still holds the legs as they were before it. */
    void observe(Ledger l, NodeView n, NodeEvent event, List<Effect> effects) {
        long at = event.atNs();
        if (n.config.mode() != TransferMode.WRITE || n.tap()) {
            return;
        }
        if (!writeProducer(n)) {
            if (event instanceof NodeEvent.WriteDoneReceived w && n.config.role() != Role.PRODUCER) {
                TransferView t = l.transfers.get(w.transferId());
                String rid = t == null ? null : t.legs.get(n.name);
                receipts.computeIfAbsent(w.transferId(), k -> new ArrayList<>())
                        .add(new Receipt(n.name, rid, n.config.tpRank(), at));
            }
            return;
        }
        if (event instanceof NodeEvent.TransferCompleted c) {
            String tid = statusTid.remove(n.name + "|" + c.statusId());
            Writer w = tid == null ? null : writers.get(n.name + "|" + tid);
            if (w != null) {
                w.pending--;
                w.lastEventAt = at;
                if (!c.succeeded()) {
                    w.failed++;
                }
            }
        }
        for (Effect e : effects) {
            // Only five kinds of effect matter here: an if chain, not a switch with a default arm.
            if (e instanceof Effect.PostWrite p && p.transferId() != null) {
                posted(l, n, p, at);
            } else if (e instanceof Effect.SendWriteDone d) {
                writeDone(l, n, d.transferId(), at);
            } else if (e instanceof Effect.Anomaly a && a.transferId() != null && (a.kind() == AnomalyKind.WRITE_FAILED
                    || a.kind() == AnomalyKind.WRITE_TASK_EXPIRED || a.kind() == AnomalyKind.WRITE_RANK_NOT_NOTIFIED
                    || a.kind() == AnomalyKind.WRITE_TIMEOUT)) {
                Writer w = writers.get(n.name + "|" + a.transferId());
                if (w != null && w.writeDoneAt == Long.MIN_VALUE && unexplained(l, n, w) == null) {
                    // the writer ended the transfer itself (a self-ACK without write_done): another class
                    writers.remove(n.name + "|" + a.transferId());
                }
            } else if (e instanceof Effect.AckSurfaced a && a.transferId() != null
                    && a.reason() == Effect.SurfaceReason.REAPED) {
                Writer w = writers.get(n.name + "|" + a.transferId());
                if (w != null) {
                    w.reaped = true;
                }
            } else if (e instanceof Effect.PhaseChanged p) {
                for (Writer w : writersOf(n, p.requestId())) {
                    w.phase = p.to();
                    w.phaseSince = at;
                }
            }
        }
    }

    private List<Writer> writersOf(NodeView n, String rid) {
        List<Writer> out = new ArrayList<>();
        ReqView r = n.find(rid);
        if (r != null && r.transferId != null) {
            Writer w = writers.get(n.name + "|" + r.transferId);
            if (w != null && rid.equals(w.requestId)) {
                out.add(w);
            }
        }
        return out;
    }

    private void posted(Ledger l, NodeView n, Effect.PostWrite p, long at) {
        String key = n.name + "|" + p.transferId();
        Writer w = writers.get(key);
        if (w == null) {
            Writer done = cleanDone.remove(key);
            w = done != null ? done : new Writer(n.name, p.transferId());
            writers.put(key, w);
            TransferView t = l.transfers.get(p.transferId());
            w.requestId = t == null ? null : t.legs.get(n.name);
            ReqView r = n.find(w.requestId);
            if (r != null) {
                w.phase = r.phase;
                w.phaseSince = r.sinceNs == Long.MIN_VALUE ? r.firstSeenNs : r.sinceNs;
            }
            w.firstPostAt = at;
        }
        if (w.writeDoneAt != Long.MIN_VALUE) {
            w.postedAfterDone++;
        }
        w.lastPostAt = Math.max(w.lastPostAt, at);
        w.layers.merge(p.layerName(), 1, Integer::sum);
        w.posted++;
        w.pending++;
        w.lastEventAt = at;
        statusTid.put(n.name + "|" + p.statusId(), p.transferId());
    }

    private void writeDone(Ledger l, NodeView n, String tid, long at) {
        Writer w = writers.get(n.name + "|" + tid);
        if (w == null) {
            return;
        }
        w.sends++;
        measureSkew(l, n, w, at);
        if (w.writeDoneAt != Long.MIN_VALUE) {
            return;
        }
        w.writeDoneAt = at;
        w.layersAtDone = w.layers.size();
        w.postedAtDone = w.posted;
        w.pendingAtDone = w.pending;
        w.lastEventAt = at;
        for (Map.Entry<String, Integer> e : w.layers.entrySet()) {
            if (e.getValue() > 1 && w.twiceAtDone == null) {
                w.twiceAtDone = e.getKey() + " (" + e.getValue() + " times)";
            }
        }
        if (early(l, n, w) == null) {
            // a clean write_done: forgotten, but remembered for a while in case the transfer writes again
            writers.remove(n.name + "|" + tid);
            cleanDone.put(n.name + "|" + tid, w);
        }
    }

    /**
     * A send of {@code w}'s rank at {@code at}, with at least as many receipts already read from a
     * decode of its TP index as the rank has sent: the receipt it explains was stamped before it,
     * at the latest when the latest of them was; the gap is a lower bound of how far the decode's
     * clock is behind. The events are read in stamp order, so a receipt stamped after its send is
     * not read yet and measures nothing.
     */
    private void measureSkew(Ledger l, NodeView n, Writer w, long at) {
        for (Map.Entry<String, List<Receipt>> e : receiptsOf(n, w).entrySet()) {
            List<Receipt> rs = e.getValue();
            if (rs.size() >= w.sends) {
                l.clocks.measured(n.name, at, e.getKey(), rs.get(rs.size() - 1).atNs());
            }
        }
    }

    /** The receipts of {@code w}'s transfer by the decodes of its rank's TP index, per decode, in stamp order. */
    private Map<String, List<Receipt>> receiptsOf(NodeView n, Writer w) {
        Map<String, List<Receipt>> out = new LinkedHashMap<>();
        for (Receipt rc : receipts.getOrDefault(w.transferId, List.of())) {
            if (rc.tpRank() == n.config.tpRank()) {
                out.computeIfAbsent(rc.node(), k -> new ArrayList<>()).add(rc);
            }
        }
        for (List<Receipt> rs : out.values()) {
            rs.sort(java.util.Comparator.comparingLong(Receipt::atNs));
        }
        return out;
    }

    /**
     * The first receipt of {@code w}'s transfer no send of its rank explains and that is stamped
     * before the rank's last write of it by more than the pair's measured skew plus
     * {@link ClockSkew#MARGIN_NS}; null when there is none. Each send explains one receipt per decode, the
     * latest ones: a decode's receipt follows the send in fact, whatever two clocks stamp.
     */
    private Unexplained unexplained(Ledger l, NodeView n, Writer w) {
        if (w.lastPostAt == Long.MIN_VALUE) {
            return null;
        }
        for (Map.Entry<String, List<Receipt>> e : receiptsOf(n, w).entrySet()) {
            List<Receipt> rs = e.getValue();
            long measured = l.clocks.ahead(n.name, e.getKey());
            for (int i = 0; i < rs.size() - w.sends; i++) {
                Receipt rc = rs.get(i);
                if (l.clocks.certainlyBefore(e.getKey(), rc.atNs(), n.name, w.lastPostAt)) {
                    return new Unexplained(rc, w.lastPostAt, rs.size(), w.sends, measured);
                }
            }
        }
        return null;
    }

    /** Why {@code w}'s write_done was early, or null when it was not (or none was sent). */
    private String early(Ledger l, NodeView n, Writer w) {
        Unexplained u = unexplained(l, n, w);
        if (w.writeDoneAt == Long.MIN_VALUE && u == null) {
            return null;
        }
        int registered = n.config.layerNames().size();
        List<String> why = new ArrayList<>();
        if (w.writeDoneAt != Long.MIN_VALUE) {
            if (w.pendingAtDone > 0) {
                why.add(w.pendingAtDone + " write(s) still in flight");
            }
            if (w.twiceAtDone != null) {
                why.add(w.postedAtDone + " writes counted for " + w.layersAtDone + " layers, layer " + w.twiceAtDone
                        + " written more than once: writes_done above the expected count");
            }
            if (w.postedAfterDone > 0) {
                why.add(w.postedAfterDone + " write(s) of the transfer posted after it");
            }
        }
        if (!why.isEmpty() && w.layersAtDone < registered) {
            why.add(0, "only " + w.layersAtDone + " of its " + registered + " registered layers written");
        }
        if (u != null) {
            why.add("decode " + u.receipt().node() + " had received a write_done for it before this rank posted its last write ("
                    + u.receipt().node() + "'s receipt stamped " + rel(l, u.receipt().atNs()) + ", " + n.name + "'s write "
                    + rel(l, u.postAt()) + ": " + Seconds.duration(u.postAt() - u.receipt().atNs()) + " before it, beyond the "
                    + Seconds.duration(u.skewNs()) + " the two clocks were measured apart plus a margin of "
                    + Seconds.duration(ClockSkew.MARGIN_NS) + "; " + u.received() + " write_done(s) received, " + u.sent() + " sent by "
                    + n.name + ")");
        }
        return why.isEmpty() ? null : String.join("; ", why);
    }

    /** The findings: transfers whose write_done went early, or never. */
    void findings(Ledger l, Bounds b, List<Finding> out) {
        for (Writer w : writers.values()) {
            NodeView n = l.nodes.get(w.node);
            if (n == null) {
                continue;
            }
            String why = early(l, n, w);
            if (why != null) {
                String msg = (w.writeDoneAt != Long.MIN_VALUE
                        ? "write_done for " + w.transferId + " sent at " + rel(l, w.writeDoneAt) + " with " + why
                        : "write_done for " + w.transferId + " reached the decode while the prefill still wrote it: " + why)
                        + ": the writer's completion count is not sealed after the forward (WRITE completion race)";
                Unexplained u = unexplained(l, n, w);
                add(l, n, w, msg, w.writeDoneAt != Long.MIN_VALUE || u == null ? w.writeDoneAt : u.receipt().atNs(), true, out);
                continue;
            }
            long end = HangDetectors.endOf(l, n);
            boolean quiet = w.lastEventAt != Long.MIN_VALUE && end - w.lastEventAt > b.stuckAfterNs();
            if (w.writeDoneAt == Long.MIN_VALUE && w.posted > 0 && w.pending == 0 && w.failed == 0
                    && (quiet || w.reaped)) {
                int registered = n.config.layerNames().size();
                List<String> missing = new ArrayList<>();
                for (String layer : n.config.layerNames()) {
                    if (!w.layers.containsKey(layer)) {
                        missing.add(layer);
                    }
                }
                String msg = "no write_done for " + w.transferId + ": all " + w.posted + " writes of it completed by "
                        + rel(l, w.lastEventAt) + " (" + w.layers.size() + " of " + registered + " registered layers"
                        + (missing.isEmpty() ? "" : ", never written: " + String.join(", ", missing.subList(0, Math.min(3, missing.size())))
                        + (missing.size() > 3 ? " and " + (missing.size() - 3) + " more" : ""))
                        + "), remote blocks given, nothing failed or expired, and the writer never finalized"
                        + (w.reaped ? " (its blocks were reaped)" : "")
                        + ": writes_done never reached writes_expected (WRITE completion race: no seal after the forward)";
                add(l, n, w, msg, w.lastEventAt, false, out);
            }
        }
    }

    private void add(Ledger l, NodeView n, Writer w, String msg, long at, boolean early, List<Finding> out) {
        String evidence = "; evidence: " + n.name + "'s layer writes and completions and its " + n.config.layerNames().size()
                + " registered layers";
        List<String> decodes = new ArrayList<>();
        List<Finding> decodeFindings = new ArrayList<>();
        java.util.Set<String> named = new java.util.LinkedHashSet<>();
        for (Receipt rc : receipts.getOrDefault(w.transferId, List.of())) {
            if (rc.requestId() != null && named.add(rc.node() + "|" + rc.requestId())) {
                NodeView d = l.nodes.get(rc.node());
                ReqView dr = d == null ? null : d.find(rc.requestId());
                decodes.add(rc.node());
                decodeFindings.add(new Finding("write-completion-race", rc.node(), rc.requestId(), w.transferId,
                        dr == null ? RequestPhase.FINISHED : dr.phase, 6, rc.atNs(), dr == null ? rc.atNs() : since(dr),
                        "received write_done for " + w.transferId + " at " + rel(l, rc.atNs()) + " before " + n.name
                                + " had written every layer of it: the blocks it loads are half-written (" + n.name + ": "
                                + msg + ")"));
            }
        }
        TransferView t = l.transfers.get(w.transferId);
        if (t != null) {
            t.legRids.forEach((node, rids) -> {
                NodeView d = l.nodes.get(node);
                if (d == null || d.producer()) {
                    return;
                }
                for (String rid : rids) {
                    ReqView dr = d.find(rid);
                    if (dr == null || !named.add(node + "|" + rid)) {
                        continue;
                    }
                    decodes.add(node);
                    String what = early ? "received write_done for " + w.transferId + " early" : dr.phase != null
                            && !dr.phase.terminal() ? "waits in " + dr.phase + " since " + rel(l, since(dr))
                            + " for the write_done " + n.name + " never sends" : "never got write_done from " + n.name;
                    decodeFindings.add(new Finding("write-completion-race", node, rid, w.transferId, dr.phase, 6, at,
                            since(dr), what + " (" + n.name + ": " + msg + ")"));
                }
            });
        }
        evidence += decodes.isEmpty()
                ? "; no decode journal among these holds " + w.transferId + ": its decode leg cannot be named (read the "
                        + "decode's journal with this one)"
                : " and the write_done receipts and legs of " + String.join(", ", new java.util.LinkedHashSet<>(decodes));
        if (w.requestId != null) {
            out.add(new Finding("write-completion-race", n.name, w.requestId, w.transferId, w.phase, 6, at,
                    w.phaseSince, msg + evidence));
        }
        for (Finding f : decodeFindings) {
            out.add(new Finding(f.detector(), f.node(), f.requestId(), f.transferId(), f.phase(), f.bugClass(), f.atNs(),
                    f.sinceNs(), f.message() + evidence));
        }
    }

    private static long since(ReqView r) {
        return r.sinceNs == Long.MIN_VALUE ? r.firstSeenNs : r.sinceNs;
    }

    private static String rel(Ledger l, long atNs) {
        if (atNs == Long.MIN_VALUE || l.firstAtNs == Long.MAX_VALUE) {
            return "start";
        }
        return io.kvledger.ledger.text.Seconds.offset(atNs - l.firstAtNs);
    }
}
