package io.kvledger.cli;

import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.ledger.diagnosis.Bounds;
import io.kvledger.ledger.diagnosis.Finding;
import io.kvledger.journal.json.Json;
import io.kvledger.ledger.replay.ConfigOverrides;
import io.kvledger.ledger.replay.Hangs;
import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.ledger.replay.Replayer;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.ledger.text.Seconds;
import io.kvledger.node.cluster.LoopbackPorts;
import io.kvledger.proxy.ProxyOptions;
import io.kvledger.proxy.ProxyService;
import io.kvledger.tap.Tap;
import io.kvledger.tap.TapReport;
import io.kvledger.tap.TapTarget;
import io.kvledger.sim.FaultSpec;
import io.kvledger.ledger.report.HangsReport;
import io.kvledger.ledger.report.ReportText;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
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
 * {@code kvledger demo --live}: a real deployment on loopback, wired as an operator would wire
 * vLLM MoRIIO engines under kvledger: the proxy and the tap in this JVM, one prefill and one decode
 * {@code kvledger node --engine bridge} as processes, and one Python fake engine per node
 * ({@code python3 -m kvledger_vllm.fake_engine}) that registers with the proxy, serves the OpenAI
 * endpoints and plays vLLM's scheduler loop through its node's engine bridge. The proxy's request
 * ids carry the notify ports shifted by S, so the nodes' MoRIIO notifies cross the tap; the KV
 * blocks move on the nodes' transfer engines and are verified by the decode node.
 *
 * <p>It sends N completions through the proxy (half streamed), with the nodes' {@code --faults}
 * (a dropped notify) and, unless {@code --clean}, a {@code kill -9} of the decode's fake engine
 * part-way (restarted a moment later, as a supervisor would), then stops everything and prints
 * the tap's report, the merged {@code hangs} report over the nodes' and the proxy's journals and
 * an {@code inspect} command line.
 */
final class LiveDemo {

    /** What the command line asked for. */
    record Options(TransferMode mode, int requests, int concurrency, FaultSpec faults, int killAt, long seed, Path dir,
                   double stuckAfterS, boolean fullIds, double startTimeoutS) {}

    /** The outcome of one client request through the proxy. */
    record Answer(int status, String error, boolean fewerTokens) {
        Answer(int status, String error) {
            this(status, error, false);
        }
    }

    /** The status of a streamed answer the proxy cut after its 200 (the client saw the end of the stream early). */
    static final int CUT = -2;

    private record Node(String name, Process process, Path log, int http, long startedNs) {}

    static final String PYTHON = "/usr/bin/python3";

    private final Options o;
    private final PrintWriter out;
    private final PrintWriter err;
    private final long t0 = System.nanoTime();
    private final List<Node> nodes = new ArrayList<>();
    private final List<Process> engines = new ArrayList<>();

    LiveDemo(Options o, PrintWriter out, PrintWriter err) {
        this.o = o;
        this.out = out;
        this.err = err;
    }

