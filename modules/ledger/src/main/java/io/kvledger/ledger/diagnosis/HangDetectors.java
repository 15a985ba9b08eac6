package io.kvledger.ledger.diagnosis;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.ledger.diagnosis.Ledger.Handshake;
import io.kvledger.ledger.diagnosis.Ledger.NodeView;
import io.kvledger.ledger.diagnosis.Ledger.ReqView;
import io.kvledger.ledger.diagnosis.Ledger.Send;
import io.kvledger.ledger.diagnosis.Ledger.Seen;
import io.kvledger.ledger.diagnosis.Ledger.TransferView;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.moriio.PortMath;
import io.kvledger.ledger.text.Seconds;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;

/**
 * The hang detectors: from a {@link Ledger}, every request that did not reach a terminal phase or
 * ended in an anomalous one, each with a one-line diagnosis naming the missing or wrong event and
 * the bug class of moriio-protocol.md section 7 it matches.
 *
 * <p>Detector names are stable (they are printed and used in golden files): stuck-waiting,
 * stuck, reaped-without-ack, unknown-completion-id, superseded-transfer-id, ack-before-finish,
 * notify-unhandshaken-rank, wrong-port-offset-form, notify-no-listener, empty-remote-blocks,
 * ack-before-mapping, failed-read-no-release, handshake-incomplete, negative-matched-tokens,
 * transfer-status-poisoned,
 * ack-deficit, free-while-in-flight, listener-death, mapping-leak, eager-handshake-wrong-pod,
 * read-wrong-dp-rank, transfer-id-uncorrelated, renamed-at-finish, missing-remote-block-ids,
 * handshake-vote-waiting, handshake-vote-failed, partial-completions, reads-never-completed,
 * siblings-share-transfer-id, block-size-override, forward-before-read-complete, pending-save-unknown-request, params-lost-before-meta, params-key-missing, sq-full-failure, busy-spin, write-done-wrong-pod, write-completion-race, reaped-warning (the engine's "Reaped N deferred sends" warning for a deferral its ACK freed in the
 * same call: no class, not a leak), and anomaly (any other serious anomaly).
 *
 * <p>The cross-node detectors (classes 37, 20, 16, 14) give one finding per request they concern
 * on every node the transfer touched (sibling requests sharing a transfer id each get their own);
 * a request with such a specific finding gets no generic one (stuck, reaped-without-ack, ...) that
 * would only restate its consequence.
 *
 * <p>A request still in a non-terminal phase when the journals end is stuck only when it stayed in
 * that phase longer than {@link Bounds#stuckAfterNs()} and had no lifecycle event within that bound
 * of the end; {@link #inFlight} accounts for every such request, stuck or not.
 */
public final class HangDetectors {

    private HangDetectors() {}

    /** Detectors that only restate a consequence; a request with a specific finding does not get them. */
    private static final java.util.Set<String> GENERIC = java.util.Set.of("stuck", "stuck-waiting", "reaped-without-ack",
            "ack-before-finish", "handshake-incomplete");

    /** Runs every detector; findings are ordered by node, then time. */
    public static List<Finding> run(Ledger ledger, Bounds bounds) {
        List<Finding> out = new ArrayList<>();
        long end = ledger.lastAtNs;
        for (NodeView n : ledger.nodes.values()) {
            for (Seen s : n.nodeAnomalies) {
                nodeAnomaly(ledger, n, s, out);
            }
            for (ReqView r : n.requests.values()) {
                requestFindings(ledger, n, r, endOf(ledger, n), bounds, out);
            }
        }
        crossNode(ledger, out);
        List<Finding> specific = new ArrayList<>();
        eagerHandshakeWrongPod(ledger, end, bounds, specific);
        stoppedByEagerHandshake(ledger, bounds, specific);
        java.util.Set<String> aliased = dpRankAliased(ledger, specific);
        readWrongDpRank(ledger, aliased, specific);
        uncorrelatedTransferIds(ledger, specific);
        missingRemoteBlockIds(ledger, specific);
        sqFullFailures(ledger, specific);
        poisonedPeers(ledger, out, specific);
        writeDoneWrongPod(ledger, specific);
        ledger.writeRace.findings(ledger, bounds, specific);
        voteWaiting(ledger, end, bounds, specific);
        stoppedReaders(ledger, bounds, specific);
        BlockSizeOverride.run(ledger, specific);
        ForwardBeforeReadComplete.run(ledger, specific);
        for (NodeView n : ledger.nodes.values()) {
            for (ReqView r : n.requests.values()) {
                Finding f = renamedAtFinish(ledger, n, r, end);
                if (f != null) {
                    specific.add(f);
                    renamedPeers(ledger, n, r, f, specific);
                }
            }
        }
        java.util.Set<String> explained = new LinkedHashSet<>();
        for (Finding f : specific) {
            explained.add(f.node() + "|" + f.requestId());
        }
        out.removeIf(f -> f.requestId() != null && GENERIC.contains(f.detector())
                && explained.contains(f.node() + "|" + f.requestId()));
        // a remote_blocks to the rank the aliased params named, and the serving rank's WRITE task
        // expiring without it, are the alias's consequences, not classes 18 and 27
        out.removeIf(f -> f.transferId() != null && aliased.contains(f.transferId())
                && (f.detector().equals("notify-unhandshaken-rank") || f.detector().equals("anomaly")
                && explained.contains(f.node() + "|" + f.requestId())));
        out.addAll(specific);
        out.sort(Comparator.comparing(Finding::node).thenComparingLong(Finding::atNs)
                .thenComparing(f -> f.requestId() == null ? "" : f.requestId()));
        return dedupe(out);
    }

    /**
     * Every request in a non-terminal phase when the journals end, with whether it is stuck (and
     * then also a finding of {@link #run}) or why it is not: still young in its phase, or still
     * making progress. Ordered by node, then as the node first saw them.
     */
    public static List<InFlight> inFlight(Ledger ledger, Bounds bounds) {
        List<InFlight> out = new ArrayList<>();
        long end = ledger.lastAtNs;
        for (NodeView n : ledger.nodes.values()) {
            for (ReqView r : n.requests.values()) {
                if (r.phase != null && !r.phase.terminal()) {
                    out.add(new InFlight(n.name, r.requestId, r.transferId, r.phase, since(r), lastProgress(ledger, n, r),
                            status(ledger, n, r, endOf(ledger, n), bounds)));
                }
            }
        }
        return out;
    }

    /**
     * For a node whose journal records its scheduler's steps (a vLLM bridge recording, a node an
     * engine drives): how many it took while the request stayed in its phase, and when the last
     * was. An engine waiting on a transfer steps on without the request; one stuck inside a call
     * (a busy-wait, a lost completion in the worker) takes none, or stops long before the end.
     */
    private static String stepping(Ledger l, NodeView n, ReqView r) {
        if (n.steps == 0) {
            return "";
        }
        long during = n.steps - r.stepsAtSince;
        return "; " + n.name + (during == 0 ? " scheduled no step meanwhile (its last at " + rel(l, n.lastStepAt) + ")"
                : " scheduled " + during + (during == 1 ? " step" : " steps") + " meanwhile, the last at "
                + rel(l, n.lastStepAt));
    }

    private static long since(ReqView r) {
        return r.sinceNs == Long.MIN_VALUE ? r.firstSeenNs : r.sinceNs;
    }

    /**
     * Stuck: in its phase for longer than the bound and no lifecycle event within the bound of the
     * end. Admission age alone does not make a request stuck: a decode that generates a token every
     * step stays in RUNNING, but is scheduled every step.
     */
    private static InFlight.Status status(Ledger l, NodeView n, ReqView r, long end, Bounds b) {
        if (endedEarly(l, n)) {
            return InFlight.Status.STUCK; // its process is gone: nothing will move it
        }
        if (end - since(r) <= b.stuckAfterNs()) {
            return InFlight.Status.YOUNG;
        }
        if (end - lastProgress(l, n, r) <= b.stuckAfterNs()) {
            return InFlight.Status.PROGRESSING;
        }
        return InFlight.Status.STUCK;
    }

    /**
     * The latest lifecycle event of a request, or of another leg of its transfer still in a
     * non-terminal phase: a decode waiting while its prefill is still being scheduled chunk by
     * chunk (or still writing) is making progress, whatever its own last event.
     */
    static long lastProgress(Ledger l, NodeView n, ReqView r) {
        long last = r.lastEventNs;
        TransferView t = r.transferId == null ? null : l.transfers.get(r.transferId);
        if (t == null) {
            return last;
        }
        for (Map.Entry<String, java.util.LinkedHashSet<String>> leg : t.legRids.entrySet()) {
            if (leg.getKey().equals(n.name)) {
                continue;
            }
            NodeView o = l.nodes.get(leg.getKey());
            for (String rid : leg.getValue()) {
                ReqView other = o == null ? null : o.requests.get(rid);
                if (other != null && other.phase != null && !other.phase.terminal()) {
                    last = Math.max(last, other.lastEventNs);
                }
            }
        }
        return last;
    }

    private static List<Finding> dedupe(List<Finding> in) {
        LinkedHashSet<String> keys = new LinkedHashSet<>();
        List<Finding> out = new ArrayList<>();
        for (Finding f : in) {
            if (keys.add(f.detector() + "|" + f.node() + "|" + f.requestId() + "|" + f.transferId())) {
                out.add(f);
            }
        }
        return out;
    }

    // ------------------------------------------------------------------ per request

    private static void requestFindings(Ledger l, NodeView n, ReqView r, long end, Bounds b, List<Finding> out) {
        boolean handshake = false;
        for (Seen s : r.anomalies) {
            if (Ledger.serious(s.anomaly().kind()) || s.anomaly().kind() == AnomalyKind.STALE_ACK_DROPPED
                    || s.anomaly().kind() == AnomalyKind.WRITE_DONE_UNMATCHED
                    || s.anomaly().kind() == AnomalyKind.DEFERRAL_EXPIRED_AT_ACK
                    || s.anomaly().kind() == AnomalyKind.NEGATIVE_MATCHED_TOKENS) {
                Finding f = fromAnomaly(l, n, r, s);
                handshake |= f.detector().equals("handshake-incomplete") || f.detector().equals("handshake-vote-failed");
                out.add(f);
            }
        }
        if (r.phase == null || r.phase.terminal()) {
            return;
        }
        if (status(l, n, r, end, b) != InFlight.Status.STUCK) {
            return;
        }
        if (handshake) {
            return; // the handshake finding already says what it waits for, and since when
        }
        Finding poisoned = poisonedStatus(l, n, r, end, b);
        if (poisoned != null) {
            out.add(poisoned);
            return;
        }
        Handshake unanswered = unansweredHandshake(n, r, end, b);
        if (unanswered != null && writeProducer(n) && n.steps > 0 && n.steps == unanswered.stepsAtStart
                && end - unanswered.startedAt > n.config.transferTimeoutNs() && !endedEarly(l, n)
                && n.shutDownAt == Long.MIN_VALUE) {
            // the engine journals its steps and took none since: it is inside the call, not stepping on
            out.add(new Finding("busy-spin", n.name, r.requestId, r.transferId, r.phase, 4, end, since(r),
                    "its writes wait for handshake " + unanswered.key + " with " + unanswered.endpoint() + ", started at "
                            + rel(l, unanswered.startedAt) + " and never answered, and " + n.name + " scheduled no step since"
                            + " (its last at " + rel(l, n.lastStepAt) + ") for " + seconds(end - unanswered.startedAt)
                            + ", beyond transfer_timeout " + setting(n.config.transferTimeoutNs())
                            + ": the engine is inside save_kv_layer, spinning on the handshake flag with no deadline"
                            + " (#29304; the fix breaks out after transfer_timeout and the engine steps on); in " + r.phase
                            + " since " + rel(l, since(r))));
            return;
        }
        if (unanswered != null) {
            out.add(new Finding("handshake-incomplete", n.name, r.requestId, r.transferId, r.phase, 21, end, since(r),
                    podsUnknown(n, r, unanswered) + (n.producer() ? "its writes wait" : "its read waits") + " for handshake " + unanswered.key + " with "
                            + unanswered.endpoint() + ", started at " + rel(l, unanswered.startedAt)
                            + (unanswered.attempts > 1 ? " (" + unanswered.attempts + " attempts)" : "")
                            + ": never answered (no handshake_completed or handshake_failed) for "
                            + seconds(end - unanswered.startedAt) + " until the journal ends; in " + r.phase
                            + " since " + rel(l, since(r))));
            return;
        }
        long since = since(r);
        String waited = endedEarly(l, n) ? "for " + seconds(end - since) + " when " + diedNote(l, n)
                : "for " + seconds(end - since) + " until the journal ends"
                + (n.shutDownAt != Long.MIN_VALUE && n.shutDownAt >= since ? " (" + n.name + " shut down at "
                + rel(l, n.shutDownAt) + " with it still there)" : "");
        String stepping = stepping(l, n, r);
        if (r.phase == RequestPhase.WAITING_FOR_REMOTE_KVS) {
            out.add(new Finding("stuck-waiting", n.name, r.requestId, r.transferId, r.phase,
                    consumerTpAboveProducer(l, n, r.transferId) ? 22 : 27, end, since,
                    "in WAITING_FOR_REMOTE_KVS " + waited + ": " + whyNoWriteDone(l, n, r) + stepping));
        } else if (r.phase == RequestPhase.DEFERRED_FREE) {
            out.add(new Finding("stuck", n.name, r.requestId, r.transferId, r.phase, 7, end, since,
                    "blocks held in DEFERRED_FREE " + waited + ": no ACK and no reap yet "
                            + (n.producer() ? "(defer_timeout " + setting(n.config.deferTimeoutNs()) + ")" : "(consumers never reap)")
                            + stepping));
        } else {
            Finding reads = unfinishedReads(l, n, r, end, waited, stepping);
            if (reads != null) {
                out.add(reads);
                return;
            }
            // no transfer evidence says which class: say so rather than guess one
            out.add(new Finding("stuck", n.name, r.requestId, r.transferId, r.phase, 0, end, since,
                    "no terminal event: in " + r.phase + " " + waited + (r.reason == null ? "" : " (entered: " + r.reason + ")")
                            + "; no class: the journal shows no transfer of it in flight, failed or unanswered" + stepping));
        }
    }

