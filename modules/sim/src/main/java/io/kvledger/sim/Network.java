package io.kvledger.sim;

import io.kvledger.core.config.Role;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.function.LongFunction;

/**
 * The simulated ZMQ notify channel, handshake channel and RDMA data plane, with fault injection.
 *
 * <p>Notify frames are routed by {@code host:port} to the node whose listener binds there
 * ({@code notify_port + dp_local + tp_rank}); a frame to a port nobody listens on is lost, as a
 * ZMQ DEALER would queue it forever. Handshakes go to the node whose handshake listener binds the
 * dialed address and complete at the initiator. Posted transfers complete at the posting node
 * after a delay that grows with the number of blocks.
 *
 * <p>Every fault decision draws the same random numbers whatever the outcome, so that one fault
 * firing does not shift the draws of later frames.
 */
final class Network {

    /** A reordered frame is released after this long if no later frame to its destination comes. */
    private static final long REORDER_MAX_HOLD_NS = 500_000_000L;

    private record Held(SimNode to, LongFunction<NodeEvent> frame, boolean duplicate, long duplicateLagNs) {}

    private final Simulation sim;
    private final SimOptions opts;
    private final FaultSpec faults;
    private final SplittableRandom latency;
    private final SplittableRandom fault;
    private final TreeMap<String, SimNode> notifyListeners = new TreeMap<>();
    private final TreeMap<String, SimNode> handshakeListeners = new TreeMap<>();
    private final TreeMap<String, Held> held = new TreeMap<>();

    long framesSent;
    long framesDelivered;
    long framesLost;
    long framesDropped;
    long framesDuplicated;
    long framesDelayed;
    long framesReordered;
    long framesUnsupported;
    long framesSendFailed;
    long handshakesStarted;
    long handshakesFailed;
    long transfersPosted;
    long transfersFailed;
    long transfersStalled;

    Network(Simulation sim, SplittableRandom latency, SplittableRandom fault) {
        this.sim = sim;
        this.opts = sim.options();
        this.faults = opts.faults();
        this.latency = latency;
        this.fault = fault;
    }

    /** Binds the node's notify and handshake listeners; the first node to bind an address keeps it. */
    void bind(SimNode node) {
        notifyListeners.putIfAbsent(node.config().hostIp() + ":" + node.notifyPort(), node);
        handshakeListeners.putIfAbsent(node.config().hostIp() + ":" + node.handshakePort(), node);
    }

    /**
     * Sends a notify frame from {@code from} to {@code tcp://host:port}.
     *
     * @param type  the frame's message type, for a send failure
     * @param tid   the frame's transfer id, for a send failure ({@code null} when it has none)
     * @param frame makes the event the receiving listener turns the frame into, at its arrival time
     */
    void notify(SimNode from, String type, String tid, String host, int port, LongFunction<NodeEvent> frame) {
        framesSent++;
        String dest = host + ":" + port;
        // drawn only when the fault is on, so that runs without it keep their seeds' outcomes
        if (faults.sendFail() > 0 && fault.nextDouble() < faults.sendFail()) {
            framesSendFailed++;
            long reportAt = sim.now() + between(opts.netMinNs(), opts.netMaxNs());
            sim.at(reportAt, () -> from.deliver(new NodeEvent.NotifySendFailed(sim.now(), "tcp://" + dest, type, tid,
                    "send-fail fault: the publisher could not send the frame", new byte[0])));
            return;
        }
        long lag = between(opts.netMinNs(), opts.netMaxNs());
        long longLag = between(opts.longDelayMinNs(), opts.longDelayMaxNs());
        long dupLag = between(opts.netMinNs(), opts.netMaxNs());
        boolean drop = fault.nextDouble() < faults.drop();
        boolean delay = fault.nextDouble() < faults.delay();
        boolean reorder = fault.nextDouble() < faults.reorder();
        boolean duplicate = fault.nextDouble() < faults.dup();
        SimNode to = notifyListeners.get(dest);
        if (to == null) {
            framesLost++;
            return;
        }
        if (drop) {
            framesDropped++;
            return;
        }
        long at = sim.now() + lag;
        if (delay) {
            framesDelayed++;
            at += longLag;
        }
        Held previous = held.remove(dest);
        if (reorder && previous == null) {
            framesReordered++;
            Held h = new Held(to, frame, duplicate, dupLag);
            held.put(dest, h);
            long fallback = at;
            sim.at(sim.now() + REORDER_MAX_HOLD_NS, () -> {
                if (held.get(dest) == h) {
                    held.remove(dest);
                    release(h, Math.max(fallback, sim.now()));
                }
            });
            return;
        }
        deliver(to, frame, at);
        if (duplicate) {
            framesDuplicated++;
            deliver(to, frame, at + dupLag);
        }
        if (previous != null) {
            release(previous, at + 1);
        }
    }

