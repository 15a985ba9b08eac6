package io.kvledger.ledger.replay;

import io.kvledger.ledger.diagnosis.Finding;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.format.EntryType;
import io.kvledger.journal.proxy.ProxyEvent;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import io.kvledger.ledger.text.Seconds;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Proxy journals read back: one {@link Request} per routed client request with both legs, the
 * records that name a request or transfer id (for {@code inspect}), and the findings of the proxy
 * detectors (for {@code hangs}):
 * <ul>
 *   <li>{@code proxy-decode-unanswered}: the proxy sent a decode leg that never answered by the
 *       end of its journal (longer than the stuck bound), was cancelled, or failed;</li>
 *   <li>{@code proxy-prefill-failed}: a prefill leg that failed, was cancelled, or never
 *       answered (the decode leg was then never sent in READ, or cancelled in WRITE).</li>
 * </ul>
 * Streams each journal once; keeps one record per request.
 */
public final class ProxyLedger {

    /** The detectors, in the order {@code hangs} lists them. */
    static final List<String> DETECTORS = List.of("proxy-decode-unanswered", "proxy-prefill-failed");

    /** One leg as the proxy journaled it; {@code outcome} is null while it had no answer. */
    public record Leg(String instance, long sentAtNs, String outcome, Integer httpStatus, long endAtNs, String detail) {}

    /** One routed request. */
    public record Request(String proxy, String requestId, String transferId, long routedAtNs, String mode,
                          String prefill, Integer prefillDpRank, String decode, Integer decodeDpRank,
                          Map<String, Leg> legs, Integer clientStatus) {}

    /** One proxy record, for a timeline. */
    public record Line(long atNs, String proxy, long seq, EntryType type, String text, ProxyEvent event) {}

    private final List<Request> requests = new ArrayList<>();
    private final Map<String, String> proxyOf = new LinkedHashMap<>();
    private final Map<String, Long> lastAtNs = new LinkedHashMap<>();
    private final List<NodeJournal> journals;
    private final List<String> warnings = new ArrayList<>();

    private ProxyLedger(List<NodeJournal> journals) {
        this.journals = journals;
    }

    /**
     * Reads every proxy journal.
     *
     * @throws io.kvledger.ledger.replay.JournalInputs.InputException when one cannot be read
     */
    public static ProxyLedger read(List<NodeJournal> journals) {
        ProxyLedger l = new ProxyLedger(journals);
        for (NodeJournal j : journals) {
            try (JournalReader r = j.open()) {
                String name = r.header().nodeId();
                Map<String, MutableRequest> byRid = new LinkedHashMap<>();
                long last = Long.MIN_VALUE;
                for (JournalEntry e : r) {
                    if (e instanceof JournalEntry.Proxy px) {
                        last = Math.max(last, px.atNs());
                        l.apply(name, byRid, px.event());
                    }
                }
                l.lastAtNs.put(name, last);
                for (MutableRequest m : byRid.values()) {
                    l.requests.add(m.freeze());
                }
                l.warnings.addAll(r.warnings());
            }
        }
        return l;
    }

    /** The requests, journal by journal, in routing order. */
    public List<Request> requests() {
        return List.copyOf(requests);
    }

    public List<String> warnings() {
        return List.copyOf(warnings);
    }

    /** The latest record time over the proxy journals (Long.MIN_VALUE when none). */
    public long lastAtNs() {
        return lastAtNs.values().stream().mapToLong(Long::longValue).max().orElse(Long.MIN_VALUE);
    }

    /**
     * The proxy detectors' findings.
     *
     * @param stuckAfterNs a leg sent longer than this before the end of its journal, with no
     *                     answer, is a finding
     */
    public List<Finding> findings(long stuckAfterNs) {
        List<Finding> decode = new ArrayList<>();
        List<Finding> prefill = new ArrayList<>();
        for (Request q : requests) {
            long end = lastAtNs.getOrDefault(q.proxy(), Long.MIN_VALUE);
            Leg p = q.legs().get(ProxyEvent.PREFILL);
            Leg d = q.legs().get(ProxyEvent.DECODE);
            if (d != null) {
                String why = null;
                if (d.outcome() == null && end - d.sentAtNs() > stuckAfterNs) {
                    why = "no answer by the end of the proxy's journal, " + Seconds.duration(end - d.sentAtNs()) + " after it was sent";
                } else if ("cancelled".equals(d.outcome()) || "failed".equals(d.outcome())) {
                    why = d.outcome() + " after " + Seconds.duration(d.endAtNs() - d.sentAtNs()) + ": " + d.detail();
                }
                if (why != null) {
                    decode.add(new Finding(DETECTORS.get(0), q.proxy(), q.requestId(), q.transferId(), null, 0,
                            d.outcome() == null ? end : d.endAtNs(), d.sentAtNs(),
                            "the proxy sent the decode leg to " + d.instance() + dp(q.decodeDpRank()) + " (" + q.mode()
                                    + ", prefill " + q.prefill() + dp(q.prefillDpRank()) + "): " + why));
                }
            }
            if (p != null) {
                String why = null;
                if (p.outcome() == null && end - p.sentAtNs() > stuckAfterNs) {
                    why = "no answer by the end of the proxy's journal, " + Seconds.duration(end - p.sentAtNs()) + " after it was sent";
                } else if ("cancelled".equals(p.outcome()) || "failed".equals(p.outcome())) {
                    why = p.outcome() + " after " + Seconds.duration(p.endAtNs() - p.sentAtNs()) + ": " + p.detail();
                }
                if (why != null) {
                    prefill.add(new Finding(DETECTORS.get(1), q.proxy(), q.requestId(), q.transferId(), null, 0,
                            p.outcome() == null ? end : p.endAtNs(), p.sentAtNs(),
                            "the prefill leg to " + p.instance() + dp(q.prefillDpRank()) + " " + why
                                    + (d == null ? "; no decode leg was sent" : "")));
                }
            }
        }
        List<Finding> out = new ArrayList<>(decode);
        out.addAll(prefill);
        return out;
    }

