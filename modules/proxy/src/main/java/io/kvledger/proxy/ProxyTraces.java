package io.kvledger.proxy;

import io.kvledger.journal.proxy.ProxyEvent;
import io.kvledger.ledger.replay.Timeline;
import io.kvledger.ledger.otlp.ExportLoop;
import io.kvledger.ledger.otlp.LegSpans;
import io.kvledger.ledger.otlp.OtlpSender;
import io.kvledger.ledger.otlp.SpanBatches;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.common.AttributesBuilder;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.data.StatusData;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * {@code kvledger proxy --otlp URL}: a span per routed request, built from the proxy's own records
 * ({@link ProxyEvent}, the ones it journals) and sent over OTLP/HTTP.
 *
 * <ul>
 *   <li>{@code kvledger.proxy} (kind SERVER): the client's leg, from routing to the client's
 *       answer, with the request and transfer ids, the route, the mode, the chosen instances and
 *       the status answered (ERROR when 5xx);</li>
 *   <li>{@code kvledger.proxy.prefill} and {@code kvledger.proxy.decode} (kind CLIENT), its
 *       children: each engine leg from sending it to its answer, failure or cancellation, with the
 *       instance, the status and finish reason (ERROR when it failed).</li>
 * </ul>
 * The trace id is the nodes' ({@link LegSpans#traceId} of the transfer id the proxy minted), so the
 * proxy's spans land in the trace the nodes' {@code kvledger.prefill}/{@code kvledger.decode} leg
 * spans of the same request are in; span ids hash the transfer id, the proxy's id, the request id
 * and 0 (the request), 1 (prefill) or 2 (decode). With {@code --otlp} the proxy puts a W3C
 * {@code traceparent} naming its request span ({@link LegSpans#rootTraceparent}) in both legs'
 * {@code kv_transfer_params}, which tells the nodes that the root is sent (they send a synthetic
 * one otherwise: {@link LegSpans#sendsRoot}).
 *
 * <p>Never blocks a Netty thread or the registration thread: {@link #accept} only offers the record
 * to a bounded queue (a full queue drops it and counts it); the exporter thread ({@link ExportLoop},
 * {@code kvledger-proxy-otlp}) follows the requests, and sends a batch once a second (or at
 * {@value OtlpSender#BATCH} spans). A request still open at {@link #close} is sent as it is, marked
 * {@code kvledger.in_flight}.
 */
final class ProxyTraces implements Consumer<ProxyEvent>, AutoCloseable {

    private static final io.kvledger.ledger.web.RateLimitedLog WARNINGS =
            io.kvledger.ledger.web.RateLimitedLog.warnings();
    private static final int CAPACITY = 1 << 16;
    private static final int MAX_OPEN = 100_000;
    private static final long FLUSH_NS = TimeUnit.SECONDS.toNanos(1);

    private final String proxyId;
    private final SpanBatches batches;
    private final Resource resource;
    private final ExportLoop<ProxyEvent> loop;

    // exporter thread only
    private final Map<String, Flight> open = new LinkedHashMap<>();

    /** One request as its records tell it. */
    private static final class Flight {
        ProxyEvent.RequestRouted routed;
        final Map<String, ProxyEvent.LegSent> sent = new LinkedHashMap<>();
        final Map<String, ProxyEvent> ended = new LinkedHashMap<>();
    }

    private ProxyTraces(String proxyId, OtlpSender sender, LongSupplier clock) {
        this.proxyId = proxyId;
        this.batches = new SpanBatches(sender, clock, Duration.ofNanos(FLUSH_NS));
        this.resource = LegSpans.resource(proxyId, "proxy");
        this.loop = new ExportLoop<>("kvledger-proxy-otlp", CAPACITY, batches, new ExportLoop.Body<>() {
            @Override
            public void apply(ProxyEvent e) {
                ProxyTraces.this.apply(e);
            }

            @Override
            public void finish() {
                long now = clock.getAsLong();
                for (Flight f : List.copyOf(open.values())) {
                    export(f, null, now);
                }
                open.clear();
            }
        }, "otlp: the proxy's exporter falls behind; records are dropped from traces",
                m -> WARNINGS.warn("otlp exporter", m));
    }

    /** Starts the exporter thread. */
    static ProxyTraces start(String proxyId, OtlpSender sender, LongSupplier clock) {
        ProxyTraces t = new ProxyTraces(proxyId, sender, clock);
        t.loop.start();
        return t;
    }

    @Override
    public void accept(ProxyEvent e) {
        if (ProxyEvent.requestIdOf(e) == null || loop.closing()) {
            return; // registrations and rejected requests are no request's trace
        }
        loop.offer(e);
    }

    long exportedSpans() {
        return batches.exported();
    }

    long failedSpans() {
        return batches.failed();
    }

    long dropped() {
        return loop.dropped();
    }

    private void apply(ProxyEvent e) {
        String rid = ProxyEvent.requestIdOf(e);
        switch (e) {
            case ProxyEvent.RequestRouted r -> {
                if (open.size() >= MAX_OPEN) {
                    loop.countDropped();
                    return;
                }
                Flight f = new Flight();
                f.routed = r;
                open.put(rid, f);
            }
            case ProxyEvent.LegSent s -> with(rid, f -> f.sent.put(s.leg(), s));
            case ProxyEvent.LegAnswered a -> with(rid, f -> f.ended.putIfAbsent(a.leg(), a));
            case ProxyEvent.LegFailed x -> with(rid, f -> f.ended.putIfAbsent(x.leg(), x));
            case ProxyEvent.LegCancelled c -> with(rid, f -> f.ended.putIfAbsent(c.leg(), c));
            case ProxyEvent.RequestCompleted c -> {
                Flight f = open.remove(rid);
                if (f != null) {
                    export(f, c, c.atNs());
                }
            }
            case ProxyEvent.ProxyStarted x -> { }
            case ProxyEvent.InstanceRegistered x -> { }
            case ProxyEvent.InstanceExpired x -> { }
            case ProxyEvent.RegistrationRejected x -> { }
            case ProxyEvent.RequestRejected x -> { }
            case ProxyEvent.RecordsDropped x -> { }
        }
    }

    private void with(String rid, Consumer<Flight> f) {
        Flight fl = open.get(rid);
        if (fl != null) {
            f.accept(fl);
        }
    }

    /** The request's spans; {@code done} null for a request still open at {@code endNs}. */
    private void export(Flight f, ProxyEvent.RequestCompleted done, long endNs) {
        ProxyEvent.RequestRouted r = f.routed;
        String key = r.transferId() != null ? r.transferId() : r.requestId();
        // the id the nodes' leg spans name as their parent: one root per request
        SpanContext root = LegSpans.root(key);
        AttributesBuilder a = Attributes.builder()
                .put("kvledger.request_id", r.requestId())
                .put("kvledger.node", proxyId)
                .put("kvledger.trace_key", key)
                .put("kvledger.mode", r.mode())
                .put("kvledger.stream", r.stream())
                .put("http.route", r.api())
                .put("kvledger.in_flight", done == null);
        if (r.transferId() != null) {
            a.put("kvledger.transfer_id", r.transferId());
        }
        String uuid = Timeline.uuidOf(r.requestId());
        if (uuid != null) {
            a.put("kvledger.proxy_uuid", uuid);
        }
        if (r.clientRequestId() != null) {
            a.put("kvledger.client_request_id", r.clientRequestId());
        }
        a.put("kvledger.prefill_instance", r.prefill());
        a.put("kvledger.decode_instance", r.decode());
        StatusData status = StatusData.unset();
        if (done != null) {
            a.put("http.response.status_code", (long) done.httpStatus());
            if (done.httpStatus() >= 500) {
                status = StatusData.create(StatusCode.ERROR, "answered " + done.httpStatus());
            } else if (done.httpStatus() == 499) {
                a.put("kvledger.client_gone", true);
            }
        }
        List<SpanData> spans = new ArrayList<>();
        spans.add(LegSpans.span("kvledger.proxy", SpanKind.SERVER, root, SpanContext.getInvalid(), status,
                r.atNs(), Math.max(r.atNs(), endNs), a.build(), List.of(), resource));
        int index = 1;
        for (String leg : List.of(ProxyEvent.PREFILL, ProxyEvent.DECODE)) {
            ProxyEvent.LegSent s = f.sent.get(leg);
            int i = index++;
            if (s == null) {
                continue;
            }
            ProxyEvent e = f.ended.get(leg);
            // Only a leg's three endings are kept in f.ended; a leg still open ends at endNs.
            SpanData span;
            if (e instanceof ProxyEvent.LegAnswered x) {
                span = LegSpans.proxyLeg(key, proxyId, r.requestId(), leg, i, s.instance(),
                        s.atNs(), "answered", x.httpStatus(), x.atNs(), x.finishReason(), null, resource);
            } else if (e instanceof ProxyEvent.LegFailed x) {
                span = LegSpans.proxyLeg(key, proxyId, r.requestId(), leg, i, s.instance(),
                        s.atNs(), "failed", x.httpStatus(), x.atNs(), null, x.reason(), resource);
            } else if (e instanceof ProxyEvent.LegCancelled x) {
                span = LegSpans.proxyLeg(key, proxyId, r.requestId(), leg, i, s.instance(),
                        s.atNs(), "cancelled", null, x.atNs(), null, x.reason(), resource);
            } else {
                span = LegSpans.proxyLeg(key, proxyId, r.requestId(), leg, i, s.instance(), s.atNs(),
                        null, null, endNs, null, null, resource);
            }
            spans.add(span);
        }
        batches.add(spans);
    }

    /** Sends what is left (the records queued, the requests still open) and stops. */
    @Override
    public void close() {
        loop.close();
    }
}
