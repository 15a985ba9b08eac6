/**
 * The node's HTTP server (Reactor-Netty): {@link io.kvledger.node.http.HttpFront} with the
 * health, status and completion endpoints, and the admin API of {@code AdminRoutes}:
 * {@code /metrics} (from {@link io.kvledger.node.metrics.NodeMetrics}), the request list and
 * timelines, the hang detectors over the node's journal, the server-sent stream of journal
 * entries (the ledger's {@link io.kvledger.ledger.web.EventStream}), and the
 * web timeline page of {@code io.kvledger.ledger.web} at {@code /} and {@code /ui/}.
 * docs/http-api.md documents every route. Below the routes it uses the ledger's
 * {@link io.kvledger.ledger.web.HttpHardening}, as every kvledger HTTP server does.
 *
 * <p>It serves from {@link io.kvledger.node.http.HttpFront.Sources} (the node's identity, loop,
 * inbox, clock, data plane, engine and shadow monitor), not from the node service: {@code /v1/status}
 * is the loop's {@link io.kvledger.node.loop.NodeStatus} snapshot.
 *
 * <p>Handlers never block a Netty thread or the loop: state reads are {@code Inbox.query} tasks,
 * journal reads run on Reactor's bounded-elastic scheduler, the event stream has its own thread.
 *
 * <p>May depend on the node's {@code loop}, {@code data}, {@code metrics}, {@code engine} and {@code shadow} packages
 * (not on the node package, which starts it),
 * kvledger-ledger (the diagnosis ledger and detectors, replay, the web page and its JSON),
 * kvledger-core, kvledger-journal (reader, tailer, JSON),
 * reactor-core, reactor-netty-http and Micrometer.
 */
package io.kvledger.node.http;
