package io.kvledger.ledger.otlp;

import io.kvledger.ledger.diagnosis.Bounds;
import io.kvledger.ledger.diagnosis.Finding;
import io.kvledger.core.effect.Effect;
import io.kvledger.journal.JournalEntry;
import io.kvledger.ledger.replay.Hangs;
import io.kvledger.ledger.replay.ProxyLedger;
import io.kvledger.journal.proxy.ProxyEvent;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.common.AttributesBuilder;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.sdk.trace.data.StatusData;
import io.kvledger.ledger.replay.Replayer;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.LongUnaryOperator;
import java.util.function.Supplier;

/**
 * The traces of every request in a set of node journals ({@code kvledger export}), in two passes
 * over the journals (merged by event time, as {@code inspect} and {@code hangs} replay them): the
 * first runs the hang detectors ({@link Hangs}: what {@code kvledger hangs} reports), the second
 * feeds a {@link TraceRecorder} (the legs: per request and node, what {@code inspect} shows) and
 * hands each leg's spans on as soon as the leg ends, with its finding as the ERROR status. Memory
 * holds the legs still open, not the journals' requests; what is open when the journals end is
 * handed on last, its open phase ending there (marked {@code kvledger.open}).
 *
 * <p>Each request (trace) gets one root span, the parent of its legs, sent after every leg: the
 * proxy's {@code kvledger.proxy} (kind SERVER, from routing to the client's answer) with its
 * {@code kvledger.proxy.prefill} and {@code .decode} children (as the proxy sends them live) when a
 * proxy journal among the journals routed it, else a synthetic {@code kvledger.request} from its
 * first leg's start to its last leg's end ({@code kvledger.synthetic_root}, on the resource of the
 * node that sends it live, {@link LegSpans#sendsRoot}); the ERROR status when a leg has a finding.
 * Memory holds a few numbers per request for them.
 *
 * <p>A leg ends at its terminal phase, as on a live node ({@code LiveTraces}): entries that name a
 * request after it ended on that node are not in its trace.
 */
public final class JournalTraces {

    /**
     * What the export held.
     *
     * @param nodes       the replayed nodes
     * @param spans       spans handed on
     * @param traces      distinct trace ids
     * @param legs        legs (request, node)
     * @param inFlight    legs not in a terminal phase when the journals end
     * @param withFinding legs with a finding
     * @param findings    every finding of the detectors
     * @param unattached  findings that name no admitted request of the node (not exported)
     * @param firstAtNs   time of the first input replayed
     * @param lastAtNs    time of the last input replayed
     * @param shiftNs     what was added to every exported time
     * @param warnings    what the journal readers skipped or doubted
     */
    public record Result(List<Replayer.Node> nodes, long spans, int traces, int legs, int inFlight, int withFinding,
                         List<Finding> findings, int unattached, long firstAtNs, long lastAtNs, long shiftNs,
                         List<String> warnings) {}

    private JournalTraces() {}

    /**
     * Exports the journals' traces to {@code sink}, in batches of at most {@value OtlpSender#BATCH}
     * spans (a leg's spans are never split).
     *
     * @param open  opens a fresh replay of the journals (called twice)
     * @param shift what to add to every exported time, given the time of the first input (to move a
     *              simulated run to a wall-clock instant)
     * @param sink  takes each batch; an exception from it ends the export
     */
    public static Result export(Supplier<Replayer> open, Bounds bounds, LongUnaryOperator shift,
                                Consumer<List<SpanData>> sink) {
        Hangs.Result hangs;
        LinkedHashSet<String> warnings = new LinkedHashSet<>();
        try (Replayer r = open.get()) {
            hangs = Hangs.analyse(r.recorded(false), bounds);
            warnings.addAll(r.warnings());
        }
        Map<String, Finding> byLeg = new HashMap<>();
        for (Finding f : hangs.findings()) {
            if (f.requestId() != null) {
                // the first finding of a leg is its status (the detectors list the most specific first)
                byLeg.putIfAbsent(f.node() + "\u0000" + f.requestId(), f);
            }
        }
        long first = hangs.firstAtNs();
        long end = hangs.lastAtNs();
        long shiftNs = hangs.inputs() == 0 ? 0 : shift.applyAsLong(first);
        Map<String, Resource> resources = new HashMap<>();
        Batcher out = new Batcher(sink, byLeg, resources, end, shiftNs);
        TraceRecorder rec = new TraceRecorder(leg -> out.leg(leg), Integer.MAX_VALUE);
        List<ProxyLedger.Request> proxies = new ArrayList<>();
        try (Replayer r = open.get()) {
            r.recorded(false).run(new Replayer.Listener() {
                @Override
                public void started(Replayer.Node node, List<Effect> startup, List<JournalEntry.Derived> recorded) {
                    rec.node(node.name(), node.config());
                    resources.put(node.name(), LegSpans.resource(node.name(), node.config()));
                }

                @Override
                public void applied(Replayer.Node node, JournalEntry.Input in, List<Effect> fx,
                                    List<JournalEntry.Derived> recorded) {
                    rec.observe(node.name(), in.seq(), in.event(), fx);
                    out.drop(rec);
                }
            });
            warnings.addAll(r.warnings());
            if (!r.proxyJournals().isEmpty()) {
                ProxyLedger pl = ProxyLedger.read(r.proxyJournals());
                proxies.addAll(pl.requests());
                warnings.addAll(pl.warnings());
            }
        }
        for (TraceRecorder.Leg leg : rec.legs()) {
            out.leg(leg);
        }
        out.roots(proxies, end);
        out.flush();
        int unattached = 0;
        for (Finding f : hangs.findings()) {
            if (f.requestId() == null || !out.seen.contains(f.node() + "\u0000" + f.requestId())) {
                unattached++;
            }
        }
        return new Result(hangs.nodes(), out.spans, out.traces.size(), out.legs, out.inFlight, out.withFinding,
                hangs.findings(), unattached, first, end, shiftNs, List.copyOf(warnings));
    }

