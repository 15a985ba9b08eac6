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
 * A real single-node Apache Kafka (KRaft) in a child JVM ({@link BrokerMain}) on free loopback
 * ports, its data and log under a directory the caller owns: the tests' broker and
 * {@code kvledger demo --fleet}'s. The child's classpath is given: Kafka's broker artifacts
 * ({@code kafka_2.13}) are on it, never on the CLI's own. {@link #start} returns once an
 * admin client gets an answer from it (polled; the bound is generous for a loaded machine), or
 * throws with the tail of the broker's log. {@link #stop} and {@link #restart} keep the ports and
 * the data: a restarted broker holds what it held.
 */
public final class KafkaBroker implements AutoCloseable {

    /** How long a broker may take to come up on a loaded 2-core machine before its starter gives up. */
    private static final Duration READY_BOUND = Duration.ofMinutes(3);

    private final Path dir;
    private final String classpath;
    private final int port;
    private final int controllerPort;
    private Process process;

    private KafkaBroker(Path dir, String classpath, int port, int controllerPort) {
        this.dir = dir;
        this.classpath = classpath;
        this.port = port;
        this.controllerPort = controllerPort;
    }

    /**
     * Starts a broker whose data and log live under {@code dir}, its JVM on {@code classpath} (which
     * must hold Kafka's broker artifacts and this class's own code).
     */
    public static KafkaBroker start(Path dir, String classpath) {
        int[] ports = freePorts(2);
        KafkaBroker b = new KafkaBroker(dir, classpath, ports[0], ports[1]);
        b.launch();
        return b;
    }

    /**
     * The classpath for {@link #start} from a file of the build (a classpath on one line: the Kafka
     * broker's artifacts, {@code modules/kafka-broker/target/broker.classpath}) followed by where
     * this class's own code is (a jar or a directory): the broker's artifacts come first, so that
     * theirs win over any copy of the same classes in a CLI's jar.
     */
    public static String classpath(Path brokerClasspathFile) throws IOException {
        String cp = Files.readString(brokerClasspathFile, StandardCharsets.UTF_8).strip();
        if (cp.isEmpty()) {
            throw new IOException(brokerClasspathFile + " is empty");
        }
        for (String entry : cp.split(java.io.File.pathSeparator)) {
            if (!Files.exists(Path.of(entry))) {
                throw new IOException(brokerClasspathFile + " names " + entry + ", which is missing (rebuild: the build "
                        + "resolves the broker's artifacts from Maven Central)");
            }
        }
        try {
            String own = Path.of(BrokerMain.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
            return cp + java.io.File.pathSeparator + own;
        } catch (java.net.URISyntaxException | SecurityException | NullPointerException e) {
            throw new IOException("cannot tell where the broker's main class is: " + e, e);
        }
    }

    /** {@code 127.0.0.1:PORT}. */
    public String bootstrap() {
        return "127.0.0.1:" + port;
    }

    /** {@code kafka://127.0.0.1:PORT/TOPIC}. */
    public String uri(String topic) {
        return "kafka://" + bootstrap() + "/" + topic;
    }

    /** The broker's version, from the name of its Kafka jar on the child's classpath ({@code kafka_2.13-4.4.0.jar}); "?" if none. */
    public String version() {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("kafka_2\\.1[0-9]-([0-9][^/\\\\" + java.io.File.pathSeparator
                + "]*)\\.jar").matcher(classpath);
        return m.find() ? m.group(1) : "?";
    }

    /** The directory of the broker's data and log. */
    public Path dir() {
        return dir;
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
    String logTail() {
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
                "-Djava.io.tmpdir=" + dir, "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", classpath,
                BrokerMain.class.getName(), dir.toString(), String.valueOf(port), String.valueOf(controllerPort)));
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
                    throw new IllegalStateException("the Kafka broker exited (" + process.exitValue()
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
        throw new IllegalStateException("the Kafka broker did not answer on " + bootstrap() + " within "
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
