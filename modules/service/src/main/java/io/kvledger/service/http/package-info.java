/**
 * The node's HTTP server (Reactor-Netty): {@link io.kvledger.service.http.HttpFront} with the
 * health, status and completion endpoints, and the admin API of {@code AdminRoutes}:
 * {@code /metrics} (from {@link io.kvledger.service.metrics.NodeMetrics}), the request list and
 * timelines, the hang detectors over the node's journal, and the server-sent stream of journal
 * entries, and the web timeline page of {@code io.kvledger.service.web} at {@code /} and
 * {@code /ui/}. docs/http-api.md documents every route.
 *
 * <p>{@link io.kvledger.service.http.HttpHardening} is what every kvledger HTTP server (the node's,
 * the proxy's, {@code serve}'s) does below its routes: header and body timeouts, size limits,
 * 405/404, JSON errors, "address already in use"; its refusals are warnings through
 * {@link io.kvledger.service.http.RateLimitedLog}.
 *
 * <p>Handlers never block a Netty thread or the loop: state reads are {@code Inbox.query} tasks,
 * journal reads run on Reactor's bounded-elastic scheduler, the event stream has its own thread.
 *
 * <p>May depend on the service package and its {@code metrics}, {@code engine}, {@code shadow} and {@code web} packages,
 * kvledger-core (the diagnosis ledger and detectors), kvledger-journal (reader, tailer, JSON),
 * reactor-core, reactor-netty-http and Micrometer.
 */
package io.kvledger.service.http;
