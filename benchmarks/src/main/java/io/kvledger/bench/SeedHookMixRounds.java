package io.kvledger.bench;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Whole rounds of {@link SeedHookMix}, timed one by one: each round applies the
 * {@value SeedHookMixBenchmark#POOL} prebuilt requests (600,000 hook calls) to one long-lived
 * node state, the shape in which the issue saw single rounds swing under G1. Prints every round,
 * then the median, min and max; for profiling (JFR) and for the spread between rounds, next to
 * {@link SeedHookMixBenchmark}, which is the figure of record. Each round also gives the rate in
 * the timing thread's own CPU time ({@code ThreadMXBean}), which other processes on a shared
 * machine disturb less than the wall-clock rate (they still share the caches).
 *
 * <p>Usage: {@code java -cp benchmarks.jar io.kvledger.bench.SeedHookMixRounds
 * [write-producer|read-consumer] [rounds] [warmup-rounds]}
 */
public final class SeedHookMixRounds {

    private SeedHookMixRounds() {}

    public static void main(String[] args) {
        if (args.length > 3 || (args.length > 0 && !args[0].equals("write-producer") && !args[0].equals("read-consumer"))) {
            System.err.println("usage: SeedHookMixRounds [write-producer|read-consumer] [rounds] [warmup-rounds]");
            System.exit(2);
        }
        SeedHookMix.Mix mix = args.length > 0 && args[0].equals("read-consumer")
                ? SeedHookMix.Mix.READ_CONSUMER : SeedHookMix.Mix.WRITE_PRODUCER;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 10;
        int warmup = args.length > 2 ? Integer.parseInt(args[2]) : 3;
        NodeEvent[] events = SeedHookMix.events(mix, SeedHookMixBenchmark.POOL, 0x5eedL);
        NodeState state = NodeState.initial(mix.config());
        List<Effect> sink = new ArrayList<>(16);
        System.gc(); // the prebuilt pool goes to the old generation before the clock starts
        long calls = (long) SeedHookMixBenchmark.POOL * SeedHookMix.HOOKS_PER_REQUEST;
        double[] rates = new double[rounds];
        double[] cpuRates = new double[rounds];
        java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
        long effects = 0;
        for (int r = 0; r < warmup + rounds; r++) {
            long c0 = threads.getCurrentThreadCpuTime();
            long t0 = System.nanoTime();
            for (NodeEvent e : events) {
                NodeReducer.applyInto(state, e, sink);
                effects += sink.size();
                sink.clear();
            }
            long dt = System.nanoTime() - t0;
            long dc = threads.getCurrentThreadCpuTime() - c0;
            if (r >= warmup) {
                rates[r - warmup] = calls * 1e9 / dt;
                cpuRates[r - warmup] = calls * 1e9 / dc;
                System.out.printf(Locale.ROOT, "java %s round %d: %d calls in %.3f s = %.3f M calls/s (%.3f M calls per CPU second)%n",
                        mix, r - warmup + 1, calls, dt / 1e9, rates[r - warmup] / 1e6, cpuRates[r - warmup] / 1e6);
            }
        }
        double[] sorted = rates.clone();
        Arrays.sort(sorted);
        double[] cpuSorted = cpuRates.clone();
        Arrays.sort(cpuSorted);
        System.out.printf(Locale.ROOT, "java %s: median %.3f M calls/s, min %.3f, max %.3f (%d rounds; %d effects; %d live requests)%n",
                mix, sorted[rounds / 2] / 1e6, sorted[0] / 1e6, sorted[rounds - 1] / 1e6, rounds, effects,
                state.liveRequests());
        System.out.printf(Locale.ROOT, "java %s per CPU second: median %.3f M calls, min %.3f, max %.3f%n",
                mix, cpuSorted[rounds / 2] / 1e6, cpuSorted[0] / 1e6, cpuSorted[rounds - 1] / 1e6);
    }
}
