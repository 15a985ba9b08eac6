/**
 * The web timeline page and the JSON it reads, shared by every server that shows it.
 *
 * <ul>
 *   <li>{@link io.kvledger.service.web.WebPage}: the page's assets (HTML, JavaScript, CSS, all in
 *       the jar: nothing is fetched from the network when the page is viewed), mounted on any
 *       Reactor-Netty route table at {@code /} and {@code /ui/}; and the self-contained HTML file
 *       of one request ({@code kvledger inspect --html}).</li>
 *   <li>{@link io.kvledger.service.web.JournalSetApi}: the page's JSON over a set of journals
 *       ({@code kvledger serve}): {@code /v1/requests}, {@code /v1/requests/{id}} (one request
 *       merged across every journal, linked by its transfer ids) and {@code /v1/hangs}, in the
 *       shapes the live node's admin API serves.</li>
 *   <li>{@link io.kvledger.service.web.TimelineJson}: the timeline and findings objects, built from
 *       the replay library's {@code Timeline} and {@code Hangs}.</li>
 *   <li>{@link io.kvledger.service.web.WebServer}: the {@code serve} command's HTTP server.</li>
 * </ul>
 *
 * <p>The page draws its timeline with plain SVG (no charting library): see the module README,
 * "Web timeline".
 *
 * <p>May depend on kvledger-core (configuration, phases, findings), kvledger-journal (replay,
 * JSON), reactor-core and reactor-netty-http. Nothing here depends on a running node: the live
 * node ({@code http.HttpFront}) mounts {@code WebPage} next to its own admin routes, and the proxy
 * ({@code proxy.ProxyWeb}) mounts it with a {@code JournalSetApi} over its journal.
 */
package io.kvledger.service.web;
