package io.kvledger.node;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.sim.FaultSpec;
import io.kvledger.wire.EffectFrames;
import java.util.SplittableRandom;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import io.kvledger.core.event.NodeEventSink;

/**
 * Fault injection for live runs ({@code kvledger cluster --faults}), between the loop and the
 * publishers, with the simulator's fault keys: a notify frame is dropped ({@code drop}), sent
 * twice ({@code dup}), sent 1 to 50 ms late ({@code delay}, {@code reorder}) or reported as never
 * sent ({@code send-fail}, a journaled {@code NotifySendFailed}); a transfer fails at once
 * ({@code fail}) or never completes ({@code stall}); a handshake fails ({@code handshake-fail}).
 * The journal keeps the node's decision (the effect), not the injected loss: as with a real
 * network, only the peer's journal shows what did not arrive. {@code abort} is the router's.
 *
 * <p>Called on the loop thread; draws come from one seeded generator, so the decisions of a
 * node are the same for the same sequence of effects.
 */
final class LiveFaults implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger("io.kvledger.node");

    private final FaultSpec spec;
    private final SplittableRandom rng;
    private final NodeEventSink deliver;
    private final LongSupplier clock;
    private final ScheduledExecutorService delayer;
    private final AtomicLong injected = new AtomicLong();

    LiveFaults(FaultSpec spec, long seed, NodeEventSink deliver, LongSupplier clock) {
        this.spec = spec;
        this.rng = new SplittableRandom(seed);
        this.deliver = deliver;
        this.clock = clock;
        this.delayer = spec.delay() > 0 || spec.reorder() > 0
                ? Executors.newSingleThreadScheduledExecutor(r -> {
                    Thread t = new Thread(r, "kvledger-fault-delay");
                    t.setDaemon(true);
                    return t;
                })
                : null;
    }

    private boolean draw(double p) {
        return p > 0 && rng.nextDouble() < p;
    }

    /**
     * Sends a notify through {@code send} unless a fault says otherwise.
     */
    void notify(Effect.Notify e, Consumer<Effect.Notify> send) {
        String endpoint = "tcp://" + e.host() + ":" + e.port();
        String type = EffectFrames.messageType(e);
        String transferId = EffectFrames.transferId(e);
        if (draw(spec.drop())) {
            injected.incrementAndGet();
            LOG.log(System.Logger.Level.INFO, "fault: dropped " + type + " " + transferId + " to " + endpoint);
            return;
        }
        if (draw(spec.sendFail())) {
            injected.incrementAndGet();
            deliver.offer(new NodeEvent.NotifySendFailed(clock.getAsLong(), endpoint, type, transferId,
                    "injected send failure", new byte[0]));
            return;
        }
        if (delayer != null && (draw(spec.delay()) || draw(spec.reorder()))) {
            injected.incrementAndGet();
            long ms = 1 + rng.nextInt(50);
            delayer.schedule(() -> send.accept(e), ms, TimeUnit.MILLISECONDS);
            return;
        }
        send.accept(e);
        if (draw(spec.dup())) {
            injected.incrementAndGet();
            send.accept(e);
        }
    }

    /** Posts a transfer unless a fault fails or stalls it. */
    void transfer(Effect.Post e, Consumer<Effect.Post> post) {
        long statusId = e.statusId();
        if (draw(spec.fail())) {
            injected.incrementAndGet();
            deliver.offer(new NodeEvent.TransferCompleted(clock.getAsLong(), statusId, false, -1, "injected transfer failure"));
            return;
        }
        if (draw(spec.stall())) {
            injected.incrementAndGet();
            return;
        }
        post.accept(e);
    }

    /** Starts a handshake unless a fault fails it. */
    void handshake(Effect.StartHandshake e, Consumer<Effect.StartHandshake> start) {
        if (draw(spec.handshakeFail())) {
            injected.incrementAndGet();
            deliver.offer(new NodeEvent.HandshakeFailed(clock.getAsLong(), e.key(), "injected handshake failure"));
            return;
        }
        start.accept(e);
    }

    long injected() {
        return injected.get();
    }

    @Override
    public void close() {
        if (delayer != null) {
            delayer.shutdownNow();
        }
    }
}
