package io.kvledger.node.demo;

import io.kvledger.core.config.TransferMode;
import io.kvledger.journal.json.Json;
import io.kvledger.ledger.text.Seconds;
import io.kvledger.node.cluster.LoopbackPorts;
import io.kvledger.node.cluster.NodeHealth;
import io.kvledger.node.cluster.NodeLauncher;
import io.kvledger.sim.FaultSpec;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * A live deployment on loopback, wired as an operator would wire vLLM MoRIIO engines under
 * kvledger, for {@code kvledger demo --live}: a front (the proxy and the tap, which the caller
 * opens, since this module does not depend on them), one prefill and one decode
 * {@code kvledger node --engine bridge} as processes, and one Python fake engine per node
 * ({@code python3 -m kvledger_vllm.fake_engine}) that registers with the proxy, serves the OpenAI
 * endpoints and plays vLLM's scheduler loop through its node's engine bridge. The proxy's request
 * ids carry the notify ports shifted by S, so the nodes' MoRIIO notifies cross the tap; the KV
 * blocks move on the nodes' transfer engines and are verified by the decode node.
 *
 * <p>It sends N completions through the proxy (half streamed), with the nodes' faults and a
 * {@code kill -9} of the decode's fake engine part-way (restarted a moment later, as a supervisor
 * would), then stops everything and returns what the clients saw and the nodes' status files
 * ({@link Result}). Progress lines go to the output writer as they happen, stamped with the
 * seconds since the run began.
 *
 * <p>Journals: {@code DIR/nodes/<node>}, {@code DIR/proxy} and {@code DIR/tap} (the last two the
 * front's); logs: {@code DIR/nodes/<node>.log} and {@code DIR/engines/}.
 */
public final class LiveDeployment {

    /** What the command line asked for; {@code dir} as it is to be shown (it may be relative). */
    public record Options(TransferMode mode, int requests, int concurrency, FaultSpec faults, int killAt, long seed, Path dir,
                          double startTimeoutS) {}

    /** The proxy and the tap in front of the nodes, opened by the caller once the ports are known. */
    public interface Front extends AutoCloseable {
        /** The proxy's HTTP port. */
        int httpPort();

        /** The proxy's registration (ping) port. */
        int pingPort();

        /** Prefill instances registered with the proxy. */
        int producers();

        /** Decode instances registered with the proxy. */
        int consumers();

        /** Notify frames the tap has journaled so far. */
        long framesJournaled();
    }

    /** Opens the front: the proxy shifting notify ports by {@code shift}, the tap relaying both shifted ports. */
    @FunctionalInterface
    public interface Fronts {
        Front open(int shift, int producerNotifyPort, int consumerNotifyPort) throws Exception;
    }

    /**
     * What a run saw. {@code notStarted}: a node or engine did not come up (already said on the
     * error writer; nothing else ran). {@code statuses}: answers counted by status ("200", "200
     * incomplete", "200 stream cut", or the HTTP status); {@code failures}: up to five examples;
     * {@code status}: each node's status file, by node name.
     */
    public record Result(boolean notStarted, Map<String, Integer> statuses, List<String> failures, int unanswered,
                         int shortAnswers, int sent, boolean killed, Map<String, Map<?, ?>> status) {
        static final Result NOT_STARTED = new Result(true, Map.of(), List.of(), 0, 0, 0, false, Map.of());

        /** Faults the nodes say they injected. */
        public long injected() {
            long n = 0;
            for (Map<?, ?> st : status.values()) {
                if (st.get("faults_injected") instanceof Long l) {
                    n += l;
                }
            }
            return n;
        }
    }

    /** The outcome of one client request through the proxy. */
    record Answer(int status, String error, boolean fewerTokens) {
        Answer(int status, String error) {
            this(status, error, false);
        }
    }

    /** The status of a streamed answer the proxy cut after its 200 (the client saw the end of the stream early). */
    static final int CUT = -2;

    private record Node(String name, Process process, Path log, int http, long startedNs) {}

    /** The Python that runs the fake engines. */
    public static final String PYTHON = "/usr/bin/python3";

    private final Options o;
    private final Path sources;
    private final String mainClass;
    private final PrintWriter out;
    private final PrintWriter err;
    private final long t0;
    private final List<Node> nodes = new ArrayList<>();
    private final List<Process> engines = new ArrayList<>();

    /**
     * @param sources the fake engine's Python sources ({@link #pythonSources()})
     * @param mainClass the main class the node processes run with {@code node} and its options
     * @param t0 the {@link System#nanoTime()} the progress lines count from
     */
    public LiveDeployment(Options o, Path sources, String mainClass, PrintWriter out, PrintWriter err, long t0) {
        this.o = o;
        this.sources = sources;
        this.mainClass = mainClass;
        this.out = out;
        this.err = err;
        this.t0 = t0;
    }

    /** Where the fake engine's Python package lives: kvledger.home (set by the launcher), else above the cwd. */
    public static Path pythonSources() {
        List<Path> tried = new ArrayList<>();
        String home = System.getProperty("kvledger.home");
        if (home != null && !home.isBlank()) {
            tried.add(Path.of(home));
        } else {
            for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
                tried.add(p);
            }
        }
        for (Path p : tried) {
            Path src = p.resolve("modules/vllm-bridge/src");
            if (Files.isRegularFile(src.resolve("kvledger_vllm/fake_engine.py"))) {
                return src;
            }
        }
        return null;
    }

    /** Runs the deployment: ports, front, nodes, engines, requests, a kill, then everything stopped. */
    public Result run(Fronts fronts) throws Exception {
        String m = o.mode().name().toLowerCase(Locale.ROOT);
        // ports: node P (handshake, notify, bridge, http), node D (same), the two engines' HTTP ports
        int[] p = LoopbackPorts.distinct(10);
        int ph = p[0], pn = p[1], pb = p[2], phttp = p[3], dh = p[4], dn = p[5], db = p[6], dhttp = p[7];
        int peHttp = p[8], deHttp = p[9];
        int shift = shift(p, pn, dn);
        Path nodesDir = o.dir().resolve("nodes");
        Files.createDirectories(nodesDir);
        HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        Map<String, Integer> statuses = new TreeMap<>();
        List<String> failures = new ArrayList<>();
        int unanswered = 0;
        int shortAnswers = 0;
        int sent = 0;
        boolean killed = false;
        Map<String, Map<?, ?>> status = new TreeMap<>();
        try (Front front = fronts.open(shift, pn, dn)) {
            nodes.add(startNode("P0", true, m, ph, pn, pb, phttp, nodesDir));
            nodes.add(startNode("D0", false, m, dh, dn, db, dhttp, nodesDir));
            Duration startDeadline = NodeHealth.deadline(o.startTimeoutS());
            for (Node n : nodes) {
                NodeHealth.Started up = NodeHealth.awaitHealthy(client, n.process(), n.http(), n.startedNs(), startDeadline);
                if (!up.up()) {
                    err.println("kvledger demo: " + up.whyNot(n.name(), n.process(), "--start-timeout-s", o.startTimeoutS())
                            + "; the end of its log (" + n.log() + "):");
                    err.println(NodeLauncher.tail(n.log()));
                    err.flush();
                    return Result.NOT_STARTED;
                }
            }
            phase("nodes up: P0 (handshake " + ph + ", notify " + pn + ", bridge " + pb + "), D0 (handshake " + dh
                    + ", notify " + dn + ", bridge " + db + ")");
            String ping = "tcp://127.0.0.1:" + front.pingPort();
            engines.add(startEngine("prefill", m, peHttp, ph, pn, pb, ping, "P0"));
            Process decodeEngine = startEngine("decode", m, deHttp, dh, dn, db, ping, "D0");
            engines.add(decodeEngine);
            long regStart = System.nanoTime();
            long regEnd = regStart + startDeadline.toNanos();
            while ((front.producers() < 1 || front.consumers() < 1) && System.nanoTime() - regEnd < 0
                    && engines.stream().allMatch(Process::isAlive)) {
                Thread.sleep(20);
            }
            if (front.producers() < 1 || front.consumers() < 1) {
                err.println("kvledger demo: the fake engines did not register with the proxy: "
                        + (engines.stream().allMatch(Process::isAlive) ? "the start deadline (--start-timeout-s "
                        + o.startTimeoutS() + ") passed " + Seconds.rounded(System.nanoTime() - regStart, 1)
                        + " after they were started" : "an engine exited while starting") + " (prefill "
                        + (front.producers() < 1 ? "not " : "") + "registered, decode " + (front.consumers() < 1 ? "not " : "")
                        + "registered; their logs in " + o.dir().resolve("engines") + ")");
                err.flush();
                return Result.NOT_STARTED;
            }
            phase("fake engines up and registered: prefill http 127.0.0.1:" + peHttp + ", decode http 127.0.0.1:"
                    + deHttp);

            SplittableRandom rng = new SplittableRandom(o.seed());
            Semaphore inFlight = new Semaphore(o.concurrency());
            List<CompletableFuture<Answer>> all = new ArrayList<>();
            long sendStart = System.nanoTime();
            for (int i = 0; i < o.requests(); i++) {
                if (i == o.killAt() && o.killAt() > 0) {
                    decodeEngine.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                    killed = true;
                    phase("kill -9 of the decode's fake engine (pid " + decodeEngine.pid() + ") after " + i
                            + " requests; restarting it");
                    decodeEngine = startEngine("decode", m, deHttp, dh, dn, db, ping, "D0-restarted");
                    engines.add(decodeEngine);
                }
                inFlight.acquire();
                int words = 4 + rng.nextInt(60);
                int tokens = 1 + rng.nextInt(12);
                boolean stream = rng.nextBoolean();
                all.add(send(client, front.httpPort(), words, tokens, stream).whenComplete((a, e) -> inFlight.release()));
                sent++;
            }
            for (CompletableFuture<Answer> f : all) {
                Answer a;
                try {
                    a = f.get(60, TimeUnit.SECONDS);
                } catch (java.util.concurrent.TimeoutException e) {
                    unanswered++;
                    continue;
                }
                if (a.status() == -1) {
                    unanswered++;
                    if (failures.size() < 5) {
                        failures.add("no answer: " + a.error());
                    }
                    continue;
                }
                if (a.fewerTokens()) {
                    shortAnswers++;
                    statuses.merge("200", 1, Integer::sum);
                    continue;
                }
                statuses.merge(a.status() == 200 && a.error() == null ? "200" : a.status() == 200 ? "200 incomplete"
                        : a.status() == CUT ? "200 stream cut" : String.valueOf(a.status()), 1, Integer::sum);
                if (a.error() != null && failures.size() < 5) {
                    failures.add(a.status() + ": " + a.error());
                }
            }
            phase(sent + " requests sent through the proxy in " + (System.nanoTime() - sendStart) / 1_000_000
                    + " ms; answers by status " + statuses + (unanswered > 0 ? ", " + unanswered + " unanswered" : "")
                    + (shortAnswers > 0 ? " (" + shortAnswers + " of the 200s carried fewer tokens than asked)" : ""));
            // let the prefill free what the decode's write_done / release frees, then the tap drain
            settle(front);
            stopProcesses();
            for (String n : List.of("P0", "D0")) {
                Path st = nodesDir.resolve(n + ".status.json");
                if (Files.exists(st)) {
                    status.put(n, (Map<?, ?>) Json.parse(Files.readString(st).trim()));
                }
            }
            phase("engines and nodes stopped (SIGTERM); " + front.framesJournaled() + " notify frames journaled by the tap");
        } finally {
            stopProcesses();
        }
        return new Result(false, statuses, failures, unanswered, shortAnswers, sent, killed, status);
    }

    /** Prints one progress line, stamped with the seconds since {@code t0}. */
    public void phase(String what) {
        out.printf(Locale.ROOT, "[%5.1f s] %s%n", (System.nanoTime() - t0) / 1e9, what);
        out.flush();
    }

    /** A shift S with both tap ports free, in the loopback range and clear of every other port of the run. */
    private static int shift(int[] taken, int pn, int dn) {
        SplittableRandom r = new SplittableRandom();
        for (int attempt = 0; attempt < 500; attempt++) {
            int s = 1 + r.nextInt(4000);
            int a = pn + s;
            int b = dn + s;
            if (a > 32_000 || b > 32_000 || a == b) {
                continue;
            }
            boolean clash = false;
            for (int t : taken) {
                clash |= t == a || t == b;
            }
            if (!clash && free(a) && free(b)) {
                return s;
            }
        }
        throw new IllegalStateException("no notify-port shift with free tap ports found");
    }

    private static boolean free(int port) {
        try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
            s.setReuseAddress(true);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** Why {@link #PYTHON} cannot run the fake engines (missing, or without pyzmq or msgpack), or {@code null}. */
    public static String pythonProblem() {
        if (!Files.isExecutable(Path.of(PYTHON))) {
            return PYTHON + " not found";
        }
        try {
            Process p = new ProcessBuilder(PYTHON, "-c", "import zmq, msgpack").redirectErrorStream(true).start();
            String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                String[] lines = text.split("\n");
                return lines[lines.length - 1];
            }
            return null;
        } catch (IOException | InterruptedException e) {
            return e.getMessage();
        }
    }

    private CompletableFuture<Answer> send(HttpClient client, int port, int words, int tokens, boolean stream) {
        String body = "{\"model\":\"kvledger-fake\",\"prompt\":\"" + "word ".repeat(words).trim() + "\",\"max_tokens\":"
                + tokens + ",\"stream\":" + stream + "}";
        HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/completions"))
                .header("Content-Type", "application/json").timeout(Duration.ofSeconds(45))
                .POST(HttpRequest.BodyPublishers.ofString(body)).build();
        return client.sendAsync(req, HttpResponse.BodyHandlers.ofString()).handle((r, e) -> {
            if (e != null) {
                String msg = String.valueOf(e.getMessage());
                // the proxy had sent 200 and stream chunks when its decode leg died: it can only cut the stream
                return new Answer(msg.contains("chunked transfer encoding") || msg.contains("EOF") ? CUT : -1, msg);
            }
            if (r.statusCode() != 200) {
                return new Answer(r.statusCode(), oneLine(r.body()));
            }
            // a whole answer: the stream ends with a finish_reason chunk and [DONE]; a JSON answer has its finish_reason
            boolean whole = stream ? r.body().contains("\"finish_reason\": \"length\"") && r.body().contains("data: [DONE]")
                    : r.body().contains("\"finish_reason\": \"length\"");
            if (!whole) {
                return new Answer(200, "incomplete answer: " + oneLine(r.body()));
            }
            // the proxy asks the decode for max_tokens - 1 (the toy proxy's rule: the prefill made the first)
            // a whole answer with fewer tokens is counted apart (and fails a clean run)
            return new Answer(200, null, !r.body().contains(" tok" + Math.max(1, tokens - 1) + "\""));
        });
    }

    private static String oneLine(String s) {
        String t = s.replace('\n', ' ').trim();
        return t.length() > 200 ? t.substring(0, 200) + "..." : t;
    }

    /** Waits until the tap has seen no frame for a second (the protocol's last frames and frees). */
    private static void settle(Front tap) throws InterruptedException {
        long last = -1;
        long quietSince = System.nanoTime();
        long end = System.nanoTime() + 15_000_000_000L;
        while (System.nanoTime() < end) {
            long now = tap.framesJournaled();
            if (now != last) {
                last = now;
                quietSince = System.nanoTime();
            } else if (System.nanoTime() - quietSince > 1_000_000_000L) {
                return;
            }
            Thread.sleep(50);
        }
    }

    private Node startNode(String name, boolean prefill, String mode, int handshake, int notify, int bridge, int http,
                           Path dir) throws IOException {
        Path log = dir.resolve(name + ".log");
        List<String> cmd = new ArrayList<>(NodeLauncher.javaCommand(mainClass,
                List.of("-XX:+UseParallelGC", "-XX:TieredStopAtLevel=1", "-Xss512k")));
        cmd.addAll(List.of("node", "--role", prefill ? "producer" : "consumer", "--mode", mode, "--host", "127.0.0.1",
                "--engine", "bridge", "--bridge", "tcp://127.0.0.1:" + bridge, "--handshake-port", String.valueOf(handshake),
                "--notify-port", String.valueOf(notify), "--http", "127.0.0.1:" + http, "--journal",
                dir.resolve(name).toAbsolutePath().toString(), "--node-id", name, "--status-file",
                dir.resolve(name + ".status.json").toAbsolutePath().toString(),
                "--kv-transfer-config", "{\"kv_connector_extra_config\":{\"defer_timeout\":3,\"transfer_timeout\":3}}"));
        if (!o.faults().isNone()) {
            cmd.addAll(List.of("--faults", o.faults().format(), "--fault-seed", String.valueOf(o.seed() * 31 + name.hashCode())));
        }
        Process p = NodeLauncher.start(cmd, log);
        return new Node(name, p, log, http, System.nanoTime());
    }

    private Process startEngine(String role, String mode, int http, int handshake, int notify, int bridge,
                                String ping, String logName) throws IOException {
        Path log = o.dir().resolve("engines").resolve(logName + ".log");
        Files.createDirectories(log.getParent());
        ProcessBuilder pb = new ProcessBuilder(PYTHON, "-m", "kvledger_vllm.fake_engine", "--role", role, "--mode", mode,
                "--host", "127.0.0.1", "--bind-host", "127.0.0.1", "--http-port", String.valueOf(http), "--handshake-port",
                String.valueOf(handshake), "--notify-port", String.valueOf(notify), "--bridge", "tcp://127.0.0.1:" + bridge,
                "--proxy", ping);
        pb.environment().put("PYTHONPATH", sources.toString());
        pb.environment().put("PYTHONDONTWRITEBYTECODE", "1");
        pb.redirectOutput(log.toFile());
        Process p = pb.start();
        BufferedReader r = new BufferedReader(new InputStreamReader(p.getErrorStream(), StandardCharsets.UTF_8));
        String first = r.readLine();
        Thread drain = new Thread(() -> {
            try (var w = Files.newBufferedWriter(log, StandardCharsets.UTF_8, java.nio.file.StandardOpenOption.APPEND)) {
                if (first != null) {
                    w.write(first);
                    w.newLine();
                }
                for (String line; (line = r.readLine()) != null; ) {
                    w.write(line);
                    w.newLine();
                }
            } catch (IOException ignored) {
                // the process ended
            }
        }, "fake-engine-log-" + logName);
        drain.setDaemon(true);
        drain.start();
        if (first == null || !first.contains(" ready")) {
            p.destroyForcibly();
            throw new IllegalStateException("the " + role + " fake engine did not start: " + first + " (log " + log + ")");
        }
        return p;
    }

    /** SIGTERM to the engines, then the nodes (so they journal the engines' last calls and flush), waiting for each. */
    private void stopProcesses() throws InterruptedException {
        List<Process> order = new ArrayList<>(engines);
        engines.clear();
        for (Node n : nodes) {
            order.add(n.process());
        }
        nodes.clear();
        NodeLauncher.stopInOrder(order);
    }
}
