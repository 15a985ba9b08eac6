package io.kvledger.ledger.diagnosis;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * How far two nodes' stamps can be compared. Each node journals on its own clock (wall-clock
 * anchored monotonic), and two hosts' clocks differ by NTP's error: a stamp of one node before a
 * stamp of another proves nothing by itself. What does measure them is a notify and its receipt:
 * the receipt follows the send whatever the stamps say, so a receipt stamped {@code d} before its
 * send proves the receiver's clock at least {@code d} behind the sender's (the sender's ahead).
 * Kept per ordered pair of nodes, the most any matched notify proved: a lower bound.
 *
 * <p>Fed by {@link Ledger#observe} with every {@code remote_blocks}, {@code write_done} and
 * {@code release} sent to a journaled node's listen address and received there, and by
 * {@link WriteCompletionRace} with its write_done sends and receipts paired by TP index. The
 * events come in stamp order, so a receipt stamped after its send is not read yet when the send
 * is and measures nothing; a send of a transfer's notify to a node that already received more of
 * them than had been sent to it is the one (or is followed by the one) that explains one of them,
 * stamped at the latest as the latest was. That holds when every sender of the transfer's notify
 * to that node is among the journals read: a receipt from a sender whose journal is missing could
 * be taken for a later send's and over-measure the pair (findings then err towards "not certain").
 * Bounded by a fixed-size window of recent notifies.
 *
 * <p>The question detectors ask: {@link #certainlyBefore} (stamp {@code a} of node {@code A}
 * before stamp {@code b} of node {@code B}) when {@code b - a} exceeds how far {@code B}'s clock
 * was measured ahead of {@code A}'s plus {@link #MARGIN_NS}.
 */
final class ClockSkew {

    /** What two clocks may differ by beyond the skew measured between them: 1 ms. */
    static final long MARGIN_NS = 1_000_000L;

    /** Notifies remembered, per transfer, kind and receiving node. */
    private static final int WINDOW = 1 << 14;

    /** Per {@code ahead|behind} node pair, the most a receipt by {@code behind} was stamped before its send by {@code ahead}. */
    private final Map<String, Long> ahead = new TreeMap<>();

    /** A transfer's notifies of one kind to one node: how many were sent to it, and received by it. */
    private static final class Pending {
        int sent;
        int received;
        long lastReceivedAt = Long.MIN_VALUE;
    }

    private final LinkedHashMap<String, Pending> pending = new LinkedHashMap<>(16, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Pending> eldest) {
            return size() > WINDOW;
        }
    };

    private Pending pending(String tid, String kind, String receiver) {
        return pending.computeIfAbsent(tid + "|" + kind + "|" + receiver, k -> new Pending());
    }

    /** {@code receiver} received a {@code kind} notify of transfer {@code tid} at {@code at} (its clock). */
    void received(String tid, String kind, String receiver, long at) {
        Pending p = pending(tid, kind, receiver);
        p.received++;
        p.lastReceivedAt = Math.max(p.lastReceivedAt, at);
    }

    /** {@code sender} sent a {@code kind} notify of transfer {@code tid} to {@code receiver} at {@code at} (its clock). */
    void sent(String tid, String kind, String sender, String receiver, long at) {
        Pending p = pending(tid, kind, receiver);
        if (p.received > p.sent) {
            measured(sender, at, receiver, p.lastReceivedAt);
        }
        p.sent++;
    }

    /** A send by {@code sender} stamped {@code sentAt} explains a receipt by {@code receiver} stamped {@code receivedAt}. */
    void measured(String sender, long sentAt, String receiver, long receivedAt) {
        long d = sentAt - receivedAt;
        if (d > 0 && !sender.equals(receiver)) {
            ahead.merge(sender + "|" + receiver, d, Math::max);
        }
    }

    /** How far {@code b}'s clock was measured ahead of {@code a}'s (0 when nothing showed it). */
    long ahead(String b, String a) {
        return ahead.getOrDefault(b + "|" + a, 0L);
    }

    /**
     * Whether stamp {@code at} of node {@code a} is certainly before stamp {@code bt} of node
     * {@code b}: by more than {@code b}'s clock was measured ahead of {@code a}'s plus
     * {@link #MARGIN_NS}; on one node, by the raw stamps.
     */
    boolean certainlyBefore(String a, long at, String b, long bt) {
        if (a.equals(b)) {
            return at < bt;
        }
        return bt - at > ahead(b, a) + MARGIN_NS;
    }
}