    /**
     * Class 33 (READ WideEP partial completions, #45749): a READ decode request stuck with reads
     * of its transfer still in flight and none failed, while other reads of the same transfer, on
     * this rank or its TP siblings (same host and DP rank), completed: the transfer's completions
     * never add up. When none of its reads completed anywhere, the journal cannot tell a lost RDMA
     * completion (26) from a lost wake-up (33): the finding says so, as class 26. Null when the
     * request has no read in flight, or one of its reads failed (class 2 or 9 then).
     */
    private static Finding unfinishedReads(Ledger l, NodeView n, ReqView r, long end, String waited, String stepping) {
        if (n.producer() || n.config.mode() != io.kvledger.core.config.TransferMode.READ || r.transferId == null) {
            return null;
        }
        TransferView t = l.transfers.get(r.transferId);
        if (t != null && t.firstFailedReadAt != Long.MIN_VALUE) {
            return new Finding("stuck", n.name, r.requestId, r.transferId, r.phase, 2, end, since(r),
                    "no terminal event: in " + r.phase + " " + waited + " after a read of " + r.transferId + " failed on "
                            + t.failedReadNode + " at " + rel(l, t.firstFailedReadAt) + " (" + t.failedReadDetail.strip()
                            + ")" + stepping);
        }
        List<String> ranks = new ArrayList<>();
        int pendingHere = 0;
        int doneAnywhere = 0;
        long firstPending = Long.MAX_VALUE;
        long lastDone = Long.MIN_VALUE;
        for (NodeView o : l.nodes.values()) {
            if (o.producer() || o.config.mode() != io.kvledger.core.config.TransferMode.READ
                    || !o.config.hostIp().equals(n.config.hostIp()) || o.config.dpRank() != n.config.dpRank()) {
                continue;
            }
            int pending = 0;
            for (Map.Entry<Long, String> e : o.inFlight.entrySet()) {
                if (e.getValue().equals(r.transferId) && o.readStatuses.contains(e.getKey())) {
                    pending++;
                    Long at = o.postedAt.get(e.getKey());
                    if (at != null) {
                        firstPending = Math.min(firstPending, at);
                    }
                }
            }
            int done = o.readsDone.getOrDefault(r.transferId, 0);
            if (pending == 0 && done == 0) {
                continue;
            }
            if (o == n) {
                pendingHere = pending;
            }
            doneAnywhere += done;
            if (done > 0) {
                lastDone = Math.max(lastDone, o.lastReadDoneAt.get(r.transferId));
            }
            ranks.add(o.name + " tp" + o.config.tpRank() + " " + done + "/" + (done + pending) + " done");
        }
        if (pendingHere == 0) {
            return null;
        }
        String evidence = "reads of " + r.transferId + " by rank: " + String.join(", ", ranks)
                + "; the pending ones posted from " + rel(l, firstPending) + ", none failed";
        if (doneAnywhere > 0) {
            return new Finding("partial-completions", n.name, r.requestId, r.transferId, r.phase, 33, end, since(r),
                    "completions that never add up: in " + r.phase + " " + waited + "; " + evidence + ", the last completed at "
                            + rel(l, lastDone) + stepping);
        }
        return new Finding("reads-never-completed", n.name, r.requestId, r.transferId, r.phase, 26, end, since(r),
                "one of 26 or 33: in " + r.phase + " " + waited + "; " + evidence + " and none completed: the journal lacks "
                        + "a completion of any of its reads, which would tell a lost wake-up among partial completions (33) "
                        + "from a lost RDMA completion (26)" + stepping);
    }

    /**
     * Class 33 beyond the request whose completions never add up: a READ decode engine that journals
     * its steps and scheduled none since it posted reads of a transfer that completed others on this
     * rank and failed none is stopped in that step, its reader waiting for the missing ones without
     * bound (the WideEP reader of #45749). Every other stuck request of that engine is held in the
     * same step, and every prefill whose decode leg it holds, or which sent its decode leg to that
     * engine's host after the step before the last (no decode leg in the journals: the engine never
     * admitted it), is reaped or held for want of a release that step will never send.
     */
    private static void stoppedReaders(Ledger l, Bounds b, List<Finding> out) {
        for (NodeView n : l.nodes.values()) {
            if (n.producer() || n.config.mode() != io.kvledger.core.config.TransferMode.READ || n.steps == 0 || endedEarly(l, n)) {
                continue;
            }
            String blockedTid = null;
            long postedAt = Long.MAX_VALUE;
            int pending = 0;
            for (Map.Entry<Long, String> e : n.inFlight.entrySet()) {
                Long at = n.postedAt.get(e.getKey());
                TransferView t = l.transfers.get(e.getValue());
                if (at == null || !n.readStatuses.contains(e.getKey()) || t == null || t.firstFailedReadAt != Long.MIN_VALUE
                        || n.readsDone.getOrDefault(e.getValue(), 0) == 0) {
                    continue;
                }
                if (at < postedAt) {
                    postedAt = at;
                    blockedTid = e.getValue();
                }
            }
            long end = endOf(l, n);
            if (blockedTid == null || n.lastStepAt > postedAt || end - postedAt <= b.stuckAfterNs()) {
                continue;
            }
            for (Map.Entry<Long, String> e : n.inFlight.entrySet()) {
                if (e.getValue().equals(blockedTid) && n.readStatuses.contains(e.getKey())) {
                    pending++;
                }
            }
            int done = n.readsDone.get(blockedTid);
            String blockedRid = null;
            for (ReqView r : n.requests.values()) {
                if (blockedTid.equals(r.transferId)) {
                    blockedRid = r.requestId;
                }
            }
            String step = n.name + " has scheduled no step since " + rel(l, n.lastStepAt) + ": the step stopped waiting, "
                    + "without a deadline, for the reads of " + blockedTid + (blockedRid == null ? "" : " (request " + blockedRid + ")")
                    + ", " + done + "/" + (done + pending) + " done, the rest pending since " + rel(l, postedAt)
                    + ", none failed (a WideEP reader waiting for chunks that never arrive, #45749)";
            for (ReqView r : n.requests.values()) {
                if (r.phase == null || r.phase.terminal() || blockedTid.equals(r.transferId)
                        || status(l, n, r, end, b) != InFlight.Status.STUCK) {
                    continue;
                }
                out.add(new Finding("partial-completions", n.name, r.requestId, r.transferId, r.phase, 33, end, since(r),
                        "held in a stopped engine step: in " + r.phase + " since " + rel(l, since(r)) + "; " + step));
            }
            for (NodeView p : l.nodes.values()) {
                if (!p.producer() || p.config.mode() != io.kvledger.core.config.TransferMode.READ) {
                    continue;
                }
                for (ReqView r : p.requests.values()) {
                    Finding f = heldByStoppedEngine(l, n, p, r, b, step, "partial-completions", 33);
                    if (f != null) {
                        out.add(f);
                    }
                }
            }
        }
    }

    /**
     * A READ prefill request {@code r} of {@code p} reaped, or held in DEFERRED_FREE, without a
     * release because the decode engine {@code n} stopped in a step ({@code step} says why): its
     * decode leg is held there, or its request id sends the leg to {@code n}, which never admitted
     * it; {@code null} when neither.
     */
    private static Finding heldByStoppedEngine(Ledger l, NodeView n, NodeView p, ReqView r, Bounds b, String step,
                                               String detector, int bugClass) {
        if (r.transferId == null) {
            return null;
        }
        long reapedAt = Long.MIN_VALUE;
        for (Seen s : r.anomalies) {
            if (s.anomaly().kind() == AnomalyKind.DEFERRAL_REAPED) {
                reapedAt = s.atNs();
            }
        }
        boolean held = r.phase == RequestPhase.DEFERRED_FREE && status(l, p, r, endOf(l, p), b) == InFlight.Status.STUCK;
        if (reapedAt == Long.MIN_VALUE && !held) {
            return null;
        }
        TransferView t = l.transfers.get(r.transferId);
        if (t == null || t.releasesReceived.getOrDefault(p.name, 0) > 0) {
            return null;
        }
        String how;
        if (t.legs.containsKey(n.name)) {
            ReqView d = n.requests.get(t.legs.get(n.name));
            if (d == null || d.phase == null || d.phase.terminal()) {
                return null;
            }
            how = "its decode leg on " + n.name + " is in " + d.phase;
        } else {
            for (String node : t.legs.keySet()) {
                if (!l.nodes.get(node).producer()) {
                    return null;
                }
            }
            String peer = io.kvledger.core.moriio.RequestIds.peerZmqFromRequestId(r.requestId, true).orElse(null);
            var addr = peer == null ? null : io.kvledger.core.moriio.ZmqAddress.parse(peer);
            long deferredAt = reapedAt != Long.MIN_VALUE ? reapedAt - p.config.deferTimeoutNs() : since(r);
            if (addr == null || !addr.isOk() || !addr.value().host().equals(n.config.hostIp())
                    || addr.value().notifyPort() != n.config.notifyPortBase()
                    || n.prevStepAt != Long.MIN_VALUE && deferredAt < n.prevStepAt) {
                // a leg that reached the engine before its step before the last was admitted by the last
                return null;
            }
            how = "its request id sends the decode leg to " + n.name + " (" + n.config.hostIp() + "), whose journal never "
                    + "admitted it";
        }
        return new Finding(detector, p.name, r.requestId, r.transferId, r.phase, bugClass,
                reapedAt != Long.MIN_VALUE ? reapedAt : endOf(l, p), since(r),
                (reapedAt != Long.MIN_VALUE ? "deferred free reaped at " + rel(l, reapedAt) : "blocks held in DEFERRED_FREE")
                        + " without a release: " + how + "; " + step);
    }

    /**
     * Class 9 (RDMA notification poisoning): a stuck request with transfer statuses still in
     * flight on an engine whose last completion was a failure, for longer than the stuck bound;
     * no transfer completed on that engine after it.
     */
    private static Finding poisonedStatus(Ledger l, NodeView n, ReqView r, long end, Bounds b) {
        long failedAt = n.failedSinceSuccessAt;
        if (failedAt == Long.MIN_VALUE || end - failedAt <= b.stuckAfterNs() || r.transferId == null) {
            return null;
        }
        List<Long> waiting = new ArrayList<>();
        long firstPost = Long.MAX_VALUE;
        for (Map.Entry<Long, String> e : n.inFlight.entrySet()) {
            Long posted = n.postedAt.get(e.getKey());
            if (e.getValue().equals(r.transferId) && posted != null) {
                waiting.add(e.getKey());
                firstPost = Math.min(firstPost, posted);
            }
        }
        if (waiting.isEmpty()) {
            return null;
        }
        return new Finding("transfer-status-poisoned", n.name, r.requestId, r.transferId, r.phase, 9, end, since(r),
                (waiting.size() == 1 ? "transfer status " : "transfer statuses ") + waiting + " posted from "
                        + rel(l, firstPost) + " never completed: the last completion on " + n.name + " was a failure at "
                        + rel(l, failedAt) + " (" + n.failedDetail.strip() + (n.failedTransfer == null ? "" : ", transfer "
                        + n.failedTransfer) + ") and no transfer completed on this engine for " + seconds(end - failedAt)
                        + " until the journal ends; in " + r.phase + " since " + rel(l, since(r)));
    }

    /**
     * Class 9 on the other legs of a poisoned transfer: a prefill holding (or reaping) its blocks
     * for a READ decode whose engine stopped completing, or a WRITE decode waiting for the
     * write_done of a prefill whose engine did, gets the poisoned engine's finding instead of a
     * generic reap or wait.
     */
    private static void poisonedPeers(Ledger l, List<Finding> found, List<Finding> out) {
        for (Finding p : List.copyOf(found)) {
            if (!p.detector().equals("transfer-status-poisoned") || p.transferId() == null) {
                continue;
            }
            TransferView t = l.transfers.get(p.transferId());
            if (t == null) {
                continue;
            }
            t.legRids.forEach((node, rids) -> {
                if (node.equals(p.node())) {
                    return;
                }
                NodeView o = l.nodes.get(node);
                for (String rid : rids) {
                    ReqView r = o == null ? null : o.requests.get(rid);
                    boolean waits = t.reapedOn.containsKey(node) || r != null && r.phase != null && !r.phase.terminal();
                    if (!waits) {
                        continue;
                    }
                    String state = t.reapedOn.containsKey(node) ? "reaped at " + rel(l, t.reapedOn.get(node))
                            : r.phase + " since " + rel(l, since(r));
                    out.add(new Finding("transfer-status-poisoned", node, rid, t.transferId, r == null ? null : r.phase, 9,
                            p.atNs(), r == null ? -1 : since(r), "its peer " + p.node() + " " + p.requestId()
                                    + " never finished its transfer: " + p.message() + "; this leg: " + state));
                }
            });
        }
    }

    private static boolean writeProducer(NodeView n) {
        return n.producer() && n.config.mode() == io.kvledger.core.config.TransferMode.WRITE;
    }

    /**
     * Classes 21 and 37 look alike on a READ decode whose handshake to a peer DP rank above 0 is
     * never answered: with the peer's pod layout ({@code remote_dp_size_local}) the journal tells a
     * rank on another pod (37, eager-handshake-wrong-pod) from a peer that did not answer (21);
     * without it the finding says it cannot tell.
     */
    private static String podsUnknown(NodeView n, ReqView r, Handshake h) {
        if (n.producer() || n.config.mode() != io.kvledger.core.config.TransferMode.READ || r.remoteDpSize <= 1
                || r.remoteDpSizeLocal > 0 || h.rank < 1) {
            return "";
        }
        return "one of 21 or 37: the journal lacks the peer's remote_dp_size_local, which would tell whether DP rank "
                + h.rank + " of " + r.remoteDpSize + " lives on another pod than remote_host (37) or its listener never "
                + "answered (21); ";
    }

    /**
     * The handshake a request still waits on: one this node started for the engine its params
     * name, never completed nor failed, for longer than the stuck bound, while no transfer was
     * posted for the request.
     */
    private static Handshake unansweredHandshake(NodeView n, ReqView r, long end, Bounds b) {
        if (r.handshakeEngine == null || r.transferPosted) {
            return null;
        }
        for (Handshake h : n.handshakes.values()) {
            if (h.engine().equals(r.handshakeEngine) && h.completedAt == Long.MIN_VALUE && h.failedAt == Long.MIN_VALUE
                    && h.host != null && end - h.startedAt > b.stuckAfterNs()) {
                return h;
            }
        }
        return null;
    }

