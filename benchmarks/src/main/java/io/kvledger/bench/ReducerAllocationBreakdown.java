package io.kvledger.bench;

import io.kvledger.bench.LifecycleScript.NodeStream;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Not a JMH benchmark: a diagnostic for {@link ReducerThroughputBenchmark}. It replays the
 * standard script many times and reads the thread's allocation counter around every
 * {@code NodeReducer.apply}, then prints the bytes allocated per (node, event type), largest
 * share first, and the effect mix. The counter reads themselves allocate nothing; the per-event
 * split is close to, not identical with, what the fused JMH loop allocates (escape analysis may
 * differ), so the total is also printed next to a whole-invocation measurement.
 *
 * <p>Run: {@code java -cp benchmarks/target/benchmarks.jar io.kvledger.bench.ReducerAllocationBreakdown [rounds]}
 */
public final class ReducerAllocationBreakdown {

    private ReducerAllocationBreakdown() {}

    public static void main(String[] args) {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 400;
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long tid = Thread.currentThread().threadId();
        NodeStream[] streams = LifecycleScript.standard().streams().toArray(new NodeStream[0]);
        int events = 0;
        for (NodeStream s : streams) {
            events += s.events().length;
        }
        // Warm up both loops so that the measured rounds run compiled code.
        long sink = 0;
        for (int i = 0; i < rounds; i++) {
            sink += wholeInvocation(streams);
            sink += perEvent(streams, mx, tid, null, null);
        }
        long before = mx.getThreadAllocatedBytes(tid);
        for (int i = 0; i < rounds; i++) {
            sink += wholeInvocation(streams);
        }
        double wholePerEvent = (double) (mx.getThreadAllocatedBytes(tid) - before) / rounds / events;

        Map<String, long[]> byType = new LinkedHashMap<>();
        Map<String, long[]> effects = new LinkedHashMap<>();
        for (int i = 0; i < rounds; i++) {
            sink += perEvent(streams, mx, tid, byType, i == 0 ? effects : null);
        }
        long total = 0;
        for (long[] v : byType.values()) {
            total += v[1];
        }
        System.out.printf("events per invocation: %d; whole-invocation allocation: %.1f B/event; per-event split total: %.1f B/event%n",
                events, wholePerEvent, (double) total / rounds / events);
        System.out.printf("%-16s %-26s %8s %10s %8s%n", "node", "event", "events", "B/event", "share");
        List<Map.Entry<String, long[]>> rows = new ArrayList<>(byType.entrySet());
        rows.sort(Comparator.comparingLong((Map.Entry<String, long[]> e) -> e.getValue()[1]).reversed());
        for (Map.Entry<String, long[]> e : rows) {
            String[] k = e.getKey().split(" ");
            long n = e.getValue()[0] / rounds;
            double bytes = (double) e.getValue()[1] / rounds;
            System.out.printf("%-16s %-26s %8d %10.0f %7.1f%%%n", k[0], k[1], n, bytes / n, 100.0 * e.getValue()[1] / total);
        }
        System.out.println("effects per invocation:");
        effects.entrySet().stream()
                .sorted(Comparator.comparingLong((Map.Entry<String, long[]> e) -> e.getValue()[0]).reversed())
                .forEach(e -> System.out.printf("  %-26s %8d%n", e.getKey(), e.getValue()[0]));
        if (sink == 42) {
            System.out.println();
        }
    }

    private static long wholeInvocation(NodeStream[] streams) {
        long n = 0;
        for (NodeStream stream : streams) {
            NodeState state = NodeState.initial(stream.config());
            for (NodeEvent e : stream.events()) {
                n += NodeReducer.apply(state, e).effects().size();
            }
        }
        return n;
    }

    private static long perEvent(NodeStream[] streams, com.sun.management.ThreadMXBean mx, long tid,
                                 Map<String, long[]> byType, Map<String, long[]> effects) {
        long n = 0;
        for (NodeStream stream : streams) {
            NodeState state = NodeState.initial(stream.config());
            String node = stream.kind().name();
            for (NodeEvent e : stream.events()) {
                long a = mx.getThreadAllocatedBytes(tid);
                List<Effect> out = NodeReducer.apply(state, e).effects();
                long b = mx.getThreadAllocatedBytes(tid);
                n += out.size();
                if (byType != null) {
                    long[] v = byType.computeIfAbsent(node + " " + e.getClass().getSimpleName(), k -> new long[2]);
                    v[0]++;
                    v[1] += b - a;
                }
                if (effects != null) {
                    for (Effect ef : out) {
                        effects.computeIfAbsent(ef.getClass().getSimpleName(), k -> new long[1])[0]++;
                    }
                }
            }
        }
        return n;
    }
}
