package io.kvledger.zmq;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A minimal node loop for the bridge tests: one thread owns a {@link NodeState}, drains a bounded
 * inbox of bridge calls, applies each call's event with {@link NodeReducer#applyInto} into one
 * reused effect list and answers the call from that list, as the service's loop will.
 */
final class BridgeNodeLoop implements HookHandler, AutoCloseable {

    private final NodeState state;
    private final ArrayBlockingQueue<BridgeCall> inbox = new ArrayBlockingQueue<>(256);
    private final Thread thread;
    // appended by the loop thread, read by the test: a copy-on-write list would make a burst of
    // a million calls quadratic (each add copies the list) and stall the loop
    private final List<NodeEvent> applied = Collections.synchronizedList(new ArrayList<>());
    private final List<Effect> allEffects = Collections.synchronizedList(new ArrayList<>());
    private volatile boolean stop;

    BridgeNodeLoop(NodeConfig config) {
        this.state = NodeState.initial(config);
        this.thread = new Thread(this::run, "test-node-loop");
        this.thread.setDaemon(true);
        this.thread.start();
    }

    @Override
    public void onHook(BridgeCall call) {
        if (!inbox.offer(call)) {
            call.fail("node busy: inbox full");
        }
    }

    private void run() {
        List<Effect> sink = new ArrayList<>();
        while (!stop) {
            BridgeCall call;
            try {
                call = inbox.poll(50, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                return;
            }
            if (call == null) {
                continue;
            }
            NodeEvent event = call.event();
            sink.clear();
            NodeReducer.applyInto(state, event, sink);
            applied.add(event);
            allEffects.addAll(sink);
            call.reply(sink);
            sink.clear(); // the reply was encoded before reply() returned
        }
    }

    /** A copy of the events applied so far, in order. */
    List<NodeEvent> applied() {
        synchronized (applied) {
            return List.copyOf(applied);
        }
    }

    /** How many events were applied so far. */
    int appliedCount() {
        return applied.size();
    }

    /** A copy of every effect the applied events produced, in order. */
    List<Effect> effects() {
        synchronized (allEffects) {
            return List.copyOf(allEffects);
        }
    }

    @Override
    public void close() {
        stop = true;
        try {
            thread.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