    /** A HANDSHAKE_FAILED anomaly of a request: the key, the peer it dialled, how long it waited and why it failed. */
    private static Finding handshakeFailed(Ledger l, NodeView n, ReqView r, String tid, Seen s) {
        String detail = s.anomaly().detail();
        Handshake failed = null;
        for (Handshake h : n.handshakes.values()) {
            if (h.failedAt != Long.MIN_VALUE && h.failedAt <= s.atNs() && detail != null && detail.endsWith(h.key)) {
                failed = h;
            }
        }
        if (failed == null && r.handshakeEngine != null) {
            for (Handshake h : n.handshakes.values()) {
                if (h.engine().equals(r.handshakeEngine) && h.failedAt != Long.MIN_VALUE && h.failedAt <= s.atNs()) {
                    failed = h;
                }
            }
        }
        String msg;
        if (failed == null) {
            msg = "HANDSHAKE_FAILED at " + rel(l, s.atNs()) + ": " + detail;
        } else {
            msg = detail + "; handshake " + failed.key + " with " + failed.endpoint()
                    + (failed.host == null ? "" : ", started at " + rel(l, failed.startedAt))
                    + ", failed at " + rel(l, failed.failedAt)
                    + (failed.host == null ? "" : " after " + seconds(failed.failedAt - failed.startedAt))
                    + " (" + failed.failReason + ")"
                    + (failed.completedAt != Long.MIN_VALUE ? "; completed later at " + rel(l, failed.completedAt) : "");
        }
        if (r.phase != null && !r.phase.terminal()) {
            msg += "; still in " + r.phase + " since " + rel(l, since(r)) + " when the journal ends";
        }
        return new Finding("handshake-incomplete", n.name, r.requestId, tid, r.phase, 21, s.atNs(), r.sinceNs, msg);
    }

    /**
     * A negative count from get_num_new_matched_tokens (no section-7 class: the seed's missing
     * clamp, seed-vs-newest switch match-clamps-at-zero): the counts it came from, and the other
     * legs of its transfer.
     */
    private static Finding negativeMatched(Ledger l, NodeView n, ReqView r, String tid, Seen s) {
        String detail = s.anomaly().detail();
        String count = detail != null && detail.startsWith("count ") ? detail.substring(6) : detail;
        StringBuilder m = new StringBuilder("get_num_new_matched_tokens returned ").append(count)
                .append(" at ").append(rel(l, s.atNs()));
        if (r.promptTokens >= 0 && r.lastComputedTokens >= 0) {
            m.append(" (num_prompt_tokens ").append(r.promptTokens).append(", prompt_token_ids ")
                    .append(r.promptTokenIds).append(", num_computed_tokens ")
                    .append(r.lastComputedTokens).append(", ").append(n.config.mode()).append(' ')
                    .append(n.producer() ? "producer" : "consumer").append(')');
        }
        m.append(": vLLM's scheduler takes a negative external token count (no clamp at 0: switch match-clamps-at-zero is off)");
        TransferView t = tid == null ? null : l.transfers.get(tid);
        if (t != null) {
            List<String> others = new ArrayList<>();
            t.legs.forEach((node, rid) -> {
                if (!node.equals(n.name)) {
                    others.add(node + " " + rid);
                }
            });
            if (!others.isEmpty()) {
                m.append("; transfer ").append(tid).append(" also on ").append(String.join(", ", others));
            }
        }
        return new Finding("negative-matched-tokens", n.name, r.requestId, tid, r.phase, 0, s.atNs(), r.sinceNs, m.toString());
    }

    /**
     * With TP above 1: a decode rank whose worker had its write_done waits for its other TP ranks
     * (vLLM hands a request to the scheduler once every worker reported it received); a rank whose
     * write_done was sent to it but never arrived names the prefill rank that sent it. Null when
     * neither applies.
     */
    private static String whyNoWriteDoneTp(Ledger l, NodeView d, TransferView t) {
        Long reported = t.workerReported.get(d.name);
        if (reported != null) {
            List<String> silent = new ArrayList<>();
            for (NodeView o : tpSiblings(l, d)) {
                if (t.legs.containsKey(o.name) && !t.workerReported.containsKey(o.name)) {
                    silent.add(o.name);
                }
            }
            return "its worker got its write_done and reported it received at " + rel(l, reported)
                    + ", but vLLM hands a request back to the scheduler only once every TP rank's worker reported it, and "
                    + (silent.isEmpty() ? "another TP rank (not in these journals)" : String.join(", ", silent)) + " never did";
        }
        for (Send wd : t.sends) {
            if (wd.kind().equals("write_done") && listener(l, wd.host(), wd.port()) == d) {
                return wd.fromNode() + " sent write_done to this rank (" + wd.host() + ":" + wd.port() + ") at "
                        + rel(l, wd.atNs()) + (t.writeDoneReceivedBy.contains(d.name)
                        ? " and it arrived, but the worker never mapped it" : lostHow(l, t, wd));
            }
        }
        int producerTp = producerTp(l, t);
        if (producerTp > 0 && d.config.tpRank() >= producerTp) {
            return "no prefill TP rank sends write_done to this rank: prefill TP rank r sends it to the decode's notify port"
                    + " + DP rank + r, and the prefill has TP " + producerTp + " while this is decode TP rank "
                    + d.config.tpRank() + " of " + d.config.tpSize() + " (heterogeneous TP: no MoRIIO version has a WRITE"
                    + " rule for a decode TP above the prefill's)";
        }
        return null;
    }

    /** The TP size of the producer legs of a transfer (the largest), or 0 when none is journaled. */
    private static int producerTp(Ledger l, TransferView t) {
        int tp = 0;
        for (String node : t.legs.keySet()) {
            NodeView v = l.nodes.get(node);
            if (v.producer()) {
                tp = Math.max(tp, v.config.tpSize());
            }
        }
        return tp;
    }

    /** Whether a WRITE decode rank's transfer ran against a prefill of fewer TP ranks (class 22). */
    private static boolean consumerTpAboveProducer(Ledger l, NodeView d, String tid) {
        TransferView t = tid == null ? null : l.transfers.get(tid);
        if (t == null || d.producer() || d.config.mode() != io.kvledger.core.config.TransferMode.WRITE) {
            return false;
        }
        int producerTp = producerTp(l, t);
        return producerTp > 0 && d.config.tpSize() > producerTp;
    }

    /**
     * Whether a producer rank's transfer was released by a decode of fewer TP ranks than the
     * producer's (the consumer_tp_size of its releases): get_moriio_remote_tp_rank maps decode rank
     * d to prefill rank d * (P_tp / D_tp), so the other prefill ranks are never read nor released
     * (the P_tp > D_tp residual of class 22).
     */
    private static boolean producerTpAboveConsumer(Ledger l, NodeView p, String tid) {
        TransferView t = tid == null ? null : l.transfers.get(tid);
        if (t == null || !p.producer()) {
            return false;
        }
        if (p.config.mode() == io.kvledger.core.config.TransferMode.WRITE) {
            int consumerTp = consumerTp(l, t);
            return consumerTp > 0 && p.config.tpRank() >= consumerTp;
        }
        return !t.releasesReceived.isEmpty() && t.consumerTpSize < p.config.tpSize();
    }

    /** The TP size of the consumer legs of a transfer (the largest), or 0 when none is journaled. */
    private static int consumerTp(Ledger l, TransferView t) {
        int tp = 0;
        for (String node : t.legs.keySet()) {
            NodeView v = l.nodes.get(node);
            if (!v.producer()) {
                tp = Math.max(tp, v.config.tpSize());
            }
        }
        return tp;
    }

    private static String unreadRanksNote(Ledger l, NodeView p, String tid) {
        TransferView t = l.transfers.get(tid);
        if (p.config.mode() == io.kvledger.core.config.TransferMode.WRITE) {
            return "; heterogeneous TP: the decode (TP " + consumerTp(l, t) + ") sends remote_blocks to its own TP size's"
                    + " prefill ranks only, and this is prefill TP rank " + p.config.tpRank();
        }
        return "; heterogeneous TP: the decode (TP " + t.consumerTpSize + ") reads and releases only prefill TP ranks"
                + " d * " + (p.config.tpSize() / Math.max(1, t.consumerTpSize)) + " of the prefill's " + p.config.tpSize()
                + ", so every request is freed by the reap";
    }

    /** Why a WRITE decode leg never got its write_done, from what the other legs saw. */
    private static String whyNoWriteDone(Ledger l, NodeView d, ReqView r) {
        if (r.transferId == null) {
            return "no transfer id is known for it";
        }
        TransferView t = l.transfers.get(r.transferId);
        if (t == null) {
            return "no node recorded transfer " + r.transferId;
        }
        if (d.config.tpSize() > 1) {
            String why = whyNoWriteDoneTp(l, d, t);
            if (why != null) {
                return why;
            }
        }
        // with TP > 1 the DP rank's one scheduler may be another rank's node (TP rank 0's)
        List<String> schedulers = new ArrayList<>(List.of(d.name));
        if (d.config.tpSize() > 1) {
            tpSiblings(l, d).forEach(o -> schedulers.add(o.name));
        }
        List<Send> notifies = t.sends.stream().filter(s -> s.kind().equals("remote_blocks") && schedulers.contains(s.fromNode())).toList();
        if (notifies.isEmpty() && schedulers.size() > 1) {
            return "no TP rank of this DP rank (" + String.join(", ", schedulers) + ") sent remote_blocks: its scheduler "
                    + "never asked for the KV (not the notify owner, the address did not resolve, or the engine stopped first); "
                    + "no producer will write";
        }
        if (notifies.isEmpty()) {
            return "this rank never sent remote_blocks (not the notify owner, or the address did not resolve); "
                    + "no producer will write";
        }
        Send first = notifies.get(0);
        String to = first.host() + ":" + first.port();
        NodeView target = listener(l, first.host(), first.port());
        if (target == null) {
            String alt = altForm(l, first.host(), first.port());
            return "remote_blocks went to " + to + " at " + rel(l, first.atNs()) + " but no journaled node listens there"
                    + (alt == null ? "" : "; " + alt);
        }
        boolean received = t.remoteBlocksAt.stream().anyMatch(s -> s.node().equals(target.name));
        if (!received) {
            return "remote_blocks sent to " + target.name + " (" + to + ") at " + rel(l, first.atNs()) + lostHow(l, t, first);
        }
        if (!t.legs.containsKey(target.name)) {
            return "remote_blocks reached " + target.name + ", which never served this transfer (the prefill leg ran on "
                    + otherProducers(l, t, d.name) + ")";
        }
        ReqView p = target.requests.get(t.legs.get(target.name));
        boolean writeDoneSent = t.sends.stream().anyMatch(s -> s.kind().equals("write_done"));
        if (writeDoneSent) {
            Send wd = t.sends.stream().filter(s -> s.kind().equals("write_done")).findFirst().get();
            return target.name + " sent write_done to " + wd.host() + ":" + wd.port() + " at " + rel(l, wd.atNs())
                    + (t.writeDoneReceivedBy.contains(d.name) ? " and it arrived, but the worker never mapped it" : lostHow(l, t, wd));
        }
        if (p != null) {
            for (Seen s : p.anomalies) {
                AnomalyKind k = s.anomaly().kind();
                if (k == AnomalyKind.WRITE_FAILED || k == AnomalyKind.WRITE_TASK_EXPIRED || k == AnomalyKind.WRITE_TIMEOUT
                        || k == AnomalyKind.WRITE_RANK_NOT_NOTIFIED) {
                    return target.name + " gave up at " + rel(l, s.atNs()) + " (" + k + ": " + s.anomaly().detail()
                            + "); no write_done was sent and WRITE has no decode-side timeout";
                }
            }
            return target.name + " holds the request in " + p.phase + " and has not sent write_done";
        }
        String ended = t.legEnds.get(target.name);
        return target.name + "'s leg ended " + (ended == null ? "" : ended + " ") + "without sending write_done"
                + (t.writesPosted == 0 ? " and without posting any write" : "");
    }

    /**
     * How a notify that did not arrive was lost: its sender's publisher journaled that it never
     * left, or it left and vanished on the way.
     */
    private static String lostHow(Ledger l, TransferView t, Send s) {
        for (Ledger.SendFailure f : t.sendFailures) {
            if (f.fromNode().equals(s.fromNode()) && s.kind().equals(f.kind()) && f.atNs() >= s.atNs()) {
                return ", which never left " + s.fromNode() + " (send to " + f.endpoint() + " failed: " + f.reason() + ")";
            }
        }
        NodeView to = listener(l, s.host(), s.port());
        if (to != null && endedEarly(l, to) && l.clocks.certainlyBefore(to.name, to.lastAtNs, s.fromNode(), s.atNs())) {
            return ", after " + diedNote(l, to) + ": a dead receiver, not a lost notify";
        }
        if (to != null && endedEarly(l, to) && s.atNs() > to.lastAtNs) {
            return ", sent " + Seconds.duration(s.atNs() - to.lastAtNs) + " after " + diedNote(l, to) + " by the stamps, "
                    + "within the two clocks' measured skew (" + s.fromNode() + " measured "
                    + Seconds.duration(l.clocks.ahead(s.fromNode(), to.name)) + " ahead of " + to.name + ", plus a margin of "
                    + Seconds.duration(ClockSkew.MARGIN_NS) + "): a dead receiver or a lost notify";
        }
        return ", which never arrived (lost notify)";
    }

    /**
     * Whether {@code n} is a live process's journal that ends without a shutdown before the other
     * journals end (certainly before another one's last stamp, beyond the two clocks' measured
     * skew): its process was killed (or was still running when the journals were read).
     */
    static boolean endedEarly(Ledger l, NodeView n) {
        if (!n.live || n.shutDownAt != Long.MIN_VALUE || n.lastAtNs == Long.MIN_VALUE || n.lastAtNs >= l.lastAtNs) {
            return false;
        }
        for (NodeView o : l.nodes.values()) {
            if (!o.tap() && o != n && o.lastAtNs != Long.MIN_VALUE
                    && l.clocks.certainlyBefore(n.name, n.lastAtNs, o.name, o.lastAtNs)) {
                return true;
            }
        }
        return false;
    }

    /** The end that bounds {@code n}'s requests' waits: its own journal's when it ended early, else the journals'. */
    static long endOf(Ledger l, NodeView n) {
        return endedEarly(l, n) ? n.lastAtNs : l.lastAtNs;
    }

    private static String diedNote(Ledger l, NodeView n) {
        return n.name + "'s journal ended at " + rel(l, n.lastAtNs) + " without a shutdown (its process was killed, or "
                + "was still running when the journals were read; the others go on to " + rel(l, l.lastAtNs) + ")";
    }

    private static String otherProducers(Ledger l, TransferView t, String except) {
        List<String> names = new ArrayList<>();
        for (String node : t.legs.keySet()) {
            if (!node.equals(except) && l.nodes.get(node).producer()) {
                names.add(node);
            }
        }
        return names.isEmpty() ? "a node not in these journals" : String.join(", ", names);
    }

