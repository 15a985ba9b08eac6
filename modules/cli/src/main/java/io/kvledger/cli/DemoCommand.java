package io.kvledger.cli;

import io.kvledger.node.cluster.NodeHealth;
import io.kvledger.core.config.Behaviour;
import io.kvledger.ledger.replay.ConfigOverrides;
import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.ledger.replay.Hangs;
import io.kvledger.ledger.replay.Replayer;
import io.kvledger.core.config.TransferMode;
import io.kvledger.ledger.diagnosis.Bounds;
import io.kvledger.ledger.diagnosis.Finding;
import io.kvledger.journal.JournalException;
import io.kvledger.node.demo.LiveDeployment;
import io.kvledger.node.sim.DemoReport;
import io.kvledger.node.sim.SimJournalRecorder;
import io.kvledger.sim.FaultSpec;
import io.kvledger.sim.SimOptions;
import io.kvledger.sim.Simulation;
import io.kvledger.sim.SimulationResult;
import io.kvledger.ledger.report.HangsReport;
import io.kvledger.ledger.report.ReportText;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvledger demo}: a seeded simulation of a prefill/decode cluster, first in WRITE mode, then
 * a shorter READ-mode run, each printed as a lifecycle report ({@link DemoReport}). Both runs are
 * journaled ({@code DIR/write/<node>}, {@code DIR/read/<node>}, DIR a fresh temporary directory or
 * {@code --out}); the demo ends with the {@code hangs} report of each run's journals and the
 * {@code inspect} command line for one hung request.
 */
@Command(name = "demo", mixinStandardHelpOptions = true, sortOptions = false,
        description = {
            "Simulates a disaggregated cluster (toy proxy, prefill and decode engines, one reducer per engine rank) "
                    + "from one seed, with injected faults, and prints per node the request phases, the requests that "
                    + "completed or hung, and every anomaly the reducers recorded.",
            "Both runs are journaled, one journal per node, into DIR/write and DIR/read (DIR: --out, or a new "
                    + "temporary directory); the demo ends with the hangs report of each run and the inspect command "
                    + "for one hung request.",
            "The same seed and options always print the same report (apart from the journal directory)."})
final class DemoCommand implements Callable<Integer> {

    static final String DEFAULT_FAULTS = "drop=0.01,dup=0.01,delay=0.02,fail=0.005,abort=0.01";

    @Spec
    CommandSpec spec;

    @Option(names = "--seed", paramLabel = "N", defaultValue = "42",
            description = "the seed of both runs (default: ${DEFAULT-VALUE})")
    long seed;

    @Option(names = "--requests", paramLabel = "N", defaultValue = "300",
            description = "client requests of the WRITE-mode run (default: ${DEFAULT-VALUE})")
    int requests;

    @Option(names = "--read-requests", paramLabel = "N", defaultValue = "50",
            description = "client requests of the READ-mode run; 0 skips it (default: ${DEFAULT-VALUE})")
    int readRequests;

    @Option(names = "--faults", paramLabel = "SPEC", defaultValue = DEFAULT_FAULTS, converter = FaultSpecOption.Converter.class,
            description = {"faults as key=probability pairs, or none (default: ${DEFAULT-VALUE}).",
                FaultSpecOption.KEYS_HELP})
    FaultSpec faults;

    @Option(names = "--prefill-nodes", paramLabel = "N", defaultValue = "1",
            description = "prefill instances (default: ${DEFAULT-VALUE})")
    int prefillNodes;

    @Option(names = "--decode-nodes", paramLabel = "N", defaultValue = "1",
            description = "decode instances (default: ${DEFAULT-VALUE})")
    int decodeNodes;

    @Option(names = "--profile", paramLabel = "NAME", defaultValue = "newest",
            description = "reducer behaviour: newest or seed (default: ${DEFAULT-VALUE})")
    String profile;

    @Option(names = "--per-kind", paramLabel = "N", defaultValue = "20",
            description = "anomaly lines printed per kind, and hung requests printed per run (default: ${DEFAULT-VALUE})")
    int perKind;

    @Option(names = "--full-ids", description = "print request ids whole instead of abbreviating the embedded addresses")
    boolean fullIds;

    @Option(names = "--out", paramLabel = "DIR",
            description = "write the journals here (missing or empty; default: a new directory under the system "
                    + "temporary directory)")
    Path out;

    @Option(names = "--live", description = {"run a live deployment on loopback instead of the simulation: the proxy, "
            + "the tap, one prefill and one decode (a Python fake engine driving a kvledger node each); --requests "
            + "completions through the proxy with the nodes' --faults (default for --live: " + LIVE_FAULTS + ") and a "
            + "kill -9 of the decode's engine part-way, then the tap's report, the merged hangs report and an inspect "
            + "command. Exit 0 when the run behaved as expected for the faults injected (none: every request answered "
            + "200 and hangs clean; some: every request answered and hangs names what they left behind)."})
    boolean live;

