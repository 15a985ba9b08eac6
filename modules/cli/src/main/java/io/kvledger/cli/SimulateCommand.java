package io.kvledger.cli;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.moriio.Checked;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalException;
import io.kvledger.node.sim.SimJournalRecorder;
import io.kvledger.node.sim.SimulateReport;
import io.kvledger.sim.FaultSpec;
import io.kvledger.sim.Recorder;
import io.kvledger.sim.SimCommandLine;
import io.kvledger.sim.SimOptions;
import io.kvledger.sim.Simulation;
import io.kvledger.sim.SimulationResult;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvledger simulate --seed N --requests N --faults SPEC --out DIR}: runs the deterministic
 * cluster simulation and journals every node ({@link SimJournalRecorder}: {@code DIR/P0},
 * {@code DIR/D0}, ...), then prints a summary. The journal headers record the command line that
 * reproduces the run ({@code origin}). The options are checked, and the rerun line written, by the
 * simulator's {@link SimCommandLine}; the command keeps the output directory's check, the progress
 * line and what it prints.
 */
@Command(name = "simulate", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Runs the seeded prefill/decode cluster simulation with injected faults and writes one journal "
                + "per node into DIR (DIR/P0, DIR/D0, ...), then prints what happened.",
            "The same options always write the same journals. Follow with: kvledger hangs DIR, kvledger dump DIR."})
