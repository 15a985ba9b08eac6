/**
 * {@code kvledger proxy}: a drop-in replacement for vLLM's MoRIIO toy proxy that a careful router
 * would accept, and that journals both legs of every request.
 *
 * <ul>
 *   <li>{@link io.kvledger.proxy.RegistrationRouter}: the registration socket (a JeroMQ
 *       ROUTER on the proxy ping port) that reads the workers' msgpack registrations and
 *       heartbeats (protocol 3.1) into {@link io.kvledger.proxy.Instances}, which expires
 *       an instance whose heartbeats stop (the toy proxy never does);</li>
 *   <li>{@link io.kvledger.proxy.ProxyServer}: the Reactor-Netty HTTP server and client:
 *       {@code POST /v1/completions} and {@code /v1/chat/completions} routed over a prefill and a
 *       decode leg exactly as the toy proxy composes them (ids, params, READ serial, WRITE
 *       concurrent), with the checks of vllm-integration.md section 6
 *       ({@link io.kvledger.proxy.Checks}), {@code GET /v1/models} gathered from the instances,
 *       OpenAI's error body on every error, {@code /health} and {@code /metrics};</li>
 *   <li>{@link io.kvledger.proxy.ProxyJournal}: the proxy's own journal (a kvledger journal
 *       whose header's {@code kv_role} is {@code proxy}; records
 *       {@link io.kvledger.journal.proxy.ProxyEvent}), appended by one writer thread;</li>
 *   <li>{@link io.kvledger.proxy.ProxyWeb}: the web timeline page on the proxy's server,
 *       over its journal and the {@code --serve-journals} directories, live through
 *       {@code /v1/events};</li>
 *   <li>{@link io.kvledger.proxy.ProxyMetrics}: {@code /metrics}, named as the node's
 *       ({@code kvledger_proxy_*});</li>
 *   <li>{@link io.kvledger.proxy.ProxyTraces}: with {@code --otlp}, a span per request
 *       (the client's leg, the two engine legs as children) in the trace the nodes' spans of the
 *       request are in.</li>
 * </ul>
 *
 * <p>Request ids and the legs' {@code kv_transfer_params} come from
 * {@link io.kvledger.core.moriio.RequestIds} and {@link io.kvledger.core.model.ToyProxyParams}, as
 * for the {@code cluster} command's in-process router and the simulator. Nothing here blocks a Netty thread: the
 * registration socket has its own thread, the journal its own writer thread.
 *
 * <p>Depends on core, wire (registration codec), journal (and its service clock), kvledger-ledger
 * (the web page, its JSON and event stream, the HTTP hardening, trace ids and the OTLP sender),
 * JeroMQ, Reactor Netty, Micrometer and the OpenTelemetry SDK; not on the node. The CLI depends
 * on it.
 */
package io.kvledger.proxy;
