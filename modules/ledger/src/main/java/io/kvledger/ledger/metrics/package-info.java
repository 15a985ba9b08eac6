/**
 * What every kvledger server exports on {@code /metrics} besides its own meters: the process's
 * and the JVM's ({@link io.kvledger.ledger.metrics.RuntimeMetrics}), under the names Prometheus's
 * own clients use, so that stock dashboards and alerts work; and the series of a journal shipper to
 * Kafka ({@link io.kvledger.ledger.metrics.ShipSeries}), one set of names for {@code ship --metrics},
 * a node and a proxy.
 *
 * <p>Depends on micrometer-core and the JDK's management beans only; the node and the proxy bind it
 * to their registries.
 */
package io.kvledger.ledger.metrics;
