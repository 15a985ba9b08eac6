package io.kvledger.cli;

import io.kvledger.ledger.kafka.KafkaBroker;
import io.kvledger.sim.FaultSpec;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * {@code kvledger demo --fleet}: the fleet picture in one command. It starts a real single-node
 * Apache Kafka broker (KRaft) in a child JVM under {@code DIR/broker}, on loopback; a live cluster
 * of prefill and decode nodes with injected faults ({@code kvledger cluster}), each node shipping
 * its own journal to one topic ({@code node --ship}); once the nodes stopped, a
 * {@code ship --no-follow} over their journals, which finds in the topic what the nodes shipped and
 * sends only what they did not get to before their stop; then {@code hangs} on the topic, printed,
 * and compared with {@code hangs} over the same journals on disk. The broker is stopped and its data
 * removed at the end, also on Ctrl-C or SIGTERM (the hook ends every process the demo started); the
 * journals are left under {@code DIR/journals}.
 *
 * <p>The broker's classes are not on the CLI's classpath: the build resolves them from Maven Central
 * into a classpath file ({@code modules/kafka-broker/target/broker.classpath} of the checkout the
 * launcher runs from, or the {@code kvledger.broker.classpath} property), which the child JVM is
 * given. Exit 0 when the report from the topic is the one from disk, 1 when it is not, 2 when the
 * broker or the cluster could not be run.
 */
final class FleetDemo {

    /** The faults of the nodes unless --faults is given (abort is not supported live). */
    static final String FAULTS = "dup=0.05,delay=0.05,fail=0.05";

    /** The topic the demo's nodes ship to. */
    static final String TOPIC = "kvledger-fleet";

    record Options(int prefill, int decode, int requests, FaultSpec faults, long seed, Path dir, double stuckAfterS,
                   double startTimeoutS) {}

    private final Options o;
    private final PrintWriter out;
    private final PrintWriter err;

    FleetDemo(Options o, PrintWriter out, PrintWriter err) {
        this.o = o;
        this.out = out;
        this.err = err;
    }

    /** The build's classpath file of the broker: the property, else under the launcher's checkout. */
    static Path brokerClasspathFile() {
        String given = System.getProperty("kvledger.broker.classpath");
        if (given != null && !given.isBlank()) {
            return Path.of(given);
        }
        String home = System.getProperty("kvledger.home");
        return Path.of(home == null || home.isBlank() ? "." : home, "modules", "kafka-broker", "target", "broker.classpath");
    }

