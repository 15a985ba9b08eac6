package io.kvledger.node.cluster;

import io.kvledger.core.config.TransferMode;
import io.kvledger.core.moriio.ZmqAddress;
import io.kvledger.journal.json.Json;
import io.kvledger.ledger.text.Seconds;
import io.kvledger.sim.FaultSpec;
import java.io.IOException;
import java.io.PrintWriter;
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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * A P/D cluster of live node processes on loopback, for {@code kvledger cluster}: starts {@code N + M}
 * instances as {@code kvledger node} processes with the simulated engine (each with its own journal,
 * status file, log and HTTP port, all under one directory), routes {@code K} requests through them
 * with {@link LiveRouter} as vLLM's toy proxy does (real ZMQ notifies and handshakes, real transfers
 * of KV blocks filled with a verifiable pattern), waits for the prefills to free what they hold,
 * stops the nodes with SIGTERM and reads their status files into a summary ({@link Result}).
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
 * status and the run is not clean. Nodes killed by {@code --kill} are reported as such.
 *
 * <p>Progress (nodes up, a kill, a give-up) goes to the error writer as it happens; the summary is
 * returned for the caller to print. The node processes run the caller's main class with
 * {@code node} and its options ({@link NodeLauncher}).
 */
public final class LiveCluster {

    /** The command line's options, unchecked; {@link #prepare} checks them. */
    public record Options(int prefill, int decode, int tp, Integer prefillTp, Integer decodeTp, int dp, TransferMode mode,
                          int requests, String faults, List<String> faultsOn, String kill, String failJournal, Path out,
                          long seed, int concurrency, String transferEngine, double deferTimeoutS, double transferTimeoutS,
                          double stuckAfterS, double timeoutS, double startTimeoutS, String otlp,
                          String ship) {}

    /** An option value refused, with the message for the user (the command's usage error). */
    public static final class UsageException extends Exception {
        private static final long serialVersionUID = 1L;

        UsageException(String message) {
            super(message);
        }
    }

    /**
     * How a run ended. {@code notStarted}: a node did not come up (already said on the error
     * writer; nothing else ran). {@code clean}: every request succeeded and checked its bytes,
     * every TP rank verified as much as its rank 0, no KV corrupt and no node exited on its own.
     * {@code summary}: the lines to print; {@code journals}: each node's journal directory, in
     * start order.
     */
    public record Result(boolean notStarted, boolean clean, List<String> summary, List<Path> journals) {}

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

    private final int prefill;
    private final int decode;
    private final int tp;
    private final Integer prefillTp;
    private final Integer decodeTp;
    private final int dp;
    private final TransferMode m;
    private final int requests;
    private final String faults;
    private final List<String> faultsOn;
    private final String kill;
    private final String failJournal;
    private final Path out;
    private final long seed;
    private final int concurrency;
    private final String transferEngine;
    private final double deferTimeoutS;
    private final double transferTimeoutS;
    private final double stuckAfterS;
    private final double timeoutS;
    private final double startTimeoutS;
    private final String otlp;
    private final String ship;

    // what prepare() derives from the options
    private int pTp;
    private int dTp;
    private FaultSpec fs;
    private String killNode;
    private int killAfter = -1;
    private List<Rank> ranks;
    private String failNode;
    private long failAfter = -1;
    private Duration startDeadline;
    private Path dir;

    private LiveCluster(Options o) {
        prefill = o.prefill();
        decode = o.decode();
        tp = o.tp();
        prefillTp = o.prefillTp();
        decodeTp = o.decodeTp();
        dp = o.dp();
        m = o.mode();
        requests = o.requests();
        faults = o.faults();
        faultsOn = o.faultsOn();
        kill = o.kill();
        failJournal = o.failJournal();
        out = o.out();
        seed = o.seed();
        concurrency = o.concurrency();
        transferEngine = o.transferEngine();
        deferTimeoutS = o.deferTimeoutS();
        transferTimeoutS = o.transferTimeoutS();
        stuckAfterS = o.stuckAfterS();
        timeoutS = o.timeoutS();
        startTimeoutS = o.startTimeoutS();
        otlp = o.otlp();
        ship = o.ship();
    }