    /**
     * The proxy records that name one of {@code requestIds} (a proxy request id, also when a
     * node's request id wraps it as {@code cmpl-<id>-0-<suffix>}) or {@code transferIds}, in each
     * journal's order.
     */
    public List<Line> lines(Set<String> requestIds, Set<String> transferIds) {
        List<Line> out = new ArrayList<>();
        for (NodeJournal j : journals) {
            try (JournalReader r = j.open()) {
                String name = r.header().nodeId();
                for (JournalEntry e : r) {
                    if (e instanceof JournalEntry.Proxy px && names(px.event(), requestIds, transferIds)) {
                        out.add(new Line(px.atNs(), name, px.seq(), px.type(), px.dissect(), px.event()));
                    }
                }
            }
        }
        return out;
    }

    /** Whether {@code e} names a request id the set holds (or wraps) or a transfer id of the set. */
    static boolean names(ProxyEvent e, Set<String> requestIds, Set<String> transferIds) {
        String rid = ProxyEvent.requestIdOf(e);
        String tid = ProxyEvent.transferIdOf(e);
        if (tid != null && transferIds.contains(tid)) {
            return true;
        }
        if (rid == null) {
            return false;
        }
        for (String r : requestIds) {
            if (r.equals(rid) || r.contains(rid)) {
                return true;
            }
        }
        return false;
    }

    private static String dp(Integer rank) {
        return rank == null ? "" : " dp" + rank;
    }


    // ------------------------------------------------------------------ folding

    private static final class MutableRequest {
        String proxy;
        ProxyEvent.RequestRouted routed;
        final Map<String, Leg> legs = new LinkedHashMap<>();
        Integer clientStatus;

        Request freeze() {
            ProxyEvent.RequestRouted r = routed;
            return new Request(proxy, r.requestId(), r.transferId(), r.atNs(), r.mode(), r.prefill(), r.prefillDpRank(),
                    r.decode(), r.decodeDpRank(), Map.copyOf(legs), clientStatus);
        }
    }

    private void apply(String proxy, Map<String, MutableRequest> byRid, ProxyEvent e) {
        switch (e) {
            case ProxyEvent.RequestRouted r -> {
                MutableRequest m = new MutableRequest();
                m.proxy = proxy;
                m.routed = r;
                byRid.put(r.requestId(), m);
                proxyOf.put(r.requestId(), proxy);
            }
            case ProxyEvent.LegSent s -> leg(byRid, s.requestId(), s.leg(),
                    x -> new Leg(s.instance(), s.atNs(), null, null, 0, null));
            case ProxyEvent.LegAnswered a -> leg(byRid, a.requestId(), a.leg(),
                    x -> x == null ? null : new Leg(x.instance(), x.sentAtNs(), "answered", a.httpStatus(), a.atNs(),
                            "finish " + a.finishReason()));
            case ProxyEvent.LegFailed f -> leg(byRid, f.requestId(), f.leg(),
                    x -> x == null ? null : new Leg(x.instance(), x.sentAtNs(), "failed", f.httpStatus(), f.atNs(),
                            f.reason()));
            case ProxyEvent.LegCancelled c -> leg(byRid, c.requestId(), c.leg(),
                    x -> x == null ? null : new Leg(x.instance(), x.sentAtNs(), "cancelled", null, c.atNs(), c.reason()));
            case ProxyEvent.RequestCompleted c -> {
                MutableRequest m = byRid.get(c.requestId());
                if (m != null) {
                    m.clientStatus = c.httpStatus();
                }
            }
            case ProxyEvent.ProxyStarted x -> { }
            case ProxyEvent.InstanceRegistered x -> { }
            case ProxyEvent.InstanceExpired x -> { }
            case ProxyEvent.RegistrationRejected x -> { }
            case ProxyEvent.RequestRejected x -> { }
            case ProxyEvent.RecordsDropped x -> warnings.add(proxy + ": " + x.total()
                    + " proxy record(s) were dropped before " + x.atNs() + " (the journal has a gap)");
        }
    }

    private static void leg(Map<String, MutableRequest> byRid, String rid, String leg,
                            java.util.function.UnaryOperator<Leg> f) {
        MutableRequest m = byRid.get(rid);
        if (m == null) {
            return;
        }
        Leg next = f.apply(m.legs.get(leg));
        if (next != null) {
            m.legs.put(leg, next);
        }
    }
}