    private static Finding fromAnomaly(Ledger l, NodeView n, ReqView r, Seen s) {
        AnomalyKind k = s.anomaly().kind();
        String detail = s.anomaly().detail();
        String tid = r.transferId != null ? r.transferId : s.anomaly().transferId();
        return switch (k) {
            case DEFERRAL_REAPED -> reapedSibling(l, n, r) != null
                    ? new Finding("siblings-share-transfer-id", n.name, r.requestId, tid, r.phase, 29, s.atNs(), r.sinceNs,
                            "deferred free reaped at " + rel(l, s.atNs()) + " without an ACK: " + siblingNote(l, n, r, tid)
                                    + reapedWarning(n, detail))
                    : new Finding("reaped-without-ack", n.name, r.requestId, tid, r.phase,
                    reapedAfterRead(l, n, tid, s.atNs()) ? 8 : producerTpAboveConsumer(l, n, tid) ? 22 : 7, s.atNs(), r.sinceNs,
                    "deferred free reaped at " + rel(l, s.atNs()) + " without an ACK: " + whyNoAck(l, n, tid)
                            + (reapedAfterRead(l, n, tid, s.atNs()) ? "; a read of these blocks was still in flight (use after free)"
                            : producerTpAboveConsumer(l, n, tid) ? unreadRanksNote(l, n, tid) : "")
                            + readWithinSkew(l, n, tid, s.atNs()) + reapedWarning(n, detail));
            case DEFERRAL_EXPIRED_AT_ACK -> new Finding("reaped-warning", n.name, r.requestId, tid, r.phase, 0, s.atNs(),
                    r.sinceNs, "not a leak: its defer_timeout passed in the update_connector_output that brought its ACK, "
                            + "which freed it at " + rel(l, s.atNs()) + reapedWarning(n, detail)
                            + " (kvledger: DEFERRAL_EXPIRED_AT_ACK)");
            case EMPTY_REMOTE_BLOCKS -> new Finding("empty-remote-blocks", n.name, r.requestId, tid, r.phase, 28, s.atNs(), r.sinceNs,
                    "remote_blocks with an empty block_notify_list at " + rel(l, s.atNs()) + ": the Python handler raises and its listener dies");
            case ACK_UNMAPPED_DROPPED -> new Finding("ack-before-mapping", n.name, r.requestId, tid, r.phase, 12, s.atNs(),
                    r.sinceNs, "the ACK for " + tid + " arrived before the worker's mapping held it and was dropped (" + detail + ")");
            case ACK_UNMAPPED_STUCK, WRITE_DONE_UNMATCHED, ACK_FOR_NON_LIVE_TRANSFER ->
                    new Finding("unknown-completion-id", n.name, r.requestId, tid, r.phase, 1, s.atNs(), r.sinceNs,
                            "completion id " + tid + " matches no request this worker maps (" + k + ": " + detail + ")");
            case TRANSFER_ID_COLLISION -> siblingOf(r.requestId, detail) != null
                    ? new Finding("siblings-share-transfer-id", n.name, r.requestId, tid, r.phase, 29, s.atNs(), r.sinceNs,
                            "n > 1 siblings share transfer id " + tid + ": " + r.requestId + " and " + siblingOf(r.requestId, detail)
                                    + " are samples of one parent request (vLLM's <index>_<parent id>), and the id map holds one "
                                    + "of them; " + k + " at " + rel(l, s.atNs()) + ": " + detail)
                    : new Finding("superseded-transfer-id", n.name, r.requestId, tid, r.phase, 13,
                    s.atNs(), r.sinceNs, k + " at " + rel(l, s.atNs()) + ": " + detail);
            case STALE_ACK_DROPPED -> new Finding("ack-before-finish", n.name, r.requestId, tid, r.phase, 11, s.atNs(), r.sinceNs,
                    "an ACK arrived before request_finished, was parked, and was dropped as stale at " + rel(l, s.atNs()));
            case FREE_WHILE_TRANSFER_IN_FLIGHT, REAP_THEN_LATE_ACK -> new Finding("free-while-in-flight", n.name, r.requestId, tid,
                    r.phase, 8, s.atNs(), r.sinceNs, k + " at " + rel(l, s.atNs()) + ": " + detail);
            case LISTENER_WOULD_DIE_IN_PYTHON -> listenerDeath(l, n, r.requestId, tid, s);
            case HANDSHAKE_FAILED -> handshakeFailed(l, n, r, tid, s);
            case HANDSHAKE_VOTE_FAILED -> voteFailed(l, n, r, tid, s);
            case NEGATIVE_MATCHED_TOKENS -> negativeMatched(l, n, r, tid, s);
            case PENDING_SAVE_UNKNOWN_REQUEST -> pendingSaveUnknown(l, n, r, tid, s);
            case META_PARAM_MISSING -> metaParamMissing(l, n, r, tid, s);
            case MAPPING_LEAK, PENDING_SAVE_LEAK -> new Finding("mapping-leak", n.name, r.requestId, tid, r.phase, 35, s.atNs(),
                    r.sinceNs, k + ": " + detail);
            case ACK_FANIN_INVALID -> new Finding("ack-deficit", n.name, r.requestId, tid, r.phase, 22, s.atNs(), r.sinceNs,
                    "ACK fan-in cannot be counted: " + detail);
            default -> new Finding("anomaly", n.name, r.requestId, tid, r.phase, k.bugClass(), s.atNs(), r.sinceNs,
                    k + " at " + rel(l, s.atNs()) + ": " + detail);
        };
    }

    /**
     * Class 19 (#45043): a WRITE producer's build_connector_meta looked up
     * {@code _reqs_need_pending_save[req_id]} for a request scheduled with new blocks that has no
     * pending save, and raised KeyError (vLLM 239b5ff30; the fix skips unknown ids): EngineCore
     * dies with every request it holds. Says from the request's admission why it had none.
     */
    private static Finding pendingSaveUnknown(Ledger l, NodeView n, ReqView r, String tid, Seen s) {
        String why;
        if (r.promptTokens < 0) {
            why = "this connector never admitted it (no get_num_new_matched_tokens with params): a request outside "
                    + "disaggregation";
        } else if (!r.disagg) {
            why = "its kv_transfer_params asked for no transfer (no do_remote_decode): a non-disaggregated request";
        } else {
            why = "it is disaggregated, but its pending save was already consumed (a chunk after its final one, or "
                    + "scheduled again after preemption)";
        }
        return new Finding("pending-save-unknown-request", n.name, r.requestId, tid, r.phase, 19, s.atNs(), r.sinceNs,
                "scheduled with new blocks at " + rel(l, s.atNs()) + " on a WRITE producer without a pending save: "
                        + "build_connector_meta's _reqs_need_pending_save[" + r.requestId + "] raises KeyError and EngineCore "
                        + "dies with every request " + n.name + " holds; " + why + " (the fix, #45043, skips unknown ids; "
                        + "switch pending-save-unknown-raises)");
    }

    private static final java.util.regex.Pattern MISSING_KEY = java.util.regex.Pattern.compile("kv_transfer_params\\['(\\w+)'\\]");

    /**
     * A key add_new_req reads by key was missing when build_connector_meta ran (KeyError): class 14
     * when the request's admission params carried it (mutated or cleared between alloc and meta
     * build, #37716/#39276), class 16 when they never did (a coordinator that sends no MoRIIO
     * keys, #39276 Fix C); "one of 14 or 16" when the journal holds no admission of the request.
     */
    private static Finding metaParamMissing(Ledger l, NodeView n, ReqView r, String tid, Seen s) {
        String detail = s.anomaly().detail();
        java.util.regex.Matcher m = detail == null ? null : MISSING_KEY.matcher(detail);
        if (m == null || !m.find()) {
            return new Finding("anomaly", n.name, r.requestId, tid, r.phase, 14, s.atNs(), r.sinceNs,
                    AnomalyKind.META_PARAM_MISSING + " at " + rel(l, s.atNs()) + ": " + detail);
        }
        String key = m.group(1);
        String at = "build_connector_meta raised KeyError on kv_transfer_params['" + key + "'] at " + rel(l, s.atNs())
                + " (" + detail + "); EngineCore dies with every request " + n.name + " holds";
        if (r.promptTokens < 0) {
            return new Finding("params-key-missing", n.name, r.requestId, tid, r.phase, 14, s.atNs(), r.sinceNs,
                    "one of 14 or 16: " + at + "; the journal lacks the request's admission params, which would tell a key "
                            + "cleared after alloc (14) from one the coordinator never sent (16)");
        }
        if (r.admittedKeys.contains(key)) {
            return new Finding("params-lost-before-meta", n.name, r.requestId, tid, r.phase, 14, s.atNs(), r.sinceNs,
                    at + "; its params carried '" + key + "' when admitted at " + rel(l, r.firstSeenNs)
                            + ": kv_transfer_params were mutated or cleared between alloc and the meta build (the fix "
                            + "snapshots them at alloc, _req_kv_params)");
        }
        return new Finding("params-key-missing", n.name, r.requestId, tid, r.phase, 16, s.atNs(), r.sinceNs,
                at + "; its params never carried '" + key + "' (admitted at " + rel(l, r.firstSeenNs) + " with "
                        + (r.admittedKeys.isEmpty() ? "none" : String.join(", ", r.admittedKeys)) + " of "
                        + String.join(", ", Ledger.META_KEYS) + "): a coordinator that does not send MoRIIO's keys");
    }

    private static final java.util.regex.Pattern CHILD_ID = java.util.regex.Pattern.compile("(\\d+)_(.+)");
    private static final java.util.regex.Pattern COLLISION_OWNER =
            java.util.regex.Pattern.compile("(?:owned by|overwrote owner) (\\S+)");

    /**
     * Class 29: the owner a TRANSFER_ID_COLLISION names, when it and {@code rid} are both
     * children of one parent request ({@code <index>_<parent id>}, vLLM's n > 1 parallel sampling)
     * at different indices; else null (a collision of unrelated ids stays class 13).
     */
    static String siblingOf(String rid, String detail) {
        if (rid == null || detail == null) {
            return null;
        }
        java.util.regex.Matcher o = COLLISION_OWNER.matcher(detail);
        if (!o.find()) {
            return null;
        }
        String owner = o.group(1);
        java.util.regex.Matcher a = CHILD_ID.matcher(rid);
        java.util.regex.Matcher b = CHILD_ID.matcher(owner);
        if (!a.matches() || !b.matches()) {
            return null;
        }
        return a.group(2).equals(b.group(2)) && !a.group(1).equals(b.group(1)) ? owner : null;
    }

    /** The sibling whose TRANSFER_ID_COLLISION took {@code r}'s transfer id (class 29), or null. */
    /** How a reaped request lost its transfer id to its n > 1 sibling (see {@link #reapedSibling}). */
    private static String siblingNote(Ledger l, NodeView n, ReqView r, String tid) {
        String sibling = reapedSibling(l, n, r);
        for (Seen s : r.anomalies) {
            if (s.anomaly().kind() == AnomalyKind.TRANSFER_ID_COLLISION && sibling.equals(siblingOf(r.requestId, s.anomaly().detail()))) {
                return "it took transfer id " + tid + " over its n > 1 sibling " + sibling + " in the id map (one entry for"
                        + " both), and no ACK for " + tid + " reached it";
            }
        }
        for (ReqView o : n.requests.values()) {
            for (Seen s : o.anomalies) {
                if (s.anomaly().kind() == AnomalyKind.TRANSFER_ID_COLLISION && r.requestId.equals(siblingOf(o.requestId, s.anomaly().detail()))) {
                    return "its n > 1 sibling " + sibling + " took transfer id " + tid + " in the id map, so the release for "
                            + tid + " freed that sibling, not this one";
                }
            }
        }
        return "its n > 1 sibling " + sibling + " (vLLM's <index>_<parent id>) claimed the same transfer id " + tid
                + " on this node, and the one transfer the decode made for " + tid + " served that sibling, not this one";
    }

    private static String reapedSibling(Ledger l, NodeView n, ReqView r) {
        TransferView t = r.transferId == null ? null : l.transfers.get(r.transferId);
        java.util.regex.Matcher a = CHILD_ID.matcher(r.requestId);
        if (t != null && a.matches()) {
            // no collision journaled (the sibling had finished before it was admitted): the ids say it
            String ended = n.endedChildren.get(r.transferId);
            java.util.List<String> rids = new ArrayList<>(t.rids(n.name));
            if (ended != null) {
                rids.add(ended);
            }
            for (String rid : rids) {
                java.util.regex.Matcher b = CHILD_ID.matcher(rid);
                if (!rid.equals(r.requestId) && b.matches() && a.group(2).equals(b.group(2)) && !a.group(1).equals(b.group(1))) {
                    return rid;
                }
            }
        }
        for (Seen s : r.anomalies) {
            // it took the id from its sibling itself: the sibling's finish unmapped it (WRITE)
            String sibling = s.anomaly().kind() == AnomalyKind.TRANSFER_ID_COLLISION
                    ? siblingOf(r.requestId, s.anomaly().detail()) : null;
            if (sibling != null) {
                return sibling;
            }
        }
        for (ReqView o : n.requests.values()) {
            for (Seen s : o.anomalies) {
                if (s.anomaly().kind() == AnomalyKind.TRANSFER_ID_COLLISION
                        && r.requestId.equals(siblingOf(o.requestId, s.anomaly().detail()))) {
                    return o.requestId;
                }
            }
        }
        return null;
    }

    private static final java.util.regex.Pattern REAPED_THIS_STEP = java.util.regex.Pattern.compile("\\((\\d+) reaped this step\\)");

    /**
     * The warning the engine logs for the update_connector_output that reaped (or found expired)
     * this request's deferral, in the seed's words: it counts every expired deferral, including
     * those whose ACK came in the same call. Empty when the anomaly's detail carries no count.
     */
    private static String reapedWarning(NodeView n, String detail) {
        java.util.regex.Matcher m = detail == null ? null : REAPED_THIS_STEP.matcher(detail);
        if (m == null || !m.find()) {
            return "";
        }
        return "; the engine logs \"Reaped " + m.group(1) + " deferred sends with no finished_sending notification after "
                + Math.round(n.config.deferTimeoutNs() / 1e9) + "s\" for this call"; // vLLM's own log text, not a kvledger time
    }

