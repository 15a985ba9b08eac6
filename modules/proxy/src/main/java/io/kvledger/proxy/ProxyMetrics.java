package io.kvledger.proxy;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.kvledger.ledger.metrics.RuntimeMetrics;
import io.kvledger.ledger.metrics.ShipSeries;
import io.kvledger.wire.Registration;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The proxy's metrics in Prometheus text ({@code GET /metrics}), named as the node's are
 * (Prometheus's conventions, {@code kvledger_} prefix, see {@code metrics.NodeMetrics}), every
 * series tagged {@code proxy} with the proxy's id and exported from the first scrape:
 * <ul>
 *   <li>{@code kvledger_proxy_requests_total{outcome,status}}: client requests that ended, by
 *       outcome ({@code ok}, {@code rejected} before any leg, {@code failed} after routing,
 *       {@code client_gone}) and HTTP status answered (499 for a client that went away); the
 *       usual pairs (ok 200, rejected 400, failed 502, client_gone 499) from start at 0;</li>
 *   <li>{@code kvledger_proxy_leg_duration_seconds{leg,outcome}} (histogram): from sending a leg
 *       to its answer (a streamed decode: to its last chunk), by leg ({@code prefill},
 *       {@code decode}) and outcome ({@code answered}, {@code failed}, {@code cancelled}), each
 *       pair from start;</li>
 *   <li>{@code kvledger_proxy_instances{role}}: registered instances now, role {@code producer}
 *       (prefill) or {@code consumer} (decode), as the nodes' {@code role} tag;</li>
 *   <li>{@code kvledger_proxy_handoffs_rejected_total{reason}}: prefill handoffs the proxy refused
 *       to relay ({@link Checks#handoff}), by reason ({@code no_params}, {@code transfer_id},
 *       {@code read_incomplete}, {@code bad_field}; each exported from start at 0);</li>
 *   <li>{@code kvledger_proxy_registrations_received_total},
 *       {@code kvledger_proxy_registrations_rejected_total}: registration messages read
 *       (heartbeats included) and rejected (journaled);</li>
 *   <li>the {@code kvledger_ship_*} series of {@link ShipSeries} ({@code backlog_entries},
 *       {@code acknowledged_total}, {@code sent_total}, {@code buffer_full} ...): a journal
 *       shipper's ({@code --ship}, {@link #shipping}), as the node's; 0 without one;</li>
 *   <li>the process's and the JVM's ({@code RuntimeMetrics}).</li>
 * </ul>
 * Thread-safe.
 */
final class ProxyMetrics {

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final Tags tags;
    /** The process and JVM meters (held: Micrometer holds what they read weakly). */
    private final RuntimeMetrics runtime;
    /**
     * Micrometer holds a gauge's or function counter's object weakly: what they read must be
     * held here, or a collection leaves them reading nothing (the registration counters read 0
     * after minutes of heartbeats when the anonymous object given here was held by nobody).
     */
    private final Instances instances;
    private final RegistrationRouterCounts router;
    /** A journal shipper's counters ({@link #shipping}); 0 without one. */
    private volatile ShipSeries.Counters ship = ShipSeries.NONE;

    ProxyMetrics(String proxyId, Instances instances, RegistrationRouterCounts router) {
        this.tags = Tags.of("proxy", proxyId);
        this.instances = instances;
        this.router = router;
        Gauge.builder("kvledger_proxy_instances", instances, i -> i.of(Registration.PRODUCER).size())
                .tags(tags).tag("role", "producer")
                .description("registered prefill (kv_producer) instances").register(registry);
        Gauge.builder("kvledger_proxy_instances", instances, i -> i.of(Registration.CONSUMER).size())
                .tags(tags).tag("role", "consumer")
                .description("registered decode (kv_consumer) instances").register(registry);
        FunctionCounter.builder("kvledger_proxy_registrations_received", router, RegistrationRouterCounts::received)
                .tags(tags).description("registration messages read (heartbeats included)").register(registry);
        FunctionCounter.builder("kvledger_proxy_registrations_rejected", router, RegistrationRouterCounts::rejected)
                .tags(tags).description("registration messages rejected (journaled)").register(registry);
        // present on every scrape from the start, at 0 until a shipper's counters are given (shipping)
        ShipSeries.register(registry, tags, this, m -> m.ship);
        for (String reason : HANDOFF_REASONS) {
            handoffs(reason);
        }
        requests("ok", 200);
        requests("rejected", 400);
        requests("failed", 502);
        requests("client_gone", 499);
        for (String leg : List.of("prefill", "decode")) {
            for (String outcome : List.of("answered", "failed", "cancelled")) {
                legTimer(leg, outcome);
            }
        }
        runtime = new RuntimeMetrics(tags);
        runtime.bindTo(registry);
    }

    /**
     * Gives the meters the counters of a shipper of the proxy's journal ({@code kvledger proxy
     * --ship}), as the node's: the {@link ShipSeries}, read live.
     */
    void shipping(ShipSeries.Counters counters) {
        ship = counters;
    }

    /** The {@code reason}s of {@code kvledger_proxy_handoffs_rejected_total}, exported from start (at 0). */
    static final List<String> HANDOFF_REASONS = List.of("no_params", "transfer_id", "read_incomplete", "bad_field");

    /** The registration socket's counters (so that metrics outlive nothing they read). */
    interface RegistrationRouterCounts {
        double received();

        double rejected();
    }

    /** A client request ended: {@code outcome} is ok, rejected, failed or client_gone. */
    void request(String outcome, int status) {
        requests(outcome, status).increment();
    }

    private Counter requests(String outcome, int status) {
        return Counter.builder("kvledger_proxy_requests").tags(tags).tag("outcome", outcome)
                .tag("status", Integer.toString(status))
                .description("client requests by outcome and HTTP status").register(registry);
    }

    /** A leg ended: {@code outcome} is answered, failed or cancelled. */
    void leg(String leg, String outcome, long elapsedNs) {
        legTimer(leg, outcome).record(elapsedNs, TimeUnit.NANOSECONDS);
    }

    private Timer legTimer(String leg, String outcome) {
        return Timer.builder("kvledger_proxy_leg_duration").tags(tags).tag("leg", leg).tag("outcome", outcome)
                .description("time from sending a leg to its answer (a streamed decode: to its last chunk)")
                .serviceLevelObjectives(ms(5), ms(10), ms(25), ms(50), ms(100), ms(250), ms(500), ms(1000),
                        ms(2500), ms(5000), ms(10_000), ms(30_000), ms(60_000), ms(300_000))
                .register(registry);
    }

    /** The prefill's handoff was refused ({@link Checks#handoff} said {@code problem}). */
    void handoffRejected(String problem) {
        handoffs(handoffReason(problem)).increment();
    }

    private Counter handoffs(String reason) {
        return Counter.builder("kvledger_proxy_handoffs_rejected").tags(tags).tag("reason", reason)
                .description("prefill handoffs the proxy refused to relay, by reason").register(registry);
    }

    /** The reason label of a {@link Checks#handoff} problem (a few fixed words, never the message). */
    static String handoffReason(String problem) {
        if (problem.contains("no kv_transfer_params") || problem.startsWith("kv_transfer_params is not")) {
            return "no_params";
        }
        if (problem.contains("transfer_id")) {
            return "transfer_id";
        }
        if (problem.startsWith("READ needs")) {
            return "read_incomplete";
        }
        return "bad_field";
    }

    private static Duration ms(long n) {
        return Duration.ofMillis(n);
    }

    String scrape() {
        return registry.scrape();
    }
}
