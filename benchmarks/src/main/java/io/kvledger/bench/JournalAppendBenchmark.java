package io.kvledger.bench;

import io.kvledger.bench.LifecycleScript.NodeStream;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalWriter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Question: how many single input events per second does {@link JournalWriter#appendInput} append
 * to a Chronicle Queue journal, and what are the latency percentiles of one append (p99 in
 * particular)? Targets: at least 1 million events/s, p99 under 10 microseconds.
 *
 * <p>Events: {@code mix} cycles through every event of {@link LifecycleScript#standard()} (the
 * four node streams, 27,100 events: admissions with params, block allocations with ~52 block ids,
 * steps, notifies, completions, ticks); {@code tick} appends the smallest event. Each append is
 * one excerpt: the 32-byte envelope (with the entry's CRC32C, format version 2) and the msgpack
 * payload. {@link #appendApplied} appends an input and the effects the reducer produced for it
 * (what a live node writes per event); its score counts inputs.
 *
 * <p>Each iteration writes to a fresh journal in a temporary directory, deleted after the
 * iteration, so a run does not fill the disk; the journal's page faults on its first pages are
 * part of the measurement.
 */
@State(Scope.Thread)
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
public class JournalAppendBenchmark {

    @Param({"mix", "tick"})
    public String events;

    private NodeEvent[] inputs;
    private List<Effect>[] effects;
    private JournalHeader header;
    private Path dir;
    private JournalWriter writer;
    private int next;

    @Setup(Level.Trial)
    @SuppressWarnings("unchecked")
    public void loadEvents() {
        List<NodeEvent> in = new ArrayList<>();
        List<List<Effect>> out = new ArrayList<>();
        NodeStream first = null;
        for (NodeStream s : LifecycleScript.standard().streams()) {
            first = first == null ? s : first;
            NodeState state = NodeState.initial(s.config());
            for (NodeEvent e : s.events()) {
                List<Effect> fx = NodeReducer.apply(state, e).effects();
                if (events.equals("tick")) {
                    e = new NodeEvent.Tick(e.atNs());
                    fx = List.of();
                }
                in.add(e);
                out.add(fx);
            }
        }
        inputs = in.toArray(new NodeEvent[0]);
        effects = out.toArray(new List[0]);
        header = JournalHeader.of("bench", first.config(), "JournalAppendBenchmark");
    }

    @Setup(Level.Iteration)
    public void openJournal() throws IOException {
        dir = Files.createTempDirectory("kvledger-journal-bench");
        writer = JournalWriter.open(dir.resolve("node"), header);
        next = 0;
    }

    @TearDown(Level.Iteration)
    public void deleteJournal() throws IOException {
        writer.close();
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }

    private NodeEvent nextEvent() {
        NodeEvent e = inputs[next];
        next = next + 1 == inputs.length ? 0 : next + 1;
        return e;
    }

    /** Single-event appends per second. */
    @Benchmark
    @BenchmarkMode(Mode.Throughput)
    @OutputTimeUnit(TimeUnit.SECONDS)
    public long appendInput() {
        return writer.appendInput(nextEvent());
    }

    /** The latency distribution of one append (JMH reports p50, p90, p99, p99.9, p99.99). */
    @Benchmark
    @BenchmarkMode(Mode.SampleTime)
    @OutputTimeUnit(TimeUnit.NANOSECONDS)
    public long appendInputLatency() {
        return writer.appendInput(nextEvent());
    }

    /** One input with its effects per operation, as a live node journals each reducer step. */
    @Benchmark
    @BenchmarkMode(Mode.Throughput)
    @OutputTimeUnit(TimeUnit.SECONDS)
    public long appendApplied() {
        int i = next;
        return writer.appendApplied(nextEvent(), effects[i]);
    }
}