    private static void nodeAnomaly(Ledger l, NodeView n, Seen s, List<Finding> out) {
        AnomalyKind k = s.anomaly().kind();
        String tid = s.anomaly().transferId();
        switch (k) {
            case LISTENER_WOULD_DIE_IN_PYTHON -> out.add(listenerDeath(l, n, null, tid, s));
            case ACK_UNMAPPED_DROPPED -> out.add(new Finding("ack-before-mapping", n.name, null, tid, null, 12, s.atNs(), -1,
                    "the ACK for " + tid + " arrived before the worker's mapping held it and was dropped" + ownerHint(l, n, tid)));
            case ACK_UNMAPPED_STUCK, WRITE_DONE_UNMATCHED, ACK_FOR_NON_LIVE_TRANSFER -> out.add(new Finding(
                    "unknown-completion-id", n.name, null, tid, null, 1, s.atNs(), -1,
                    "completion id " + tid + " matches no request this worker maps" + ownerHint(l, n, tid) + " (" + k + ")"));
            case HANDSHAKE_VOTE_FAILED -> out.add(voteFailed(l, n, null, tid, s));
            case PORT_FORMS_DISAGREE -> out.add(new Finding("wrong-port-offset-form", n.name, null, null, null, 23,
                    s.atNs() == Long.MIN_VALUE ? l.firstAtNs : s.atNs(), -1, "topology check: " + s.anomaly().detail()));
            default -> {
                if (Ledger.serious(k)) {
                    // a request this node already forgot may still be known as the transfer's leg here
                    TransferView t = tid == null ? null : l.transfers.get(tid);
                    String rid = t == null ? null : t.legs.get(n.name);
                    boolean timed = s.atNs() != Long.MIN_VALUE;
                    out.add(new Finding("anomaly", n.name, rid, tid, null, k.bugClass(), timed ? s.atNs() : l.firstAtNs, -1,
                            k + (timed ? " at " + rel(l, s.atNs()) : "") + ": " + s.anomaly().detail()));
                }
            }
        }
    }

    /** When the id is some other node's request id (the seed-002 mismatch), say so. */
    private static String ownerHint(Ledger l, NodeView n, String id) {
        if (id == null) {
            return "";
        }
        for (NodeView o : l.nodes.values()) {
            if (o != n && o.requests.containsKey(id)) {
                return ": it is " + o.name + "'s request id, not a transfer id (the READ-mode completion-id mismatch)";
            }
        }
        for (TransferView t : l.transfers.values()) {
            if (t.legs.containsValue(id)) {
                return ": it is a request id of transfer " + t.transferId + ", not the transfer id";
            }
        }
        TransferView t = l.transfers.get(id);
        if (t != null && !t.legs.isEmpty() && !t.legs.containsKey(n.name)) {
            List<String> legs = new ArrayList<>();
            t.legs.forEach((node, rid) -> legs.add(node + " " + rid));
            return ": it is the transfer of " + String.join(", ", legs) + ", which this rank never served";
        }
        return "";
    }

    private static Finding listenerDeath(Ledger l, NodeView n, String rid, String tid, Seen s) {
        return new Finding("listener-death", n.name, rid, tid, null, 28, s.atNs(), -1,
                "this frame would end the Python listener thread at " + rel(l, s.atNs()) + " (" + s.anomaly().detail() + "); "
                        + n.framesAfterDeath + " later frame(s) to this rank would have been lost");
    }

    /**
     * Whether a read of {@code tid} completed after producer {@code p} reaped its blocks at
     * {@code reapAt}: certainly so, beyond the two clocks' measured skew ({@link ClockSkew}).
     */
    private static boolean reapedAfterRead(Ledger l, NodeView p, String tid, long reapAt) {
        TransferView t = tid == null ? null : l.transfers.get(tid);
        return t != null && t.readsPosted > 0 && t.lastCompletionAt != Long.MIN_VALUE
                && l.clocks.certainlyBefore(p.name, reapAt, t.lastCompletionNode, t.lastCompletionAt);
    }

    /**
     * The note for a read of {@code tid} stamped after {@code p}'s reap at {@code reapAt} but not
     * certainly after it (within the two clocks' measured skew plus the margin); empty otherwise.
     */
    private static String readWithinSkew(Ledger l, NodeView p, String tid, long reapAt) {
        TransferView t = tid == null ? null : l.transfers.get(tid);
        if (t == null || t.readsPosted == 0 || t.lastCompletionAt == Long.MIN_VALUE || t.lastCompletionAt <= reapAt
                || reapedAfterRead(l, p, tid, reapAt)) {
            return "";
        }
        return "; a read of these blocks completed on " + t.lastCompletionNode + " at " + rel(l, t.lastCompletionAt) + ", "
                + Seconds.duration(t.lastCompletionAt - reapAt) + " after the reap by the stamps, within the two clocks' "
                + "measured skew (" + t.lastCompletionNode + " measured " + Seconds.duration(l.clocks.ahead(t.lastCompletionNode,
                p.name)) + " ahead of " + p.name + ", plus a margin of " + Seconds.duration(ClockSkew.MARGIN_NS)
                + "): not taken as a use after free";
    }

    /** Why a producer never got its ACK. */
    private static String whyNoAck(Ledger l, NodeView p, String tid) {
        if (tid == null) {
            return "no transfer id known";
        }
        TransferView t = l.transfers.get(tid);
        if (t == null) {
            return "no other node recorded " + tid;
        }
        int got = t.releasesReceived.getOrDefault(p.name, 0);
        List<String> consumers = t.legs.keySet().stream().filter(x -> !l.nodes.get(x).producer()).toList();
        if (got > 0) {
            var expected = PortMath.expectedAckCount(p.config.tpSize(), t.consumerTpSize);
            if (expected.isOk() && got >= expected.value()) {
                Long reported = t.workerReported.get(p.name);
                if (reported != null && p.config.tpSize() > 1) {
                    List<String> silent = new ArrayList<>();
                    for (NodeView o : tpSiblings(l, p)) {
                        if (t.legs.containsKey(o.name) && !t.workerReported.containsKey(o.name)) {
                            silent.add(o.name);
                        }
                    }
                    return "its worker got its " + got + " release(s) and reported it finished sending at "
                            + rel(l, reported) + ", but vLLM frees a request only once every TP rank's worker reported it, and "
                            + (silent.isEmpty() ? "another TP rank (not in these journals)" : String.join(", ", silent))
                            + " never did";
                }
                return "its listener received " + got + " release(s), but the worker never counted them (dropped or "
                        + "unmapped: see the ACK findings of " + p.name + ")";
            }
            return "received " + got + " of " + (expected.isOk() ? expected.value() : "?") + " releases (consumer TP "
                    + t.consumerTpSize + ", producer TP " + p.config.tpSize() + ")";
        }
        List<Send> releases = t.sends.stream().filter(s -> s.kind().equals("release")).toList();
        for (Send r : p.config.tpSize() > 1 ? releases : List.<Send>of()) {
            if (listener(l, r.host(), r.port()) == p) {
                // a release addressed to this rank that its listener never received
                return r.fromNode() + " sent release to this rank (" + r.host() + ":" + r.port() + ") at "
                        + rel(l, r.atNs()) + lostHow(l, t, r);
            }
        }
        if (!releases.isEmpty()) {
            Send r = releases.get(0);
            NodeView target = listener(l, r.host(), r.port());
            if (target == null) {
                String alt = altForm(l, r.host(), r.port());
                return r.fromNode() + " sent release to " + r.host() + ":" + r.port() + ", where no journaled node listens"
                        + (alt == null ? "" : "; " + alt);
            }
            if (target != p) {
                return r.fromNode() + " released to " + target.name + ", not to this rank"
                        + (p.config.tpSize() > 1 ? " (with P_tp > D_tp some producer TP ranks are never read)" : "");
            }
            return r.fromNode() + " sent release at " + rel(l, r.atNs()) + lostHow(l, t, r);
        }
        if (consumers.isEmpty()) {
            return "the decode leg is not in these journals";
        }
        String c = consumers.get(0);
        NodeView cv = l.nodes.get(c);
        ReqView cr = cv.requests.get(t.legs.get(c));
        if (p.config.mode() == io.kvledger.core.config.TransferMode.WRITE) {
            boolean wd = t.sends.stream().anyMatch(s -> s.kind().equals("write_done"));
            return "WRITE self-ACK never came" + (wd ? "" : " (no write_done sent)") + "; decode " + c
                    + (cr == null ? " finished its leg" : " is in " + cr.phase);
        }
        return "decode " + c + " never sent release" + (cr == null ? " (its leg finished)" : " (it is in " + cr.phase + ")")
                + (cv.shutDownAt == Long.MIN_VALUE ? "" : "; " + c + " shut down at " + rel(l, cv.shutDownAt))
                + (cr == null ? "" : handshakeNote(l, cv, cr));
    }

    /**
     * Why a consumer never posted its read: a handshake it needs did not complete, or (journals
     * with the vote) the TP-wide eager-handshake vote failed or never came.
     */
    private static String handshakeNote(Ledger l, NodeView n, ReqView r) {
        if (r.handshakeEngine == null || r.transferPosted) {
            return "";
        }
        for (Handshake h : n.handshakes.values()) {
            if (h.engine().equals(r.handshakeEngine) && h.completedAt == Long.MIN_VALUE) {
                return "; its read was never posted: handshake " + h.key + " with " + h.endpoint()
                        + (h.failedAt == Long.MIN_VALUE ? " was never answered" : " failed (" + h.failReason + ")");
            }
        }
        for (Seen s : r.anomalies) {
            if (s.anomaly().kind() == AnomalyKind.HANDSHAKE_VOTE_FAILED) {
                return "; its read was never posted: the TP-wide eager-handshake vote failed at " + rel(l, s.atNs())
                        + " (HandshakeError on every TP rank)";
            }
        }
        if (n.config.awaitsTpVote() && n.votes.stream().noneMatch(v -> v.engine().equals(r.handshakeEngine))) {
            return "; its read was never posted: " + n.name + " waits in the TP-wide eager-handshake vote for "
                    + r.handshakeEngine + ", which never came";
        }
        return "";
    }

    // ------------------------------------------------------------------ specific cross-node detectors

    /** Every request of a transfer on every node but {@code except}, as "node rid (phase)". */
    private static List<String> legsOf(Ledger l, TransferView t, String exceptNode) {
        List<String> out = new ArrayList<>();
        if (t == null) {
            return out;
        }
        t.legRids.forEach((node, rids) -> {
            if (!node.equals(exceptNode)) {
                for (String rid : rids) {
                    out.add(node + " " + rid + legState(l, t, node, rid));
                }
            }
        });
        return out;
    }

    private static String legState(Ledger l, TransferView t, String node, String rid) {
        NodeView o = l.nodes.get(node);
        ReqView r = o == null ? null : o.requests.get(rid);
        if (r != null && r.phase != null) {
            return " (" + r.phase + " since " + rel(l, since(r)) + ")";
        }
        String ended = t.legEnds.get(node);
        return ended == null ? "" : " (ended " + ended + ")";
    }

    /** What became of a producer's deferred free: still held, or reaped (and when). */
    private static String heldOrReaped(Ledger l, TransferView t, NodeView p, ReqView pr) {
        Long reaped = t == null ? null : t.reapedOn.get(p.name);
        if (reaped != null) {
            return "its blocks were held until the reap at " + rel(l, reaped) + " (defer_timeout "
                    + setting(p.config.deferTimeoutNs()) + ")";
        }
        if (pr != null && pr.phase == RequestPhase.DEFERRED_FREE) {
            return "its blocks are held in DEFERRED_FREE since " + rel(l, since(pr)) + " until the reap (defer_timeout "
                    + setting(p.config.deferTimeoutNs()) + ")";
        }
        return pr == null || pr.phase == null ? "its leg ended" : "it is in " + pr.phase;
    }

    /**
     * Class 37: a READ decode's eager handshake dials the single {@code remote_host} with the
     * global DP rank in the port offset, while the peer's pod layout ({@code remote_dp_size_local}
     * below {@code remote_dp_size}) puts that rank on another pod as a folded local rank. One
     * finding per decode request that waited on the engine, and one per prefill leg of its transfer.
     *
     * <p>The dial arithmetic alone is no finding: the handshake must have reached another rank
     * (its endpoint is a journaled prefill node of another DP rank), or the request must show the
     * damage (the handshake failed or stayed unanswered past the stuck bound, the request is
     * stuck, or its transfer was reaped or a read of it failed). A multi-pod peer whose handshake
     * was answered where the journals show the right rank, or by a listener they do not hold, on
     * a transfer that completed, is healthy.
     */
    private static void eagerHandshakeWrongPod(Ledger l, long end, Bounds b, List<Finding> out) {
        for (NodeView n : l.nodes.values()) {
            for (Map.Entry<String, List<ReqView>> peer : n.podPeers.entrySet()) {
                for (Handshake h : n.handshakes.values()) {
                    if (!h.engine().equals(peer.getKey()) || h.rank < 0 || h.host == null) {
                        continue;
                    }
                    for (ReqView r : peer.getValue()) {
                        int local = r.remoteDpSizeLocal;
                        if (local <= 0 || h.rank < local || h.startedAt < r.firstSeenNs
                                || !wrongPodEvidence(l, n, h, r, end, b)) {
                            continue;
                        }
                        wrongPod(l, n, h, r, out);
                    }
                }
            }
        }
    }

