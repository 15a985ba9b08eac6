package io.kvledger.bench;

import io.kvledger.bench.LifecycleScript.NodeStream;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalWriter;
import io.kvledger.node.loop.EffectRouter;
import io.kvledger.node.loop.Inbox;
import io.kvledger.node.loop.NodeLoop;
import io.kvledger.journal.ServiceClock;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;

/**
 * Question: how many events per second does a live node's {@link NodeLoop} take through with its
 * journal (a Chronicle Queue in a temporary directory) and without one, and what share of the
 * loop's throughput does the journal cost? Targets (issue 9): the journal costs under 20 % of the
 * loop's throughput; the loop sustains at least 100 k events/s per node.
 *
 * <p>A measured runner rather than JMH, because on this shared 2-core machine only ratios taken
 * within one round pair mean much: every round runs the three modes one after the other (which
 * goes first rotating), and the summary gives each mode's median and the median of the per-round
 * ratios.
 *
 * <p>Workload: {@link LoopWorkload} over a script of {@code --requests} requests per mode (the
 * WRITE producer's and the READ consumer's streams: every hook call and notify of their
 * lifecycles), moved once an hour ahead of the node clock and built before anything is timed. A
 * mode's round runs both nodes one after the other; for each, the runner's thread offers every
 * event to a fresh node's {@link Inbox} (default capacity; a refused offer is retried after 10 µs:
 * one producer thread, as an adapter is) and waits until the last one is through end to end:
 * journaled by the loop's journaller thread and its effects routed (the loop counts an event as
 * applied only then), so a round includes draining the journaller. The loop routes effects to
 * {@link EffectRouter#none()}. Modes:
 * <ul>
 *   <li>{@code journal}: a fresh journal per node and round (opened before the clock starts, so its
 *       first pages fault in during the round, as in {@code JournalAppendBenchmark});</li>
 *   <li>{@code noJournal}: the same loop with no journal ({@code null});</li>
 *   <li>{@code reducerAlone}: no loop: {@link NodeReducer#applyInto} on the runner's thread, the
 *       floor the loop adds its hand-off and bookkeeping to.</li>
 * </ul>
 * After each node's run the loop must have applied every event with no tick, no journal error and
 * no listener or router error, and reached the state hash the reducer reaches on the same events;
 * otherwise the runner stops with an error. Bytes per event are all threads' allocation during the
 * round ({@code ThreadMXBean.getTotalThreadAllocatedBytes}) over its events.
 *
 * <p>Usage: {@code java <project JVM flags> -cp benchmarks/target/benchmarks.jar
 * io.kvledger.bench.NodeLoopRunner [--requests N] [--rounds R] [--warmup W] [--dir DIR]
 * [--modes journal,no_journal,reducer_alone] [--ring N]} ({@code --ring}: the journaller's ring
 * capacity, a power of two; defaults: 4096 requests per mode, 7 rounds, 20 warm-up
 * rounds, journals under the system's temporary directory, all three modes). The loop thread's CPU
 * time over the round's wall time tells CPU work from waiting (page faults of the mapped journal
 * file, a core taken by other processes). In {@code journal} mode the journaller's and the
 * pretoucher's CPU time per event are printed too (the pretoucher populates the journal file's fresh
 * pages ahead of the journaller: the kernel's work for every byte written), and the bound their sum
 * sets on this machine's cores: three busy threads share them. The runner's own thread sleeps until
 * the loop has applied the round's last event. The JIT keeps compiling for about 20 rounds (2 cores:
 * it competes with the threads measured), hence the 20 warm-up rounds.
 */
public final class NodeLoopRunner {

    enum Mode { JOURNAL, NO_JOURNAL, REDUCER_ALONE }

    /**
     * Events and wall time of a mode's round; bytes allocated; CPU time of the thread that applied
     * the events (the loop threads, or the runner's thread for {@code reducerAlone}).
     */
    record Result(long events, long ns, long bytes, long loopCpuNs, long journallerCpuNs, long pretouchCpuNs) {
        double perSecond() {
            return events / (ns / 1e9);
        }

        double cpuUsPerEvent() {
            return loopCpuNs / 1e3 / events;
        }

        double journallerCpuUsPerEvent() {
            return journallerCpuNs / 1e3 / events;
        }

        double pretouchCpuUsPerEvent() {
            return pretouchCpuNs / 1e3 / events;
        }

        /** CPU of every thread the mode keeps busy (loop, journaller, pretoucher), per event. */
        double totalCpuUsPerEvent() {
            return (loopCpuNs + journallerCpuNs + pretouchCpuNs) / 1e3 / events;
        }

