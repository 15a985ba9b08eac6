/**
 * The proxy's journal vocabulary and its reading: {@link io.kvledger.journal.proxy.ProxyEvent}
 * records ({@code kvledger proxy} journals them as entries of kind {@code proxy}, type ids
 * 200-239, under a header whose {@code kv_role} is {@code "proxy"}), and
 * {@link io.kvledger.journal.proxy.ProxyLedger}, which folds a proxy journal into one record per
 * client request (both legs, their ids, status and timing) for {@code inspect} and {@code hangs}.
 *
 * <p>Proxy events are not {@link io.kvledger.core.event.NodeEvent}s: no reducer consumes them and
 * replay never feeds them to a node. They live here, not in the core, because they are a record of
 * what an HTTP router did, not part of the transfer lifecycle the core models.
 *
 * <p>Depends on {@code io.kvledger.core} (ids, findings, params) and {@code io.kvledger.journal}.
 */
package io.kvledger.journal.proxy;
