package io.kvledger.bench;

import io.kvledger.ledger.diagnosis.Bounds;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalReader;
import io.kvledger.ledger.replay.ConfigOverrides;
import io.kvledger.ledger.replay.Hangs;
import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.ledger.replay.Replayer;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;

/**
 * Where the time of {@code kvledger replay} and {@code kvledger hangs} goes over a large journal
 * set (BigJournal's): the stages of the read path timed one by one, in one JVM, each over every
 * journal of the set:
 * <ul>
 *   <li>{@code scan}: {@link JournalReader#check}: the queue files read and every entry's checksum
 *       checked, nothing decoded;</li>
 *   <li>{@code decode}: {@link JournalReader#inputIterator()} to the end: scan plus the inputs
 *       decoded (derived entries skipped undecoded, as {@code replay} without {@code --verify} and
 *       {@code hangs} do);</li>
 *   <li>{@code replay}: a {@link Replayer} run with a listener that does nothing: decode, the
 *       merge across journals and the node reducers;</li>
 *   <li>{@code hangs}: {@link Hangs#analyse}: the replay plus the transfer ledger and the
 *       detectors.</li>
 * </ul>
 * Each stage runs {@code ROUNDS} times (default 3) after one warm-up pass of each; the figures
 * are per round (wall time and input events per second, process and thread CPU time) and the
 * median. The sum of the heap pools' peaks ({@link MemoryPoolMXBean#getPeakUsage()}) is printed
 * at the end: an upper bound of the peak heap (the pools peak at different times); the commands'
 * own heap figures come from {@code -Xlog:gc}.
 *
 * <p>Usage: {@code java <project flags> -cp benchmarks/target/benchmarks.jar
 * io.kvledger.bench.ReplayStages DIR [ROUNDS] [STAGE,...]} (stages: scan, decode, replay, hangs;
 * {@code types} alone prints the entries per type instead).
 */
public final class ReplayStages {

    private ReplayStages() {}

    public static void main(String[] args) {
        if (args.length < 1) {
            System.err.println("usage: ReplayStages DIR [ROUNDS] [scan,decode,replay,hangs]");
            System.exit(2);
        }
        Path dir = Path.of(args[0]);
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        List<String> stages = List.of((args.length > 2 ? args[2] : "scan,decode,replay,hangs").split(","));
        List<JournalInputs.NodeJournal> journals = JournalInputs.resolve(List.of(dir));
        if (stages.contains("types")) {
            types(journals);
            return;
        }
        long inputs = countInputs(journals);
        System.out.printf(Locale.ROOT, "%s: %d journals, %,d input events%n", dir, journals.size(), inputs);
        for (String stage : stages) {
            run(stage, journals); // warm-up
        }
        var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        var threads = ManagementFactory.getThreadMXBean();
        for (String stage : stages) {
            double[] s = new double[rounds];
            double[] cpu = new double[rounds];
            double[] main = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                long c0 = os.getProcessCpuTime();
                long m0 = threads.getCurrentThreadCpuTime();
                long t0 = System.nanoTime();
                long sink = run(stage, journals);
                s[r] = (System.nanoTime() - t0) / 1e9;
                cpu[r] = (os.getProcessCpuTime() - c0) / 1e9;
                main[r] = (threads.getCurrentThreadCpuTime() - m0) / 1e9;
                if (sink == Long.MIN_VALUE) {
                    System.out.println("(unreachable)");
                }
            }
            System.out.printf(Locale.ROOT, "%-7s wall (s):%s  median %.2f s = %.2f M input events/s; process CPU (s):%s;"
                            + " this thread's CPU (s):%s%n", stage, list(s), median(s), inputs / median(s) / 1e6,
                    list(cpu), list(main));
        }
        long peak = 0;
        for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
            if (p.getType() == MemoryType.HEAP) {
                peak += p.getPeakUsage().getUsed();
            }
        }
        System.out.printf(Locale.ROOT, "heap: sum of the heap pools' peaks %.0f MiB, max heap %.0f MiB%n",
                peak / 1048576.0, Runtime.getRuntime().maxMemory() / 1048576.0);
    }

    /** Input events and derived entries per type, over all journals. */
    private static void types(List<JournalInputs.NodeJournal> journals) {
        java.util.TreeMap<String, long[]> n = new java.util.TreeMap<>();
        for (JournalInputs.NodeJournal j : journals) {
            try (JournalReader r = j.open()) {
                for (JournalEntry e : r) {
                    String k = switch (e) {
                        case JournalEntry.Input in -> "input " + in.type().typeName();
                        case JournalEntry.Derived d -> "derived " + d.type().typeName();
                        case JournalEntry.Header h -> "header";
                        case JournalEntry.Proxy p -> "proxy " + p.event().getClass().getSimpleName();
                        case JournalEntry.Unknown u -> "unknown type " + u.typeId();
                    };
                    n.computeIfAbsent(k, x -> new long[1])[0]++;
                }
            }
        }
        n.forEach((k, v) -> System.out.printf(Locale.ROOT, "%-40s %,12d%n", k, v[0]));
    }

    private static double median(double[] v) {
        double[] sorted = v.clone();
        java.util.Arrays.sort(sorted);
        return sorted[v.length / 2];
    }

    private static String list(double[] v) {
        StringBuilder b = new StringBuilder();
        for (double x : v) {
            b.append(String.format(Locale.ROOT, " %.2f", x));
        }
        return b.toString();
    }

    private static long countInputs(List<JournalInputs.NodeJournal> journals) {
        long n = 0;
        for (JournalInputs.NodeJournal j : journals) {
            try (JournalReader r = j.open()) {
                for (Iterator<JournalEntry> it = r.inputIterator(); it.hasNext(); ) {
                    if (it.next() instanceof JournalEntry.Input) {
                        n++;
                    }
                }
            }
        }
        return n;
    }

    private static long run(String stage, List<JournalInputs.NodeJournal> journals) {
        long sink = 0;
        switch (stage) {
            case "scan" -> {
                for (JournalInputs.NodeJournal j : journals) {
                    sink += JournalReader.check(j.dir()).checked();
                }
            }
            case "decode" -> {
                for (JournalInputs.NodeJournal j : journals) {
                    try (JournalReader r = j.open()) {
                        for (Iterator<JournalEntry> it = r.inputIterator(); it.hasNext(); ) {
                            sink += it.next().atNs();
                        }
                    }
                }
            }
            case "replay" -> {
                try (Replayer r = Replayer.open(journals, ConfigOverrides.none()).recorded(false)) {
                    long[] n = {0};
                    r.run((node, in, fx, recorded) -> n[0] += fx.size());
                    sink += n[0];
                }
            }
            case "hangs" -> {
                try (Replayer r = Replayer.open(journals, ConfigOverrides.none()).recorded(false)) {
                    sink += Hangs.analyse(r, Bounds.defaults()).findings().size();
                }
            }
            default -> throw new IllegalArgumentException("unknown stage " + stage + " (scan, decode, replay, hangs)");
        }
        return sink;
    }
}
