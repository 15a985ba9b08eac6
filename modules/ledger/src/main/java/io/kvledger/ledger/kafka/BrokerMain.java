package io.kvledger.ledger.kafka;

import java.io.IOException;
import java.io.PrintStream;
import java.io.Writer;
import java.lang.reflect.InvocationTargetException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;

/**
 * The child JVM's main for {@link KafkaBroker}: one real Apache Kafka node in KRaft mode (broker and
 * controller in one process) on loopback, its logs and metadata under one directory. It formats the
 * storage the first time (Kafka's own storage tool: a KRaft node refuses to start on unformatted
 * directories), then runs Kafka's main, which returns when the process is told to stop (SIGTERM).
 *
 * <p>Kafka's broker classes ({@code kafka_2.13}) are on the child's classpath only, never on the
 * CLI's: this class reaches them by name. Arguments: the directory, the client port, the controller
 * port.
 */
public final class BrokerMain {

    private BrokerMain() {}

    public static void main(String[] args) throws IOException, ReflectiveOperationException {
        Path dir = Path.of(args[0]);
        int port = Integer.parseInt(args[1]);
        int controllerPort = Integer.parseInt(args[2]);
        Path props = dir.resolve("server.properties");
        Properties p = new Properties();
        p.setProperty("process.roles", "broker,controller");
        p.setProperty("node.id", "1");
        p.setProperty("controller.quorum.voters", "1@127.0.0.1:" + controllerPort);
        p.setProperty("listeners", "PLAINTEXT://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controllerPort);
        p.setProperty("advertised.listeners", "PLAINTEXT://127.0.0.1:" + port);
        p.setProperty("controller.listener.names", "CONTROLLER");
        p.setProperty("inter.broker.listener.name", "PLAINTEXT");
        p.setProperty("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        p.setProperty("log.dirs", dir.resolve("data").toString());
        p.setProperty("num.partitions", "1");
        p.setProperty("auto.create.topics.enable", "false");
        p.setProperty("offsets.topic.replication.factor", "1");
        p.setProperty("offsets.topic.num.partitions", "1");
        p.setProperty("transaction.state.log.replication.factor", "1");
        p.setProperty("transaction.state.log.min.isr", "1");
        p.setProperty("share.coordinator.state.topic.replication.factor", "1");
        p.setProperty("share.coordinator.state.topic.min.isr", "1");
        p.setProperty("group.initial.rebalance.delay.ms", "0");
        // a small broker on a shared machine: small segments and indexes, no fsync per message
        p.setProperty("log.segment.bytes", String.valueOf(16 << 20));
        p.setProperty("log.index.size.max.bytes", String.valueOf(1 << 20));
        try (Writer w = Files.newBufferedWriter(props)) {
            p.store(w, "kvledger single-node broker");
        }
        try {
            if (!Files.exists(dir.resolve("data").resolve("meta.properties"))) {
                Class<?> tool = Class.forName("kafka.tools.StorageTool$");
                Object module = tool.getField("MODULE$").get(null);
                Object rc = tool.getMethod("execute", String[].class, PrintStream.class).invoke(module,
                        new String[] {"format", "-t", org.apache.kafka.common.Uuid.randomUuid().toString(), "-c",
                            props.toString(), "--ignore-formatted"}, System.out);
                if (!Integer.valueOf(0).equals(rc)) {
                    System.err.println("kvledger broker: formatting the storage failed (exit " + rc + ")");
                    System.exit(rc instanceof Integer i ? i : 1);
                }
            }
            Class.forName("kafka.Kafka").getMethod("main", String[].class).invoke(null, (Object) new String[] {props.toString()});
        } catch (ClassNotFoundException e) {
            System.err.println("kvledger broker: Kafka's broker classes (kafka_2.13) are not on the classpath: " + e.getMessage());
            System.exit(2);
        } catch (InvocationTargetException e) {
            e.getCause().printStackTrace();
            System.exit(1);
        }
    }
}
