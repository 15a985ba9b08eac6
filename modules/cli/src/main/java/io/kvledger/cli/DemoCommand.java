package io.kvledger.cli;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.TransferMode;
import io.kvledger.sim.FaultSpec;
import io.kvledger.sim.SimOptions;
import io.kvledger.sim.Simulation;
import io.kvledger.sim.SimulationResult;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.TypeConversionException;

/**
 * {@code kvledger demo}: a seeded simulation of a prefill/decode cluster, first in WRITE mode, then
 * a shorter READ-mode run, each printed as a lifecycle report ({@link DemoReport}).
 */
@Command(name = "demo", mixinStandardHelpOptions = true, sortOptions = false,
        description = {
            "Simulates a disaggregated cluster (toy proxy, prefill and decode engines, one reducer per engine rank) "
                    + "from one seed, with injected faults, and prints per node the request phases, the requests that "
                    + "completed or hung, and every anomaly the reducers recorded.",
            "The same seed and options always print the same report."})
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

    @Option(names = "--faults", paramLabel = "SPEC", defaultValue = DEFAULT_FAULTS, converter = FaultSpecConverter.class,
            description = {"faults as key=probability pairs, or none (default: ${DEFAULT-VALUE}).",
                "Keys: drop, dup, delay, reorder (per notify frame), fail, stall (per transfer), "
                        + "handshake-fail (per handshake), abort (per request)."})
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

    /** Reads {@code --faults}; a bad spec is a usage error naming the bad token. */
    static final class FaultSpecConverter implements ITypeConverter<FaultSpec> {
        @Override
        public FaultSpec convert(String value) {
            try {
                return FaultSpec.parse(value);
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }

    @Override
    public Integer call() {
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
        PrintWriter out = spec.commandLine().getOut();
        DemoReport report = new DemoReport(out, fullIds, perKind);
        int runs = readRequests > 0 ? 2 : 1;
        report.header(seed, behaviour, faults, rerunCommand());
        report.run(1, runs, simulate(TransferMode.WRITE, requests, behaviour));
        if (readRequests > 0) {
            report.run(2, runs, simulate(TransferMode.READ, readRequests, behaviour));
        }
        out.flush();
        return 0;
    }

    private SimulationResult simulate(TransferMode mode, int n, Behaviour behaviour) {
        return Simulation.run(SimOptions.builder(seed, mode)
                .requests(n)
                .nodes(prefillNodes, decodeNodes)
                .faults(faults)
                .behaviour(behaviour)
                .keepLog(false)
                .build());
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
