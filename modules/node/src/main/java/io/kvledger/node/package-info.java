/**
 * The live node: kvledger running as the control plane beside one engine rank.
 *
 * <p>{@link io.kvledger.node.NodeService} assembles one node: the journal (recovered with
 * {@link io.kvledger.node.Recovery} when it exists), the single
 * {@link io.kvledger.node.loop.NodeLoop} thread that owns the {@code NodeState} and drains the one
 * bounded {@link io.kvledger.node.loop.Inbox} (its journaller thread appends what the loop applied;
 * effects leave only once journaled), the adapters that feed it (notify listener,
 * handshake results, transfer completions, send failures, the engine's hook calls) and the
 * publishers its effects drive (notify publisher, handshake initiator, transfer engine).
 * Deadlines the reducer holds come back as journaled {@code Tick}s from the loop's own timed
 * wait, so a node with nothing due sleeps.
 *
 * <p>Sub-packages: {@code loop} (the loop, its inbox and journaller, the router interface and
 * the status snapshot the loop publishes; the bottom of the module), {@code data} (the KV region,
 * transfer engine and handshake binding),
 * {@code engine} (the built-in simulated engine and the hook port), {@code http} (the
 * Reactor-Netty server: health, status, completions, the admin API and the event stream; it
 * mounts the ledger's web timeline page; it reads the loop's status snapshot, never this
 * package), {@code metrics} (the Micrometer registry fed by a loop listener and the status snapshot), {@code otlp} (request lifecycles as OpenTelemetry traces off the live loop),
 * {@code cluster} (the toy proxy's routing and the legs a router sends requests to, and the
 * node processes of {@code kvledger cluster}), {@code demo} (the deployment of {@code demo --live}), {@code shadow} (a node that observes a real connector
 * through the vLLM bridge's recorder stream), {@code sim} (a simulation journaled, one journal
 * per simulated node). The engine bridge's
 * socket is the zmq module's {@code EngineBridgeServer}; {@link io.kvledger.node.NodeService}
 * turns its calls into hook calls on the inbox.
 *
 * <p>May depend on kvledger-core, -wire, -journal, -ledger, -zmq, -rdma and -sim, on reactor-core,
 * reactor-netty-http, Micrometer and (in {@code otlp} only) the OpenTelemetry SDK and OTLP
 * exporter. The proxy, the CLI and the benchmarks depend on it, not the other way round. No two
 * of its packages import each other in a circle ({@code PackageCycleTest}).
 */
package io.kvledger.node;