    @Option(names = "--fleet", description = {"start a real single-node Apache Kafka broker (KRaft, child JVM, loopback) and a "
            + "live cluster of --prefill-nodes and --decode-nodes (2 each unless given) with --faults (default for --fleet: "
            + FleetDemo.FAULTS + "), every node shipping its journal to one topic; then hangs on the topic, compared with "
            + "hangs on disk; the broker is removed at the end (docs/fleet.md)"})
    boolean fleet;

    @Option(names = "--clean", description = "with --live: no faults and no kill (every request must be answered 200, hangs must find nothing)")
    boolean clean;

    @Option(names = "--mode", paramLabel = "read|write", defaultValue = "write",
            description = "with --live: the transfer mode (default: ${DEFAULT-VALUE})")
    String liveMode;

    @Option(names = "--kill-decode-at", paramLabel = "N",
            description = "with --live: kill -9 the decode's fake engine after N requests were sent, then restart it "
                    + "(default: 3/4 of --requests; 0: no kill)")
    Integer killDecodeAt;

    @Option(names = "--concurrency", paramLabel = "N", defaultValue = "16",
            description = "with --live: client requests in flight at once (default: ${DEFAULT-VALUE})")
    int concurrency;

    @Option(names = "--stuck-after", converter = DurationOption.class, paramLabel = "SECONDS", defaultValue = "2",
            description = "with --live: hangs --stuck-after of the report (default: ${DEFAULT-VALUE})")
    double stuckAfterS;

    @Option(names = "--start-timeout-s", converter = DurationOption.class, paramLabel = "S", defaultValue = NodeHealth.DEFAULT_START_TIMEOUT_S,
            description = "with --live: give up on a node that does not answer on its HTTP port, or a fake engine that does "
                    + "not register with the proxy, this many seconds after it was started (default: ${DEFAULT-VALUE})")
    double startTimeoutS;

    static final String LIVE_FAULTS = "drop=0.01";

    @Override
    public Integer call() throws Exception {
        if (live) {
            return live();
        }
        if (fleet) {
            var given = spec.commandLine().getParseResult();
            return new FleetDemo(new FleetDemo.Options(given.hasMatchedOption("--prefill-nodes") ? prefillNodes : 2,
                    given.hasMatchedOption("--decode-nodes") ? decodeNodes : 2, given.hasMatchedOption("--requests") ? requests : 100,
                    given.hasMatchedOption("--faults") ? faults : FaultSpec.parse(FleetDemo.FAULTS), seed,
                    journalDir().toAbsolutePath().normalize(), stuckAfterS, startTimeoutS),
                    spec.commandLine().getOut(), spec.commandLine().getErr()).run();
        }
        if (requests < 1) {
            throw usage("--requests must be at least 1, got " + requests);
        }
        if (readRequests < 0) {
            throw usage("--read-requests must not be negative, got " + readRequests);
        }
        if (prefillNodes < 1 || decodeNodes < 1) {
            throw usage("--prefill-nodes and --decode-nodes must be at least 1");
        }
        if (perKind < 0) {
            throw usage("--per-kind must not be negative, got " + perKind);
        }
        Behaviour behaviour = Behaviour.preset(profile);
        if (behaviour == null) {
            throw usage("--profile must be newest or seed, got '" + profile + "'");
        }
        Path dir = journalDir();
        PrintWriter w = spec.commandLine().getOut();
        DemoReport report = new DemoReport(w, fullIds, perKind);
        int runs = readRequests > 0 ? 2 : 1;
        report.header(seed, behaviour, faults, rerunCommand());
        List<Path> runDirs = new ArrayList<>();
        try {
            runDirs.add(dir.resolve("write"));
            report.run(1, runs, simulate(TransferMode.WRITE, requests, behaviour, runDirs.get(0)));
            if (readRequests > 0) {
                runDirs.add(dir.resolve("read"));
                report.run(2, runs, simulate(TransferMode.READ, readRequests, behaviour, runDirs.get(1)));
            }
        } catch (JournalException e) {
            w.flush();
            spec.commandLine().getErr().println("kvledger demo: cannot write the journals: " + e.getMessage());
            spec.commandLine().getErr().flush();
            return 1;
        }
        w.println();
        w.println("journals: " + dir + " (one directory per node: " + String.join(", ", runNames(runDirs)) + ")");
        if (out == null) {
            w.println("  a new temporary directory, left there; --out DIR writes them into DIR instead (a relative DIR "
                    + "is under the current directory)");
        }
        Finding example = null;
        Path exampleDir = null;
        for (Path runDir : runDirs) {
            w.println();
            w.println("== " + launcher() + " hangs " + shellQuote(runDir.toString()) + " ==");
            Hangs.Result res;
            try (Replayer r = Replayer.open(JournalInputs.resolve(List.of(runDir)), ConfigOverrides.none())) {
                res = Hangs.analyse(r.recorded(false), Bounds.defaults());
            }
            HangsReport.print(w, res, fullIds);
            Finding f = HangsReport.exampleHung(res.findings());
            if (example == null && f != null) {
                example = f;
                exampleDir = runDir;
            }
        }
        w.println();
        if (example == null) {
            w.println("no hung request to inspect; follow any request with " + launcher() + " inspect "
                    + shellQuote(runDirs.get(0).toString()) + " --request <id>");
        } else {
            String uuid = ReportText.uuidOf(example.requestId());
            w.println("inspect a hung request (" + example.node() + ", " + example.detector() + "):");
            w.println("  " + launcher() + " inspect " + shellQuote(exampleDir.toString()) + " --request "
                    + (uuid != null ? uuid : shellQuote(example.requestId())));
        }
        w.flush();
        return 0;
    }