final class SimulateCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Option(names = "--seed", paramLabel = "N", defaultValue = "42", description = "the seed (default: ${DEFAULT-VALUE})")
    long seed;

    @Option(names = "--requests", paramLabel = "N", defaultValue = "100",
            description = "client requests (default: ${DEFAULT-VALUE})")
    int requests;

    @Option(names = "--faults", paramLabel = "SPEC", defaultValue = "none", converter = FaultSpecOption.Converter.class,
            description = {"faults as key=probability pairs, or none (default: ${DEFAULT-VALUE}).",
                FaultSpecOption.KEYS_HELP})
    FaultSpec faults;

    @Option(names = "--out", paramLabel = "DIR", required = true,
            description = "where to write the journals (a new or empty directory)")
    Path out;

    @Option(names = "--mode", paramLabel = "read|write", defaultValue = "write",
            description = "transfer mode of every node (default: ${DEFAULT-VALUE})")
    String mode;

    @Option(names = "--profile", paramLabel = "vllm-239b5ff30|seed|newest", defaultValue = "newest",
            description = "reducer behaviour profile (default: ${DEFAULT-VALUE})")
    String profile;

    @Option(names = "--prefill", paramLabel = "N", defaultValue = "1", description = "prefill instances (default: ${DEFAULT-VALUE})")
    int prefill;

    @Option(names = "--decode", paramLabel = "N", defaultValue = "1", description = "decode instances (default: ${DEFAULT-VALUE})")
    int decode;

    @Option(names = "--prefill-tp", paramLabel = "N", defaultValue = "1",
            description = "TP size of each prefill instance, one node per TP rank (default: ${DEFAULT-VALUE})")
    int prefillTp;

    @Option(names = "--decode-tp", paramLabel = "N", defaultValue = "1",
            description = "TP size of each decode instance, one node per TP rank (default: ${DEFAULT-VALUE})")
    int decodeTp;

    @Option(names = "--prefill-dp", paramLabel = "N", defaultValue = "1",
            description = "DP size of each prefill instance, one engine per DP rank (P<i>-dp<r>); not with --prefill-tp "
                    + "above 1, whose ports would collide (class 23) (default: ${DEFAULT-VALUE})")
    int prefillDp;

    @Option(names = "--decode-dp", paramLabel = "N", defaultValue = "1",
            description = "DP size of each decode instance, one engine per DP rank (D<i>-dp<r>); not with --decode-tp "
                    + "above 1 (default: ${DEFAULT-VALUE})")
    int decodeDp;

    @Option(names = "--multi-pod",
            description = "DP ranks on pods of several hosts. WRITE: each decode instance a pod on a host of its own, whose "
                    + "remote_hosts and remote_dp_size_local the proxy gives the prefill leg. READ: each prefill DP rank a pod "
                    + "of its own (remote_dp_size_local 1), given to the decode leg; under the newest profile the decode's "
                    + "eager handshake join waits without a deadline (class 37)")
    boolean multiPod;

    @Option(names = "--unbounded-read-wait",
            description = "READ only: a decode engine step waits for every read it posted without a deadline, as the WideEP "
                    + "reader of #45749 does, instead of giving up at transfer_timeout; with --faults stall=P a read that "
                    + "never completes leaves partial completions (class 33)")
    boolean unboundedReadWait;

    @Option(names = "--set", paramLabel = "SWITCH=true|false",
            description = "turn one reducer switch on or off after --profile (e.g. write-done-worker-pod-hosts=true); repeatable")
    List<String> sets = new ArrayList<>();

    @Option(names = "--defer-timeout-s", converter = DurationOption.class, paramLabel = "S",
            description = "the connectors' defer_timeout in seconds (default: the simulator's, 60)")
    Double deferTimeoutS;

    @Option(names = "--time-limit-s", converter = DurationOption.class, paramLabel = "S",
            description = "virtual time after which the run stops waiting for requests; it then runs defer_timeout + 1 s "
                    + "longer for reaping (default: the simulator's, 120)")
    Double timeLimitS;

    @Option(names = "--idle-step-ms", converter = DurationOption.Millis.class, paramLabel = "MS",
            description = "length of an engine step that schedules nothing (default: the simulator's, 10); "
                    + "longer idle steps give much smaller journals")
    Double idleStepMs;

    @Option(names = "--tick-ms", converter = DurationOption.Millis.class, paramLabel = "MS",
            description = "period of the background tick of an engine with no requests (default: the simulator's, 100)")
    Double tickMs;

    @Option(names = "--json", description = "print the summary as one JSON object")
    boolean json;

    @Override
    public Integer call() {
        SimCommandLine line = new SimCommandLine(seed, requests, faults, mode, profile, prefill, decode, prefillTp, decodeTp,
                prefillDp, decodeDp, multiPod, unboundedReadWait, sets, deferTimeoutS, timeLimitS, idleStepMs, tickMs);
        Checked<SimOptions> checked = line.options();
        if (!checked.isOk()) {
            throw usage(checked.error());
        }
        SimOptions options = checked.value();
        checkOut();
        String origin = line.rerun();
        PrintWriter err = spec.commandLine().getErr();
        Progress progress = new Progress(err, "simulate");
        long expectedEndNs = options.timeLimitNs() + options.deferTimeoutNs() + 1_000_000_000L;
        Map<String, long[]> perNode = new LinkedHashMap<>();
        SimulationResult result;
        try (SimJournalRecorder rec = new SimJournalRecorder(out, origin)) {
            Recorder counting = new Recorder() {
                @Override
                public void nodeStarted(String node, NodeConfig config, List<Effect> startupEffects) {
                    rec.nodeStarted(node, config, startupEffects);
                    perNode.put(node, new long[] {1 + startupEffects.size()});
                }

                @Override
                public void applied(String node, long s, NodeEvent event, List<Effect> effects) {
                    rec.applied(node, s, event, effects);
                    perNode.get(node)[0] += 1 + effects.size();
                    if ((s & 0x3FF) == 0 && progress.due()) {
                        progress.update((double) event.atNs() / expectedEndNs, String.format(Locale.ROOT,
                                "virtual %s, %,d entries", io.kvledger.ledger.text.Seconds.offset(event.atNs()), rec.entries()));
                    }
                }
            };
            result = Simulation.run(options, counting);
            progress.done(String.format(Locale.ROOT, "%,d entries", rec.entries()));
        } catch (JournalException e) {
            progress.done("failed");
            err.println("simulate: " + e.getMessage());
            return 1;
        }
        PrintWriter o = spec.commandLine().getOut();
        if (json) {
            SimulateReport.printJson(o, result, perNode, origin, profile, out);
        } else {
            SimulateReport.printText(o, result, perNode, origin, profile, out, DemoCommand.launcher());
        }
        return 0;
    }

    /** The output directory must be new, or an empty directory (journals are never mixed). */
    private void checkOut() {
        if (Files.exists(out) && !Files.isDirectory(out)) {
            throw usage("--out " + out + " is a file, not a directory");
        }
        if (Files.isDirectory(out)) {
            try (Stream<Path> s = Files.list(out)) {
                if (s.findAny().isPresent()) {
                    throw usage("--out " + out + " is not empty: simulate into a new or empty directory");
                }
            } catch (IOException e) {
                throw usage("cannot read --out " + out + ": " + e.getMessage());
            }
        }
    }

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }
}
