/**
 * What every kvledger server exports on {@code /metrics} besides its own meters: the process's
 * and the JVM's ({@link io.kvledger.ledger.metrics.RuntimeMetrics}), under the names Prometheus's
 * own clients use, so that stock dashboards and alerts work; and the series of a journal shipper to
 * Kafka ({@link io.kvledger.ledger.metrics.ShipSeries}), one set of names for {@code ship --metrics},
 * a node and a proxy; and {@link io.kvledger.ledger.metrics.MetricsEndpoint}, the {@code /metrics}
 * endpoint of the processes without an HTTP API of their own ({@code ship}, {@code tap}).
 *
 * <p>Depends on micrometer-core, the JDK's management beans and its HTTP server only; the node and
 * the proxy bind it to their registries.
 */
package io.kvledger.ledger.metrics;
