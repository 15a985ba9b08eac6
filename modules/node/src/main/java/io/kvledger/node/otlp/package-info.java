/**
 * A live node's requests as OpenTelemetry traces ({@code kvledger node --otlp}):
 * {@link io.kvledger.node.otlp.LiveTraces} follows the loop's applied events off the loop thread
 * with the ledger's {@code TraceRecorder} and sends each finished leg with its {@code OtlpSender}.
 *
 * <p>May depend on the node package (the loop's listener interface, the node service),
 * kvledger-ledger's {@code otlp} package and the OpenTelemetry SDK.
 */
package io.kvledger.node.otlp;
