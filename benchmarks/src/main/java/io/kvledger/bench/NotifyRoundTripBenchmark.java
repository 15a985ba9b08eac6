package io.kvledger.bench;

import io.kvledger.core.model.TransferId;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.zmq.EventSink;
import io.kvledger.zmq.InboundFrame;
import io.kvledger.zmq.NotifyListenerAdapter;
import io.kvledger.zmq.NotifyListenerConfig;
import io.kvledger.zmq.NotifyPublisher;
import io.kvledger.zmq.PublisherConfig;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;
import org.zeromq.SocketType;
import org.zeromq.ZMQ;

/**
 * Question: how long does a notify round trip take between two kvledger nodes over TCP
 * loopback? Target: p50 under 100 microseconds.
 *
 * <ul>
 *   <li>{@code adapters}: node A's {@link NotifyPublisher} sends {@code remote_blocks} to node B's
 *       {@link NotifyListenerAdapter}; B's sink, on its listener thread, publishes a
 *       {@code release} through B's publisher to A's listener, whose sink counts it and unparks
 *       the benchmark thread. Two publisher hand-offs, two TCP hops, two decodes, two
 *       encodes.</li>
 *   <li>{@code rawJeromq}: the floor on this machine, a plain JeroMQ DEALER and an echoing
 *       ROUTER thread (one TCP round trip, no codec, no hand-off).</li>
 * </ul>
 * Sample-time mode: JMH reports the percentiles of single round trips.
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
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class NotifyRoundTripBenchmark {

    private NotifyListenerAdapter listenerA;
    private NotifyListenerAdapter listenerB;
    private NotifyPublisher publisherA;
    private NotifyPublisher publisherB;
    private volatile long echoes;
    private volatile Thread waiter;
    private Effect.SendRemoteBlocks toB;

    private ZMQ.Context rawContext;
    private ZMQ.Socket rawDealer;
    private Thread rawEcho;

    @Setup(Level.Trial)
    public void open() {
        listenerA = NotifyListenerAdapter.open(NotifyListenerConfig.forEndpoint("tcp://127.0.0.1:*"), f -> {
            echoes = echoes + 1; // one writer: A's listener thread
            Thread w = waiter;
            if (w != null) {
                LockSupport.unpark(w);
            }
            return true;
        });
        publisherA = NotifyPublisher.open(PublisherConfig.DEFAULT, EventSink.discarding());
        publisherB = NotifyPublisher.open(PublisherConfig.DEFAULT, EventSink.discarding());
        int portA = listenerA.port();
        EventSink<InboundFrame> echo = f -> {
            if (f.event() instanceof NodeEvent.RemoteBlocksReceived rb) {
                publisherB.publish(new Effect.SendRelease(Effect.Sender.WORKER, "127.0.0.1", portA, TransferId.of(rb.transferId()), 1));
            }
            return true;
        };
        listenerB = NotifyListenerAdapter.open(NotifyListenerConfig.forEndpoint("tcp://127.0.0.1:*"), echo);
        toB = new Effect.SendRemoteBlocks("127.0.0.1", listenerB.port(), WireCodecBenchmark.REQ_ID, TransferId.of(WireCodecBenchmark.TID),
                List.of(0, 1, 2, 127, 128, 65535, 65536), 3);
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (echoes == 0 && System.nanoTime() < deadline) {
            publisherA.publish(toB);
            NotifyThroughputBenchmark.sleepMs(20);
        }
        if (echoes == 0) {
            throw new IllegalStateException("no echo within 30 s");
        }

        rawContext = ZMQ.context(1);
        ZMQ.Socket router = rawContext.socket(SocketType.ROUTER);
        router.setLinger(0);
        router.bind("tcp://127.0.0.1:*");
        String endpoint = router.getLastEndpoint();
        rawEcho = new Thread(() -> {
            try {
                while (true) {
                    byte[] id = router.recv(0);
                    byte[] payload = router.recv(0);
                    router.sendMore(id);
                    router.send(payload, 0);
                }
            } catch (RuntimeException e) {
                router.close();
            }
        }, "kvledger-bench-raw-echo");
        rawEcho.setDaemon(true);
        rawEcho.start();
        rawDealer = rawContext.socket(SocketType.DEALER);
        rawDealer.setLinger(0);
        rawDealer.setReceiveTimeOut(50);
        rawDealer.connect(endpoint);
        byte[] probe = new byte[] {1};
        while (System.nanoTime() < deadline) {
            rawDealer.send(probe, 0);
            if (rawDealer.recv(0) != null) {
                break;
            }
            // a stalled fresh connect (see StallKicker) heals on the next handle change
            rawDealer.disconnect(endpoint);
            rawDealer.connect(endpoint);
        }
        rawDealer.setReceiveTimeOut(-1);
    }

    @Benchmark
    public long adapters() {
        // the waiting thread parks (as a consumer blocked on its inbox would) and A's listener
        // unparks it: spinning here would take a core from the threads on the measured path
        waiter = Thread.currentThread();
        long target = echoes + 1;
        publisherA.publish(toB);
        long c;
        while ((c = echoes) < target) {
            LockSupport.park(this);
        }
        return c;
    }

    @Benchmark
    public byte[] rawJeromq() {
        rawDealer.send(WireCodecBenchmark.TID.getBytes(java.nio.charset.StandardCharsets.US_ASCII), 0);
        return rawDealer.recv(0);
    }

    @TearDown(Level.Trial)
    public void close() throws InterruptedException {
        publisherA.close();
        publisherB.close();
        listenerA.close();
        listenerB.close();
        rawDealer.close();
        rawContext.term();
        rawEcho.join(5000);
    }
}