    /** What the legs of one request tell of its root span. */
    private static final class Root {
        long start = Long.MAX_VALUE;
        long end = Long.MIN_VALUE;
        int legs;
        boolean inFlight;
        String transferId;
        String finding;
        Resource sender;
    }

    /** Turns legs into spans and hands them on in batches. */
    private static final class Batcher {
        final Consumer<List<SpanData>> sink;
        final Map<String, Finding> byLeg;
        final Map<String, Resource> resources;
        final long end;
        final long shiftNs;
        int rootCount;
        final List<SpanData> batch = new ArrayList<>();
        final List<TraceRecorder.Leg> ended = new ArrayList<>();
        final Set<String> traces = new HashSet<>();
        final Set<String> seen = new HashSet<>();
        final Map<String, Root> roots = new java.util.LinkedHashMap<>();
        long spans;
        int legs;
        int inFlight;
        int withFinding;

        Batcher(Consumer<List<SpanData>> sink, Map<String, Finding> byLeg, Map<String, Resource> resources, long end,
                long shiftNs) {
            this.sink = sink;
            this.byLeg = byLeg;
            this.resources = resources;
            this.end = end;
            this.shiftNs = shiftNs;
        }

        void leg(TraceRecorder.Leg leg) {
            String key = leg.node() + "\u0000" + leg.requestId();
            Finding f = byLeg.get(key);
            List<SpanData> s = LegSpans.of(leg, resources.get(leg.node()), f, end, shiftNs);
            SpanData legSpan = s.get(0);
            Root root = roots.computeIfAbsent(leg.traceKey(), k -> new Root());
            root.start = Math.min(root.start, legSpan.getStartEpochNanos());
            root.end = Math.max(root.end, legSpan.getEndEpochNanos());
            root.legs++;
            root.inFlight |= !leg.ended();
            if (root.transferId == null) {
                root.transferId = leg.transferId();
            }
            if (root.sender == null && LegSpans.sendsRoot(leg)) {
                root.sender = resources.get(leg.node()); // the node that sends it live
            }
            if (f != null && root.finding == null) {
                root.finding = leg.node() + " " + f.detector() + ": " + f.message();
            }
            if (batch.size() + s.size() > OtlpSender.BATCH) {
                flush();
            }
            batch.addAll(s);
            traces.add(s.get(0).getTraceId());
            seen.add(key);
            legs++;
            inFlight += leg.ended() ? 0 : 1;
            withFinding += f == null ? 0 : 1;
            if (leg.ended()) {
                ended.add(leg);
            }
        }

