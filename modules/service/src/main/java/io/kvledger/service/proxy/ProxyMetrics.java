package io.kvledger.service.proxy;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.concurrent.TimeUnit;

/**
 * The proxy's metrics in Prometheus text ({@code GET /metrics}): requests by outcome, each leg's
 * latency by outcome, registered instances by role, rejected registrations. Thread-safe.
 */
final class ProxyMetrics {

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);

    ProxyMetrics(Instances instances, RegistrationRouterCounts router) {
        Gauge.builder("kvledger_proxy_instances", instances, i -> i.of("P").size()).tag("role", "P")
                .description("registered prefill (kv_producer) instances").register(registry);
        Gauge.builder("kvledger_proxy_instances", instances, i -> i.of("D").size()).tag("role", "D")
                .description("registered decode (kv_consumer) instances").register(registry);
        Gauge.builder("kvledger_proxy_registrations_received", router, RegistrationRouterCounts::received)
                .description("registration messages read (heartbeats included)").register(registry);
        Gauge.builder("kvledger_proxy_registrations_rejected", router, RegistrationRouterCounts::rejected)
                .description("registration messages rejected (journaled)").register(registry);
    }

    /** The registration socket's counters (so that metrics outlive nothing they read). */
    interface RegistrationRouterCounts {
        double received();

        double rejected();
    }

    /** A client request ended: {@code outcome} is ok, rejected, failed or client_gone. */
    void request(String outcome, int status) {
        Counter.builder("kvledger_proxy_requests").tag("outcome", outcome).tag("status", Integer.toString(status))
                .description("client requests by outcome and HTTP status").register(registry).increment();
    }

    /** A leg ended: {@code outcome} is answered, failed or cancelled. */
    void leg(String leg, String outcome, long elapsedNs) {
        Timer.builder("kvledger_proxy_leg").tag("leg", leg).tag("outcome", outcome)
                .description("time from sending a leg to its answer (a streamed decode: to its last chunk)")
                .publishPercentiles(0.5, 0.99).register(registry).record(elapsedNs, TimeUnit.NANOSECONDS);
    }

    String scrape() {
        return registry.scrape();
    }
}
