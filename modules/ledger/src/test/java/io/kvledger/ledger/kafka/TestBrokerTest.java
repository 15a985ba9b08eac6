package io.kvledger.ledger.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The test broker is a real Kafka: what it acknowledged is read back, also after a restart. */
class TestBrokerTest {

    @TempDir
    Path tmp;

    @Test
    void acknowledgedRecordsSurviveARestart() throws Exception {
        try (TestBroker broker = TestBroker.start(tmp.resolve("broker"))) {
            broker.createTopic("t", 1);
            Properties p = new Properties();
            p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
            p.put(ProducerConfig.ACKS_CONFIG, "all");
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
                for (int i = 0; i < 3; i++) {
                    producer.send(new ProducerRecord<>("t", bytes("k"), bytes("v" + i))).get();
                }
            }
            assertThat(readAll(broker, 3)).containsExactly("v0", "v1", "v2");
            broker.restart();
            assertThat(readAll(broker, 3)).containsExactly("v0", "v1", "v2");
        }
    }

    @Test
    void aBrokerThatCannotStartSaysWhyWithItsLog() throws Exception {
        Path dir = tmp.resolve("bad");
        java.nio.file.Files.createDirectories(dir);
        java.nio.file.Files.writeString(dir.resolve("data"), "a file where the broker's log directory should be");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> TestBroker.start(dir))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("exited")
                .hasMessageContaining("--- last lines of");
        assertThat(java.nio.file.Files.readString(dir.resolve("broker.log"))).isNotBlank();
    }

    private static List<String> readAll(TestBroker broker, int expected) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        List<String> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            TopicPartition tp = new TopicPartition("t", 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            for (int polls = 0; polls < 600 && out.size() < expected; polls++) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(100))) {
                    out.add(new String(r.value(), StandardCharsets.UTF_8));
                }
            }
        }
        return out;
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
