package io.kvledger.ledger.kafka;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;

/**
 * A real single-node Apache Kafka (KRaft) for tests, in a child JVM ({@link TestBrokerMain}) on
 * free loopback ports, its data under a directory the test owns. {@link #start} returns once an
 * admin client gets an answer from it (polled; the bound is generous for a loaded machine), or
 * throws with the tail of the broker's log. {@link #stop} and {@link #restart} keep the ports and
 * the data: a restarted broker holds what it held.
 */
public final class TestBroker implements AutoCloseable {

    /** How long a broker may take to come up on a loaded 2-core machine before the test gives up. */
    private static final Duration READY_BOUND = Duration.ofMinutes(3);

    private final Path dir;
    private final int port;
    private final int controllerPort;
    private Process process;

    private TestBroker(Path dir, int port, int controllerPort) {
        this.dir = dir;
        this.port = port;
        this.controllerPort = controllerPort;
    }

    /** Starts a broker whose data and log live under {@code dir}. */
    public static TestBroker start(Path dir) {
        int[] ports = freePorts(2);
        TestBroker b = new TestBroker(dir, ports[0], ports[1]);
        b.launch();
        return b;
    }

    /** {@code 127.0.0.1:PORT}. */
    public String bootstrap() {
        return "127.0.0.1:" + port;
    }

    /** {@code kafka://127.0.0.1:PORT/TOPIC}. */
    public String uri(String topic) {
        return "kafka://" + bootstrap() + "/" + topic;
    }

    /** Creates a topic of {@code partitions} partitions (replication 1). */
    public void createTopic(String topic, int partitions) {
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("cannot create topic " + topic + ": " + e + "\n" + logTail(), e);
        }
    }

    /** Stops the broker cleanly (SIGTERM), keeping its data. */
    public void stop() {
        if (process == null) {
            return;
        }
        process.destroy();
        try {
            if (!process.waitFor(90, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(30, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
        process = null;
    }

    /** Starts the stopped broker again, on the same ports with the same data. */
    public void restart() {
        stop();
        launch();
    }

    @Override
    public void close() {
        stop();
    }

    /** The last lines of the broker's log, for a failure message. */
    public String logTail() {
        Path log = dir.resolve("broker.log");
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            return "--- last lines of " + log + " ---\n"
                    + String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
        } catch (IOException e) {
            return "(no broker log: " + e.getMessage() + ")";
        }
    }

    private Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        return Admin.create(p);
    }

    private void launch() {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (a.startsWith("--add-") || a.startsWith("--enable-native") || a.startsWith("--sun-misc")) {
                cmd.add(a);
            }
        }
        // a small broker: quick to start, light on a shared machine
        cmd.addAll(List.of("-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Djava.io.tmpdir=" + dir, "-cp", System.getProperty("java.class.path"),
                TestBrokerMain.class.getName(), dir.toString(), String.valueOf(port), String.valueOf(controllerPort)));
        try {
            Files.createDirectories(dir);
            Path log = dir.resolve("broker.log");
            process = new ProcessBuilder(cmd).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        awaitReady();
    }

    /** Polls the broker with an admin client until it answers, the child dies, or the bound passes. */
    private void awaitReady() {
        long end = System.nanoTime() + READY_BOUND.toNanos();
        String last = "no answer yet";
        try (Admin admin = admin()) {
            while (System.nanoTime() < end) {
                if (!process.isAlive()) {
                    throw new IllegalStateException("the Kafka test broker exited (" + process.exitValue()
                            + ") before it answered on " + bootstrap() + "\n" + logTail());
                }
                try {
                    admin.describeCluster().nodes().get(10, TimeUnit.SECONDS);
                    // the controller has elected itself and the broker is registered: metadata answers
                    admin.listTopics().names().get(10, TimeUnit.SECONDS);
                    return;
                } catch (ExecutionException | TimeoutException e) {
                    last = e.toString();
                }
                Thread.sleep(200);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
        process.destroyForcibly();
        throw new IllegalStateException("the Kafka test broker did not answer on " + bootstrap() + " within "
                + READY_BOUND.toSeconds() + " s (last: " + last + ")\n" + logTail());
    }

    private static int[] freePorts(int n) {
        List<ServerSocket> open = new ArrayList<>();
        try {
            int[] out = new int[n];
            for (int i = 0; i < n; i++) {
                ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                open.add(s);
                out[i] = s.getLocalPort();
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            for (ServerSocket s : open) {
                try {
                    s.close();
                } catch (IOException ignored) {
                    // the port is free again either way
                }
            }
        }
    }
}
