package io.kvledger.node.ship;

import io.kvledger.ledger.metrics.MetricsEndpoint;
import io.kvledger.ledger.metrics.RuntimeMetrics;
import io.kvledger.ledger.metrics.ShipSeries;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Tags;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.HashMap;
import java.util.Map;

/**
 * A standalone shipper's metrics in Prometheus text ({@code kvledger ship --metrics HOST:PORT},
 * {@code GET /metrics}). All but {@code kvledger_ship_journals} and the per-node ones are the
 * {@link ShipSeries} a node or a proxy that ships its own journal exports ({@code --ship}), without
 * their {@code node} and {@code role} labels, since one {@code ship} follows many journals; all of
 * them but the per-node ones are present from the first scrape at 0:
 * <ul>
 *   <li>{@code kvledger_ship_backlog_entries}: entries handed to the Kafka producer and not
 *       acknowledged yet (held in memory; it grows while the broker is away);</li>
 *   <li>{@code kvledger_ship_acknowledged_total}: entries Kafka acknowledged since start;</li>
 *   <li>{@code kvledger_ship_backlog_bytes}: the bytes of the backlog's entries (the producer's
 *       buffer, {@code --buffer-mb}, holds them in batches of up to 256 KiB per partition, so it can
 *       be full with far fewer bytes: 121 KB of entries filled 1 MiB in {@code KafkaShipTest});</li>
 *   <li>{@code kvledger_ship_sent_total}: entries handed to the producer since start;</li>
 *   <li>{@code kvledger_ship_skipped_total}: entries left out because the topic held them already
 *       (where a restart resumed);</li>
 *   <li>{@code kvledger_ship_buffer_full}: 1 while a send has waited {@value ShipSeries#FULL_AFTER_S} s or
 *       more for room in the producer's buffer (the broker takes nothing: the journals keep what
 *       follows), else 0;</li>
 *   <li>{@code kvledger_ship_journals}: journals followed (given, or found in a watched directory);</li>
 *   <li>{@code kvledger_ship_journals_stopped_total}: journals refused or whose shipping stopped
 *       (a bad recording line, a replaced recording, a journal that is not the topic's), each said
 *       on standard error; any makes the exit status 3;</li>
 *   <li>per followed journal, labelled {@code node} (its node id), from when it is followed:
 *       {@code kvledger_ship_node_backlog_entries}, {@code kvledger_ship_node_acknowledged_total}
 *       and {@code kvledger_ship_node_acknowledged_seq} (the largest seq acknowledged since start,
 *       -1 before the first);</li>
 *   <li>the process's and the JVM's ({@link RuntimeMetrics}).</li>
 * </ul>
 * Served by the JDK's HTTP server on one thread of its own; the counters are read at each scrape,
 * and a journal followed since the last scrape gets its series then.
 */
public final class ShipMetrics implements AutoCloseable {

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    /** Held: Micrometer holds what its meters read weakly. */
    private final Shipper shipper;
    private final Map<Shipper.NodeCounters, Boolean> registered = new HashMap<>();
    private final RuntimeMetrics runtime;
    private final MetricsEndpoint endpoint;

    private ShipMetrics(Shipper shipper, String host, int port) {
        this.shipper = shipper;
        // as the node's and the proxy's (NodeMetrics, ProxyMetrics), over every journal shipped
        ShipSeries.register(registry, Tags.empty(), shipper, s -> s);
        Gauge.builder("kvledger_ship_journals", shipper, s -> s.nodeCounters().size())
                .description("Journals followed (given, or found in a watched directory)").register(registry);
        FunctionCounter.builder("kvledger_ship_journals_stopped", shipper, Shipper::stoppedAtBadLine)
                .description("Journals refused or whose shipping stopped (said on standard error; exit status 3)")
                .register(registry);
        this.runtime = new RuntimeMetrics(Tags.empty());
        runtime.bindTo(registry);
        this.endpoint = MetricsEndpoint.serve("ship's metrics", "ship", host, port, this::scrape);
    }

    /**
     * Serves {@code GET /metrics} for {@code shipper} on {@code host:port} (0: any free port).
     *
     * @throws java.io.UncheckedIOException when the port cannot be bound
     */
    public static ShipMetrics serve(Shipper shipper, String host, int port) {
        return new ShipMetrics(shipper, host, port);
    }

    /** The port {@code /metrics} is served on. */
    public int port() {
        return endpoint.port();
    }

    /** The metrics now, in Prometheus text; a journal followed since the last scrape gets its series first. */
    synchronized String scrape() {
        for (Shipper.NodeCounters c : shipper.nodeCounters()) {
            if (registered.putIfAbsent(c, Boolean.TRUE) == null) {
                Tags tags = Tags.of("node", c.node);
                Gauge.builder("kvledger_ship_node_backlog_entries", c, x -> x.sent.get() - x.acked.get()).tags(tags)
                        .description("The node's journal entries handed to the Kafka producer and not acknowledged yet")
                        .register(registry);
                FunctionCounter.builder("kvledger_ship_node_acknowledged", c, x -> x.acked.get()).tags(tags)
                        .description("The node's journal entries Kafka acknowledged since start").register(registry);
                Gauge.builder("kvledger_ship_node_acknowledged_seq", c, x -> x.ackedSeq.get()).tags(tags)
                        .description("The largest seq of the node's entries Kafka acknowledged since start (-1: none)")
                        .register(registry);
            }
        }
        return registry.scrape();
    }

    @Override
    public void close() {
        endpoint.close();
        registry.close();
    }
}