    /**
     * Class 37 beyond the requests whose handshake dialled the wrong pod: a READ decode engine that
     * journals its steps and scheduled none since it started such a handshake, never answered past
     * the stuck bound, is stopped in that step, joining the handshake without a deadline (the newest
     * worker's eager handshake; unanswered past a READ prefill's {@code defer_timeout} is enough when
     * that is shorter, its reaped prefills then showing the harm). Every other stuck request of that
     * engine is held in the same step,
     * and every prefill whose decode leg it holds, or which sent its decode leg there after the step
     * before the last (the engine never admitted it), is reaped or held for want of a release.
     */
    private static void stoppedByEagerHandshake(Ledger l, Bounds b, List<Finding> out) {
        java.util.Set<String> named = new java.util.TreeSet<>();
        for (Finding f : out) {
            if (f.bugClass() == 37) {
                named.add(f.node() + "|" + f.requestId());
            }
        }
        // unanswered past the stuck bound, or past a READ prefill's defer_timeout: long enough that
        // the prefills waiting for this engine's release are reaped
        long bound = b.stuckAfterNs();
        for (NodeView p : l.nodes.values()) {
            if (p.producer() && p.config.mode() == io.kvledger.core.config.TransferMode.READ) {
                bound = Math.min(bound, p.config.deferTimeoutNs());
            }
        }
        for (NodeView n : l.nodes.values()) {
            if (n.producer() || n.config.mode() != io.kvledger.core.config.TransferMode.READ || n.steps == 0 || endedEarly(l, n)) {
                continue;
            }
            long end = endOf(l, n);
            Handshake stopper = null;
            ReqView peerReq = null;
            for (Map.Entry<String, List<ReqView>> peer : n.podPeers.entrySet()) {
                for (Handshake h : n.handshakes.values()) {
                    if (!h.engine().equals(peer.getKey()) || h.rank < 0 || h.host == null || h.completedAt != Long.MIN_VALUE
                            || h.failedAt != Long.MIN_VALUE || end - h.startedAt <= bound
                            || n.lastStepAt > h.startedAt || stopper != null && stopper.startedAt <= h.startedAt) {
                        continue;
                    }
                    for (ReqView r : peer.getValue()) {
                        if (r.remoteDpSizeLocal > 0 && h.rank >= r.remoteDpSizeLocal && h.startedAt >= r.firstSeenNs) {
                            stopper = h;
                            peerReq = r;
                            break;
                        }
                    }
                }
            }
            if (stopper == null) {
                continue;
            }
            String step = n.name + " has scheduled no step since " + rel(l, n.lastStepAt) + ": the step stopped joining the "
                    + "eager handshake " + stopper.key + ", dialled " + stopper.host + ":" + stopper.port + " at "
                    + rel(l, stopper.startedAt) + " for global DP rank " + stopper.rank + " of a peer whose pods hold "
                    + peerReq.remoteDpSizeLocal + " DP rank(s) each, never answered (the recv and the join have no "
                    + "timeout)";
            for (ReqView r : n.requests.values()) {
                if (r.phase == null || r.phase.terminal() || named.contains(n.name + "|" + r.requestId)
                        || status(l, n, r, end, b) != InFlight.Status.STUCK) {
                    continue;
                }
                out.add(new Finding("eager-handshake-wrong-pod", n.name, r.requestId, r.transferId, r.phase, 37, end, since(r),
                        "held in a stopped engine step: in " + r.phase + " since " + rel(l, since(r)) + "; " + step));
            }
            for (NodeView p : l.nodes.values()) {
                if (!p.producer() || p.config.mode() != io.kvledger.core.config.TransferMode.READ) {
                    continue;
                }
                for (ReqView r : p.requests.values()) {
                    if (named.contains(p.name + "|" + r.requestId)) {
                        continue;
                    }
                    Finding f = heldByStoppedEngine(l, n, p, r, b, step, "eager-handshake-wrong-pod", 37);
                    if (f != null) {
                        out.add(f);
                    }
                }
            }
        }
    }

    /** Whether an eager handshake dialled for rank {@code h.rank} did harm the journals show (see above). */
    private static boolean wrongPodEvidence(Ledger l, NodeView n, Handshake h, ReqView r, long end, Bounds b) {
        NodeView there = handshakeListener(l, h.host, h.port);
        if (there != null && there.producer() && there.config.dpRank() == h.rank) {
            return false; // the journals show that rank itself listening where it was dialled
        }
        if (there != null && there.producer() && h.completedAt != Long.MIN_VALUE) {
            return true; // answered by another DP rank: reads of this rank use its metadata
        }
        if (h.failedAt != Long.MIN_VALUE
                || h.completedAt == Long.MIN_VALUE && endOf(l, n) - h.startedAt > b.stuckAfterNs()) {
            return true;
        }
        if (r.phase != null && !r.phase.terminal() && n.requests.get(r.requestId) == r
                && status(l, n, r, endOf(l, n), b) == InFlight.Status.STUCK) {
            return true;
        }
        TransferView t = r.transferId == null ? null : l.transfers.get(r.transferId);
        return t != null && (!t.reapedOn.isEmpty() || t.firstFailedReadAt != Long.MIN_VALUE);
    }

    private static void wrongPod(Ledger l, NodeView n, Handshake h, ReqView r, List<Finding> out) {
        int local = r.remoteDpSizeLocal;
        int pod = PortMath.podIndex(h.rank, local);
        int fold = PortMath.foldLocalRank(h.rank, local);
        String engine = r.handshakeEngine;
        String base = engine.substring(engine.lastIndexOf(':') + 1);
        String podHost = pod < r.remoteHosts.size() ? r.remoteHosts.get(pod) : null;
        NodeView there = handshakeListener(l, h.host, h.port);
        String reached = there == null ? "no journaled node has that handshake endpoint"
                : "that endpoint is " + there.name + " (dp" + there.config.dpRank() + "/" + there.config.dpSize() + ")";
        String outcome = h.completedAt != Long.MIN_VALUE
                ? "it was answered at " + rel(l, h.completedAt) + " by whatever listens there: reads of rank " + h.rank
                        + " use that peer's metadata (wrong memory)"
                : h.failedAt != Long.MIN_VALUE ? "it failed at " + rel(l, h.failedAt) + " (" + h.failReason
                        + "), and every TP rank raises HandshakeError with it"
                : "it was never answered (the recv has no timeout): the TP-wide vote blocks, no read is posted";
        String msg = "eager handshake " + h.key + " dialled " + h.host + ":" + h.port + " at " + rel(l, h.startedAt)
                + ": the single remote_host with global DP rank " + h.rank + " in the port offset, but the peer's pods hold "
                + local + " DP rank(s) each (remote_dp_size " + r.remoteDpSize + ", remote_dp_size_local " + local
                + "): rank " + h.rank + " is local rank " + fold + " on pod " + pod
                + (podHost == null ? " (remote_hosts does not name it)" : " at " + podHost)
                + ", whose handshake port is " + base + " + its local offset"
                + "; " + reached + "; " + outcome;
        TransferView t = r.transferId == null ? null : l.transfers.get(r.transferId);
        out.add(new Finding("eager-handshake-wrong-pod", n.name, r.requestId, r.transferId, r.phase, 37, h.startedAt, since(r),
                msg + "; this request (remote_dp_rank " + r.remoteDpRank + ") reads from that engine"
                        + otherLegsNote(l, t, n.name)));
        if (t != null) {
            t.legRids.forEach((node, rids) -> {
                NodeView p = l.nodes.get(node);
                if (p == null || !p.producer()) {
                    return;
                }
                for (String rid : rids) {
                    ReqView pr = p.requests.get(rid);
                    out.add(new Finding("eager-handshake-wrong-pod", node, rid, t.transferId, pr == null ? null : pr.phase, 37,
                            h.startedAt, pr == null ? -1 : since(pr), "its decode " + n.name + " " + r.requestId
                                    + " depends on " + msg + "; " + heldOrReaped(l, t, p, pr)));
                }
            });
        }
    }

    /**
     * Class 21 with the #46116 fix in place: a READ decode TP rank whose own eager handshakes with
     * an engine all completed waits in the TP-wide {@code all_reduce(MIN)} vote, for longer than
     * the stuck bound, while a sibling TP rank of its instance (same host, handshake port and DP
     * rank) is still handshaking that engine, never answered (the recv has no timeout): no TP rank
     * posts a read or enters the forward. Only for nodes whose journal carries the vote
     * ({@code awaits_tp_vote}); one finding per request of the waiting rank that needs the engine,
     * or one for the rank when none does.
     */
    private static void voteWaiting(Ledger l, long end, Bounds b, List<Finding> out) {
        for (NodeView n : l.nodes.values()) {
            if (!n.config.awaitsTpVote() || n.producer() || n.config.mode() != io.kvledger.core.config.TransferMode.READ) {
                continue;
            }
            java.util.LinkedHashMap<String, Long> doneAt = new java.util.LinkedHashMap<>();
            LinkedHashSet<String> open = new LinkedHashSet<>();
            for (Handshake h : n.handshakes.values()) {
                if (h.host == null) {
                    continue;
                }
                if (h.completedAt == Long.MIN_VALUE) {
                    open.add(h.engine());
                } else {
                    doneAt.merge(h.engine(), h.completedAt, Math::max);
                }
            }
            for (Map.Entry<String, Long> e : doneAt.entrySet()) {
                String engine = e.getKey();
                long since = e.getValue();
                if (open.contains(engine) || end - since <= b.stuckAfterNs()
                        || n.votes.stream().anyMatch(v -> v.engine().equals(engine) && v.atNs() >= since)) {
                    continue;
                }
                for (NodeView o : tpSiblings(l, n)) {
                    for (Handshake h : o.handshakes.values()) {
                        if (h.engine().equals(engine) && h.host != null && h.completedAt == Long.MIN_VALUE
                                && h.failedAt == Long.MIN_VALUE) {
                            voteWaitingFindings(l, n, o, h, engine, since, end, out);
                        }
                    }
                }
            }
        }
    }

    private static void voteWaitingFindings(Ledger l, NodeView n, NodeView o, Handshake h, String engine, long since,
                                            long end, List<Finding> out) {
        String msg = "TP rank " + n.config.tpRank() + " waits in the TP-wide eager-handshake vote (all_reduce MIN) for "
                + engine + " since " + rel(l, since) + ", when its own handshakes with it completed, for "
                + seconds(end - since) + " until the journal ends, while sibling TP rank " + o.config.tpRank() + " ("
                + o.name + ") is still handshaking: " + h.key + " with " + h.endpoint() + ", started at "
                + rel(l, h.startedAt) + ", never answered for " + seconds(end - h.startedAt)
                + " (the handshake recv has no timeout); the vote never returns, so no TP rank posts its reads or enters the forward";
        boolean any = false;
        for (ReqView r : n.requests.values()) {
            if (engine.equals(r.handshakeEngine) && !r.transferPosted && r.phase != null && !r.phase.terminal()) {
                any = true;
                out.add(new Finding("handshake-vote-waiting", n.name, r.requestId, r.transferId, r.phase, 21, end, since(r),
                        msg + "; this request's read waits on it, in " + r.phase + " since " + rel(l, since(r))));
            }
        }
        if (!any) {
            out.add(new Finding("handshake-vote-waiting", n.name, null, null, null, 21, end, -1, msg));
        }
    }

    /** The other TP ranks of a node's instance among the journals: same role, host, handshake port and DP rank. */
    private static List<NodeView> tpSiblings(Ledger l, NodeView n) {
        List<NodeView> out = new ArrayList<>();
        NodeConfig c = n.config;
        for (NodeView o : l.nodes.values()) {
            NodeConfig oc = o.config;
            if (o != n && oc.role() == c.role() && oc.hostIp().equals(c.hostIp())
                    && oc.handshakePortBase() == c.handshakePortBase() && oc.dpRank() == c.dpRank()
                    && oc.tpRank() != c.tpRank()) {
                out.add(o);
            }
        }
        return out;
    }

    /**
     * A failed TP-wide vote ({@code HANDSHAKE_VOTE_FAILED}): which TP rank failed and why, from
     * the failing rank's own journal (its handshake's failure or the one never answered), and
     * what this rank lost.
     */
    private static Finding voteFailed(Ledger l, NodeView n, ReqView r, String tid, Seen s) {
        Ledger.Vote vote = null;
        for (Ledger.Vote v : n.votes) {
            if (v.vote() == 0 && v.atNs() <= s.atNs()) {
                vote = v;
            }
        }
        List<String> why = new ArrayList<>();
        if (vote != null) {
            List<NodeView> ranks = new ArrayList<>();
            ranks.add(n);
            ranks.addAll(tpSiblings(l, n));
            for (NodeView o : ranks) {
                if (vote.failedTpRanks() != null && !vote.failedTpRanks().contains(o.config.tpRank())) {
                    continue;
                }
                for (Handshake h : o.handshakes.values()) {
                    if (!h.engine().equals(vote.engine())) {
                        continue;
                    }
                    String who = "TP rank " + o.config.tpRank() + " (" + o.name + ")";
                    if (h.failedAt != Long.MIN_VALUE && h.failedAt <= vote.atNs()) {
                        why.add(who + ": handshake " + h.key + " with " + h.endpoint() + " failed at " + rel(l, h.failedAt)
                                + " (" + h.failReason + ")");
                    } else if (h.completedAt == Long.MIN_VALUE && h.failedAt == Long.MIN_VALUE) {
                        why.add(who + ": handshake " + h.key + " with " + h.endpoint() + " never answered");
                    }
                }
            }
        }
        String msg = "TP-wide eager-handshake vote failed at " + rel(l, s.atNs()) + ": " + s.anomaly().detail()
                + (why.isEmpty() ? "" : "; failed: " + String.join("; ", why));
        if (r != null && r.phase != null && !r.phase.terminal()) {
            msg += "; still in " + r.phase + " since " + rel(l, since(r)) + " when the journal ends";
        }
        return new Finding("handshake-vote-failed", n.name, r == null ? null : r.requestId, tid, r == null ? null : r.phase,
                21, s.atNs(), r == null ? -1 : r.sinceNs, msg);
    }

    private static String otherLegsNote(Ledger l, TransferView t, String node) {
        List<String> others = legsOf(l, t, node);
        return others.isEmpty() ? "" : "; transfer " + t.transferId + " also on " + String.join(", ", others);
    }

    /** The node whose handshake ROUTER binds host:port (base + 2-argument offset of its folded rank). */
    private static NodeView handshakeListener(Ledger l, String host, int port) {
        for (NodeView n : l.nodes.values()) {
            NodeConfig c = n.config;
            if (c.hostIp().equals(host) && c.handshakePortBase()
                    + PortMath.portOffset(PortMath.foldLocalRank(c.dpRank(), c.dpSizeLocal()), c.tpRank()) == port) {
                return n;
            }
        }
        return null;
    }

