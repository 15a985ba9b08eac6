package io.kvledger.bench;

import io.kvledger.bench.LifecycleScript.NodeStream;
import io.kvledger.bench.LifecycleScript.Script;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import java.util.ArrayList;
import java.util.List;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * Question: how many node events per second does one core reduce, and how many bytes does the
 * reducer allocate per event, on a realistic request mix?
 *
 * <p>One invocation replays the whole {@link LifecycleScript#standard() standard script} (512
 * requests per mode; the WRITE producer, WRITE consumer, READ producer and READ consumer streams,
 * {@value #EVENTS} events in all) on four {@link NodeState}s created inside the invocation, so the
 * states' construction is part of the measured cost. Every event's effect list goes to the
 * Blackhole. {@link OperationsPerInvocation} is the event count, so scores and JMH's
 * {@code gc.alloc.rate.norm} are per event.
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
        "--add-opens=java.base/java.util=ALL-UNNAMED"})
@Warmup(iterations = 3, time = 2, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 2, timeUnit = TimeUnit.SECONDS)
public class ReducerThroughputBenchmark {

    /**
     * Events in {@link LifecycleScript#standard()}, all four streams. An annotation needs a
     * constant: {@link #loadScript()} refuses to run when the script no longer has this many events
     * (and the script's unit test checks it too), so change both together.
     */
    public static final int EVENTS = 27_100;

    private NodeStream[] streams;

    @Setup(Level.Trial)
    public void loadScript() {
        Script script = LifecycleScript.standard();
        if (script.totalEvents() != EVENTS) {
            throw new IllegalStateException("the standard script has " + script.totalEvents()
                    + " events; update ReducerThroughputBenchmark.EVENTS");
        }
        streams = script.streams().toArray(new NodeStream[0]);
    }

    /** Events per second (score x events per invocation is not needed: the score is per event). */
    @Benchmark
    @BenchmarkMode(Mode.Throughput)
    @OutputTimeUnit(TimeUnit.SECONDS)
    @OperationsPerInvocation(EVENTS)
    public void throughput(Blackhole bh) {
        replay(streams, bh);
    }

    /**
     * The same replay through {@link NodeReducer#applyInto} with one reused effect list, cleared
     * after each event: the shape of a live node's single reducer loop, which hands each event's
     * effects to the publishers before taking the next event.
     */
    @Benchmark
    @BenchmarkMode(Mode.Throughput)
    @OutputTimeUnit(TimeUnit.SECONDS)
    @OperationsPerInvocation(EVENTS)
    public void throughputReusedSink(Blackhole bh) {
        List<Effect> sink = new ArrayList<>(16);
        for (NodeStream stream : streams) {
            NodeState state = NodeState.initial(stream.config());
            for (NodeEvent e : stream.events()) {
                NodeReducer.applyInto(state, e, sink);
                bh.consume(sink);
                sink.clear();
            }
            bh.consume(state);
        }
    }

    /** Applies every stream, in order, to a fresh state of its node. */
    static void replay(NodeStream[] streams, Blackhole bh) {
        for (NodeStream stream : streams) {
            NodeState state = NodeState.initial(stream.config());
            for (NodeEvent e : stream.events()) {
                bh.consume(NodeReducer.apply(state, e).effects());
            }
            bh.consume(state);
        }
    }
}
