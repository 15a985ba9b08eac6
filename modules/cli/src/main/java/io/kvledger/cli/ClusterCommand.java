package io.kvledger.cli;

import io.kvledger.core.config.TransferMode;
import io.kvledger.core.moriio.ZmqAddress;
import io.kvledger.journal.json.Json;
import io.kvledger.service.cluster.HttpLeg;
import io.kvledger.service.cluster.Leg;
import io.kvledger.service.cluster.LoopbackPorts;
import io.kvledger.service.cluster.ToyRouter;
import io.kvledger.sim.FaultSpec;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvledger cluster}: starts {@code N + M} live nodes as processes on loopback (each
 * {@code kvledger node} with the simulated engine, its own journal and HTTP port), routes
 * {@code K} requests through them as vLLM's toy proxy does (real ZMQ notifies and handshakes,
 * real transfers of KV blocks filled with a verifiable pattern), waits for the prefills to free
 * what they hold, stops the nodes with SIGTERM, and prints the lifecycle summary and the
 * {@code hangs} report over their journals. Exit 0 when every request succeeded, every byte
 * checked and {@code hangs} found nothing.
 */
@Command(name = "cluster", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Start N prefill and M decode live nodes as processes on loopback, send K requests through them, then report.")
final class ClusterCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Option(names = "--prefill", defaultValue = "1", description = "Prefill nodes (default: ${DEFAULT-VALUE}).")
    int prefill;

    @Option(names = "--decode", defaultValue = "1", description = "Decode nodes (default: ${DEFAULT-VALUE}).")
    int decode;

    @Option(names = "--mode", defaultValue = "write", paramLabel = "read|write", description = "Transfer mode (default: ${DEFAULT-VALUE}).")
    String mode;

    @Option(names = "--requests", defaultValue = "100", description = "Client requests to send (default: ${DEFAULT-VALUE}).")
    int requests;

    @Option(names = "--faults", defaultValue = "", paramLabel = "SPEC",
            description = "Faults injected inside the nodes, e.g. drop=0.01,dup=0.01,delay=0.02,fail=0.005. " + FaultSpecOption.KEYS_HELP
                    + " (abort is not supported live.)")
    String faults;

    @Option(names = "--kill", paramLabel = "NODE@N", description = "kill -9 node NODE (e.g. D0) after N requests were sent.")
    String kill;

    @Option(names = "--out", required = true, paramLabel = "DIR", description = "Where the nodes' journals and logs go (DIR/<node>/).")
    Path out;

    @Option(names = "--seed", defaultValue = "1", description = "Seed of the router and the fault draws (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--concurrency", defaultValue = "16", description = "Client requests in flight at once (default: ${DEFAULT-VALUE}).")
    int concurrency;

    @Option(names = "--transfer-engine", defaultValue = "auto", paramLabel = "auto|ucx", description = "The nodes' transfer engine (default: ${DEFAULT-VALUE}).")
    String transferEngine;

    @Option(names = "--defer-timeout-s", defaultValue = "10", description = "The nodes' defer_timeout (default: ${DEFAULT-VALUE}).")
    double deferTimeoutS;

    @Option(names = "--transfer-timeout-s", defaultValue = "5", description = "The nodes' transfer_timeout (default: ${DEFAULT-VALUE}).")
    double transferTimeoutS;

    @Option(names = "--stuck-after-s", defaultValue = "5", description = "hangs --stuck-after for the report (default: ${DEFAULT-VALUE}).")
    double stuckAfterS;

    @Option(names = "--timeout-s", defaultValue = "300", description = "Give up on requests not answered this many seconds after the nodes are up (default: ${DEFAULT-VALUE}).")
    double timeoutS;

    @Option(names = "--otlp", paramLabel = "URL",
            description = "Every node exports its requests' traces to this OTLP/HTTP receiver (kvledger node --otlp).")
    String otlp;

    /** One started node process. */
    private record Started(String name, boolean prefill, int handshake, int notifyPort, int http, Process process, Path log) {}

    @Override
    public Integer call() throws Exception {
        PrintWriter o = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        TransferMode m = ModeOption.parse(spec, mode);
        if (otlp != null) {
            try {
                io.kvledger.service.otlp.OtlpSender.endpoint(otlp);
            } catch (io.kvledger.service.otlp.OtlpSender.ExportException e) {
                throw new ParameterException(spec.commandLine(), e.getMessage());
            }
        }
        if (prefill < 1 || decode < 1 || requests < 0 || concurrency < 1) {
            throw usage("--prefill and --decode need at least 1, --requests at least 0, --concurrency at least 1");
        }
        FaultSpec fs;
        try {
            fs = faults.isBlank() ? FaultSpec.NONE : FaultSpec.parse(faults);
        } catch (IllegalArgumentException e) {
            throw usage("--faults: " + e.getMessage());
        }
        if (fs.abort() > 0) {
            throw usage("--faults: abort is not supported by a live cluster");
        }
        String killNode = null;
        int killAfter = -1;
        if (kill != null) {
            String[] kv = kill.split("@", 2);
            try {
                killNode = kv[0];
                killAfter = Integer.parseInt(kv[1]);
            } catch (RuntimeException e) {
                throw usage("--kill takes NODE@N, e.g. D0@50");
            }
        }
        Path dir = out.toAbsolutePath().normalize();
        if (Files.isDirectory(dir)) {
            try (var s = Files.list(dir)) {
                if (s.findAny().isPresent()) {
                    throw usage(out + " is not empty: give a new or empty directory");
                }
            }
        }
        Files.createDirectories(dir);

        List<Started> nodes = new ArrayList<>();
        HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        long t0 = System.nanoTime();
        try {
            // Every node's ports at once, so no two nodes are handed the same one.
            int[] ports = LoopbackPorts.distinct(3 * (prefill + decode));
            for (int i = 0; i < prefill + decode; i++) {
                boolean p = i < prefill;
                String name = (p ? "P" : "D") + (p ? i : i - prefill);
                nodes.add(startNode(name, p, m, fs, dir, ports[3 * i], ports[3 * i + 1], ports[3 * i + 2]));
            }
            for (Started n : nodes) {
                if (!NodeHealth.awaitHealthy(client, n.process(), n.http(), Duration.ofSeconds(60))) {
                    err.println("kvledger cluster: node " + n.name() + " did not start; its log (" + n.log() + "):");
                    err.println(tail(n.log()));
                    return 2;
                }
            }
            err.println("cluster: " + prefill + " prefill + " + decode + " decode nodes up in "
                    + (System.nanoTime() - t0) / 1_000_000 + " ms; sending " + requests + " " + m.name().toLowerCase(Locale.ROOT)
                    + " requests");
            err.flush();
            List<Leg> pl = new ArrayList<>();
            List<Leg> dl = new ArrayList<>();
            for (Started n : nodes) {
                Leg leg = new HttpLeg(n.name(), new ZmqAddress("127.0.0.1", n.handshake(), n.notifyPort()), 1, 1,
                        URI.create("http://127.0.0.1:" + n.http()), client, Duration.ofSeconds((long) Math.max(30, timeoutS)));
                (n.prefill() ? pl : dl).add(leg);
            }
            ToyRouter router = new ToyRouter(pl, dl, m, seed);
            SplittableRandom rng = new SplittableRandom(seed ^ 0x5eed);
            Semaphore inFlight = new Semaphore(concurrency);
            List<CompletableFuture<ToyRouter.Outcome>> all = new ArrayList<>();
            long deadline = System.nanoTime() + (long) (timeoutS * 1e9);
            for (int i = 0; i < requests; i++) {
                if (i == killAfter && killNode != null) {
                    for (Started n : nodes) {
                        if (n.name().equals(killNode)) {
                            err.println("cluster: kill -9 " + n.name() + " (pid " + n.process().pid() + ") after " + i + " requests");
                            n.process().destroyForcibly();
                        }
                    }
                }
                if (!inFlight.tryAcquire(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                    err.println("cluster: --concurrency " + concurrency + " requests still unanswered at --timeout-s; sent "
                            + i + " of " + requests);
                    break;
                }
                int prompt = 16 + rng.nextInt(500);
                int tokens = 1 + rng.nextInt(16);
                all.add(router.send(prompt, tokens).whenComplete((r, e) -> inFlight.release()));
            }
            int ok = 0;
            int failed = 0;
            long verified = 0;
            List<String> failures = new ArrayList<>();
            for (CompletableFuture<ToyRouter.Outcome> f : all) {
                ToyRouter.Outcome r;
                try {
                    r = f.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (java.util.concurrent.TimeoutException e) {
                    failed++;
                    failures.add("a request got no answer before --timeout-s");
                    continue;
                }
                if (r.ok() && r.decodeLeg().verifiedBytes() > 0) {
                    ok++;
                    verified += r.decodeLeg().verifiedBytes();
                } else {
                    failed++;
                    if (failures.size() < 10) {
                        failures.add(r.xRequestId() + ": " + describe(r));
                    }
                }
            }
            long sent = all.size();
            quiesce(client, nodes, Duration.ofNanos((long) ((deferTimeoutS + transferTimeoutS + 5) * 1e9)));
            stopAll(nodes);
            long wallMs = (System.nanoTime() - t0) / 1_000_000;
            o.println("cluster: " + sent + " requests, " + ok + " ok, " + failed + " failed; " + verified
                    + " KV bytes transferred and verified; " + wallMs + " ms");
            for (String f : failures) {
                o.println("  failed: " + f);
            }
            for (Started n : nodes) {
                Path status = dir.resolve(n.name() + ".status.json");
                if (Files.exists(status)) {
                    Map<?, ?> st = (Map<?, ?>) Json.parse(Files.readString(status).trim());
                    o.println("  " + n.name() + ": " + st.get("events_applied") + " events, " + st.get("notifies_sent")
                            + " notifies sent, " + st.get("frames_received") + " frames received, " + st.get("sessions_bound")
                            + " sessions (" + st.get("transfer_engine") + "), " + st.get("faults_injected") + " faults injected");
                } else {
                    o.println("  " + n.name() + ": no status (the process was killed or did not stop cleanly)");
                }
            }
            o.println();
            o.flush();
            List<String> hangArgs = new ArrayList<>();
            hangArgs.add("hangs");
            hangArgs.add("--stuck-after");
            hangArgs.add(String.valueOf(stuckAfterS));
            for (Started n : nodes) {
                hangArgs.add(dir.resolve(n.name()).toString());
            }
            int hangs = Main.run(o, err, hangArgs.toArray(String[]::new));
            o.println();
            o.println("journals: " + dir + " (kvledger inspect " + dir.resolve(nodes.get(0).name()) + " ... --request ID)");
            o.flush();
            return failed == 0 && hangs == 0 ? 0 : 1;
        } finally {
            stopAll(nodes);
        }
    }

    private static String describe(ToyRouter.Outcome r) {
        if (r.error() != null) {
            return String.valueOf(r.error().getMessage());
        }
        if (r.prefillLeg() != null && r.prefillLeg().error() != null) {
            return "prefill: " + r.prefillLeg().error();
        }
        if (r.decodeLeg() != null && r.decodeLeg().error() != null) {
            return "decode: " + r.decodeLeg().error();
        }
        return "no KV bytes verified";
    }

    private Started startNode(String name, boolean p, TransferMode m, FaultSpec fs, Path dir, int handshake, int notify,
                              int http) throws IOException {
        Path log = dir.resolve(name + ".log");
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (a.startsWith("--") || a.startsWith("-Dchronicle") || a.startsWith("-Dkvledger") || a.startsWith("-Xmx")) {
                cmd.add(a);
            }
        }
        cmd.add("-XX:+UseParallelGC");
        cmd.add("-Xss512k");
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(Main.class.getName());
        cmd.addAll(List.of("node", "--role", p ? "producer" : "consumer", "--mode", m.name().toLowerCase(Locale.ROOT),
                "--host", "127.0.0.1", "--handshake-port", String.valueOf(handshake), "--notify-port", String.valueOf(notify),
                "--http", "127.0.0.1:" + http, "--journal", dir.resolve(name).toString(), "--node-id", name,
                "--transfer-engine", transferEngine, "--status-file", dir.resolve(name + ".status.json").toString(),
                "--kv-transfer-config", "{\"kv_connector_extra_config\":{\"defer_timeout\":" + deferTimeoutS
                        + ",\"transfer_timeout\":" + transferTimeoutS + "}}"));
        if (otlp != null) {
            cmd.addAll(List.of("--otlp", otlp, "--otlp-stuck-after", String.valueOf(stuckAfterS)));
        }
        if (!fs.isNone()) {
            cmd.addAll(List.of("--faults", fs.format(), "--fault-seed", String.valueOf(seed * 31 + name.hashCode())));
        }
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
        return new Started(name, p, handshake, notify, http, pb.start(), log);
    }

    /** Waits until every live node's engine holds no request (prefills freed what they deferred). */
    private static void quiesce(HttpClient client, List<Started> nodes, Duration timeout) throws InterruptedException {
        long end = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < end) {
            boolean idle = true;
            for (Started n : nodes) {
                if (!n.process().isAlive()) {
                    continue;
                }
                try {
                    HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + n.http()
                            + "/v1/status")).timeout(Duration.ofSeconds(2)).GET().build(), HttpResponse.BodyHandlers.ofString());
                    Map<?, ?> st = (Map<?, ?>) Json.parse(r.body().trim());
                    if (st.get("engine") instanceof Map<?, ?> e && !(e.get("held_requests") instanceof Long h && h == 0)) {
                        idle = false;
                    }
                } catch (IOException | RuntimeException e) {
                    // a node that does not answer is not waited for
                }
            }
            if (idle) {
                return;
            }
            Thread.sleep(100);
        }
    }

    private static void stopAll(List<Started> nodes) throws InterruptedException {
        for (Started n : nodes) {
            if (n.process().isAlive()) {
                n.process().destroy();
            }
        }
        for (Started n : nodes) {
            if (!n.process().waitFor(20, TimeUnit.SECONDS)) {
                n.process().destroyForcibly();
                n.process().waitFor(5, TimeUnit.SECONDS);
            }
        }
    }

    private static String tail(Path log) {
        try {
            List<String> lines = Files.readAllLines(log);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }
}
