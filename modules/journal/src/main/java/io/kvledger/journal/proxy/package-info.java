/**
 * The proxy's journal vocabulary: {@link io.kvledger.journal.proxy.ProxyEvent} records
 * ({@code kvledger proxy} journals them as entries of kind {@code proxy}, type ids 200-239, under
 * a header whose {@code kv_role} is {@code "proxy"}). Reading them back into one record per client
 * request is the ledger's ({@code io.kvledger.ledger.replay.ProxyLedger}).
 *
 * <p>Proxy events are not {@link io.kvledger.core.event.NodeEvent}s: no reducer consumes them and
 * replay never feeds them to a node. They live here, not in the core, because they are a record of
 * what an HTTP router did, not part of the transfer lifecycle the core models.
 *
 * <p>Depends on {@code io.kvledger.core} (ids, params) and {@code io.kvledger.journal}.
 */
package io.kvledger.journal.proxy;
