package io.kvledger.cli;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Switch;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalException;
import io.kvledger.node.sim.SimJournalRecorder;
import io.kvledger.node.sim.SimulateReport;
import io.kvledger.sim.FaultSpec;
import io.kvledger.sim.Recorder;
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
 * reproduces the run ({@code origin}).
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

    @Option(names = "--multi-pod",
            description = "WRITE only: the proxy gives each prefill leg its decode's remote_hosts and remote_dp_size_local, "
                    + "and each decode instance is a pod on a host of its own")
    boolean multiPod;

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

    /** Reads {@code --faults}; a bad spec is a usage error naming the bad token. */

    @Override
    public Integer call() {
        if (requests < 1) {
            throw usage("--requests must be at least 1, got " + requests);
        }
        if (prefill < 1 || decode < 1) {
            throw usage("--prefill and --decode must be at least 1");
        }
        if (prefillTp < 1 || decodeTp < 1) {
            throw usage("--prefill-tp and --decode-tp must be at least 1");
        }
        TransferMode m = switch (mode.toLowerCase(Locale.ROOT)) {
            case "read" -> TransferMode.READ;
            case "write" -> TransferMode.WRITE;
            default -> throw usage("--mode must be read or write, got '" + mode + "'");
        };
        Behaviour behaviour = Behaviour.preset(profile);
        if (behaviour == null) {
            throw usage("--profile must be one of " + String.join(", ", io.kvledger.core.config.Behaviour.PRESETS) + ", got '" + profile + "'");
        }
        if (multiPod && m != TransferMode.WRITE) {
            throw usage("--multi-pod needs --mode write");
        }
        for (String set : sets) {
            behaviour = behaviour.with(switchOf(set), switchValue(set));
        }
        SimOptions.Builder b = SimOptions.builder(seed, m).requests(requests).nodes(prefill, decode).tp(prefillTp, decodeTp).faults(faults)
                .multiPod(multiPod).behaviour(behaviour).keepLog(false);
        if (deferTimeoutS != null) {
            b.deferTimeoutNs(positiveNs("--defer-timeout-s", deferTimeoutS, 1e9));
        }
        if (timeLimitS != null) {
            b.timeLimitNs(positiveNs("--time-limit-s", timeLimitS, 1e9));
        }
        if (idleStepMs != null) {
            b.idleStepNs(positiveNs("--idle-step-ms", idleStepMs, 1e6));
        }
        if (tickMs != null) {
            b.backgroundTickNs(positiveNs("--tick-ms", tickMs, 1e6));
        }
        SimOptions options;
        try {
            options = b.build();
        } catch (IllegalArgumentException e) {
            throw usage(e.getMessage());
        }
        checkOut();
        String origin = rerun(m);
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
                                "virtual %.1f s, %,d entries", event.atNs() / 1e9, rec.entries()));
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
            SimulateReport.printText(o, result, perNode, origin, profile, out);
        }
        return 0;
    }

    private Switch switchOf(String set) {
        int eq = set.indexOf('=');
        Switch s = eq < 0 ? null : Switch.byKey(set.substring(0, eq));
        if (s == null) {
            throw usage("--set takes SWITCH=true|false with a reducer switch's key, got '" + set + "'");
        }
        return s;
    }

    private boolean switchValue(String set) {
        String v = set.substring(set.indexOf('=') + 1);
        return switch (v) {
            case "true" -> true;
            case "false" -> false;
            default -> throw usage("--set " + set + ": the value must be true or false");
        };
    }

    private long positiveNs(String option, double v, double scale) {
        if (!(v > 0) || Double.isInfinite(v)) {
            throw usage(option + " must be positive, got " + v);
        }
        return Math.round(v * scale);
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

    private String rerun(TransferMode m) {
        StringBuilder b = new StringBuilder("kvledger simulate --seed ").append(seed).append(" --requests ").append(requests)
                .append(" --faults ").append(faults.format()).append(" --mode ").append(m.name().toLowerCase(Locale.ROOT))
                .append(" --profile ").append(profile);
        if (prefill != 1 || decode != 1) {
            b.append(" --prefill ").append(prefill).append(" --decode ").append(decode);
        }
        if (prefillTp != 1 || decodeTp != 1) {
            b.append(" --prefill-tp ").append(prefillTp).append(" --decode-tp ").append(decodeTp);
        }
        if (multiPod) {
            b.append(" --multi-pod");
        }
        for (String set : sets) {
            b.append(" --set ").append(set);
        }
        if (deferTimeoutS != null) {
            b.append(" --defer-timeout-s ").append(num(deferTimeoutS));
        }
        if (timeLimitS != null) {
            b.append(" --time-limit-s ").append(num(timeLimitS));
        }
        if (idleStepMs != null) {
            b.append(" --idle-step-ms ").append(num(idleStepMs));
        }
        if (tickMs != null) {
            b.append(" --tick-ms ").append(num(tickMs));
        }
        return b.toString();
    }

    private static String num(double v) {
        return v == Math.rint(v) ? Long.toString((long) v) : Double.toString(v);
    }

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }
}
