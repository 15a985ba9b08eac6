/**
 * The live node: kvledger running as the control plane beside one engine rank.
 *
 * <p>{@link io.kvledger.service.NodeService} assembles one node: the journal (recovered with
 * {@link io.kvledger.service.Recovery} when it exists), the single
 * {@link io.kvledger.service.NodeLoop} thread that owns the {@code NodeState} and drains the one
 * bounded {@link io.kvledger.service.Inbox} (its journaller thread appends what the loop applied;
 * effects leave only once journaled), the adapters that feed it (notify listener,
 * handshake results, transfer completions, send failures, the engine's hook calls) and the
 * publishers its effects drive (notify publisher, handshake initiator, transfer engine).
 * Deadlines the reducer holds come back as journaled {@code Tick}s from the loop's own timed
 * wait, so a node with nothing due sleeps.
 *
 * <p>Sub-packages: {@code data} (the KV region, transfer engine and handshake binding),
 * {@code engine} (the built-in simulated engine and the hook port), {@code http} (the
 * Reactor-Netty server: health, status, completions and the admin API), {@code web} (the web
 * timeline page, the JSON it reads over a set of journals, and {@code kvledger serve}'s server;
 * the node's server mounts the page), {@code metrics} (the
 * Micrometer registry fed by a loop listener), {@code otlp} (request lifecycles as OpenTelemetry
 * traces, from journals or off a live loop), {@code cluster} (the toy proxy's routing and the
 * legs a router sends requests to, for {@code kvledger cluster} and tests), {@code shadow} (a
 * node that observes a real connector through the vLLM bridge's recorder stream), {@code proxy}
 * ({@code kvledger proxy}: the MoRIIO-compatible router in front of engines, with its own journal). The engine bridge's
 * socket is the zmq module's {@code EngineBridgeServer}; {@link io.kvledger.service.NodeService}
 * turns its calls into hook calls on the inbox.
 *
 * <p>May depend on every other kvledger module but the CLI, on reactor-core, reactor-netty-http,
 * Micrometer and (in {@code otlp} only) the OpenTelemetry SDK and OTLP exporter. The CLI depends on it, not the other way round.
 */
package io.kvledger.service;
