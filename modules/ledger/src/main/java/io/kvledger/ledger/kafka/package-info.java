/**
 * Kafka as a place for a fleet's journals: {@link io.kvledger.ledger.kafka.KafkaUri} names a topic
 * ({@code kafka://HOST:PORT/TOPIC[?since=10m]}), {@link io.kvledger.ledger.kafka.ShippedEntry} is how
 * one journal entry travels in a record (key: node id; value: the entry's bytes as
 * journal/FORMAT.md defines them; header: its seq), and {@link io.kvledger.ledger.kafka.KafkaSource}
 * reads a topic back into one journal per node, duplicates dropped by (node, seq), so the reading
 * commands take a topic wherever they take a directory, and finds where a shipper resumes from the
 * tails of the partitions ({@link io.kvledger.ledger.kafka.KafkaSource#resumePoints}). {@link io.kvledger.ledger.kafka.KafkaBroker}
 * runs a real single-node broker in a child JVM (tests, {@code kvledger demo --fleet}). The shipper that writes the topic is the
 * live side's ({@code io.kvledger.node.ship}).
 *
 * <p>Depends on {@code io.kvledger.journal} (raw entry bytes), the replay library's
 * {@code JournalInputs} and Apache Kafka's client.
 */
package io.kvledger.ledger.kafka;
