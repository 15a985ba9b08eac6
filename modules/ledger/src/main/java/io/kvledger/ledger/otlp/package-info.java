/**
 * Request lifecycles as OpenTelemetry traces, sent to any OTLP/HTTP receiver (Jaeger, Tempo, an
 * OpenTelemetry Collector) so that kvledger's view of a request lands next to vLLM's own
 * {@code llm_request} span.
 * <ul>
 *   <li>{@link io.kvledger.ledger.otlp.TraceRecorder} follows each request on each node (its
 *       phases, the frames, decisions and anomalies that name it) from applied events and their
 *       effects;</li>
 *   <li>{@link io.kvledger.ledger.otlp.LegSpans} turns one such leg into spans with deterministic
 *       ids (trace id from the transfer id, so both legs of a request join; each leg a child of the
 *       request's one root span, whose id hashes the transfer id too: the proxy's, or a synthetic
 *       one that exactly one node sends live, {@code sendsRoot}, and {@code export} again);</li>
 *   <li>{@link io.kvledger.ledger.otlp.JournalTraces} builds every leg of a set of journals with
 *       the hang findings as statuses, and each request's root span (the proxy's, from its
 *       journal, or a synthetic one) ({@code kvledger export}); the node's {@code LiveTraces}
 *       does it on a live node, off the loop thread ({@code kvledger node --otlp});</li>
 *   <li>{@link io.kvledger.ledger.otlp.OtlpSender} sends spans with the SDK's OTLP/HTTP exporter;
 *       {@link io.kvledger.ledger.otlp.SpanBatches} batches them and
 *       {@link io.kvledger.ledger.otlp.ExportLoop} is the one exporter thread of a live exporter
 *       (the node's {@code LiveTraces}, the proxy's {@code ProxyTraces}).</li>
 * </ul>
 *
 * <p>Attributes of kvledger's own are under {@code kvledger.*}; the others follow the semantic
 * conventions of {@link io.kvledger.ledger.otlp.LegSpans#SCHEMA_URL}, set on every resource and
 * the scope with {@code service.version}.
 *
 * <p>May depend on kvledger-core, the journal's format package, the ledger's {@code diagnosis} and
 * {@code replay} packages and the OpenTelemetry SDK (trace data, OTLP exporter with the JDK HTTP
 * sender). The node, the proxy and the CLI depend on it.
 */
package io.kvledger.ledger.otlp;
