/**
 * What every kvledger server exports on {@code /metrics} besides its own meters: the process's
 * and the JVM's ({@link io.kvledger.ledger.metrics.RuntimeMetrics}), under the names Prometheus's
 * own clients use, so that stock dashboards and alerts work.
 *
 * <p>Depends on micrometer-core and the JDK's management beans only; the node and the proxy bind it
 * to their registries.
 */
package io.kvledger.ledger.metrics;
