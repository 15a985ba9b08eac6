package io.kvledger.bench;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * Question: how many of the seed scheduler's hook calls per second does one core reduce on the
 * connector's own workload ({@link SeedHookMix}: six hook calls per request, one request per
 * step), and how many bytes does the reducer allocate per hook call? The Python side of the
 * same mix is {@code benchmarks/seed_hook_mix.py}; {@code benchmarks/seed-hook-mix.sh} runs both
 * alternately and prints the ratio.
 *
 * <p>The node is long-lived, as a live node's is: one {@link NodeState} per trial, with the
 * {@code seed} preset. The inputs are built before the clock starts: {@value #POOL} requests
 * (600,000 hook calls, the round). Each invocation applies the next {@value #BATCH}
 * requests of the pool through {@link NodeReducer.Bound#applyInto} (the live loop's form) with one reused effect list (the
 * live node's reducer loop), wrapping around at the end of the pool; a request id comes back
 * only after {@value #POOL} newer requests, long after it left every table. The admission event of
 * each request is applied too but not counted: {@link OperationsPerInvocation} is the hook
 * calls, so the score and {@code gc.alloc.rate.norm} are per hook call.
 */
@State(Scope.Benchmark)
@Fork(value = 1, jvmArgsAppend = {
        "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow",
        "-Dchronicle.analytics.disable=true", "-Dchronicle.announcer.disable=true",
        "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED", "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED",
        "--add-exports=java.base/jdk.internal.util=ALL-UNNAMED", "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
        "--add-exports=jdk.unsupported/sun.misc=ALL-UNNAMED",
        "--add-exports=jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED",
        "--add-opens=jdk.compiler/com.sun.tools.javac=ALL-UNNAMED", "--add-opens=java.base/java.io=ALL-UNNAMED",
        "--add-opens=java.base/java.lang=ALL-UNNAMED", "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
        "--add-opens=java.base/java.util=ALL-UNNAMED",
        // the live node's heap (the launcher's `node` flags): fixed and touched at start, so that no
        // round pays the page faults of a heap the collector grows (benchmarks/README.md, item 2)
        "-Xms2g", "-Xmx2g", "-XX:+AlwaysPreTouch"})
@Warmup(iterations = 3, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
public class SeedHookMixBenchmark {

    /** Requests built before the clock starts (600,000 hook calls). */
    public static final int POOL = 100_000;
    /** Requests per invocation. */
    public static final int BATCH = 1_000;
    /** Hook calls per invocation. */
    public static final int CALLS = BATCH * SeedHookMix.HOOKS_PER_REQUEST;

    @Param({"WRITE_PRODUCER", "READ_CONSUMER"})
    public SeedHookMix.Mix mix;

    private NodeEvent[] events;
    private NodeState state;
    private NodeReducer.Bound reducer;
    private final List<Effect> sink = new ArrayList<>(16);
    private int cursor;

    @Setup(Level.Trial)
    public void build() {
        events = SeedHookMix.events(mix, POOL, 0x5eedL);
        state = NodeState.initial(mix.config());
        reducer = NodeReducer.bind(state);
        cursor = 0;
        // The pool (about 150 MB) is born in the young generation; without this, G1 copies it
        // through the survivor spaces into the old generation during the first iterations
        // (young pauses of 100 to 300 ms on this machine), which is setup, not reducer work.
        System.gc();
    }

    /** Hook calls per second (each request's admission is applied but not counted). */
    @Benchmark
    @BenchmarkMode(Mode.Throughput)
    @OutputTimeUnit(TimeUnit.SECONDS)
    @OperationsPerInvocation(CALLS)
    public void hooks(Blackhole bh) {
        NodeEvent[] ev = events;
        NodeReducer.Bound r = reducer;
        List<Effect> out = sink;
        int from = cursor;
        int to = from + BATCH * SeedHookMix.EVENTS_PER_REQUEST;
        for (int i = from; i < to; i++) {
            r.applyInto(ev[i], out);
            bh.consume(out);
            out.clear();
        }
        cursor = to == ev.length ? 0 : to;
    }

    /** The node's state after the run (for tests and the round runner). */
    NodeState state() {
        return state;
    }
}