    int run() throws Exception {
        Path cpFile = brokerClasspathFile();
        String classpath;
        try {
            classpath = KafkaBroker.classpath(cpFile);
        } catch (IOException e) {
            err.println("kvledger demo --fleet: no classpath for the Kafka broker (" + e.getMessage() + "); the build makes "
                    + "it: mvn -pl modules/kafka-broker generate-resources, or ./kvledger's own build");
            err.flush();
            return 2;
        }
        Path brokerDir = o.dir().resolve("broker");
        Path journals = o.dir().resolve("journals");
        Thread hook = new Thread(() -> {
            endChildren();
            deleteTree(brokerDir);
        }, "kvledger-fleet-demo-stop");
        Runtime.getRuntime().addShutdownHook(hook);
        KafkaBroker broker = null;
        try {
            long t0 = System.nanoTime();
            err.println("demo --fleet: starting a single-node Apache Kafka broker (KRaft, child JVM) under " + brokerDir);
            err.flush();
            try {
                broker = KafkaBroker.start(brokerDir, classpath);
            } catch (IllegalStateException e) {
                err.println("kvledger demo --fleet: " + e.getMessage());
                err.flush();
                return 2;
            }
            String uri = broker.uri(TOPIC);
            broker.createTopic(TOPIC, Math.min(8, o.prefill() + o.decode()));
            out.println("broker: Apache Kafka " + broker.version() + " (KRaft, one node) on "
                    + broker.bootstrap() + ", up in " + (System.nanoTime() - t0) / 1_000_000 + " ms; topic " + TOPIC);
            out.println();
            out.println("== " + o.prefill() + " prefill + " + o.decode() + " decode live nodes, faults "
                    + (o.faults().isNone() ? "none" : o.faults().format()) + ", each shipping its journal to " + uri + " ==");
            out.flush();
            List<String> cluster = new ArrayList<>(List.of("cluster", "--prefill", String.valueOf(o.prefill()), "--decode",
                    String.valueOf(o.decode()), "--requests", String.valueOf(o.requests()), "--seed", String.valueOf(o.seed()),
                    "--out", journals.toString(), "--ship", uri, "--stuck-after-s", String.valueOf(o.stuckAfterS()),
                    "--start-timeout-s", String.valueOf(o.startTimeoutS())));
            if (!o.faults().isNone()) {
                cluster.addAll(List.of("--faults", o.faults().format()));
            }
            long c0 = System.nanoTime();
            int clusterCode = Main.run(out, err, cluster.toArray(String[]::new));
            err.println("demo --fleet: the cluster ran for " + seconds(c0));
            out.flush();
            if (clusterCode == 2 || !Files.isDirectory(journals)) {
                err.println("kvledger demo --fleet: the cluster did not run (exit " + clusterCode + ")");
                err.flush();
                return 2;
            }
            List<String> nodeJournals = nodeJournals(journals);

            // what a node had not shipped when it stopped (its stop waits 10 s at most) goes now, resumed from the topic
            long s0 = System.nanoTime();
            Captured topUp = captured("ship", "--no-follow", "--to", uri, journals.toString());
            out.println();
            out.println("== " + DemoCommand.launcher() + " ship --no-follow --to " + uri + " " + DemoCommand.shellQuote(journals.toString())
                    + " ==");
            out.println(topUp.err().strip().lines().filter(l -> l.contains("acknowledged")).findFirst()
                    .orElse("(ship said: " + topUp.err().strip() + ")"));
            err.println("demo --fleet: ship --no-follow took " + seconds(s0));
            if (topUp.code() != 0) {
                out.flush();
                err.println("kvledger demo --fleet: ship --no-follow exited " + topUp.code() + ": " + topUp.err().strip());
                err.flush();
                return 1;
            }

            String stuck = String.valueOf(o.stuckAfterS());
            long h0 = System.nanoTime();
            Captured fromTopic = captured("hangs", "--stuck-after", stuck, uri);
            err.println("demo --fleet: hangs on the topic took " + seconds(h0));
            List<String> diskArgs = new ArrayList<>(List.of("hangs", "--stuck-after", stuck));
            diskArgs.addAll(nodeJournals);
            Captured fromDisk = captured(diskArgs.toArray(String[]::new));
            out.println();
            out.println("== " + DemoCommand.launcher() + " hangs --stuck-after " + stuck + " " + uri + " ==");
            out.print(fromTopic.out());
            err.print(fromTopic.err());
            out.println();
            boolean same = fromTopic.code() == fromDisk.code() && fromTopic.out().equals(fromDisk.out());
            if (same) {
                out.println("the topic's report is the one from the " + nodeJournals.size() + " journals on disk, byte for byte "
                        + "(hangs exit " + fromTopic.code() + " both); journals: " + journals);
            } else {
                out.println("the topic's report DIFFERS from the one over the journals on disk (exit " + fromTopic.code()
                        + " from the topic, " + fromDisk.code() + " from disk); from disk:");
                out.print(fromDisk.out());
                err.print(fromDisk.err());
            }
            out.flush();
            err.flush();
            return same ? 0 : 1;
        } finally {
            if (broker != null) {
                broker.close();
            }
            deleteTree(brokerDir);
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // the hook is running
            }
        }
    }

    private static String seconds(long sinceNs) {
        return io.kvledger.ledger.text.Seconds.duration(System.nanoTime() - sinceNs);
    }

    private record Captured(int code, String out, String err) {}

    private static Captured captured(String... args) {
        StringWriter o = new StringWriter();
        StringWriter e = new StringWriter();
        int code = Main.run(new PrintWriter(o), new PrintWriter(e), args);
        return new Captured(code, o.toString(), e.toString());
    }

    /** The node journals the cluster wrote: {@code DIR/<node>} directories, sorted. */
    private static List<String> nodeJournals(Path journals) throws IOException {
        try (Stream<Path> s = Files.list(journals)) {
            return s.filter(Files::isDirectory).sorted().map(Path::toString).toList();
        }
    }

    /**
     * On Ctrl-C or SIGTERM: every process the demo started (the broker, the nodes) is told to stop,
     * then ended; the hook then removes the broker's data.
     */
    private static void endChildren() {
        List<ProcessHandle> children = ProcessHandle.current().descendants().toList();
        children.forEach(ProcessHandle::destroy);
        for (ProcessHandle p : children) {
            try {
                p.onExit().get(20, TimeUnit.SECONDS);
            } catch (Exception e) {
                p.destroyForcibly();
            }
        }
    }

    private static void deleteTree(Path root) {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> s = Files.walk(root)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            // a leftover under the demo's own directory: said, not fatal
            System.err.println("kvledger demo --fleet: could not remove " + root + ": " + e.getMessage());
        }
    }
}