    /**
     * Class 30 (toy-proxy DP aliasing, #46115): a decode leg whose {@code kv_transfer_params} name
     * prefill DP rank R ({@code remote_dp_rank}, with {@code remote_dp_size} above 1) while the
     * transfer's prefill leg ran on another DP rank of its engine: the router told the decode
     * another rank than the one it sent the prefill leg to, so the decode's notifies (READ: its
     * reads and release; WRITE: its remote_blocks) go to rank R, which never served the transfer.
     * One finding per decode request and per serving prefill request; returns the transfer ids
     * named, whose class-20 and class-18 findings the alias explains.
     */
    private static java.util.Set<String> dpRankAliased(Ledger l, List<Finding> out) {
        java.util.Set<String> named = new LinkedHashSet<>();
        for (TransferView t : l.transfers.values()) {
            // the decode legs with the prefill DP rank their params named: those still held, and
            // (a READ decode that finished is forgotten) those whose reads the ledger kept
            Map<String, Integer> decodeRanks = new java.util.LinkedHashMap<>();
            t.legRids.forEach((dnode, drids) -> {
                NodeView d = l.nodes.get(dnode);
                if (d != null && !d.producer()) {
                    for (String drid : drids) {
                        ReqView dr = d.requests.get(drid);
                        if (dr != null && dr.remoteDpRank >= 0 && dr.remoteDpSize > 1) {
                            decodeRanks.put(dnode + "|" + drid, dr.remoteDpRank);
                        }
                    }
                }
            });
            for (Ledger.ReadPost read : t.reads) {
                if (read.paramsDpRank() >= 0) {
                    decodeRanks.putIfAbsent(read.node() + "|" + read.requestId(), read.paramsDpRank());
                }
            }
            for (Map.Entry<String, Integer> e : decodeRanks.entrySet()) {
                String dnode = e.getKey().substring(0, e.getKey().indexOf('|'));
                String drid = e.getKey().substring(e.getKey().indexOf('|') + 1);
                int remoteDpRank = e.getValue();
                NodeView d = l.nodes.get(dnode);
                if (d == null || d.producer()) {
                    continue;
                }
                ReqView dr = d.requests.get(drid);
                t.legRids.forEach((pnode, prids) -> {
                    NodeView p = l.nodes.get(pnode);
                    if (p == null || !p.producer() || p.config.dpSize() <= 1 || p.config.dpRank() == remoteDpRank) {
                        return;
                    }
                    NodeView named0 = null;
                    for (NodeView o : l.nodes.values()) {
                        if (o.producer() && o.config.dpRank() == remoteDpRank && o.config.tpRank() == p.config.tpRank()
                                && o.config.hostIp().equals(p.config.hostIp())
                                && o.config.handshakePortBase() == p.config.handshakePortBase()) {
                            named0 = o;
                        }
                    }
                    if (named0 != null && servedHere(named0, t)) {
                        return; // the named rank admitted it too: not an alias
                    }
                    String rankName = "DP rank " + remoteDpRank
                            + (named0 == null ? " (not in these journals)" : " (" + named0.name + ")");
                    String served = pnode + " (DP rank " + p.config.dpRank() + " of " + p.config.dpSize() + ")";
                    String how = d.config.mode() == io.kvledger.core.config.TransferMode.READ
                            ? "its reads and its release went to " + rankName
                            : "its remote_blocks went to " + rankName;
                    named.add(t.transferId);
                    if (p.config.tpRank() == 0) {
                        out.add(new Finding("dp-rank-aliased", dnode, drid, t.transferId, dr == null ? null : dr.phase, 30,
                                dr == null ? firstRead(t, dnode, drid) : dr.firstSeenNs, dr == null ? -1 : since(dr),
                                "its kv_transfer_params name prefill remote_dp_rank " + remoteDpRank
                                        + ", but transfer " + t.transferId
                                        + " was served by " + served + ": the router told this leg another DP rank than"
                                        + " the one it sent the prefill leg to (toy-proxy DP aliasing, #46115); "
                                        + how + ", which never served it" + legState(l, t, dnode, drid)));
                    }
                    for (String prid : prids) {
                        ReqView pr = p.requests.get(prid);
                        out.add(new Finding("dp-rank-aliased", pnode, prid, t.transferId, pr == null ? null : pr.phase, 30,
                                pr == null ? l.firstAtNs : pr.firstSeenNs, pr == null ? -1 : since(pr),
                                "served transfer " + t.transferId + " as " + served + ", but decode " + dnode + " " + drid
                                        + " was told remote_dp_rank " + remoteDpRank + " (toy-proxy DP aliasing, #46115): "
                                        + (d.config.mode() == io.kvledger.core.config.TransferMode.READ
                                        ? "no release reaches this rank; " : "no remote_blocks reaches this rank; ")
                                        + heldOrReaped(l, t, p, pr)));
                    }
                });
            }
        }
        return named;
    }

    /** When {@code node} first posted a read of {@code t} for {@code rid} (the journals' start when none). */
    private static long firstRead(TransferView t, String node, String rid) {
        for (Ledger.ReadPost r : t.reads) {
            if (r.node().equals(node) && r.requestId().equals(rid)) {
                return r.atNs();
            }
        }
        return Long.MIN_VALUE;
    }

    /** Whether {@code n} admitted a request of transfer {@code t} (not just saw a frame or ACK naming it). */
    private static boolean servedHere(NodeView n, TransferView t) {
        for (String rid : t.rids(n.name)) {
            ReqView r = n.requests.get(rid);
            if (r != null && r.promptTokens >= 0) {
                return true;
            }
        }
        return false;
    }

    /**
     * Class 20: a READ session opened against one DP rank ({@code "{eid}_dp{R}"}) of an engine
     * while another rank of that engine served the transfer. One finding per reading request and
     * per serving request. A transfer whose decode params themselves named the wrong rank is class
     * 30 ({@link #dpRankAliased}), not a read that ignored them.
     */
    private static void readWrongDpRank(Ledger l, java.util.Set<String> aliased, List<Finding> out) {
        for (TransferView t : l.transfers.values()) {
            if (aliased.contains(t.transferId)) {
                continue;
            }
            for (Ledger.ReadPost read : t.reads) {
                int i = read.sessionKey().lastIndexOf("_dp");
                if (i < 0) {
                    continue;
                }
                String eid = read.sessionKey().substring(0, i);
                int rank;
                try {
                    rank = Integer.parseInt(read.sessionKey().substring(i + 3));
                } catch (NumberFormatException e) {
                    continue; // a flexible-mode key ("_dp{R}_tp{T}") names its rank differently
                }
                t.legRids.forEach((node, rids) -> {
                    NodeView p = l.nodes.get(node);
                    if (p == null || !p.producer() || rank == p.config.dpRank()
                            || !eid.equals(p.config.hostIp() + ":" + p.config.handshakePortBase())) {
                        return;
                    }
                    NodeView wrong = null;
                    for (NodeView o : l.nodes.values()) {
                        if (o.producer() && o.config.dpRank() == rank
                                && eid.equals(o.config.hostIp() + ":" + o.config.handshakePortBase())) {
                            wrong = o;
                        }
                    }
                    String rankName = "DP rank " + rank + (wrong == null ? " (not in these journals)" : " (" + wrong.name + ")");
                    String served = node + " (global DP rank " + p.config.dpRank() + " of " + p.config.dpSize() + ")";
                    NodeView d = l.nodes.get(read.node());
                    ReqView dr = d == null ? null : d.requests.get(read.requestId());
                    out.add(new Finding("read-wrong-dp-rank", read.node(), read.requestId(), t.transferId,
                            dr == null ? null : dr.phase, 20, read.atNs(), dr == null ? -1 : since(dr),
                            "read session " + read.sessionKey() + " opened at " + rel(l, read.atNs()) + " targets " + rankName
                                    + ", but transfer " + t.transferId + " was served by " + served
                                    + ": the reads took rank " + rank + "'s memory and the release goes to rank " + rank
                                    + "'s notify port; remote_dp_rank in its params: "
                                    + (read.paramsDpRank() < 0 ? "absent (default 0)" : read.paramsDpRank())));
                    for (String rid : rids) {
                        ReqView pr = p.requests.get(rid);
                        out.add(new Finding("read-wrong-dp-rank", node, rid, t.transferId, pr == null ? null : pr.phase, 20,
                                read.atNs(), pr == null ? -1 : since(pr), "served transfer " + t.transferId + " as "
                                        + served + ", but decode " + read.node() + " " + read.requestId() + " read it through session "
                                        + read.sessionKey() + " (" + rankName + ") at " + rel(l, read.atNs())
                                        + ": no release reaches this rank; " + heldOrReaped(l, t, p, pr)));
                    }
                });
            }
        }
    }

    /**
     * Class 16: a request whose params carried no transfer id: the scheduler synthesized
     * {@code sidecar-<its own request id>}, and the other leg (with its own request id) another
     * one, so no notify or ACK of one leg names the other's transfer.
     */
    private static void uncorrelatedTransferIds(Ledger l, List<Finding> out) {
        for (NodeView n : l.nodes.values()) {
            for (ReqView r : n.requests.values()) {
                Seen syn = firstAnomaly(r, AnomalyKind.TRANSFER_ID_SYNTHESIZED);
                if (syn == null || !r.disagg) {
                    continue;
                }
                String tid = syn.anomaly().transferId();
                List<String> others = new ArrayList<>();
                for (NodeView o : l.nodes.values()) {
                    if (o == n) {
                        continue;
                    }
                    for (ReqView x : o.requests.values()) {
                        Seen xs = firstAnomaly(x, AnomalyKind.TRANSFER_ID_SYNTHESIZED);
                        if (xs != null && x.disagg && baseId(x.requestId).equals(baseId(r.requestId))
                                && !java.util.Objects.equals(xs.anomaly().transferId(), tid)) {
                            others.add(o.name + " " + x.requestId + " synthesized " + xs.anomaly().transferId()
                                    + (x.phase == null ? "" : " (" + x.phase + ")"));
                        }
                    }
                }
                if (others.isEmpty()) {
                    continue; // the other leg is not journaled, or it carries this leg's id: nothing to tell apart
                }
                String consequence;
                boolean write = n.config.mode() == io.kvledger.core.config.TransferMode.WRITE;
                if (n.producer()) {
                    consequence = write ? "the decode's remote_blocks name its own id, so this leg's writes never find their remote "
                            + "allocation (the deferred task expires and self-ACKs, the decode is never told)"
                            : "the decode's release names its own id, so no ACK can match this deferral: only the reap frees it";
                } else {
                    consequence = write ? "its remote_blocks name " + tid + ", which the prefill does not know, and the prefill's "
                            + "write_done (if any) names the prefill's id, which this worker does not map"
                            : "its release names " + tid + ", which the prefill does not map: the prefill frees only at its reap";
                }
                out.add(new Finding("transfer-id-uncorrelated", n.name, r.requestId, tid, r.phase, 16, syn.atNs(), since(r),
                        "kv_transfer_params had no transfer_id: the scheduler synthesized " + tid + " from this leg's own request id at "
                                + rel(l, syn.atNs()) + "; the other leg " + String.join(", ", others)
                                + ": the legs share no transfer id, so " + consequence
                                + (r.phase == null ? "" : "; " + r.phase + " since " + rel(l, since(r)))));
            }
        }
    }

    /** A request id without vLLM's trailing {@code -<8 hex>} suffix (the id both legs start from). */
    static String baseId(String rid) {
        if (rid != null && rid.length() > 9 && rid.charAt(rid.length() - 9) == '-'
                && rid.substring(rid.length() - 8).chars().allMatch(ch -> Character.digit(ch, 16) >= 0 && !Character.isUpperCase(ch))) {
            return rid.substring(0, rid.length() - 9);
        }
        return rid == null ? "" : rid;
    }

    private static Seen firstAnomaly(ReqView r, AnomalyKind k) {
        for (Seen s : r.anomalies) {
            if (s.anomaly().kind() == k) {
                return s;
            }
        }
        return null;
    }

    /**
     * Classes 14 and 28: a READ decode admitted without usable {@code remote_block_ids} stages no
     * receive, so it neither reads nor releases, while its prefill holds the blocks until the
     * reap. One finding for the decode request and one per prefill request of the transfer.
     */
    private static void missingRemoteBlockIds(Ledger l, List<Finding> out) {
        for (NodeView n : l.nodes.values()) {
            for (ReqView r : n.requests.values()) {
                Seen s = firstAnomaly(r, AnomalyKind.READ_RECV_WITHOUT_REMOTE_BLOCKS);
                if (s == null || r.transferId == null) {
                    continue;
                }
                TransferView t = l.transfers.get(r.transferId);
                List<Finding> producers = new ArrayList<>();
                String given = r.remoteBlocksGiven == null ? "absent" : String.valueOf(r.remoteBlocksGiven);
                if (t != null) {
                    t.legRids.forEach((node, rids) -> {
                        NodeView p = l.nodes.get(node);
                        if (p == null || !p.producer()) {
                            return;
                        }
                        for (String rid : rids) {
                            ReqView pr = p.requests.get(rid);
                            boolean waits = t.reapedOn.containsKey(node) || pr != null && pr.phase == RequestPhase.DEFERRED_FREE;
                            if (waits) {
                                producers.add(new Finding("missing-remote-block-ids", node, rid, t.transferId,
                                        pr == null ? null : pr.phase, 14, s.atNs(), pr == null ? -1 : since(pr),
                                        "its decode " + n.name + " " + r.requestId + " was admitted with remote_block_ids " + given
                                                + ": it staged no receive, so no read and no release will come; "
                                                + heldOrReaped(l, t, p, pr)));
                            }
                        }
                    });
                }
                if (producers.isEmpty()) {
                    continue; // no prefill waits on it: nothing hangs
                }
                List<String> names = new ArrayList<>();
                for (Finding f : producers) {
                    names.add(f.node() + " " + f.requestId());
                }
                out.add(new Finding("missing-remote-block-ids", n.name, r.requestId, r.transferId, r.phase, 14, s.atNs(), since(r),
                        "admitted with remote_block_ids " + given + " at " + rel(l, r.firstSeenNs)
                                + ": update_state_after_alloc staged no receive (kv_transfer_params lost the prefill's blocks), "
                                + "so this decode neither reads nor sends release, while " + String.join(", ", names)
                                + " waits for its reap"));
                out.addAll(producers);
            }
        }
    }

    /**
     * Class 24 (#47495): a transfer status that failed with "SQ full", a transient send-queue
     * overflow the fix re-posts with back-off (1 ms to 50 ms, until transfer_timeout), reached the
     * connector as a failure. One finding per request of the transfer on every node, naming the
     * status, the node whose engine reported it and what the failure led to.
     */
    private static void sqFullFailures(Ledger l, List<Finding> out) {
        for (TransferView t : l.transfers.values()) {
            if (t.sqFull.isEmpty()) {
                continue;
            }
            Ledger.SqFull first = t.sqFull.get(0);
            String what = (first.read() ? "read" : "write") + " status " + first.statusId() + " of " + t.transferId
                    + " failed on " + first.node() + " at " + rel(l, first.atNs()) + " (" + first.detail().strip() + ")"
                    + (t.sqFull.size() > 1 ? " and " + (t.sqFull.size() - 1) + " more with SQ full" : "")
                    + ": a transient send-queue overflow taken as a failure, not re-posted with back-off (the fix, #47495,"
                    + " re-posts it for up to transfer_timeout)";
            String after;
            if (first.read()) {
                boolean released = t.sends.stream().anyMatch(x -> x.kind().equals("release") && x.fromNode().equals(first.node())
                        && x.atNs() >= first.atNs());
                after = released ? "; the read ended as a load error (recomputed) and its release was sent"
                        : "; no release followed: the prefill holds its blocks until the reap";
            } else {
                // the failing rank's own write_done: another rank's is stamped by another clock and says nothing of this write
                boolean writeDone = t.sends.stream().anyMatch(x -> x.kind().equals("write_done") && x.fromNode().equals(first.node())
                        && x.atNs() >= first.atNs());
                after = writeDone ? "" : "; no write_done followed: the decode waits with no timeout of its own";
            }
            t.legRids.forEach((node, rids) -> {
                NodeView o = l.nodes.get(node);
                for (String rid : rids) {
                    ReqView r = o == null ? null : o.requests.get(rid);
                    String state = r == null || r.phase == null ? "" : "; " + r.phase + " since " + rel(l, since(r));
                    out.add(new Finding("sq-full-failure", node, rid, t.transferId, r == null ? null : r.phase, 24,
                            first.atNs(), r == null ? -1 : since(r), (node.equals(first.node()) ? "" : "its peer's ") + what
                                    + after + state));
                }
            });
        }
    }