    private void release(Held h, long at) {
        deliver(h.to(), h.frame(), at);
        if (h.duplicate()) {
            framesDuplicated++;
            deliver(h.to(), h.frame(), at + h.duplicateLagNs());
        }
    }

    private void deliver(SimNode to, LongFunction<NodeEvent> frame, long at) {
        sim.at(at, () -> {
            framesDelivered++;
            to.deliver(frame.apply(sim.now()));
        });
    }

    /** A frame type no node event carries (the open-PR {@code write_failed}): counted, not delivered. */
    void unsupported() {
        framesSent++;
        framesUnsupported++;
    }

    /** Starts a handshake; its answer comes back to {@code from}. */
    void handshake(SimNode from, Effect.StartHandshake h) {
        handshakesStarted++;
        long lag = between(opts.handshakeMinNs(), opts.handshakeMaxNs());
        boolean fail = fault.nextDouble() < faults.handshakeFail();
        String dest = h.host() + ":" + h.port();
        if (!handshakeListeners.containsKey(dest)) {
            if (opts.unboundedEagerHandshake() && from.config().role() == Role.CONSUMER) {
                return; // the eager handshake's recv and join have no timeout: never answered, never failed
            }
            // Python's initiator blocks forever; the step gives up after transfer_timeout.
            handshakesFailed++;
            sim.at(sim.now() + opts.transferTimeoutNs(), () -> from.deliver(
                    new NodeEvent.HandshakeFailed(sim.now(), h.key(), "no handshake listener at " + dest)));
            return;
        }
        if (fail) {
            handshakesFailed++;
            sim.at(sim.now() + lag, () -> from.deliver(
                    new NodeEvent.HandshakeFailed(sim.now(), h.key(), "injected handshake failure")));
            return;
        }
        sim.at(sim.now() + lag, () -> from.deliver(new NodeEvent.HandshakeCompleted(sim.now(), h.key())));
    }

    /** Posts one batch read or write of {@code blocks} blocks; it completes at {@code from}. */
    void transfer(SimNode from, long statusId, int blocks) {
        transfersPosted++;
        boolean fail = fault.nextDouble() < faults.fail();
        boolean stall = fault.nextDouble() < faults.stall();
        if (stall) {
            transfersStalled++;
            return;
        }
        // drawn only when asked for, so that every other fault family keeps its random sequence
        boolean sqFull = !fail && faults.sqFull() > 0 && fault.nextDouble() < faults.sqFull();
        if (fail || sqFull) {
            transfersFailed++;
        }
        long at = sim.now() + opts.transferBaseNs() + opts.transferPerBlockNs() * blocks;
        sim.at(at, () -> from.deliver(new NodeEvent.TransferCompleted(sim.now(), statusId, !fail && !sqFull,
                fail || sqFull ? 1 : 0, fail ? "injected transfer failure" : sqFull ? "SQ full" : "")));
    }

    private long between(long min, long max) {
        return min == max ? min : min + latency.nextLong(max - min + 1);
    }
}
