/**
 * The web timeline page and the JSON it reads, shared by every server that shows it.
 *
 * <ul>
 *   <li>{@link io.kvledger.ledger.web.WebPage}: the page's assets (HTML, JavaScript, CSS, all in
 *       the jar: nothing is fetched from the network when the page is viewed), mounted on any
 *       Reactor-Netty route table at {@code /} and {@code /ui/}; and the self-contained HTML file
 *       of one request ({@code kvledger inspect --html}).</li>
 *   <li>{@link io.kvledger.ledger.web.JournalSetApi}: the page's JSON over a set of journals
 *       ({@code kvledger serve}): {@code /v1/requests}, {@code /v1/requests/{id}} (one request
 *       merged across every journal, linked by its transfer ids) and {@code /v1/hangs}, in the
 *       shapes the live node's admin API serves.</li>
 *   <li>{@link io.kvledger.ledger.web.TimelineJson}: the timeline and findings objects, built from
 *       the replay library's {@code Timeline} and {@code Hangs}.</li>
 *   <li>{@link io.kvledger.ledger.web.WebServer}: the {@code serve} command's HTTP server;</li>
 *   <li>{@link io.kvledger.ledger.web.EventStream}: the server-sent stream of a journal's entries
 *       as they are appended ({@code /v1/events} on the node, the proxy and {@code serve --follow});</li>
 *   <li>{@link io.kvledger.ledger.web.HttpHardening}: what every kvledger HTTP server (the
 *       node's, the proxy's, {@code serve}'s) does below its routes: header and body timeouts,
 *       size limits, 405/404, JSON errors, "address already in use"; its refusals are warnings
 *       through {@link io.kvledger.ledger.web.RateLimitedLog}.</li>
 * </ul>
 *
 * <p>The page draws its timeline with plain SVG (no charting library): see docs/observability.md,
 * "Web timeline".
 *
 * <p>May depend on kvledger-core (configuration, phases), the ledger's {@code diagnosis} and
 * {@code replay} packages, kvledger-journal (JSON), reactor-core, reactor-netty-http and JeroMQ's
 * exception type. Nothing here depends on a running node: the live node
 * ({@code io.kvledger.node.http.HttpFront}) mounts {@code WebPage} next to its own admin routes,
 * and the proxy ({@code io.kvledger.proxy.ProxyWeb}) mounts it with a {@code JournalSetApi} over
 * its journal.
 */
package io.kvledger.ledger.web;
