package io.kvledger.ledger.otlp;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.ledger.diagnosis.Finding;
import io.kvledger.ledger.replay.Timeline;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.common.AttributesBuilder;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.sdk.common.InstrumentationScopeInfo;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.data.EventData;
import io.opentelemetry.sdk.trace.data.LinkData;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.data.StatusData;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Turns a request's {@link TraceRecorder.Leg} into OpenTelemetry spans: one leg span per node
 * ({@code kvledger.prefill} on a producer, {@code kvledger.decode} on a consumer) with one child
 * span per phase the request went through there, named by the phase ({@code PREFILLING},
 * {@code WAITING_FOR_REMOTE_KVS}, ..., as vLLM names its request statuses); frames, decisions and
 * anomalies are events of the phase span they happened in; a hang finding is the ERROR status of
 * the leg span and of its last phase span.
 *
 * <p>Ids are deterministic, so exporting the same journals again sends the same ids:
 * <ul>
 *   <li>trace id: the first 16 bytes of SHA-256 of {@code "kvledger-trace\0" + key}, where the key
 *       is the request's transfer id (the id the proxy mints once for both legs, so the prefill and
 *       decode legs of one request, on different nodes, land in one trace), or its request id when
 *       it has no transfer id;</li>
 *   <li>span ids: the first 8 bytes of SHA-256 of the key, node, request id and the phase's index.</li>
 * </ul>
 * The leg spans are children of the request's root span ({@link #rootSpanId}), so a trace has one
 * root: the proxy's {@code kvledger.proxy} when a kvledger proxy that sends traces routed it (it
 * says so with a {@code traceparent} naming that root in both legs' {@code kv_transfer_params}),
 * else a synthetic {@code kvledger.request} ({@link #syntheticRoot}) that one leg's node sends live
 * ({@link #sendsRoot}) and {@code export} sends from the journals, with the same id. The leg span carries the engine's request id as
 * {@code kvledger.request_id} (vLLM's {@code llm_request} span has the same value as
 * {@code gen_ai.request.id}, which is not an OpenTelemetry convention). When the
 * request's {@code kv_transfer_params} carry a W3C {@code traceparent} (a proxy can copy the
 * client's header there), the leg span links to that span.
 */
public final class LegSpans {

    /** kvledger's version: {@code service.version} of every resource, the scope's version. */
    public static final String VERSION = "0.1.0-SNAPSHOT";

    /**
     * The OpenTelemetry semantic conventions the attributes follow ({@code service.*},
     * {@code http.route}, {@code http.response.status_code}, {@code server.address}); set on every
     * resource and on the scope.
     */
    public static final String SCHEMA_URL = "https://opentelemetry.io/schemas/1.37.0";

    /** The instrumentation scope of every span. */
    static final InstrumentationScopeInfo SCOPE = InstrumentationScopeInfo.builder("io.kvledger")
            .setVersion(VERSION).setSchemaUrl(SCHEMA_URL).build();

    private LegSpans() {}

    /** The resource of a node's spans: {@code service.name=kvledger}, the node as instance id, its rank. */
    public static Resource resource(String node, NodeConfig c) {
        return Resource.create(Attributes.builder()
                .put("service.name", "kvledger")
                .put("service.version", VERSION)
                .put("service.instance.id", node)
                .put("kvledger.node", node)
                .put("kvledger.role", c.role() == Role.PRODUCER ? "producer" : "consumer")
                .put("kvledger.mode", c.mode().name().toLowerCase(Locale.ROOT))
                .put("kvledger.engine_id", c.engineId())
                .put("kvledger.dp_rank", c.dpRank())
                .put("kvledger.tp_rank", c.tpRank())
                .build(), SCHEMA_URL);
    }

    /** The resource of spans that stand for no node ({@code service.instance.id} {@code name}, role {@code role}). */
    public static Resource resource(String name, String role) {
        return Resource.create(Attributes.builder()
                .put("service.name", "kvledger")
                .put("service.version", VERSION)
                .put("service.instance.id", name)
                .put("kvledger.node", name)
                .put("kvledger.role", role)
                .build(), SCHEMA_URL);
    }

    /**
     * The 16-hex span id of a request's root span (the proxy's {@code kvledger.proxy}, or the
     * synthetic {@code kvledger.request} of {@code export}): the parent of every node's leg span.
     */
    public static String rootSpanId(String key) {
        return HexFormat.of().formatHex(sha256("kvledger-root\u0000" + key), 0, 8);
    }

    /** The context of a request's root span. */
    public static SpanContext root(String key) {
        return SpanContext.create(traceId(key), rootSpanId(key), TraceFlags.getSampled(), TraceState.getDefault());
    }

    /** The 32-hex trace id of a trace key (transfer id, else request id). */
    public static String traceId(String key) {
        return HexFormat.of().formatHex(sha256("kvledger-trace\u0000" + key), 0, 16);
    }

    /** The 16-hex span id of a leg's span ({@code index} -1) or of its phase span {@code index}. */
    public static String spanId(String key, String node, String requestId, int index) {
        return HexFormat.of().formatHex(sha256("kvledger-span\u0000" + key + "\u0000" + node + "\u0000" + requestId
                + "\u0000" + index), 0, 8);
    }

    /**
     * The spans of one leg.
     *
     * @param finding what the hang detectors found for it, or null
     * @param endNs   where spans still open end (the journals' end, or now on a live node);
     *                ignored when the leg ended
     * @param shiftNs added to every time (0 keeps the journal's times)
     */
    public static List<SpanData> of(TraceRecorder.Leg leg, Resource resource, Finding finding, long endNs,
                                    long shiftNs) {
        String key = leg.traceKey();
        String traceId = traceId(key);
        SpanContext legCtx = SpanContext.create(traceId, spanId(key, leg.node(), leg.requestId(), -1),
                TraceFlags.getSampled(), TraceState.getDefault());
        boolean ended = leg.ended();
        long openEnd = Math.max(endNs, leg.lastAtNs());
        List<SpanData> out = new ArrayList<>();
        List<TraceRecorder.Phase> phases = leg.phases();
        StatusData error = finding == null ? StatusData.unset()
                : StatusData.create(StatusCode.ERROR, finding.detector() + ": " + finding.message());
        long legEnd = leg.admittedAtNs();
        for (int i = 0; i < phases.size(); i++) {
            TraceRecorder.Phase p = phases.get(i);
            boolean open = p.endNs() == Long.MIN_VALUE;
            long end = open ? openEnd : p.endNs();
            legEnd = Math.max(legEnd, end);
            AttributesBuilder a = Attributes.builder()
                    .put("kvledger.phase", p.phase().name())
                    .put("kvledger.phase.code", p.phase().code())
                    .put("kvledger.phase.index", i)
                    .put("kvledger.reason", nz(p.reason()));
            if (p.exitReason() != null) {
                a.put("kvledger.exit_reason", p.exitReason());
            }
            if (open) {
                a.put("kvledger.open", true);
            }
            List<EventData> events = new ArrayList<>();
            for (TraceRecorder.Event e : p.events()) {
                events.add(event(e, shiftNs));
            }
            boolean last = i == phases.size() - 1;
            if (last && finding != null) {
                events.add(findingEvent(finding, openEnd, shiftNs));
            }
            SpanContext ctx = SpanContext.create(traceId, spanId(key, leg.node(), leg.requestId(), i),
                    TraceFlags.getSampled(), TraceState.getDefault());
            out.add(new Span(p.phase().name(), SpanKind.INTERNAL, ctx, legCtx, last ? error : StatusData.unset(),
                    p.startNs() + shiftNs, end + shiftNs, a.build(), events, List.of(), resource));
        }
        if (!ended) {
            legEnd = Math.max(legEnd, openEnd);
        }
        TraceRecorder.Phase cur = leg.current();
        AttributesBuilder a = Attributes.builder()
                .put("kvledger.request_id", leg.requestId())
                .put("kvledger.node", leg.node())
                .put("kvledger.trace_key", key)
                .put("kvledger.in_flight", !ended)
                .put("kvledger.transfers.posted", leg.posts())
                .put("kvledger.transfers.completed", leg.completions())
                .put("kvledger.transfers.failed", leg.failedCompletions());
        if (leg.transferId() != null) {
            a.put("kvledger.transfer_id", leg.transferId());
        }
        String uuid = Timeline.uuidOf(leg.requestId());
        if (uuid != null) {
            a.put("kvledger.proxy_uuid", uuid);
        }
        if (cur != null) {
            a.put("kvledger.end_phase", cur.phase().name());
            if (ended) {
                a.put("kvledger.end_reason", nz(cur.reason()));
            }
        }
        if (leg.droppedEvents() > 0) {
            a.put("kvledger.events_dropped", leg.droppedEvents());
        }
        if (finding != null) {
            a.put("kvledger.finding.detector", finding.detector());
            a.put("kvledger.bug_class", finding.bugClass());
            a.put("kvledger.finding.message", finding.message());
        }
        String name = leg.config().role() == Role.PRODUCER ? "kvledger.prefill" : "kvledger.decode";
        List<LinkData> links = List.of();
        SpanContext linked = traceparent(leg.traceparent());
        if (linked != null && !namesRoot(linked, key)) {
            links = List.of(LinkData.create(linked, Attributes.builder().put("kvledger.link", "traceparent").build()));
        }
        // frames that reached the node before the request did: events of the leg span, which starts with them
        List<EventData> early = new ArrayList<>();
        long legStart = leg.admittedAtNs();
        for (TraceRecorder.Event e : leg.early()) {
            early.add(event(e, shiftNs));
            legStart = Math.min(legStart, e.atNs());
        }
        if (!early.isEmpty()) {
            a.put("kvledger.early_frames", early.size());
        }
        out.add(0, new Span(name, SpanKind.INTERNAL, legCtx, root(key), error,
                legStart + shiftNs, legEnd + shiftNs, a.build(), early, links, resource));
        return out;
    }

    /**
     * Whether this leg's node sends the request's synthetic root span live: exactly one leg of a
     * request does. Not when a kvledger proxy sends the root (the leg's {@code traceparent} names
     * the root); else the leg on TP rank 0 of the prefill side (the side every disaggregated
     * request starts on; a request goes to one DP rank of each side), or of the decode side for a
     * request with no remote prefill. A decode leg whose prefill never ran has no live root
     * ({@code export} sends it from the journals).
     */
    public static boolean sendsRoot(TraceRecorder.Leg leg) {
        SpanContext tp = traceparent(leg.traceparent());
        if (tp != null && namesRoot(tp, leg.traceKey())) {
            return false;
        }
        if (leg.config().tpRank() != 0) {
            return false;
        }
        return leg.config().role() == Role.PRODUCER || !leg.remotePrefill();
    }

    /** The {@code traceparent} a proxy that sends the root of {@code key} puts in the legs' params. */
    public static String rootTraceparent(String key) {
        return "00-" + traceId(key) + "-" + rootSpanId(key) + "-01";
    }

    private static boolean namesRoot(SpanContext c, String key) {
        return c.getTraceId().equals(traceId(key)) && c.getSpanId().equals(rootSpanId(key));
    }

    /**
     * A request's synthetic root {@code kvledger.request} (kind INTERNAL, {@code
     * kvledger.synthetic_root}), with the id every leg names as its parent.
     *
     * @param transferId the request's transfer id, or null
     * @param legs       the legs it is made of (as far as its sender knows)
     * @param inFlight   whether a leg has not ended
     */
    public static SpanData syntheticRoot(String key, String transferId, long startNs, long endNs, int legs,
                                         boolean inFlight, StatusData status, Resource resource) {
        AttributesBuilder a = Attributes.builder()
                .put("kvledger.trace_key", key)
                .put("kvledger.legs", legs)
                .put("kvledger.in_flight", inFlight)
                .put("kvledger.synthetic_root", true);
        if (transferId != null) {
            a.put("kvledger.transfer_id", transferId);
        }
        return span("kvledger.request", SpanKind.INTERNAL, root(key), SpanContext.getInvalid(), status, startNs, endNs,
                a.build(), List.of(), resource);
    }

    /**
     * The synthetic root a live node sends with a leg it {@link #sendsRoot} for: over that leg's
     * span ({@code spans.get(0)}, from {@link #of}), with its status.
     */
    public static SpanData syntheticRoot(TraceRecorder.Leg leg, List<SpanData> spans, Resource resource) {
        SpanData l = spans.get(0);
        StatusData status = l.getStatus().getStatusCode() == StatusCode.ERROR
                ? StatusData.create(StatusCode.ERROR, leg.node() + " " + l.getStatus().getDescription())
                : StatusData.unset();
        return syntheticRoot(leg.traceKey(), leg.transferId(), l.getStartEpochNanos(), l.getEndEpochNanos(), 1,
                !leg.ended(), status, resource);
    }

    /**
     * One of a kvledger proxy's engine legs as a span ({@code kvledger.proxy.prefill} or
     * {@code .decode}, kind CLIENT, a child of the request's root), the same whether the proxy
     * sends it live or {@code export} rebuilds it from the proxy's journal.
     *
     * @param index        1 for the prefill leg, 2 for the decode leg (part of the span id)
     * @param outcome      {@code answered}, {@code failed}, {@code cancelled}, or null while in flight
     * @param httpStatus   the engine's status, or null
     * @param endNs        when the outcome came (or where an open leg ends)
     * @param finishReason the answer's finish reason, or null
     * @param reason       why it failed or was cancelled, or null
     */
    public static SpanData proxyLeg(String key, String proxyId, String requestId, String leg, int index,
                                    String instance, long sentAtNs, String outcome, Integer httpStatus, long endNs,
                                    String finishReason, String reason, Resource resource) {
        SpanContext ctx = SpanContext.create(traceId(key), spanId(key, proxyId, requestId, index),
                TraceFlags.getSampled(), TraceState.getDefault());
        AttributesBuilder la = Attributes.builder()
                .put("kvledger.leg", leg)
                .put("kvledger.request_id", requestId)
                .put("server.address", instance);
        StatusData ls = StatusData.unset();
        if (outcome == null) {
            la.put("kvledger.in_flight", true);
        } else {
            la.put("kvledger.outcome", outcome);
            if (httpStatus != null) {
                la.put("http.response.status_code", (long) httpStatus);
            }
            if (finishReason != null) {
                la.put("kvledger.finish_reason", finishReason);
            }
            if (reason != null) {
                la.put("kvledger.reason", reason);
            }
            if (outcome.equals("failed")) {
                ls = StatusData.create(StatusCode.ERROR, leg + " leg " + reason);
            }
        }
        return span("kvledger.proxy." + leg, SpanKind.CLIENT, ctx, root(key), ls, sentAtNs, Math.max(sentAtNs, endNs),
                la.build(), List.of(), resource);
    }

    private static EventData event(TraceRecorder.Event e, long shiftNs) {
        AttributesBuilder a = Attributes.builder().put("kvledger.seq", e.seq()).put("kvledger.text", e.text());
        for (Map.Entry<String, Object> kv : e.attrs().entrySet()) {
            switch (kv.getValue()) {
                case Long l -> a.put(kv.getKey(), l);
                case Boolean b -> a.put(kv.getKey(), b);
                default -> a.put(kv.getKey(), String.valueOf(kv.getValue()));
            }
        }
        return EventData.create(e.atNs() + shiftNs, e.name(), a.build());
    }

    private static EventData findingEvent(Finding f, long fallbackNs, long shiftNs) {
        long at = (f.atNs() == Long.MIN_VALUE ? fallbackNs : f.atNs()) + shiftNs;
        return EventData.create(at, "hang_finding", Attributes.builder()
                .put("kvledger.finding.detector", f.detector())
                .put("kvledger.bug_class", f.bugClass())
                .put("kvledger.text", f.message())
                .build());
    }

    private static final java.util.regex.Pattern TRACEPARENT =
            java.util.regex.Pattern.compile("([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})");

    /** The span a W3C {@code traceparent} names, or null when it is absent or malformed. */
    static SpanContext traceparent(String tp) {
        if (tp == null) {
            return null;
        }
        java.util.regex.Matcher m = TRACEPARENT.matcher(tp.strip());
        if (!m.matches() || m.group(1).equals("ff")) {
            return null;
        }
        SpanContext c = SpanContext.createFromRemoteParent(m.group(2), m.group(3),
                TraceFlags.fromHex(m.group(4), 0), TraceState.getDefault());
        return c.isValid() ? c : null;
    }

    private static String nz(String s) {
        return s == null ? "" : s;
    }

    private static byte[] sha256(String s) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK has no SHA-256", e);
        }
    }

    /**
     * A finished span with the given ids and times (epoch ns), for spans made outside this class
     * (the proxy's); {@code parent} is {@link SpanContext#getInvalid()} for a root span.
     */
    public static SpanData span(String name, SpanKind kind, SpanContext context, SpanContext parent, StatusData status,
                                long startNs, long endNs, Attributes attributes, List<EventData> events,
                                Resource resource) {
        return new Span(name, kind, context, parent, status, startNs, endNs, attributes, events, List.of(), resource);
    }

    /** A finished span, as the exporter reads it. */
    record Span(String name, SpanKind kind, SpanContext context, SpanContext parent, StatusData status, long startNs,
                long endNs, Attributes attributes, List<EventData> events, List<LinkData> links, Resource resource)
            implements SpanData {

        @Override
        public String getName() {
            return name;
        }

        @Override
        public SpanKind getKind() {
            return kind;
        }

        @Override
        public SpanContext getSpanContext() {
            return context;
        }

        @Override
        public SpanContext getParentSpanContext() {
            return parent;
        }

        @Override
        public StatusData getStatus() {
            return status;
        }

        @Override
        public long getStartEpochNanos() {
            return startNs;
        }

        @Override
        public Attributes getAttributes() {
            return attributes;
        }

        @Override
        public List<EventData> getEvents() {
            return events;
        }

        @Override
        public List<LinkData> getLinks() {
            return links;
        }

        @Override
        public long getEndEpochNanos() {
            return Math.max(startNs, endNs);
        }

        @Override
        public boolean hasEnded() {
            return true;
        }

        @Override
        public int getTotalRecordedEvents() {
            return events.size();
        }

        @Override
        public int getTotalRecordedLinks() {
            return links.size();
        }

        @Override
        public int getTotalAttributeCount() {
            return attributes.size();
        }

        @Override
        @SuppressWarnings("deprecation")
        public io.opentelemetry.sdk.common.InstrumentationLibraryInfo getInstrumentationLibraryInfo() {
            return io.opentelemetry.sdk.common.InstrumentationLibraryInfo.create(SCOPE.getName(), SCOPE.getVersion());
        }

        @Override
        public InstrumentationScopeInfo getInstrumentationScopeInfo() {
            return SCOPE;
        }

        @Override
        public Resource getResource() {
            return resource;
        }
    }
}
