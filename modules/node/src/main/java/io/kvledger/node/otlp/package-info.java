/**
 * A live node's requests as OpenTelemetry traces ({@code kvledger node --otlp}):
 * {@link io.kvledger.node.otlp.LiveTraces} follows the loop's applied events off the loop thread
 * with the ledger's {@code TraceRecorder} and sends each finished leg with its {@code OtlpSender}.
 *
 * <p>May depend on the node package (the node service it attaches to), its {@code loop} package
 * (the listener interface), kvledger-ledger's {@code otlp} package and the OpenTelemetry SDK;
 * nothing in the node depends on it.
 */
package io.kvledger.node.otlp;
