package io.kvledger.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.profile.InternalProfiler;
import org.openjdk.jmh.results.AggregationPolicy;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.ScalarResult;

/**
 * A JMH profiler ({@code -prof io.kvledger.bench.CpuTimeProfiler}) that reports the CPU time the
 * benchmark threads spent per operation in each iteration ({@code cpu.time.norm}, ns/op), the user
 * part of it ({@code cpu.user.norm}: without the kernel's time, page faults included) and the
 * share of the iteration's wall time they were on a CPU ({@code cpu.share}). On a shared machine
 * a throughput score is CPU time per operation times the share the scheduler happened to grant:
 * {@code cpu.time.norm} is the first factor alone, so two builds measured in the same run under
 * load can be compared on the work per call even when the load average moves between forks.
 * It counts the JMH worker threads only (GC and JIT threads are not in it).
 */
public final class CpuTimeProfiler implements InternalProfiler {

    private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    private final Map<Long, Long> before = new HashMap<>();
    private final Map<Long, Long> userBefore = new HashMap<>();
    private long wallBefore;

    @Override
    public String getDescription() {
        return "CPU time of the JMH worker threads per operation (ns/op) and their share of wall time";
    }

    @Override
    public void beforeIteration(BenchmarkParams benchmarkParams, IterationParams iterationParams) {
        before.clear();
        userBefore.clear();
        snapshot(before, userBefore);
        wallBefore = System.nanoTime();
    }

    @Override
    public List<? extends Result> afterIteration(BenchmarkParams benchmarkParams, IterationParams iterationParams,
            IterationResult result) {
        long wall = System.nanoTime() - wallBefore;
        Map<Long, Long> after = new HashMap<>();
        Map<Long, Long> userAfter = new HashMap<>();
        snapshot(after, userAfter);
        long cpu = 0;
        for (Map.Entry<Long, Long> e : after.entrySet()) {
            cpu += e.getValue() - before.getOrDefault(e.getKey(), 0L);
        }
        long user = 0;
        for (Map.Entry<Long, Long> e : userAfter.entrySet()) {
            user += e.getValue() - userBefore.getOrDefault(e.getKey(), 0L);
        }
        long ops = result.getMetadata().getAllOps();
        return List.of(
                new ScalarResult("cpu.time.norm", ops == 0 ? Double.NaN : (double) cpu / ops, "ns/op",
                        AggregationPolicy.AVG),
                new ScalarResult("cpu.user.norm", ops == 0 ? Double.NaN : (double) user / ops, "ns/op",
                        AggregationPolicy.AVG),
                new ScalarResult("cpu.share", (double) cpu / Math.max(1, wall), "cpu/wall", AggregationPolicy.AVG));
    }

    private void snapshot(Map<Long, Long> cpu, Map<Long, Long> user) {
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().contains("jmh-worker")) {
                long ns = threads.getThreadCpuTime(t.threadId());
                long us = threads.getThreadUserTime(t.threadId());
                if (ns >= 0 && us >= 0) {
                    cpu.put(t.threadId(), ns);
                    user.put(t.threadId(), us);
                }
            }
        }
    }
}