        /**
         * One root span per request (trace key): the proxy's {@code kvledger.proxy} when a proxy
         * journal among the journals routed it, else a synthetic {@code kvledger.request} spanning
         * its legs; each with the id the legs name as their parent.
         */
        void roots(List<ProxyLedger.Request> proxied, long journalsEnd) {
            Map<String, ProxyLedger.Request> byKey = new java.util.LinkedHashMap<>();
            for (ProxyLedger.Request r : proxied) {
                byKey.putIfAbsent(r.transferId() != null ? r.transferId() : r.requestId(), r);
            }
            for (String key : byKey.keySet()) {
                roots.computeIfAbsent(key, k -> new Root());
            }
            Resource synthetic = LegSpans.resource("kvledger-export", "export");
            Map<String, Resource> proxyResources = new HashMap<>();
            List<SpanData> out = new ArrayList<>();
            for (Map.Entry<String, Root> e : roots.entrySet()) {
                String key = e.getKey();
                Root root = e.getValue();
                ProxyLedger.Request pr = byKey.get(key);
                AttributesBuilder a = Attributes.builder()
                        .put("kvledger.trace_key", key)
                        .put("kvledger.legs", root.legs)
                        .put("kvledger.in_flight", root.inFlight);
                StatusData status = root.finding == null ? StatusData.unset()
                        : StatusData.create(StatusCode.ERROR, root.finding);
                String name;
                SpanKind kind;
                Resource resource;
                long start = root.start;
                long stop = root.end;
                List<SpanData> children = new ArrayList<>(2);
                if (pr != null) {
                    name = "kvledger.proxy";
                    kind = SpanKind.SERVER;
                    resource = proxyResources.computeIfAbsent(pr.proxy(), p -> LegSpans.resource(p, "proxy"));
                    a.put("kvledger.request_id", pr.requestId()).put("kvledger.mode", String.valueOf(pr.mode()));
                    if (pr.transferId() != null) {
                        a.put("kvledger.transfer_id", pr.transferId());
                    }
                    if (pr.prefill() != null) {
                        a.put("kvledger.prefill_instance", pr.prefill());
                    }
                    if (pr.decode() != null) {
                        a.put("kvledger.decode_instance", pr.decode());
                    }
                    long proxyEnd = pr.routedAtNs();
                    boolean open = pr.clientStatus() == null;
                    for (ProxyLedger.Leg l : pr.legs().values()) {
                        proxyEnd = Math.max(proxyEnd, l.outcome() == null ? journalsEnd : l.endAtNs());
                    }
                    if (open) {
                        proxyEnd = journalsEnd;
                        a.put("kvledger.in_flight", true);
                    } else {
                        a.put("http.response.status_code", (long) pr.clientStatus());
                        if (pr.clientStatus() >= 500 && root.finding == null) {
                            status = StatusData.create(StatusCode.ERROR, "answered " + pr.clientStatus());
                        }
                    }
                    start = Math.min(start, pr.routedAtNs() + shiftNs);
                    stop = Math.max(stop, proxyEnd + shiftNs);
                    // the proxy's own spans of its engine legs, as it sends them live
                    int index = 1;
                    for (String leg : List.of(ProxyEvent.PREFILL, ProxyEvent.DECODE)) {
                        int i = index++;
                        ProxyLedger.Leg l = pr.legs().get(leg);
                        if (l == null) {
                            continue;
                        }
                        String finish = "answered".equals(l.outcome()) && l.detail() != null
                                && l.detail().startsWith("finish ") && !l.detail().equals("finish null")
                                ? l.detail().substring("finish ".length()) : null;
                        String reason = "answered".equals(l.outcome()) ? null : l.detail();
                        children.add(LegSpans.proxyLeg(key, pr.proxy(), pr.requestId(), leg, i, l.instance(),
                                l.sentAtNs() + shiftNs, l.outcome(), l.httpStatus(),
                                (l.outcome() == null ? journalsEnd : l.endAtNs()) + shiftNs, finish, reason, resource));
                    }
                } else {
                    traces.add(LegSpans.traceId(key));
                    out.add(LegSpans.syntheticRoot(key, root.transferId, start, stop, root.legs, root.inFlight, status,
                            root.sender != null ? root.sender : synthetic));
                    continue;
                }
                traces.add(LegSpans.traceId(key));
                out.add(LegSpans.span(name, kind, LegSpans.root(key), SpanContext.getInvalid(), status, start, stop,
                        a.build(), List.of(), resource));
                out.addAll(children);
            }
            for (SpanData sd : out) {
                if (batch.size() + 1 > OtlpSender.BATCH) {
                    flush();
                }
                batch.add(sd);
            }
            rootCount = roots.size();
        }

        /** Forgets the legs handed on (after the recorder's observe: not while it iterates). */
        void drop(TraceRecorder rec) {
            for (TraceRecorder.Leg l : ended) {
                rec.drop(l);
            }
            ended.clear();
        }

        void flush() {
            if (!batch.isEmpty()) {
                List<SpanData> b = List.copyOf(batch);
                batch.clear();
                sink.accept(b);
                spans += b.size();
            }
        }
    }
}
