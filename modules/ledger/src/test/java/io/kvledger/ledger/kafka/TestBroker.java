package io.kvledger.ledger.kafka;

import java.nio.file.Path;

/**
 * The tests' real single-node Apache Kafka (KRaft): a {@link KafkaBroker} whose child JVM runs on
 * the test's own classpath (Kafka's broker artifacts are test dependencies of the modules whose
 * tests start one). {@link #stop} and {@link #restart} keep the ports and the data.
 */
public final class TestBroker implements AutoCloseable {

    private final KafkaBroker broker;

    private TestBroker(KafkaBroker broker) {
        this.broker = broker;
    }

    /** Starts a broker whose data and log live under {@code dir}. */
    public static TestBroker start(Path dir) {
        return new TestBroker(KafkaBroker.start(dir, System.getProperty("java.class.path")));
    }

    /** {@code 127.0.0.1:PORT}. */
    public String bootstrap() {
        return broker.bootstrap();
    }

    /** {@code kafka://127.0.0.1:PORT/TOPIC}. */
    public String uri(String topic) {
        return broker.uri(topic);
    }

    /** Creates a topic of {@code partitions} partitions (replication 1). */
    public void createTopic(String topic, int partitions) {
        broker.createTopic(topic, partitions);
    }

    /** Stops the broker cleanly (SIGTERM), keeping its data. */
    public void stop() {
        broker.stop();
    }

    /** Starts the stopped broker again, on the same ports with the same data. */
    public void restart() {
        broker.restart();
    }

    @Override
    public void close() {
        broker.close();
    }

    /** The last lines of the broker's log, for a failure message. */
    public String logTail() {
        return broker.logTail();
    }
}
