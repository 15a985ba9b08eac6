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

    private static final byte[] CONTROL = new byte[64 << 10];
    private static final int CONTROL_PASSES = 2_048;
    private static final long CONTROL_BYTES = (long) CONTROL.length * CONTROL_PASSES;

    /**
     * 128 MiB of ints, about the size of the prebuilt pool: one random cycle through every index
     * (Sattolo's shuffle, fixed seed), which {@link #memoryControl} follows.
     */
    private static final int[] FAR = new int[32 << 20];
    private static final int FAR_READS = 1 << 20;

    private static void buildCycle() {
        for (int k = 0; k < FAR.length; k++) {
            FAR[k] = k;
        }
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(0x5eedL);
        for (int k = FAR.length - 1; k > 0; k--) {
            int j = rnd.nextInt(k);
            int t = FAR[k];
            FAR[k] = FAR[j];
            FAR[j] = t;
        }
    }

    /**
     * The memory control: {@value #FAR_READS} reads along the cycle of {@link #FAR}; each read's
     * address is the value of the one before, so every read waits for memory.
     */
    private static long memoryControl() {
        int i = 0;
        for (int k = 0; k < FAR_READS; k++) {
            i = FAR[i];
        }
        return i;
    }

    /** The control workload: CRC32C over the same 64 KiB, {@value #CONTROL_PASSES} times. */
    private static long control() {
        java.util.zip.CRC32C c = new java.util.zip.CRC32C();
        for (int i = 0; i < CONTROL_PASSES; i++) {
            c.update(CONTROL, 0, CONTROL.length);
        }
        return c.getValue();
    }

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
        buildCycle();
        System.gc(); // the prebuilt pool goes to the old generation before the clock starts
        long calls = (long) SeedHookMixBenchmark.POOL * SeedHookMix.HOOKS_PER_REQUEST;
        double[] rates = new double[rounds];
        double[] cpuRates = new double[rounds];
        double[] controlRates = new double[rounds];
        double[] memoryNsPerRead = new double[rounds];
        long controlSink = 0;
        java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
        long effects = 0;
        long[] where = ThreadPlacement.read();
        for (int r = 0; r < warmup + rounds; r++) {
            long[] from = where;
            long c0 = threads.getCurrentThreadCpuTime();
            long t0 = System.nanoTime();
            for (NodeEvent e : events) {
                NodeReducer.applyInto(state, e, sink);
                effects += sink.size();
                sink.clear();
            }
            long dt = System.nanoTime() - t0;
            long dc = threads.getCurrentThreadCpuTime() - c0;
            where = ThreadPlacement.read();
            // the control: a fixed computation in the core's own cache (CRC32C over 64 KiB, 2,048
            // times), timed right after the round; when it swings as the rounds do, the machine
            // (another tenant, the CPU's clock) moves them, not the reducer
            long k0 = System.nanoTime();
            long check = control();
            double controlRate = CONTROL_BYTES * 1e9 / (System.nanoTime() - k0);
            controlSink ^= check;
            long m0 = System.nanoTime();
            controlSink ^= memoryControl();
            double memoryNs = (System.nanoTime() - m0) / (double) FAR_READS;
            if (r >= warmup) {
                controlRates[r - warmup] = controlRate;
                memoryNsPerRead[r - warmup] = memoryNs;
                rates[r - warmup] = calls * 1e9 / dt;
                cpuRates[r - warmup] = calls * 1e9 / dc;
                System.out.printf(Locale.ROOT, "java %s round %d: %d calls in %.3f s = %.3f M calls/s (%.3f M calls per CPU second);"
                        + " control %.2f GB/s, memory %.1f ns per read; %s%n",
                        mix, r - warmup + 1, calls, dt / 1e9, rates[r - warmup] / 1e6, cpuRates[r - warmup] / 1e6,
                        controlRate / 1e9, memoryNs, ThreadPlacement.describe(from, where));
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
        double[] controlSorted = controlRates.clone();
        Arrays.sort(controlSorted);
        System.out.printf(Locale.ROOT, "control (CRC32C in cache) after each round: median %.2f GB/s, min %.2f, max %.2f%s%n",
                controlSorted[rounds / 2] / 1e9, controlSorted[0] / 1e9, controlSorted[rounds - 1] / 1e9,
                controlSink == 42 ? " " : "");
        double[] memorySorted = memoryNsPerRead.clone();
        Arrays.sort(memorySorted);
        System.out.printf(Locale.ROOT, "memory control (dependent reads along a random cycle over 128 MiB) after each round: median %.1f ns"
                + " per read, min %.1f, max %.1f%n", memorySorted[rounds / 2], memorySorted[0], memorySorted[rounds - 1]);
    }
}
