/**
 * The live node's metrics: {@link io.kvledger.node.metrics.NodeMetrics}, a loop listener that
 * keeps Micrometer meters (exported in the Prometheus text format, transfer metrics named after
 * vLLM's {@code vllm:nixl_*}) and the per-request times the admin API reports.
 *
 * <p>May depend on kvledger-core, the node package (the node, its loop, inbox and data plane),
 * its {@code shadow} package (a shadow node's counts) and Micrometer; the HTTP package depends on it, not the other way round.
 */
package io.kvledger.node.metrics;