    private int live() throws Exception {
        if (requests < 1 || concurrency < 1) {
            throw usage("--requests and --concurrency must be at least 1");
        }
        if (!(stuckAfterS > 0) || Double.isInfinite(stuckAfterS)) {
            throw usage("--stuck-after must be a positive number of seconds, got " + stuckAfterS);
        }
        boolean faultsGiven = spec.commandLine().getParseResult().hasMatchedOption("--faults");
        if (clean && (faultsGiven || killDecodeAt != null)) {
            throw usage("--clean runs without faults: drop --faults and --kill-decode-at, or --clean");
        }
        FaultSpec fs = clean ? FaultSpec.NONE : faultsGiven ? faults : FaultSpec.parse(LIVE_FAULTS);
        if (fs.abort() > 0) {
            throw usage("--faults: abort is not supported live (use drop, dup, delay, fail)");
        }
        int killAt = clean ? 0 : killDecodeAt != null ? killDecodeAt : requests * 3 / 4;
        if (killAt < 0 || killAt >= requests) {
            throw usage("--kill-decode-at must be from 0 (no kill) to --requests - 1, got " + killAt);
        }
        try {
            NodeHealth.deadline(startTimeoutS);
        } catch (IllegalArgumentException e) {
            throw usage("--start-timeout-s " + e.getMessage());
        }
        TransferMode m = ModeOption.parse(spec, liveMode);
        // as given (relative to the current directory when --out is), as the offline demo prints it
        Path dir = journalDir();
        return new LiveDemo(new LiveDeployment.Options(m, requests, concurrency, fs, killAt, seed, dir, startTimeoutS),
                stuckAfterS, fullIds, spec.commandLine().getOut(), spec.commandLine().getErr()).run();
    }

    private static List<String> runNames(List<Path> runDirs) {
        List<String> names = new ArrayList<>();
        for (Path p : runDirs) {
            List<String> nodes = new ArrayList<>();
            for (JournalInputs.NodeJournal j : JournalInputs.resolve(List.of(p))) {
                nodes.add(j.name());
            }
            names.add(p.getFileName() + "/" + String.join(" ", nodes));
        }
        return names;
    }

    /**
     * The launcher as the user typed it ({@code kvledger.command}, which the launcher sets), for the
     * commands printed for the user to run next; {@code ./kvledger} when run without the launcher.
     */
    static String launcher() {
        String typed = System.getProperty("kvledger.command");
        return typed == null || typed.isBlank() ? "./kvledger" : shellQuote(typed);
    }

    static String shellQuote(String s) {
        return s.matches("[A-Za-z0-9._:,/=+-]+") ? s : "'" + s.replace("'", "'\\''") + "'";
    }

    /** --out (missing or empty), or a new temporary directory. */
    private Path journalDir() {
        try {
            if (out == null) {
                return Files.createTempDirectory("kvledger-demo-");
            }
            if (Files.exists(out)) {
                if (!Files.isDirectory(out)) {
                    throw usage("--out " + out + " is not a directory");
                }
                try (Stream<Path> s = Files.list(out)) {
                    if (s.findAny().isPresent()) {
                        throw usage("--out " + out + " is not empty: the demo writes fresh journals into a missing or "
                                + "empty directory");
                    }
                }
            }
            return Files.createDirectories(out);
        } catch (IOException e) {
            throw usage("cannot create the journal directory " + (out == null ? "under the temporary directory" : out)
                    + ": " + e.getMessage());
        }
    }

    private SimulationResult simulate(TransferMode mode, int n, Behaviour behaviour, Path dir) {
        SimOptions options = SimOptions.builder(seed, mode)
                .requests(n)
                .nodes(prefillNodes, decodeNodes)
                .faults(faults)
                .behaviour(behaviour)
                .keepLog(false)
                .build();
        try (SimJournalRecorder rec = new SimJournalRecorder(dir, rerunCommand() + " (" + mode + " run)")) {
            return Simulation.run(options, rec);
        }
    }

    private String rerunCommand() {
        StringBuilder b = new StringBuilder("kvledger demo --seed ").append(seed)
                .append(" --requests ").append(requests)
                .append(" --read-requests ").append(readRequests)
                .append(" --faults ").append(faults.format());
        if (prefillNodes != 1 || decodeNodes != 1) {
            b.append(" --prefill-nodes ").append(prefillNodes).append(" --decode-nodes ").append(decodeNodes);
        }
        if (!"newest".equals(profile)) {
            b.append(" --profile ").append(profile);
        }
        return b.toString();
    }

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }
}