        /**
         * The most events/s the mode's threads could take on {@code cores} cores with a perfect
         * hand-off: no thread faster than its own CPU per event, all of them together no faster
         * than the cores.
         */
        double boundPerSecond(int cores) {
            double slowest = Math.max(loopCpuNs, Math.max(journallerCpuNs, pretouchCpuNs)) / 1e3 / events;
            return 1e6 / Math.max(slowest, totalCpuUsPerEvent() / cores);
        }
    }

    /** Wakes the runner's thread once the loop has applied (and routed) the round's last event. */
    private static final class AllApplied implements NodeLoop.Listener {
        private final long target;
        private final Thread waiter;
        private long seen;
        volatile boolean reached;

        AllApplied(long target, Thread waiter) {
            this.target = target;
            this.waiter = waiter;
        }

        @Override
        public void onApplied(long seq, NodeEvent event, List<Effect> effects) {
            if (++seen == target) {
                reached = true;
                LockSupport.unpark(waiter);
            }
        }
    }

    private final List<NodeStream> streams;
    private final NodeEvent[][] events;
    private final long[] expected;
    private final Path parent;
    private final List<Mode> modes;
    /** The journaller's ring capacity (0: the loop's default). */
    int ring;

    NodeLoopRunner(List<NodeStream> streams, long deltaNs, Path parent, List<Mode> modes) {
        this.streams = streams;
        this.parent = parent;
        this.modes = modes;
        this.events = new NodeEvent[streams.size()][];
        this.expected = new long[streams.size()];
        for (int i = 0; i < streams.size(); i++) {
            events[i] = LoopWorkload.moved(streams.get(i).events(), deltaNs);
            expected[i] = LoopWorkload.expectedHash(streams.get(i), events[i]);
        }
    }

