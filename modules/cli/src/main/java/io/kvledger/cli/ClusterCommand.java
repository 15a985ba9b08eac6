package io.kvledger.cli;

import io.kvledger.core.config.TransferMode;
import io.kvledger.core.moriio.ZmqAddress;
import io.kvledger.journal.json.Json;
import io.kvledger.ledger.text.Seconds;
import io.kvledger.node.cluster.HttpLeg;
import io.kvledger.node.cluster.Leg;
import io.kvledger.node.cluster.LoopbackPorts;
import io.kvledger.node.cluster.LiveRouter;
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
 * {@code kvledger cluster}: starts {@code N + M} instances as live node processes on loopback (each
 * {@code kvledger node} with the simulated engine, its own journal and HTTP port), routes
 * {@code K} requests through them as vLLM's toy proxy does (real ZMQ notifies and handshakes,
 * real transfers of KV blocks filled with a verifiable pattern), waits for the prefills to free
 * what they hold, stops the nodes with SIGTERM, and prints the lifecycle summary and the
 * {@code hangs} report over their journals. Exit 0 when every request succeeded, every byte
 * checked and {@code hangs} found nothing.
 *
 * <p>An instance with DP or TP above 1 is one node process per (DP rank, TP rank), each binding
 * its instance's base ports + {@code dp + tp} (MoRIIO's two-argument listener form; DP and TP
 * above 1 together are refused, since MoRIIO's dialers then aim at {@code dp * tp_size + tp}).
 * The simulated engine of a DP rank runs in its TP rank 0 node (vLLM's engine core: one scheduler
 * per DP rank) and drives the nodes of TP ranks 1.. ({@code --engine sim-worker}, vLLM's worker
 * processes) over their engine bridges; each rank moves and checks its own KV. Each DP rank is a
 * leg of the router, in the toy proxy's flat interleaved order, reached at its own HTTP server
 * with {@code X-data-parallel-rank}.
 *
 * <p>A node process that exits by itself during the run (its loop stopped: {@code kvledger node}
 * exits 3 and says why), or that does not exit 0 on SIGTERM, is named in the summary with its exit
 * status and the run is not clean (exit 1). Nodes killed by {@code --kill} are reported as before.
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

    @Option(names = "--tp", defaultValue = "1", paramLabel = "T",
            description = "TP size of every instance: one node process per TP rank (default: ${DEFAULT-VALUE}).")
    int tp;

    @Option(names = "--prefill-tp", paramLabel = "T", description = "TP size of the prefill instances (default: --tp; READ only when it differs from the decode's).")
    Integer prefillTp;

    @Option(names = "--decode-tp", paramLabel = "T", description = "TP size of the decode instances (default: --tp).")
    Integer decodeTp;

    @Option(names = "--dp", defaultValue = "1", paramLabel = "D",
            description = "DP size of every instance: one node process per DP rank; not with TP above 1 (default: ${DEFAULT-VALUE}).")
    int dp;

    @Option(names = "--mode", defaultValue = "write", paramLabel = "read|write", description = "Transfer mode (default: ${DEFAULT-VALUE}).")
    String mode;

    @Option(names = "--requests", defaultValue = "100", description = "Client requests to send (default: ${DEFAULT-VALUE}).")
    int requests;

    @Option(names = "--faults", defaultValue = "", paramLabel = "SPEC",
            description = "Faults injected inside the nodes, e.g. drop=0.01,dup=0.01,delay=0.02,fail=0.005. " + FaultSpecOption.KEYS_HELP
                    + " (abort is not supported live.)")
    String faults;

    @Option(names = "--faults-on", split = ",", paramLabel = "NODE",
            description = "Inject --faults only inside these nodes (e.g. D0-tp1); default: every node.")
    List<String> faultsOn;

    @Option(names = "--kill", paramLabel = "NODE@N", description = "kill -9 node NODE (e.g. D0) after N requests were sent.")
    String kill;

    @Option(names = "--fail-journal", paramLabel = "NODE@N",
            description = "Testing only, an injected fault: node NODE's journal refuses every input after its first N "
                    + "(kvledger node --fail-journal-after N), so its loop stops and the process exits by itself.")
    String failJournal;

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

    @Option(names = "--start-timeout-s", defaultValue = NodeHealth.DEFAULT_START_TIMEOUT_S, paramLabel = "S",
            description = "Give up on a node process that does not answer on its HTTP port this many seconds after it was "
                    + "started (default: ${DEFAULT-VALUE}; a loaded machine can take minutes).")
    double startTimeoutS;

    @Option(names = "--ship", paramLabel = "kafka://HOST:PORT/TOPIC",
            description = "Every node ships its journal to this Kafka topic (kvledger node --ship).")
    String ship;

    @Option(names = "--otlp", paramLabel = "URL",
            description = "Every node exports its requests' traces to this OTLP/HTTP receiver (kvledger node --otlp).")
    String otlp;

    /**
     * One node process: rank ({@code dpRank}, {@code tpRank}) of instance {@code instance}, whose base
     * ports are {@code handshake} and {@code notifyPort}; {@code bridge} is its engine bridge's port
     * (TP ranks above 0), else 0.
     */
    private record Rank(String name, boolean prefill, int instance, int dpRank, int tpRank, int tpSize, int handshake,
                        int notifyPort, int http, int bridge) {}

    /** One started node process. */
    private record Started(Rank rank, Process process, Path log, long startedNs) {
        String name() {
            return rank.name();
        }

        boolean prefill() {
            return rank.prefill();
        }

        int http() {
            return rank.http();
        }
    }

    @Override
    public Integer call() throws Exception {
        PrintWriter o = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        TransferMode m = ModeOption.parse(spec, mode);
        if (otlp != null) {
            try {
                io.kvledger.ledger.otlp.OtlpSender.endpoint(otlp);
            } catch (io.kvledger.ledger.otlp.OtlpSender.ExportException e) {
                throw new ParameterException(spec.commandLine(), e.getMessage());
            }
        }
        if (prefill < 1 || decode < 1 || requests < 0 || concurrency < 1) {
            throw usage("--prefill and --decode need at least 1, --requests at least 0, --concurrency at least 1");
        }
        int pTp = prefillTp != null ? prefillTp : tp;
        int dTp = decodeTp != null ? decodeTp : tp;
        if (tp < 1 || pTp < 1 || dTp < 1 || dp < 1) {
            throw usage("--tp, --prefill-tp, --decode-tp and --dp need at least 1");
        }
        if (dp > 1 && Math.max(pTp, dTp) > 1) {
            throw usage("--dp " + dp + " with TP above 1: MoRIIO's listeners bind base + dp + tp while its dialers aim at "
                    + "base + dp * tp_size + tp, so ranks collide or are misdialled (protocol 2.1); give DP or TP above 1, not both");
        }
        if (pTp != dTp && m == TransferMode.WRITE) {
            throw usage("--prefill-tp " + pTp + " and --decode-tp " + dTp + " differ: in WRITE MoRIIO's decode scheduler sends "
                    + "remote_blocks to its own TP size's prefill ports and each prefill rank's write_done to the decode rank "
                    + "of its own index, so some ranks never get theirs (protocol 5.7); use --mode read, or equal sizes");
        }
        if (pTp != dTp) {
            io.kvledger.core.moriio.Checked<Integer> ok = io.kvledger.core.moriio.PortMath.remoteTpRank(0, dTp, pTp);
            if (!ok.isOk()) {
                throw usage("--prefill-tp " + pTp + " --decode-tp " + dTp + ": " + ok.error());
            }
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
        List<Rank> ranks = layout(pTp, dTp);
        String failNode = null;
        long failAfter = -1;
        if (failJournal != null) {
            String[] kv = failJournal.split("@", 2);
            try {
                failNode = kv[0];
                failAfter = Long.parseLong(kv[1]);
            } catch (RuntimeException e) {
                throw usage("--fail-journal takes NODE@N, e.g. D0@40");
            }
            String f = failNode;
            if (failAfter < 0 || ranks.stream().noneMatch(r -> r.name().equals(f))) {
                throw usage("--fail-journal takes NODE@N with a node of the run and N >= 0, got " + failJournal + " (nodes: "
                        + String.join(", ", ranks.stream().map(Rank::name).toList()) + ")");
            }
        }
        if (faultsOn != null) {
            if (fs.isNone()) {
                throw usage("--faults-on goes with --faults");
            }
            for (String f : faultsOn) {
                if (ranks.stream().noneMatch(r -> r.name().equals(f))) {
                    throw usage("--faults-on: no node " + f + " (nodes: " + String.join(", ", ranks.stream().map(Rank::name).toList()) + ")");
                }
            }
        }
        Duration startDeadline;
        try {
            startDeadline = NodeHealth.deadline(startTimeoutS);
        } catch (IllegalArgumentException e) {
            throw usage("--start-timeout-s " + e.getMessage());
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
        java.util.Set<String> killed = new java.util.HashSet<>();
        HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        long t0 = System.nanoTime();
        try {
            for (Rank r : ranks) {
                boolean faulted = faultsOn == null || faultsOn.contains(r.name());
                nodes.add(startNode(r, ranks, m, faulted ? fs : FaultSpec.NONE, r.name().equals(failNode) ? failAfter : -1, dir));
            }
            long slowestNs = 0;
            String slowest = "";
            for (Started n : nodes) {
                NodeHealth.Started up = NodeHealth.awaitHealthy(client, n.process(), n.http(), n.startedNs(), startDeadline);
                if (!up.up()) {
                    err.println("kvledger cluster: " + up.whyNot(n.name(), n.process(), "--start-timeout-s", startTimeoutS)
                            + "; its log (" + n.log() + "):");
                    err.println(tail(n.log()));
                    return 2;
                }
                if (up.elapsedNs() >= slowestNs) {
                    slowestNs = up.elapsedNs();
                    slowest = n.name();
                }
            }
            err.println("cluster: " + prefill + " prefill + " + decode + " decode " + (nodes.size() == prefill + decode ? "nodes"
                    : "instances (" + shape(pTp, dTp) + ": " + nodes.size() + " node processes)") + " up in "
                    + (System.nanoTime() - t0) / 1_000_000 + " ms (slowest " + slowest + ": " + Seconds.rounded(slowestNs, 1)
                    + " of the " + Seconds.rounded(startDeadline.toNanos(), 1) + " start deadline); sending " + requests + " " + m.name().toLowerCase(Locale.ROOT)
                    + " requests");
            err.flush();
            // One leg per DP rank (its TP rank 0 runs the engine), in the toy proxy's flat interleaved order.
            List<Leg> pl = new ArrayList<>();
            List<Leg> dl = new ArrayList<>();
            for (int r = 0; r < dp; r++) {
                for (Started n : nodes) {
                    Rank k = n.rank();
                    if (k.dpRank() == r && k.tpRank() == 0) {
                        Leg leg = new HttpLeg(k.name(), new ZmqAddress("127.0.0.1", k.handshake(), k.notifyPort()), dp,
                                k.tpSize(), r, URI.create("http://127.0.0.1:" + k.http()), client,
                                Duration.ofSeconds((long) Math.max(30, timeoutS)));
                        (k.prefill() ? pl : dl).add(leg);
                    }
                }
            }
            LiveRouter router = new LiveRouter(pl, dl, m, seed);
            SplittableRandom rng = new SplittableRandom(seed ^ 0x5eed);
            Semaphore inFlight = new Semaphore(concurrency);
            List<CompletableFuture<LiveRouter.Outcome>> all = new ArrayList<>();
            long deadline = System.nanoTime() + (long) (timeoutS * 1e9);
            for (int i = 0; i < requests; i++) {
                if (i == killAfter && killNode != null) {
                    for (Started n : nodes) {
                        if (n.name().equals(killNode)) {
                            err.println("cluster: kill -9 " + n.name() + " (pid " + n.process().pid() + ") after " + i + " requests");
                            killed.add(n.name());
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
            for (CompletableFuture<LiveRouter.Outcome> f : all) {
                LiveRouter.Outcome r;
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
            // ends as soon as no node holds a request: the bound leaves a loaded machine a minute beyond the timeouts
            quiesce(client, nodes, Duration.ofNanos((long) ((deferTimeoutS + transferTimeoutS + 60) * 1e9)));
            // a node that ended before the stop, and was not killed on purpose, stopped by itself
            List<Started> exitedEarly = new ArrayList<>();
            for (Started n : nodes) {
                if (!n.process().isAlive() && !killed.contains(n.name())) {
                    exitedEarly.add(n);
                }
            }
            stopAll(nodes);
            List<String> exits = new ArrayList<>();
            for (Started n : nodes) {
                if (killed.contains(n.name()) || n.process().isAlive()) {
                    continue;
                }
                int code = n.process().exitValue();
                if (exitedEarly.contains(n)) {
                    String why = loopStopCause(n);
                    exits.add(n.name() + " exited by itself during the run with status " + code
                            + (why != null ? ": " + why : "") + " (log " + n.log() + ")");
                } else if (code != 0) {
                    exits.add(n.name() + " exited with status " + code + " when stopped (log " + n.log() + ")");
                }
            }
            long wallMs = (System.nanoTime() - t0) / 1_000_000;
            List<String> lines = new ArrayList<>();
            Map<String, Long> engineBytes = new java.util.HashMap<>();
            Map<Rank, Long> workerBytes = new java.util.LinkedHashMap<>();
            long workerCorrupt = 0;
            for (Started n : nodes) {
                Path status = dir.resolve(n.name() + ".status.json");
                if (Files.exists(status)) {
                    Map<?, ?> st = (Map<?, ?>) Json.parse(Files.readString(status).trim());
                    String kv = "";
                    if (st.get("worker") instanceof Map<?, ?> w && !n.prefill()) {
                        long b = w.get("verified_bytes") instanceof Long x ? x : 0;
                        long c = w.get("corrupt_requests") instanceof Long x ? x : 0;
                        workerBytes.put(n.rank(), b);
                        workerCorrupt += c;
                        kv = ", " + b + " KV bytes verified" + (c > 0 ? ", " + c + " requests corrupt" : "");
                    } else if (st.get("engine") instanceof Map<?, ?> e && !n.prefill()) {
                        long b = e.get("verified_bytes") instanceof Long x ? x : 0;
                        engineBytes.put(n.rank().instance() + "/" + n.rank().dpRank(), b);
                        kv = nodes.size() > prefill + decode ? ", " + b + " KV bytes verified" : "";
                    }
                    lines.add("  " + n.name() + ": " + st.get("events_applied") + " events, " + st.get("notifies_sent")
                            + " notifies sent, " + st.get("frames_received") + " frames received, " + st.get("sessions_bound")
                            + " sessions (" + st.get("transfer_engine") + "), " + st.get("faults_injected") + " faults injected" + kv);
                } else {
                    lines.add("  " + n.name() + ": no status (the process was killed or did not stop cleanly)");
                }
            }
            // Every TP rank of a decode checks its own KV: a clean run has each rank verify as many
            // bytes as its TP rank 0 (the engine's, counted per request above).
            List<String> tpShort = new ArrayList<>();
            for (Map.Entry<Rank, Long> w : workerBytes.entrySet()) {
                verified += w.getValue();
                Long own = engineBytes.get(w.getKey().instance() + "/" + w.getKey().dpRank());
                if (own == null || !own.equals(w.getValue())) {
                    tpShort.add(w.getKey().name() + " verified " + w.getValue() + " KV bytes, its TP rank 0 " + own);
                }
            }
            o.println("cluster: " + sent + " requests, " + ok + " ok, " + failed + " failed; " + verified
                    + " KV bytes transferred and verified" + (workerBytes.isEmpty() ? "" : " (every TP rank's)") + "; "
                    + wallMs + " ms");
            for (String f : failures) {
                o.println("  failed: " + f);
            }
            for (String t : tpShort) {
                o.println("  tp: " + t);
            }
            for (String x : exits) {
                o.println("  exited: " + x);
            }
            if (workerCorrupt > 0) {
                o.println("  tp: " + workerCorrupt + " decode requests got KV that differs from their prefill rank's");
            }
            for (String l : lines) {
                o.println(l);
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
            return failed == 0 && hangs == 0 && tpShort.isEmpty() && workerCorrupt == 0 && exits.isEmpty() ? 0 : 1;
        } finally {
            stopAll(nodes);
        }
    }

    private static String describe(LiveRouter.Outcome r) {
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

    /**
     * The node processes: per instance, per DP rank, per TP rank; the instance's two base ports
     * (handshake and notify) each start a run of {@code dp * tp} free ports (its ranks bind base +
     * dp + tp), and every rank gets an HTTP port and, above TP rank 0, an engine bridge port.
     */
    private List<Rank> layout(int pTp, int dTp) {
        int instances = prefill + decode;
        int[] spans = new int[2 * instances];
        int singles = 0;
        for (int i = 0; i < instances; i++) {
            int t = i < prefill ? pTp : dTp;
            spans[2 * i] = dp * t;
            spans[2 * i + 1] = dp * t;
            singles += dp * t + dp * (t - 1);
        }
        int[] all = new int[spans.length + singles];
        System.arraycopy(spans, 0, all, 0, spans.length);
        java.util.Arrays.fill(all, spans.length, all.length, 1);
        // Every port at once, so no two nodes are handed the same one.
        int[] ports = LoopbackPorts.runs(all);
        int next = spans.length;
        List<Rank> out = new ArrayList<>();
        for (int i = 0; i < instances; i++) {
            boolean p = i < prefill;
            int t = p ? pTp : dTp;
            int inst = p ? i : i - prefill;
            for (int r = 0; r < dp; r++) {
                for (int k = 0; k < t; k++) {
                    String name = (p ? "P" : "D") + inst + (dp > 1 ? "-dp" + r : "") + (t > 1 ? "-tp" + k : "");
                    int http = ports[next++];
                    int bridge = k > 0 ? ports[next++] : 0;
                    out.add(new Rank(name, p, inst, r, k, t, ports[2 * i], ports[2 * i + 1], http, bridge));
                }
            }
        }
        return out;
    }

    private String shape(int pTp, int dTp) {
        return dp > 1 ? "DP " + dp : pTp == dTp ? "TP " + pTp : "prefill TP " + pTp + ", decode TP " + dTp;
    }

    /** Why a node's loop stopped, from the one line {@code kvledger node} writes then, or {@code null}. */
    private static String loopStopCause(Started n) {
        String prefix = "kvledger node " + n.name() + ": the node loop stopped: ";
        try (var lines = Files.lines(n.log())) {
            return lines.filter(l -> l.startsWith(prefix)).findFirst()
                    .map(l -> {
                        String why = l.substring(prefix.length());
                        int end = why.lastIndexOf("; exiting with status");
                        return end >= 0 ? why.substring(0, end) : why;
                    })
                    .orElse(null);
        } catch (IOException | java.io.UncheckedIOException e) {
            return null;
        }
    }

    private Started startNode(Rank k, List<Rank> ranks, TransferMode m, FaultSpec fs, long failJournalAfter, Path dir)
            throws IOException {
        String name = k.name();
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
        cmd.addAll(List.of("node", "--role", k.prefill() ? "producer" : "consumer", "--mode", m.name().toLowerCase(Locale.ROOT),
                "--host", "127.0.0.1", "--handshake-port", String.valueOf(k.handshake()), "--notify-port",
                String.valueOf(k.notifyPort()), "--dp", k.dpRank() + "/" + dp, "--tp", k.tpRank() + "/" + k.tpSize(),
                "--http", "127.0.0.1:" + k.http(), "--journal", dir.resolve(name).toString(), "--node-id", name,
                "--transfer-engine", transferEngine, "--status-file", dir.resolve(name + ".status.json").toString(),
                "--kv-transfer-config", "{\"kv_connector_extra_config\":{\"defer_timeout\":" + deferTimeoutS
                        + ",\"transfer_timeout\":" + transferTimeoutS + "}}"));
        if (!k.prefill() && k.tpSize() > 1 && m == TransferMode.READ) {
            // the TP-wide eager-handshake vote: TP rank 0's engine sends handshake_voted to every rank
            cmd.add("--await-tp-vote");
        }
        if (k.tpRank() > 0) {
            cmd.addAll(List.of("--engine", "sim-worker", "--bridge", "tcp://127.0.0.1:" + k.bridge()));
        } else if (k.tpSize() > 1) {
            List<String> workers = new ArrayList<>();
            for (Rank w : ranks) {
                if (w.prefill() == k.prefill() && w.instance() == k.instance() && w.dpRank() == k.dpRank() && w.tpRank() > 0) {
                    workers.add("tcp://127.0.0.1:" + w.bridge());
                }
            }
            cmd.addAll(List.of("--tp-workers", String.join(",", workers)));
        }
        if (ship != null) {
            cmd.addAll(List.of("--ship", ship));
        }
        if (otlp != null) {
            cmd.addAll(List.of("--otlp", otlp, "--otlp-stuck-after", String.valueOf(stuckAfterS)));
        }
        if (!fs.isNone()) {
            cmd.addAll(List.of("--faults", fs.format(), "--fault-seed", String.valueOf(seed * 31 + name.hashCode())));
        }
        if (failJournalAfter >= 0) {
            cmd.addAll(List.of("--fail-journal-after", String.valueOf(failJournalAfter)));
        }
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile());
        Process p = pb.start();
        return new Started(k, p, log, System.nanoTime());
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
