package io.kvledger.bench;

import io.kvledger.core.model.TransferId;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import io.kvledger.wire.EffectFrames;
import io.kvledger.zmq.BoundedFluxSink;
import io.kvledger.zmq.EventSink;
import io.kvledger.zmq.InboundFrame;
import io.kvledger.zmq.NotifyListenerAdapter;
import io.kvledger.zmq.NotifyListenerConfig;
import io.kvledger.zmq.NotifyPublisher;
import io.kvledger.zmq.PublisherConfig;
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
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;
import org.zeromq.SocketType;
import org.zeromq.ZMQ;
import reactor.core.Disposable;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Question: how many notifies per second go end to end over TCP loopback, from the reducer's
 * send effect to the event in the consumer's hands? Target: at least 300,000 per second.
 *
 * <p>One invocation sends {@value #BATCH} {@code remote_blocks} frames (290 bytes: the wire
 * vector's request id and transfer id shape, 7 block ids) and returns when the last one has been
 * counted by the consumer, so the score is frames per second end to end.
 * <ul>
 *   <li>{@code publisherToListener}: {@link NotifyPublisher#publish} (encode on the caller,
 *       hand-off to the publisher thread, DEALER) to a {@link NotifyListenerAdapter} (ROUTER,
 *       decode to {@code NodeEvent}) into a counting {@link EventSink} on the listener
 *       thread.</li>
 *   <li>{@code publisherToListenerToReducer}: the same into a {@link BoundedFluxSink} whose
 *       {@code Flux} is {@code publishOn} a single reducer thread that applies
 *       {@link NodeReducer#applyInto} to a WRITE producer's state (the node's real loop).</li>
 *   <li>{@code dealerToListener}: pre-encoded frames from a plain JeroMQ DEALER on the benchmark
 *       thread (no publisher), to isolate the listener side.</li>
 * </ul>
 * Every thread shares the machine's two cores with the others.
 */
@State(Scope.Benchmark)
@Threads(1)
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
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class NotifyThroughputBenchmark {

    public static final int BATCH = 20_000;

    private NotifyListenerAdapter countingListener;
    private NotifyListenerAdapter reducerListener;
    private NotifyPublisher publisher;
    private Scheduler reducerThread;
    private Disposable reducerLoop;
    private volatile long counted;
    private volatile long reduced;
    private volatile boolean resetState;
    private Effect.Notify[] toCounting;
    private Effect.Notify[] toReducer;
    private byte[][] frames;
    private ZMQ.Context dealerContext;
    private ZMQ.Socket dealer;

    @Setup(Level.Trial)
    public void open() {
        EventSink<InboundFrame> counter = f -> {
            counted = counted + 1; // one writer: the listener thread
            return true;
        };
        countingListener = NotifyListenerAdapter.open(NotifyListenerConfig.forEndpoint("tcp://127.0.0.1:*"), counter);
        BoundedFluxSink<InboundFrame> sink = new BoundedFluxSink<>(8192);
        reducerListener = NotifyListenerAdapter.open(NotifyListenerConfig.forEndpoint("tcp://127.0.0.1:*"), sink);
        reducerThread = Schedulers.newSingle("kvledger-bench-reducer");
        NodeConfig producer = NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).hostIp("127.0.0.1").build();
        NodeState[] state = {NodeState.initial(producer)};
        List<Effect> effects = new ArrayList<>();
        reducerLoop = sink.flux().publishOn(reducerThread, 1024).subscribe(f -> {
            if (resetState) {
                resetState = false;
                state[0] = NodeState.initial(producer);
            }
            NodeReducer.applyInto(state[0], f.event(), effects);
            effects.clear();
            reduced = reduced + 1;
        });
        publisher = NotifyPublisher.open(PublisherConfig.DEFAULT, EventSink.discarding());
        toCounting = effects(countingListener.port());
        toReducer = effects(reducerListener.port());
        EffectFrames enc = new EffectFrames();
        frames = new byte[BATCH][];
        for (int i = 0; i < BATCH; i++) {
            frames[i] = enc.encode(toCounting[i]).frame();
        }
        dealerContext = ZMQ.context(1);
        dealer = dealerContext.socket(SocketType.DEALER);
        dealer.setSndHWM(0);
        dealer.setLinger(0);
        dealer.connect(countingListener.endpoint());
        // first frames establish both connections (and get past a stalled connect: see StallKicker)
        long deadline = System.nanoTime() + 30_000_000_000L;
        long before = counted;
        while (counted == before && System.nanoTime() < deadline) {
            dealer.send(frames[0], ZMQ.DONTWAIT);
            sleepMs(20);
        }
        publisher.publish(toCounting[0]);
        publisher.publish(toReducer[0]);
        while (reduced == 0 && System.nanoTime() < deadline) {
            sleepMs(5);
        }
        if (reduced == 0 || counted == before) {
            throw new IllegalStateException("connections did not come up");
        }
    }

    private static Effect.Notify[] effects(int port) {
        Effect.Notify[] e = new Effect.Notify[BATCH];
        for (int i = 0; i < BATCH; i++) {
            e[i] = new Effect.SendRemoteBlocks("127.0.0.1", port, WireCodecBenchmark.REQ_ID,
                    TransferId.of(String.format("tx-%08d-7b3d-4c1e-9f00-3a5b6c7d8e9f", i)), List.of(0, 1, 2, 127, 128, 65535, 65536), 3);
        }
        return e;
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long publisherToListener() {
        long target = counted + BATCH;
        for (Effect.Notify e : toCounting) {
            while (!publisher.publish(e)) {
                Thread.yield();
            }
        }
        return awaitCount(() -> counted, target);
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long publisherToListenerToReducer() {
        resetState = true;
        long target = reduced + BATCH;
        for (Effect.Notify e : toReducer) {
            while (!publisher.publish(e)) {
                Thread.yield();
            }
        }
        return awaitCount(() -> reduced, target);
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long dealerToListener() {
        long target = counted + BATCH;
        for (byte[] f : frames) {
            // the frames are never modified, so handing JeroMQ the same arrays again is safe
            dealer.send(f, 0);
        }
        return awaitCount(() -> counted, target);
    }

    private static long awaitCount(java.util.function.LongSupplier count, long target) {
        long c;
        int spins = 0;
        while ((c = count.getAsLong()) < target) {
            if (++spins < 200) {
                Thread.onSpinWait();
            } else {
                Thread.yield();
            }
        }
        return c;
    }

    @TearDown(Level.Trial)
    public void close() {
        dealer.close();
        dealerContext.term();
        publisher.close();
        countingListener.close();
        reducerListener.close();
        reducerLoop.dispose();
        reducerThread.dispose();
    }

    static void sleepMs(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