    public static void main(String[] args) throws Exception {
        int requests = 4096;
        int rounds = 7;
        int warmup = 20;
        Path parent = null;
        List<Mode> modes = List.of(Mode.values());
        int ring = 0;
        for (int i = 0; i < args.length; i += 2) {
            if (args[i].equals("--help") || args[i].equals("-h")) {
                System.out.println("usage: NodeLoopRunner [--requests N] [--rounds R] [--warmup W] [--dir DIR] "
                        + "[--modes journal,no_journal,reducer_alone] [--ring N]");
                return;
            }
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException(args[i] + " needs a value");
            }
            switch (args[i]) {
                case "--requests" -> requests = Integer.parseInt(args[i + 1]);
                case "--rounds" -> rounds = Integer.parseInt(args[i + 1]);
                case "--warmup" -> warmup = Integer.parseInt(args[i + 1]);
                case "--dir" -> parent = Path.of(args[i + 1]);
                case "--ring" -> ring = Integer.parseInt(args[i + 1]);
                case "--modes" -> modes = Arrays.stream(args[i + 1].split(","))
                        .map(x -> Mode.valueOf(x.toUpperCase(Locale.ROOT))).toList();
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        long tb = System.nanoTime();
        List<NodeStream> streams = LoopWorkload.streams(requests);
        NodeLoopRunner runner = new NodeLoopRunner(streams, ServiceClock.system().getAsLong() + LoopWorkload.AHEAD_NS,
                parent, modes);
        runner.ring = ring;
        long total = 0;
        for (NodeEvent[] e : runner.events) {
            total += e.length;
        }
        System.out.printf(Locale.ROOT, "workload: %d requests per mode; %s: %,d events per round (built in %.1f s); "
                        + "%d available processors%n", requests,
                streams.stream().map(s -> s.kind() + " " + s.events().length).toList(), total,
                (System.nanoTime() - tb) / 1e9, Runtime.getRuntime().availableProcessors());
        Map<Mode, List<Result>> results = new EnumMap<>(Mode.class);
        for (Mode m : Mode.values()) {
            results.put(m, new ArrayList<>());
        }
        List<Double> journalRatios = new ArrayList<>();
        List<Double> cpuRatios = new ArrayList<>();
        List<Double> totalCpuRatios = new ArrayList<>();
        List<Double> boundRatios = new ArrayList<>();
        int cores = Runtime.getRuntime().availableProcessors();
        for (int r = -warmup; r < rounds; r++) {
            Map<Mode, Result> round = new EnumMap<>(Mode.class);
            StringBuilder line = new StringBuilder(r < 0 ? "warm-up" : "round " + (r + 1));
            for (int k = 0; k < modes.size(); k++) {
                Mode m = modes.get(Math.floorMod(r + k, modes.size()));
                Result x = runner.run(m);
                round.put(m, x);
                line.append(String.format(Locale.ROOT, "  %s %,.0f ev/s (%.0f B/ev, loop %.2f CPU us/ev, on CPU %.0f %%"
                                + "%s)", m, x.perSecond(), (double) x.bytes() / x.events(), x.cpuUsPerEvent(),
                        100.0 * x.loopCpuNs() / x.ns(), m != Mode.JOURNAL ? "" : String.format(Locale.ROOT,
                                "; journaller %.2f, pretoucher %.2f CPU us/ev", x.journallerCpuUsPerEvent(),
                                x.pretouchCpuUsPerEvent())));
            }
            System.out.println(line);
            if (r >= 0) {
                for (Mode m : modes) {
                    results.get(m).add(round.get(m));
                }
                if (round.containsKey(Mode.JOURNAL) && round.containsKey(Mode.NO_JOURNAL)) {
                    journalRatios.add(round.get(Mode.JOURNAL).perSecond() / round.get(Mode.NO_JOURNAL).perSecond());
                    cpuRatios.add(round.get(Mode.NO_JOURNAL).cpuUsPerEvent() / round.get(Mode.JOURNAL).cpuUsPerEvent());
                    totalCpuRatios.add(round.get(Mode.NO_JOURNAL).cpuUsPerEvent()
                            / round.get(Mode.JOURNAL).totalCpuUsPerEvent());
                    boundRatios.add(round.get(Mode.JOURNAL).boundPerSecond(cores)
                            / round.get(Mode.NO_JOURNAL).boundPerSecond(cores));
                }
            }
        }
        for (Mode m : modes) {
            double[] v = results.get(m).stream().mapToDouble(Result::perSecond).sorted().toArray();
            double[] b = results.get(m).stream().mapToDouble(x -> (double) x.bytes() / x.events()).sorted().toArray();
            double[] c = results.get(m).stream().mapToDouble(x -> (double) x.loopCpuNs() / x.ns()).sorted().toArray();
            double[] u = results.get(m).stream().mapToDouble(Result::cpuUsPerEvent).sorted().toArray();
            double[] j = results.get(m).stream().mapToDouble(Result::journallerCpuUsPerEvent).sorted().toArray();
            double[] p = results.get(m).stream().mapToDouble(Result::pretouchCpuUsPerEvent).sorted().toArray();
            System.out.printf(Locale.ROOT, "%-13s median %,.0f events/s (min %,.0f, max %,.0f), median %.0f B/event, "
                    + "loop median %.2f CPU us/event (%,.0f events/s on a core of its own), on CPU %.0f %% of the round%s%n",
                    m, median(v), v[0], v[v.length - 1], median(b), median(u), 1e6 / median(u), 100 * median(c),
                    m != Mode.JOURNAL ? "" : String.format(Locale.ROOT, "; journaller median %.2f CPU us/event "
                            + "(%,.0f events/s on a core of its own); pretoucher median %.2f CPU us/event", median(j),
                            1e6 / median(j), median(p)));
        }
        if (journalRatios.isEmpty()) {
            return;
        }
        double ratio = median(journalRatios.stream().mapToDouble(Double::doubleValue).toArray());
        System.out.printf(Locale.ROOT, "journal / noJournal, median of %d per-round ratios: %.3f (the journal costs "
                + "%.1f %% of the loop's throughput); per-round ratios %s%n", journalRatios.size(), ratio,
                100 * (1 - ratio), journalRatios.stream().map(x -> String.format(Locale.ROOT, "%.2f", x)).toList());
        double cpuRatio = median(cpuRatios.stream().mapToDouble(Double::doubleValue).toArray());
        System.out.printf(Locale.ROOT, "CPU per event, noJournal / journal, median of per-round ratios: %.3f (the journal "
                + "costs %.1f %% of the loop thread's CPU); per-round ratios %s%n", cpuRatio, 100 * (1 - cpuRatio),
                cpuRatios.stream().map(x -> String.format(Locale.ROOT, "%.2f", x)).toList());
        double totalRatio = median(totalCpuRatios.stream().mapToDouble(Double::doubleValue).toArray());
        System.out.printf(Locale.ROOT, "CPU per event, noJournal loop / (journal loop + journaller + pretoucher), median "
                + "of per-round ratios: %.3f; per-round ratios %s%n", totalRatio,
                totalCpuRatios.stream().map(x -> String.format(Locale.ROOT, "%.2f", x)).toList());
        double bound = median(boundRatios.stream().mapToDouble(Double::doubleValue).toArray());
        System.out.printf(Locale.ROOT, "bound on %d cores, journal / noJournal (a perfect hand-off: no thread faster "
                + "than its CPU per event, all busy threads together no faster than the cores), median of per-round "
                + "ratios: %.3f (the journal would cost %.1f %%); per-round %s%n", cores, bound, 100 * (1 - bound),
                boundRatios.stream().map(x -> String.format(Locale.ROOT, "%.2f", x)).toList());
    }

    Result run(Mode mode) throws Exception {
        long n = 0;
        long ns = 0;
        long bytes = 0;
        long cpu = 0;
        long jcpu = 0;
        long pcpu = 0;
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        List<Effect> sink = new ArrayList<>(16);
        for (int i = 0; i < streams.size(); i++) {
            NodeStream s = streams.get(i);
            NodeEvent[] ev = events[i];
            NodeState state = s.freshState();
            if (mode == Mode.REDUCER_ALONE) {
                long a0 = mx.getTotalThreadAllocatedBytes();
                long c0 = mx.getCurrentThreadCpuTime();
                long t0 = System.nanoTime();
                for (NodeEvent e : ev) {
                    sink.clear();
                    NodeReducer.applyInto(state, e, sink);
                }
                ns += System.nanoTime() - t0;
                cpu += mx.getCurrentThreadCpuTime() - c0;
                bytes += mx.getTotalThreadAllocatedBytes() - a0;
                n += ev.length;
                check(s, state.stateHash(), i);
                continue;
            }
            Path dir = parent == null ? Files.createTempDirectory("kvledger-loop-bench")
                    : Files.createTempDirectory(parent, "kvledger-loop-bench");
            JournalWriter journal = null;
            NodeLoop loop = null;
            try {
                if (mode == Mode.JOURNAL) {
                    journal = JournalWriter.open(dir.resolve(s.kind().name()),
                            JournalHeader.of(s.kind().name(), s.config(), "NodeLoopRunner"));
                }
                Inbox inbox = new Inbox(65_536);
                loop = ring == 0
                        ? new NodeLoop(s.kind().name(), state, journal, EffectRouter.none(), ServiceClock.system(), inbox, 0)
                        : new NodeLoop(s.kind().name(), state, journal, EffectRouter.none(), ServiceClock.system(), inbox, 0,
                                ring);
                // the runner's thread sleeps until the loop has applied the last event (the loop wakes
                // it), so it takes no CPU from the loop and the journaller while they run
                Thread runner = Thread.currentThread();
                AllApplied done = new AllApplied(ev.length, runner);
                loop.addListener(done);
                loop.start();
                long loopTid = thread("kvledger-node-loop-" + s.kind().name());
                long journallerTid = mode == Mode.JOURNAL ? thread("kvledger-journaller-" + s.kind().name()) : -1;
                long pretouchTid = mode == Mode.JOURNAL ? threadOrNone("kvledger-pretouch-" + s.kind().name()) : -1;
                long c0 = mx.getThreadCpuTime(loopTid);
                long j0 = journallerTid < 0 ? 0 : mx.getThreadCpuTime(journallerTid);
                long p0 = pretouchTid < 0 ? 0 : mx.getThreadCpuTime(pretouchTid);
                long a0 = mx.getTotalThreadAllocatedBytes();
                long t0 = System.nanoTime();
                for (NodeEvent e : ev) {
                    while (!inbox.offer(e)) {
                        LockSupport.parkNanos(10_000);
                    }
                }
                while (!done.reached) {
                    LockSupport.park(done);
                }
                ns += System.nanoTime() - t0;
                bytes += mx.getTotalThreadAllocatedBytes() - a0;
                cpu += mx.getThreadCpuTime(loopTid) - c0;
                jcpu += journallerTid < 0 ? 0 : mx.getThreadCpuTime(journallerTid) - j0;
                pcpu += pretouchTid < 0 ? 0 : mx.getThreadCpuTime(pretouchTid) - p0;
                n += ev.length;
                if (loop.ticks() != 0 || loop.journalErrors() != 0 || loop.loopErrors() != 0) {
                    throw new IllegalStateException(s.kind() + " " + mode + ": ticks " + loop.ticks() + ", journal errors "
                            + loop.journalErrors() + ", loop errors " + loop.loopErrors());
                }
                check(s, inbox.query(NodeState::stateHash).get(60, TimeUnit.SECONDS), i);
            } finally {
                if (loop != null) {
                    loop.close();
                }
                if (journal != null) {
                    journal.close();
                }
                try (Stream<Path> files = Files.walk(dir)) {
                    for (Path f : files.sorted(Comparator.reverseOrder()).toList()) {
                        Files.delete(f);
                    }
                }
            }
        }
        return new Result(n, ns, bytes, cpu, jcpu, pcpu);
    }

    /** The id of the running thread called {@code name}. */
    private static long thread(String name) {
        long id = threadOrNone(name);
        if (id < 0) {
            throw new IllegalStateException("no thread " + name);
        }
        return id;
    }

    /** The id of the running thread called {@code name}, or -1 when there is none. */
    private static long threadOrNone(String name) {
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().equals(name)) {
                return t.threadId();
            }
        }
        return -1;
    }

    private void check(NodeStream s, long hash, int i) {
        if (hash != expected[i]) {
            throw new IllegalStateException(s.kind() + ": the state differs from the reducer's on the same events");
        }
    }

    static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }
}
