package io.kvledger.bench;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.node.sim.SimJournalRecorder;
import io.kvledger.sim.FaultSpec;
import io.kvledger.sim.Recorder;
import io.kvledger.sim.SimOptions;
import io.kvledger.sim.Simulation;
import io.kvledger.sim.SimulationResult;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * Writes a large multi-node journal set for the CLI's replay benchmark ({@code kvledger replay DIR}
 * and {@code kvledger hangs DIR} over about 10 million input events; benchmarks/README.md).
 *
 * <p>The journals come from the simulator (one journal per node, {@code DIR/P0}, {@code DIR/D0},
 * ...), so every request has a realistic lifecycle on both legs (admission, chunked prefill,
 * notifies, per-layer writes or reads, deferred frees, ACKs, aborts) and the light faults leave a
 * few hangs for the detectors. A short calibration run measures input events per request; the
 * real run takes as many requests as the target needs, with a time limit long enough that no
 * request is cut short. Deterministic for a seed.
 *
 * <p>Usage: {@code java -cp benchmarks/target/benchmarks.jar io.kvledger.bench.BigJournal DIR
 * [--events N] [--seed S] [--prefill N] [--decode N] [--mode WRITE|READ] [--faults SPEC]
 * [--gap-ms MS]} (defaults: 10,000,000 events, seed 7, 2 prefill and 2 decode nodes, WRITE,
 * {@value #DEFAULT_FAULTS}, a request every 40 ms on average: a busy cluster that keeps up, where
 * the default 15 ms saturates two prefill nodes and requests queue). DIR must be missing or empty. Run it with the project's JVM flags
 * (Chronicle Queue needs them).
 */
public final class BigJournal {

    static final String DEFAULT_FAULTS = "drop=0.0005,dup=0.0005,delay=0.001,fail=0.0002,abort=0.002";
    static final int CALIBRATION_REQUESTS = 2_000;
    static final long DEFAULT_GAP_MS = 40;

    private BigJournal() {}

    /** Counts the input events a run applies. */
    private static final class Counter implements Recorder {
        long inputs;

        @Override
        public void applied(String node, long seq, NodeEvent event, List<Effect> effects) {
            inputs++;
        }
    }

    static SimOptions options(long seed, TransferMode mode, int requests, int prefill, int decode, FaultSpec faults,
                              long gapMs) {
        SimOptions.Builder b = SimOptions.builder(seed, mode).requests(requests).nodes(prefill, decode)
                .faults(faults).meanInterArrivalNs(gapMs * 1_000_000L).keepLog(false);
        SimOptions defaults = b.build();
        // Requests arrive over about requests * mean gap; 30 s more lets every lifecycle finish (a
        // healthy one takes a few seconds) before the run stops waiting for the hung ones and
        // reaps for defer_timeout + 1 s. A longer limit would only add idle ticks.
        long arrivals = requests * defaults.meanInterArrivalNs();
        return b.timeLimitNs(arrivals + 30 * NodeConfig.NS_PER_S).build();
    }

    private static long count(SimOptions o) {
        Counter c = new Counter();
        Simulation.run(o, c);
        return c.inputs;
    }

    public static void main(String[] args) throws IOException {
        if (args.length < 1 || args[0].startsWith("-")) {
            System.err.println("usage: BigJournal DIR [--events N] [--seed S] [--prefill N] [--decode N] "
                    + "[--mode WRITE|READ] [--faults SPEC] [--gap-ms MS]");
            System.exit(2);
        }
        Path out = Path.of(args[0]);
        long events = 10_000_000L;
        long seed = 7;
        int prefill = 2;
        int decode = 2;
        TransferMode mode = TransferMode.WRITE;
        FaultSpec faults = FaultSpec.parse(DEFAULT_FAULTS);
        long gapMs = DEFAULT_GAP_MS;
        for (int i = 1; i < args.length; i += 2) {
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException(args[i] + " needs a value");
            }
            String v = args[i + 1];
            switch (args[i]) {
                case "--events" -> events = Long.parseLong(v.replace("_", ""));
                case "--seed" -> seed = Long.parseLong(v);
                case "--prefill" -> prefill = Integer.parseInt(v);
                case "--decode" -> decode = Integer.parseInt(v);
                case "--mode" -> mode = TransferMode.valueOf(v.toUpperCase(Locale.ROOT));
                case "--faults" -> faults = FaultSpec.parse(v);
                case "--gap-ms" -> gapMs = Long.parseLong(v);
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        if (Files.exists(out)) {
            try (Stream<Path> s = Files.list(out)) {
                if (s.findAny().isPresent()) {
                    System.err.println("BigJournal: " + out + " is not empty");
                    System.exit(2);
                }
            }
        }

        // Input events grow about linearly with requests (engines step at a rate set by the load)
        // plus a fixed tail (engines idle and tick until deferred frees are reaped): two
        // calibration runs give both terms; the result lands within a few percent of the target.
        long t0 = System.nanoTime();
        long small = count(options(seed, mode, CALIBRATION_REQUESTS, prefill, decode, faults, gapMs));
        long large = count(options(seed, mode, 3 * CALIBRATION_REQUESTS, prefill, decode, faults, gapMs));
        double perRequest = (double) (large - small) / (2 * CALIBRATION_REQUESTS);
        double fixed = small - perRequest * CALIBRATION_REQUESTS;
        int requests = (int) Math.max(1, Math.ceil((events - fixed) / perRequest));
        System.out.printf(Locale.ROOT, "calibration: %d and %d requests -> %,d and %,d input events "
                        + "(%.1f per request + %.0f fixed; %.1f s); %d requests for %,d events%n",
                CALIBRATION_REQUESTS, 3 * CALIBRATION_REQUESTS, small, large, perRequest, fixed,
                (System.nanoTime() - t0) / 1e9, requests, events);

        long t1 = System.nanoTime();
        SimOptions o = options(seed, mode, requests, prefill, decode, faults, gapMs);
        String origin = "BigJournal seed=" + seed + " mode=" + mode + " requests=" + requests + " nodes=" + prefill + "P"
                + decode + "D gap=" + gapMs + "ms faults=" + faults.format();
        Counter inputs = new Counter();
        SimulationResult r;
        long entries;
        try (SimJournalRecorder rec = new SimJournalRecorder(out, origin)) {
            r = Simulation.run(o, new Recorder() {
                @Override
                public void nodeStarted(String node, NodeConfig config, List<Effect> startupEffects) {
                    rec.nodeStarted(node, config, startupEffects);
                }

                @Override
                public void applied(String node, long seq, NodeEvent event, List<Effect> effects) {
                    inputs.inputs++;
                    rec.applied(node, seq, event, effects);
                }
            });
            entries = rec.entries();
        }
        double s = (System.nanoTime() - t1) / 1e9;
        System.out.printf(Locale.ROOT, "wrote %s: %d nodes, %d requests, %,d input events, %,d entries (headers not "
                        + "counted), %.1f s (%.2f M entries/s); hung at the end: %d%n",
                out, r.nodes().size(), requests, inputs.inputs, entries, s, entries / s / 1e6, r.requestsHung());
        System.out.println("origin: " + origin);
    }
}
