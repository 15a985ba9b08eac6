/**
 * Journal shipping: {@link io.kvledger.node.ship.Shipper} follows local journals and appends every
 * entry, as its bytes, to a Kafka topic keyed by node id ({@code kvledger ship}), and the vLLM
 * recorder's JSON lines as the entries {@code journal import} makes of them; the reading side
 * is the ledger's {@code io.kvledger.ledger.kafka}. It reads journals apart from their writers and
 * never touches a node loop. {@link io.kvledger.node.ship.ShipMetrics} serves a standalone
 * shipper's counters to Prometheus ({@code kvledger ship --metrics}).
 *
 * <p>Depends on kvledger-journal, the ledger's Kafka and replay packages and Apache Kafka's client.
 */
package io.kvledger.node.ship;
