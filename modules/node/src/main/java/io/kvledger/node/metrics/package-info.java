/**
 * The live node's metrics: {@link io.kvledger.node.metrics.NodeMetrics}, a loop listener that
 * keeps Micrometer meters (exported in the Prometheus text format, transfer metrics named after
 * vLLM's {@code vllm:nixl_*}) and the per-request times the admin API reports.
 *
 * <p>Its meters read the loop's {@link io.kvledger.node.loop.NodeStatus} snapshot (and the inbox's
 * depth, live, so a stalled loop shows).
 *
 * <p>May depend on kvledger-core, the node's {@code loop} and {@code data} packages and Micrometer;
 * the HTTP package depends on it, not the other way round.
 */
package io.kvledger.node.metrics;