    /**
     * Checks the options, lays out the node processes and their ports, and creates the output
     * directory (which must be new or empty).
     *
     * @throws UsageException naming the first option refused
     */
    public static LiveCluster prepare(Options options) throws UsageException, IOException {
        LiveCluster c = new LiveCluster(options);
        c.check();
        return c;
    }

    /** The output directory, absolute. */
    public Path dir() {
        return dir;
    }

    private void check() throws UsageException, IOException {
        if (otlp != null) {
            try {
                io.kvledger.ledger.otlp.OtlpSender.endpoint(otlp);
            } catch (io.kvledger.ledger.otlp.OtlpSender.ExportException e) {
                throw new UsageException(e.getMessage());
            }
        }
        if (prefill < 1 || decode < 1 || requests < 0 || concurrency < 1) {
            throw new UsageException("--prefill and --decode need at least 1, --requests at least 0, --concurrency at least 1");
        }
        pTp = prefillTp != null ? prefillTp : tp;
        dTp = decodeTp != null ? decodeTp : tp;
        if (tp < 1 || pTp < 1 || dTp < 1 || dp < 1) {
            throw new UsageException("--tp, --prefill-tp, --decode-tp and --dp need at least 1");
        }
        if (dp > 1 && Math.max(pTp, dTp) > 1) {
            throw new UsageException("--dp " + dp + " with TP above 1: MoRIIO's listeners bind base + dp + tp while its dialers aim at "
                    + "base + dp * tp_size + tp, so ranks collide or are misdialled (protocol 2.1); give DP or TP above 1, not both");
        }
        if (pTp != dTp && m == TransferMode.WRITE) {
            throw new UsageException("--prefill-tp " + pTp + " and --decode-tp " + dTp + " differ: in WRITE MoRIIO's decode scheduler sends "
                    + "remote_blocks to its own TP size's prefill ports and each prefill rank's write_done to the decode rank "
                    + "of its own index, so some ranks never get theirs (protocol 5.7); use --mode read, or equal sizes");
        }
        if (pTp != dTp) {
            io.kvledger.core.moriio.Checked<Integer> ok = io.kvledger.core.moriio.PortMath.remoteTpRank(0, dTp, pTp);
            if (!ok.isOk()) {
                throw new UsageException("--prefill-tp " + pTp + " --decode-tp " + dTp + ": " + ok.error());
            }
        }
        try {
            fs = faults.isBlank() ? FaultSpec.NONE : FaultSpec.parse(faults);
        } catch (IllegalArgumentException e) {
            throw new UsageException("--faults: " + e.getMessage());
        }
        if (fs.abort() > 0) {
            throw new UsageException("--faults: abort is not supported by a live cluster");
        }
        if (kill != null) {
            String[] kv = kill.split("@", 2);
            try {
                killNode = kv[0];
                killAfter = Integer.parseInt(kv[1]);
            } catch (RuntimeException e) {
                throw new UsageException("--kill takes NODE@N, e.g. D0@50");
            }
        }
        ranks = layout(pTp, dTp);
        if (failJournal != null) {
            String[] kv = failJournal.split("@", 2);
            try {
                failNode = kv[0];
                failAfter = Long.parseLong(kv[1]);
            } catch (RuntimeException e) {
                throw new UsageException("--fail-journal takes NODE@N, e.g. D0@40");
            }
            String f = failNode;
            if (failAfter < 0 || ranks.stream().noneMatch(r -> r.name().equals(f))) {
                throw new UsageException("--fail-journal takes NODE@N with a node of the run and N >= 0, got " + failJournal + " (nodes: "
                        + String.join(", ", ranks.stream().map(Rank::name).toList()) + ")");
            }
        }
        if (faultsOn != null) {
            if (fs.isNone()) {
                throw new UsageException("--faults-on goes with --faults");
            }
            for (String f : faultsOn) {
                if (ranks.stream().noneMatch(r -> r.name().equals(f))) {
                    throw new UsageException("--faults-on: no node " + f + " (nodes: " + String.join(", ", ranks.stream().map(Rank::name).toList()) + ")");
                }
            }
        }
        try {
            startDeadline = NodeHealth.deadline(startTimeoutS);
        } catch (IllegalArgumentException e) {
            throw new UsageException("--start-timeout-s " + e.getMessage());
        }
        dir = out.toAbsolutePath().normalize();
        if (Files.isDirectory(dir)) {
            try (var s = Files.list(dir)) {
                if (s.findAny().isPresent()) {
                    throw new UsageException(out + " is not empty: give a new or empty directory");
                }
            }
        }
        Files.createDirectories(dir);

    }