    /** Where the fake engine's Python package lives: kvledger.home (set by the launcher), else above the cwd. */
    static Path pythonSources() {
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

    int run() throws Exception {
        Path src = pythonSources();
        if (src == null) {
            err.println("kvledger demo: --live needs the Python fake engines (modules/vllm-bridge/src/kvledger_vllm/"
                    + "fake_engine.py) of a kvledger checkout: run it through the ./kvledger launcher of the checkout, or "
                    + "give -Dkvledger.home=CHECKOUT");
            err.flush();
            return 2;
        }
        String pyProblem = pythonProblem();
        if (pyProblem != null) {
            err.println("kvledger demo: --live needs " + PYTHON + " with pyzmq and msgpack (apt-get install python3-zmq "
                    + "python3-msgpack): " + pyProblem);
            err.flush();
            return 2;
        }
        String m = o.mode().name().toLowerCase(Locale.ROOT);
        // ports: node P (handshake, notify, bridge, http), node D (same), the two engines' HTTP ports
        int[] p = LoopbackPorts.distinct(10);
        int ph = p[0], pn = p[1], pb = p[2], phttp = p[3], dh = p[4], dn = p[5], db = p[6], dhttp = p[7];
        int peHttp = p[8], deHttp = p[9];
        int shift = shift(p, pn, dn);
        out.println("demo --live: " + o.mode() + ", 1 prefill + 1 decode (a Python fake engine driving a kvledger node "
                + "each), proxy and tap in this process; " + o.requests() + " requests, " + o.concurrency()
                + " in flight; faults: " + (o.faults().isNone() ? "none" : o.faults().format() + " in the nodes")
                + (o.killAt() > 0 ? ", kill -9 of the decode engine after " + o.killAt() + " requests" : ""));
        out.println("journals: " + o.dir());
        out.flush();
        Path nodesDir = o.dir().resolve("nodes");
        Files.createDirectories(nodesDir);
        ProxyOptions po = ProxyOptions.loopback().withMode(o.mode()).withPorts(0, 0)
                .withRegistrationTtl(Duration.ofSeconds(5)).withTimeouts(Duration.ofSeconds(10), Duration.ofSeconds(10))
                .withNotifyPortShift(shift).withJournal(o.dir().resolve("proxy"));
        HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        Map<String, Integer> statuses = new TreeMap<>();
        List<String> failures = new ArrayList<>();
        int unanswered = 0;
        int shortAnswers = 0;
        int sent = 0;
        boolean killed = false;
        Map<String, Map<?, ?>> status = new TreeMap<>();
        TapReport tapReport;
        StringBuilder tapErr = new StringBuilder();
        try (ProxyService proxy = ProxyService.start(po, "kvledger demo --live")) {
            phase("proxy up: http 127.0.0.1:" + proxy.httpPort() + ", registrations on 127.0.0.1:" + proxy.pingPort()
                    + ", notify ports in request ids shifted by " + shift);
            java.io.StringWriter tapErrors = new java.io.StringWriter();
            try (Tap tap = Tap.open(new Tap.Config(List.of(new TapTarget(Role.PRODUCER, "127.0.0.1", pn, shift),
                    new TapTarget(Role.CONSUMER, "127.0.0.1", dn, shift)), "127.0.0.1", o.dir().resolve("tap"), o.mode(),
                    "kvledger demo --live", System::nanoTime), new PrintWriter(tapErrors, true))) {
                phase("tap up: 127.0.0.1:" + (pn + shift) + " -> P0 127.0.0.1:" + pn + ", 127.0.0.1:" + (dn + shift)
                        + " -> D0 127.0.0.1:" + dn);
                nodes.add(startNode("P0", true, m, ph, pn, pb, phttp, nodesDir));
                nodes.add(startNode("D0", false, m, dh, dn, db, dhttp, nodesDir));
                Duration startDeadline = NodeHealth.deadline(o.startTimeoutS());
                for (Node n : nodes) {
                    NodeHealth.Started up = NodeHealth.awaitHealthy(client, n.process(), n.http(), n.startedNs(), startDeadline);
                    if (!up.up()) {
                        err.println("kvledger demo: " + up.whyNot(n.name(), n.process(), "--start-timeout-s", o.startTimeoutS())
                                + "; the end of its log (" + n.log() + "):");
                        err.println(tail(n.log()));
                        err.flush();
                        return 2;
                    }
                }
                phase("nodes up: P0 (handshake " + ph + ", notify " + pn + ", bridge " + pb + "), D0 (handshake " + dh
                        + ", notify " + dn + ", bridge " + db + ")");
                String ping = "tcp://127.0.0.1:" + proxy.pingPort();
                engines.add(startEngine(src, "prefill", m, peHttp, ph, pn, pb, ping, "P0"));
                Process decodeEngine = startEngine(src, "decode", m, deHttp, dh, dn, db, ping, "D0");
                engines.add(decodeEngine);
                long regStart = System.nanoTime();
                long regEnd = regStart + startDeadline.toNanos();
                while ((proxy.producers() < 1 || proxy.consumers() < 1) && System.nanoTime() - regEnd < 0
                        && engines.stream().allMatch(Process::isAlive)) {
                    Thread.sleep(20);
                }
                if (proxy.producers() < 1 || proxy.consumers() < 1) {
                    err.println("kvledger demo: the fake engines did not register with the proxy: "
                            + (engines.stream().allMatch(Process::isAlive) ? "the start deadline (--start-timeout-s "
                            + o.startTimeoutS() + ") passed " + Seconds.rounded(System.nanoTime() - regStart, 1)
                            + " after they were started" : "an engine exited while starting") + " (prefill "
                            + (proxy.producers() < 1 ? "not " : "") + "registered, decode " + (proxy.consumers() < 1 ? "not " : "")
                            + "registered; their logs in " + o.dir().resolve("engines") + ")");
                    err.flush();
                    return 2;
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
                        decodeEngine = startEngine(src, "decode", m, deHttp, dh, dn, db, ping, "D0-restarted");
                        engines.add(decodeEngine);
                    }
                    inFlight.acquire();
                    int words = 4 + rng.nextInt(60);
                    int tokens = 1 + rng.nextInt(12);
                    boolean stream = rng.nextBoolean();
                    all.add(send(client, proxy.httpPort(), words, tokens, stream).whenComplete((a, e) -> inFlight.release()));
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
                settle(tap);
                stopProcesses();
                for (String n : List.of("P0", "D0")) {
                    Path st = nodesDir.resolve(n + ".status.json");
                    if (Files.exists(st)) {
                        status.put(n, (Map<?, ?>) Json.parse(Files.readString(st).trim()));
                    }
                }
                phase("engines and nodes stopped (SIGTERM); " + tap.framesJournaled() + " notify frames journaled by the tap");
            }
            tapErr.append(tapErrors.toString().trim());
        } finally {
            stopProcesses();
        }
        tapReport = TapReport.read(JournalInputs.resolve(List.of(o.dir().resolve("tap"))));
        long injected = 0;
        for (Map.Entry<String, Map<?, ?>> e : status.entrySet()) {
            Map<?, ?> st = e.getValue();
            out.println("  " + e.getKey() + ": " + st.get("events_applied") + " events, " + st.get("notifies_sent")
                    + " notifies sent, " + st.get("frames_received") + " frames received, " + st.get("faults_injected")
                    + " faults injected, transfer engine " + st.get("transfer_engine"));
            if (st.get("faults_injected") instanceof Long l) {
                injected += l;
            }
        }
        for (String f : failures) {
            out.println("  e.g. " + f);
        }
        out.println();
        out.println("== " + DemoCommand.launcher() + " tap-report " + DemoCommand.shellQuote(o.dir().resolve("tap").toString()) + " ==");
        for (String line : tapReport.render(false)) {
            out.println(line);
        }
        if (!tapErr.isEmpty()) {
            out.println("tap: " + tapErr);
        }
        out.println();
        Path proxyDir = o.dir().resolve("proxy");
        Path tapDir = o.dir().resolve("tap");
        // with the tap's journals, a notify sent to the tap's port is followed through it to the node behind
        out.println("== " + DemoCommand.launcher() + " hangs --stuck-after " + o.stuckAfterS() + " " + DemoCommand.shellQuote(nodesDir.toString())
                + " " + DemoCommand.shellQuote(proxyDir.toString()) + " " + DemoCommand.shellQuote(tapDir.toString()) + " ==");
        Hangs.Result res;
        try (Replayer r = Replayer.open(JournalInputs.resolve(List.of(nodesDir, proxyDir, tapDir)), ConfigOverrides.none())) {
            res = Hangs.analyse(r.recorded(false), new Bounds(NodeConfig.seconds(o.stuckAfterS())));
        }
        HangsReport.print(out, res, o.fullIds());
        out.println();
        Finding example = HangsReport.exampleHung(res.findings());
        if (example == null) {
            out.println("no hung request; follow any request with " + DemoCommand.launcher() + " inspect " + DemoCommand.shellQuote(nodesDir.toString())
                    + " " + DemoCommand.shellQuote(proxyDir.toString()) + " --request <uuid>");
        } else {
            String uuid = ReportText.uuidOf(example.requestId());
            out.println("inspect a hung request (" + example.node() + ", " + example.detector() + "):");
            out.println("  " + DemoCommand.launcher() + " inspect " + DemoCommand.shellQuote(nodesDir.toString()) + " "
                    + DemoCommand.shellQuote(proxyDir.toString()) + " --request "
                    + (uuid != null ? uuid : DemoCommand.shellQuote(example.requestId())));
        }
        int ok = statuses.getOrDefault("200", 0);
        boolean faultsActed = injected > 0 || killed;
        boolean allAnswered = unanswered == 0 && sent == o.requests();
        boolean expected;
        String verdict;
        if (!faultsActed) {
            expected = allAnswered && ok == sent && shortAnswers == 0 && res.findings().isEmpty();
            verdict = expected ? "clean run: every request answered 200, hangs found nothing"
                    : "UNEXPECTED for a run without faults: " + (sent - ok) + " request(s) not answered 200, "
                    + res.findings().size() + " hangs finding(s)";
        } else {
            expected = allAnswered && !res.findings().isEmpty();
            verdict = (expected ? "as expected for the injected faults" : "UNEXPECTED for the injected faults") + ": "
                    + (allAnswered ? "every request answered" : unanswered + " request(s) got no answer") + " (" + ok
                    + " with 200: " + statuses + "), " + injected + " fault(s) injected in the nodes" + (killed ? ", the decode engine killed once" : "")
                    + "; hangs found " + res.findings().size() + " finding(s)" + detectors(res.findings());
        }
        out.println();
        out.println("demo --live: " + verdict + "; " + (System.nanoTime() - t0) / 1_000_000 + " ms in all");
        out.flush();
        return expected ? 0 : 1;
    }

    private static String detectors(List<Finding> findings) {
        if (findings.isEmpty()) {
            return "";
        }
        Map<String, Integer> by = new TreeMap<>();
        for (Finding f : findings) {
            by.merge(f.detector(), 1, Integer::sum);
        }
        return " " + by;
    }

    private void phase(String what) {
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

    private static String pythonProblem() {
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
    private static void settle(Tap tap) throws InterruptedException {
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
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (a.startsWith("--") || a.startsWith("-Dchronicle") || a.startsWith("-Dkvledger") || a.startsWith("-Xmx")) {
                cmd.add(a);
            }
        }
        cmd.addAll(List.of("-XX:+UseParallelGC", "-XX:TieredStopAtLevel=1", "-Xss512k", "-cp",
                System.getProperty("java.class.path"), Main.class.getName()));
        cmd.addAll(List.of("node", "--role", prefill ? "producer" : "consumer", "--mode", mode, "--host", "127.0.0.1",
                "--engine", "bridge", "--bridge", "tcp://127.0.0.1:" + bridge, "--handshake-port", String.valueOf(handshake),
                "--notify-port", String.valueOf(notify), "--http", "127.0.0.1:" + http, "--journal",
                dir.resolve(name).toString(), "--node-id", name, "--status-file", dir.resolve(name + ".status.json").toString(),
                "--kv-transfer-config", "{\"kv_connector_extra_config\":{\"defer_timeout\":3,\"transfer_timeout\":3}}"));
        if (!o.faults().isNone()) {
            cmd.addAll(List.of("--faults", o.faults().format(), "--fault-seed", String.valueOf(o.seed() * 31 + name.hashCode())));
        }
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
        Process p = pb.start();
        return new Node(name, p, log, http, System.nanoTime());
    }

    private Process startEngine(Path src, String role, String mode, int http, int handshake, int notify, int bridge,
                                String ping, String logName) throws IOException {
        Path log = o.dir().resolve("engines").resolve(logName + ".log");
        Files.createDirectories(log.getParent());
        ProcessBuilder pb = new ProcessBuilder(PYTHON, "-m", "kvledger_vllm.fake_engine", "--role", role, "--mode", mode,
                "--host", "127.0.0.1", "--bind-host", "127.0.0.1", "--http-port", String.valueOf(http), "--handshake-port",
                String.valueOf(handshake), "--notify-port", String.valueOf(notify), "--bridge", "tcp://127.0.0.1:" + bridge,
                "--proxy", ping);
        pb.environment().put("PYTHONPATH", src.toString());
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
        for (Process p : order) {
            if (p.isAlive()) {
                p.destroy();
                if (!p.waitFor(20, TimeUnit.SECONDS)) {
                    p.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                }
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

}