    /**
     * Class 32 (WRITE multi-pod host race): a prefill sent a transfer's write_done to a journaled
     * decode rank on another host than the decode leg of that transfer, which never served it:
     * the worker took {@code multi_pod_hosts} / {@code remote_dp_size_local} from another request
     * (stashed on the worker, last writer wins; newest carries them per WriteTask). One finding
     * for the sending prefill request and one per decode request of the transfer still waiting.
     */
    private static void writeDoneWrongPod(Ledger l, List<Finding> out) {
        for (TransferView t : l.transfers.values()) {
            for (Send s : t.sends) {
                if (!s.kind().equals("write_done")) {
                    continue;
                }
                NodeView target = listener(l, s.host(), s.port());
                if (target == null || target.producer() || t.legs.containsKey(target.name)) {
                    continue;
                }
                List<NodeView> decodes = new ArrayList<>();
                for (String node : t.legs.keySet()) {
                    NodeView d = l.nodes.get(node);
                    if (d != null && !d.producer() && !d.config.hostIp().equals(target.config.hostIp())) {
                        decodes.add(d);
                    }
                }
                if (decodes.isEmpty()) {
                    continue; // the same host: a wrong rank, not a wrong pod
                }
                List<String> names = new ArrayList<>();
                decodes.forEach(d -> names.add(d.name + " (" + d.config.hostIp() + ", DP rank " + d.config.dpRank() + ")"));
                String msg = "write_done for " + t.transferId + " went to " + s.host() + ":" + s.port() + " at "
                        + rel(l, s.atNs()) + ", " + target.name + " (DP rank " + target.config.dpRank() + "), a decode on "
                        + "another pod that never served it, while its decode leg is on " + String.join(", ", names)
                        + ": the prefill's worker routed it with another request's pod hosts (multi_pod_hosts and "
                        + "remote_dp_size_local stashed on the worker, last writer wins; newest carries them per WriteTask)";
                NodeView from = l.nodes.get(s.fromNode());
                ReqView pr = from == null ? null : from.requests.get(t.legs.get(s.fromNode()));
                out.add(new Finding("write-done-wrong-pod", s.fromNode(), t.legs.get(s.fromNode()), t.transferId,
                        pr == null ? null : pr.phase, 32, s.atNs(), pr == null ? -1 : since(pr), msg));
                for (NodeView d : decodes) {
                    for (String rid : t.rids(d.name)) {
                        ReqView dr = d.requests.get(rid);
                        if (dr == null || dr.phase == null || dr.phase.terminal()) {
                            continue;
                        }
                        out.add(new Finding("write-done-wrong-pod", d.name, rid, t.transferId, dr.phase, 32, s.atNs(),
                                since(dr), msg + "; this request waits in " + dr.phase + " since " + rel(l, since(dr))
                                        + " for a write_done that went elsewhere"));
                    }
                }
            }
        }
    }

    /** The decode legs of a renamed prefill's transfer: their release was the ACK that could not match. */
    private static void renamedPeers(Ledger l, NodeView p, ReqView pr, Finding f, List<Finding> out) {
        TransferView t = pr.transferId == null ? null : l.transfers.get(pr.transferId);
        if (t == null) {
            return;
        }
        t.legRids.forEach((node, rids) -> {
            NodeView d = l.nodes.get(node);
            if (d == null || d.producer()) {
                return;
            }
            for (String rid : rids) {
                ReqView dr = d.requests.get(rid);
                out.add(new Finding("renamed-at-finish", node, rid, t.transferId, dr == null ? null : dr.phase, 13, f.atNs(),
                        dr == null ? -1 : since(dr), "its release of " + t.transferId + " was for " + p.name + " " + pr.requestId
                                + ", which finished under another id than it was admitted with (" + pr.admittedAs
                                + "): the ACK matched no deferral there; " + heldOrReaped(l, t, p, pr)));
            }
        });
    }

    /**
     * Classes 13 and 1: a producer request that finished under another id than it was admitted
     * with (vLLM's {@code -<8 hex>} suffix). Its deferral is keyed by the finish id while the
     * worker maps the transfer to the admitted id, so its ACK surfaces the admitted id, is parked
     * and dropped, and the deferral is only reaped.
     */
    private static Finding renamedAtFinish(Ledger l, NodeView n, ReqView r, long end) {
        if (r.admittedAs == null || !n.producer()) {
            return null;
        }
        Seen parked = firstAnomaly(r, AnomalyKind.EARLY_ACK_PARKED);
        Seen stale = firstAnomaly(r, AnomalyKind.STALE_ACK_DROPPED);
        Seen reaped = firstAnomaly(r, AnomalyKind.DEFERRAL_REAPED);
        boolean acked = r.phase == RequestPhase.FREED_AFTER_ACK;
        if (acked || parked == null && reaped == null && r.phase != RequestPhase.DEFERRED_FREE) {
            return null; // its ACK matched after all, or nothing waited on one
        }
        StringBuilder m = new StringBuilder("admitted as ").append(r.admittedAs).append(", finished as ").append(r.requestId)
                .append(" at ").append(rel(l, r.renamedAt)).append(" (vLLM's -<8 hex> suffix): the deferral is keyed by the new id, but the ")
                .append("transfer-id map still names ").append(r.admittedAs);
        if (parked != null) {
            m.append(", so the ACK at ").append(rel(l, parked.atNs())).append(" surfaced ").append(r.admittedAs)
                    .append(" in finished_sending, which matched no deferral and was parked");
            if (stale != null) {
                m.append(" (dropped as stale at ").append(rel(l, stale.atNs())).append(')');
            }
        } else {
            m.append(", so an ACK would surface ").append(r.admittedAs).append(" and match no deferral");
        }
        if (reaped != null) {
            m.append("; the deferral was reaped at ").append(rel(l, reaped.atNs())).append(": blocks held for defer_timeout ")
                    .append(setting(n.config.deferTimeoutNs())).append(" although the decode had released them");
        } else if (r.phase == RequestPhase.DEFERRED_FREE) {
            m.append("; still in DEFERRED_FREE since ").append(rel(l, since(r))).append(", only the reap will free it");
        }
        TransferView t = r.transferId == null ? null : l.transfers.get(r.transferId);
        m.append(otherLegsNote(l, t, n.name));
        return new Finding("renamed-at-finish", n.name, r.requestId, r.transferId, r.phase, 13,
                reaped != null ? reaped.atNs() : parked != null ? parked.atNs() : end, since(r), m.toString());
    }

    // ------------------------------------------------------------------ cross-node

    private static void crossNode(Ledger l, List<Finding> out) {
        for (TransferView t : l.transfers.values()) {
            for (Send s : t.sends) {
                String host = s.host();
                int port = s.port();
                NodeView tap = tapAt(l, host, port);
                if (tap != null) {
                    // sent to a tap: follow it through, when the tap's journal shows it crossing
                    String to = tap.config.hostIp() + ":" + Ledger.listenPort(tap.config);
                    if (!crossed(t, tap, s.kind())) {
                        NodeView from = l.nodes.get(s.fromNode());
                        out.add(new Finding("notify-no-listener", s.fromNode(), t.legs.get(s.fromNode()), t.transferId,
                                phaseOf(from, t), 7, s.atNs(), -1, s.kind() + " sent to " + host + ":" + port + " at "
                                        + rel(l, s.atNs()) + ", the port of " + tap.name + " (forwarding to " + to
                                        + "), whose journal never shows it crossing"));
                        continue;
                    }
                    host = tap.config.hostIp();
                    port = Ledger.listenPort(tap.config);
                }
                NodeView target = listener(l, host, port);
                if (target != null || !knownHost(l, host) || tap != null) {
                    if (target != null && s.kind().equals("remote_blocks") && !t.legs.containsKey(target.name)
                            && t.legs.keySet().stream().anyMatch(x -> l.nodes.get(x).producer())) {
                        NodeView from = l.nodes.get(s.fromNode());
                        out.add(new Finding("notify-unhandshaken-rank", s.fromNode(), t.legs.get(s.fromNode()), t.transferId,
                                phaseOf(from, t), 18, s.atNs(), -1,
                                "remote_blocks to " + target.name + " (" + host + ":" + port + (tap == null ? ""
                                        : ", through " + tap.name) + "), a rank that never served "
                                        + "or handshook this transfer; it ran on " + otherProducers(l, t, s.fromNode())));
                    }
                    continue;
                }
                NodeView from = l.nodes.get(s.fromNode());
                String alt = altForm(l, host, port);
                int producerTp = producerTp(l, t);
                boolean tpGap = alt == null && s.kind().equals("remote_blocks") && from != null && !from.producer()
                        && producerTp > 0 && from.config.tpSize() > producerTp;
                out.add(new Finding(alt != null ? "wrong-port-offset-form" : "notify-no-listener", s.fromNode(),
                        t.legs.get(s.fromNode()), t.transferId, phaseOf(from, t), alt != null ? 23 : tpGap ? 22 : 7, s.atNs(), -1,
                        s.kind() + " sent to " + host + ":" + port + " at " + rel(l, s.atNs())
                                + ", where no journaled node listens" + (alt == null ? "" : "; " + alt)
                                + (tpGap ? "; heterogeneous TP: the decode sends one remote_blocks per its own TP rank ("
                                + from.config.tpSize() + ") and the prefill has " + producerTp + ")" : "")));
            }
            if (t.firstFailedReadAt != Long.MIN_VALUE) {
                long failedAt = t.firstFailedReadAt;
                boolean released = t.sends.stream().anyMatch(s -> s.kind().equals("release")
                        && s.fromNode().equals(t.failedReadNode) && s.atNs() >= failedAt);
                if (!released) {
                    NodeView d = l.nodes.get(t.failedReadNode);
                    out.add(new Finding("failed-read-no-release", t.failedReadNode, t.legs.get(t.failedReadNode), t.transferId,
                            phaseOf(d, t), 2, failedAt, -1, "a read of this transfer failed at " + rel(l, failedAt) + " ("
                                    + t.failedReadDetail.strip() + ") and no release followed: the producer holds its blocks until the reap"));
                }
            }
            if (!t.reapedOn.isEmpty()) {
                int expected = -1;
                for (Map.Entry<String, Long> reaped : t.reapedOn.entrySet()) {
                    NodeView p = l.nodes.get(reaped.getKey());
                    int got = t.releasesReceived.getOrDefault(p.name, 0);
                    var e = PortMath.expectedAckCount(p.config.tpSize(), t.consumerTpSize);
                    expected = e.isOk() ? e.value() : -1;
                    if (got > 0 && expected > got) {
                        out.add(new Finding("ack-deficit", p.name, t.legs.get(p.name), t.transferId, RequestPhase.REAPED, 22,
                                reaped.getValue(), -1, "received " + got + " of " + expected + " releases before the reap (consumer TP "
                                        + t.consumerTpSize + ", producer TP " + p.config.tpSize() + ")"));
                    }
                }
            }
        }
    }

    private static RequestPhase phaseOf(NodeView n, TransferView t) {
        if (n == null) {
            return null;
        }
        ReqView r = n.requests.get(t.legs.get(n.name));
        return r == null ? null : r.phase;
    }

    private static boolean knownHost(Ledger l, String host) {
        for (NodeView n : l.nodes.values()) {
            if (n.config.hostIp().equals(host)) {
                return true;
            }
        }
        return false;
    }

    static NodeView listener(Ledger l, String host, int port) {
        for (NodeView n : l.nodes.values()) {
            if (!n.tap() && n.config.hostIp().equals(host) && Ledger.listenPort(n.config) == port) {
                return n;
            }
        }
        return null;
    }

    /** The tap journal whose tap listens at {@code host:port}, or null. */
    private static NodeView tapAt(Ledger l, String host, int port) {
        for (NodeView n : l.nodes.values()) {
            if (n.tap() && n.tapPort == port && n.tapHost.equals(host)) {
                return n;
            }
        }
        return null;
    }

    /** Whether {@code tap}'s journal shows a frame of {@code kind} for transfer {@code t} crossing it. */
    private static boolean crossed(TransferView t, NodeView tap, String kind) {
        return switch (kind) {
            case "remote_blocks" -> t.remoteBlocksAt.stream().anyMatch(x -> x.node().equals(tap.name));
            case "write_done" -> t.writeDoneReceivedBy.contains(tap.name);
            default -> t.releasesReceived.containsKey(tap.name);
        };
    }

    /** If the port is a node's port in the other offset form, a sentence saying so; else null. */
    private static String altForm(Ledger l, String host, int port) {
        for (NodeView n : l.nodes.values()) {
            NodeConfig c = n.config;
            if (!c.hostIp().equals(host)) {
                continue;
            }
            int listen = Ledger.listenPort(c);
            int three = Ledger.threeArgPort(c);
            if (three == port && three != listen) {
                return "that is " + n.name + "'s port in the 3-argument form (base+dp*tp_size+tp), but it listens on base+dp+tp = " + listen;
            }
            int dpLocal = PortMath.foldLocalRank(c.dpRank(), c.dpSizeLocal());
            if (c.notifyPortBase() + PortMath.portOffset(dpLocal, c.tpRank()) != port
                    && c.notifyPortBase() + dpLocal * c.tpSize() + c.tpRank() != port
                    && c.notifyPortBase() + PortMath.portOffset(c.dpRank(), c.tpRank()) == port) {
                return "that is " + n.name + "'s port with its global DP rank unfolded; it listens on the folded rank's port " + listen;
            }
        }
        return null;
    }

    private static String rel(Ledger l, long atNs) {
        if (atNs == Long.MIN_VALUE || l.firstAtNs == Long.MAX_VALUE) {
            return "start";
        }
        return io.kvledger.ledger.text.Seconds.offset(atNs - l.firstAtNs);
    }

    /** A measured duration, in the one form every report prints. */
    static String seconds(long ns) {
        return io.kvledger.ledger.text.Seconds.duration(ns);
    }

    /** A configured timeout, as exact as it was set ("60 s", "0.5 s"). */
    private static String setting(long ns) {
        return io.kvledger.ledger.text.Seconds.exact(ns, 0);
    }
}