    /**
     * Starts the nodes, sends the requests, stops the nodes and summarises the run. The node
     * processes run {@code mainClass} (the CLI's) with {@code node} and its options.
     */
    public Result run(String mainClass, PrintWriter err)
            throws IOException, InterruptedException, java.util.concurrent.ExecutionException {
        List<Started> nodes = new ArrayList<>();
        List<String> report = new ArrayList<>();
        java.util.Set<String> killed = new java.util.HashSet<>();
        HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        long t0 = System.nanoTime();
        try {
            for (Rank r : ranks) {
                boolean faulted = faultsOn == null || faultsOn.contains(r.name());
                nodes.add(startNode(mainClass, r, ranks, m, faulted ? fs : FaultSpec.NONE, r.name().equals(failNode) ? failAfter : -1, dir));
            }
            long slowestNs = 0;
            String slowest = "";
            for (Started n : nodes) {
                NodeHealth.Started up = NodeHealth.awaitHealthy(client, n.process(), n.http(), n.startedNs(), startDeadline);
                if (!up.up()) {
                    err.println("kvledger cluster: " + up.whyNot(n.name(), n.process(), "--start-timeout-s", startTimeoutS)
                            + "; its log (" + n.log() + "):");
                    err.println(NodeLauncher.tail(n.log()));
                    return new Result(true, false, List.of(), List.of());
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
            long wallNs = System.nanoTime() - t0;
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
            report.add("cluster: " + sent + " requests, " + ok + " ok, " + failed + " failed; " + verified
                    + " KV bytes transferred and verified" + (workerBytes.isEmpty() ? "" : " (every TP rank's)") + "; "
                    + io.kvledger.ledger.text.Seconds.duration(wallNs));
            for (String f : failures) {
                report.add("  failed: " + f);
            }
            for (String t : tpShort) {
                report.add("  tp: " + t);
            }
            for (String x : exits) {
                report.add("  exited: " + x);
            }
            if (workerCorrupt > 0) {
                report.add("  tp: " + workerCorrupt + " decode requests got KV that differs from their prefill rank's");
            }
            for (String l : lines) {
                report.add(l);
            }
            report.add("");
            List<Path> journals = new ArrayList<>();
            for (Started n : nodes) {
                journals.add(dir.resolve(n.name()));
            }
            return new Result(false, failed == 0 && tpShort.isEmpty() && workerCorrupt == 0 && exits.isEmpty(), report, journals);
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

    private Started startNode(String mainClass, Rank k, List<Rank> ranks, TransferMode m, FaultSpec fs, long failJournalAfter, Path dir)
            throws IOException {
        String name = k.name();
        Path log = dir.resolve(name + ".log");
        List<String> cmd = new ArrayList<>(NodeLauncher.javaCommand(mainClass, List.of("-XX:+UseParallelGC", "-Xss512k")));
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
        Process p = NodeLauncher.start(cmd, log);
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
        NodeLauncher.stopAll(nodes.stream().map(Started::process).toList());
    }
}
