package io.kvledger.tap;

import io.kvledger.ledger.metrics.MetricsEndpoint;
import io.kvledger.ledger.metrics.RuntimeMetrics;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Tags;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.List;
import java.util.function.ToLongFunction;

/**
 * The tap's metrics in Prometheus text ({@code kvledger tap --metrics-port N}, {@code GET /metrics}),
 * named as the node's and the proxy's are (the {@code kvledger_} prefix, unit suffixes,
 * {@code _total} counters), each per tapped rank ({@code target} as reports name it,
 * {@code P 10.0.0.1:61005}, and {@code role}) and present from the first scrape at 0:
 * <ul>
 *   <li>{@code kvledger_tap_frames_journaled_total}: frames journaled, rejected ones included;</li>
 *   <li>{@code kvledger_tap_frames_rejected_total}: frames that did not decode (journaled as
 *       {@code FrameRejected}, forwarded all the same);</li>
 *   <li>{@code kvledger_tap_frames_lost_total}: frames the journal refused even as a rejection;</li>
 *   <li>{@code kvledger_tap_frames_forwarded_total}: messages forwarded to the rank's real port;</li>
 *   <li>{@code kvledger_tap_forward_failures_total}: frames that could not be forwarded;</li>
 *   <li>{@code kvledger_tap_journal_queue_entries}: frames waiting for the journal writer (over all
 *       ranks);</li>
 *   <li>the process's and the JVM's ({@link RuntimeMetrics}).</li>
 * </ul>
 * MoRIIO's notify path has no counters of its own in vLLM, so no HELP names a vLLM counterpart.
 * Served by the JDK's HTTP server on one thread of its own; the counters are read at each scrape.
 */
public final class TapMetrics implements AutoCloseable {

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    /** Held: Micrometer holds what its meters read weakly. */
    private final Tap tap;
    private final RuntimeMetrics runtime;
    private final MetricsEndpoint endpoint;

    private TapMetrics(Tap tap, String host, int port) {
        this.tap = tap;
        List<TapTarget> targets = tap.config().targets();
        for (int i = 0; i < targets.size(); i++) {
            TapTarget t = targets.get(i);
            Tags tags = Tags.of("target", t.label(), "role", t.role().name().toLowerCase(java.util.Locale.ROOT));
            int index = i;
            counter("kvledger_tap_frames_journaled", "Notify frames journaled (rejected ones included)", tags,
                    x -> x.tallies().get(index).frames);
            counter("kvledger_tap_frames_rejected", "Notify frames that did not decode (journaled as FrameRejected, "
                    + "forwarded all the same)", tags, x -> x.tallies().get(index).rejected);
            counter("kvledger_tap_frames_lost", "Notify frames the journal refused even as a rejection", tags,
                    x -> x.tallies().get(index).lost);
            counter("kvledger_tap_frames_forwarded", "Messages forwarded to the rank's real notify port", tags,
                    x -> x.forwarded(index));
            counter("kvledger_tap_forward_failures", "Notify frames that could not be forwarded to the rank", tags,
                    x -> x.tallies().get(index).forwardFailed);
        }
        Gauge.builder("kvledger_tap_journal_queue_entries", tap, Tap::queued)
                .description("Frames waiting for the journal writer").register(registry);
        this.runtime = new RuntimeMetrics(Tags.empty());
        runtime.bindTo(registry);
        this.endpoint = MetricsEndpoint.serve("the tap's metrics", "tap", host, port, this::scrape);
    }

    private void counter(String name, String help, Tags tags, ToLongFunction<Tap> f) {
        FunctionCounter.builder(name, tap, x -> f.applyAsLong(x)).description(help).tags(tags).register(registry);
    }

    /**
     * Serves {@code GET /metrics} for {@code tap} on {@code host:port} (0: any free port).
     *
     * @throws java.io.UncheckedIOException when the port cannot be bound
     */
    public static TapMetrics serve(Tap tap, String host, int port) {
        return new TapMetrics(tap, host, port);
    }

    /** The port {@code /metrics} is served on. */
    public int port() {
        return endpoint.port();
    }

    /** The metrics now, in Prometheus text. */
    public String scrape() {
        return registry.scrape();
    }

    @Override
    public void close() {
        endpoint.close();
        registry.close();
    }
}
