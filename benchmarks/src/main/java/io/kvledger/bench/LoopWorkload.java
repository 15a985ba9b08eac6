package io.kvledger.bench;

import io.kvledger.bench.LifecycleScript.NodeKind;
import io.kvledger.bench.LifecycleScript.NodeStream;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.event.NodeEvents;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import java.util.ArrayList;
import java.util.List;

/**
 * The node-loop benchmark's workload ({@link NodeLoopRunner}): the WRITE producer and READ
 * consumer streams of a {@link LifecycleScript} (every hook call and notify of their lifecycles), moved in
 * time so that a live loop on {@code io.kvledger.node.loop.ServiceClock} sees them in its future.
 *
 * <p>Why the move: the script starts at time 0, so against a wall-clock node time every deadline
 * the state holds (transfer and defer timeouts) is long past; the loop would fire a {@code Tick}
 * whenever it caught up with its producer, every deadline would expire, and the later events would
 * be re-stamped. Moved an hour ahead of the clock, no deadline falls due during a run and the loop
 * applies exactly the scripted events, as the reducer benchmark does.
 */
public final class LoopWorkload {

    /** The node kinds whose streams the loop benchmark runs, in order. */
    public static final List<NodeKind> KINDS = List.of(NodeKind.WRITE_PRODUCER, NodeKind.READ_CONSUMER);

    /** How far ahead of the node clock the moved streams start. */
    public static final long AHEAD_NS = 3_600_000_000_000L;

    private LoopWorkload() {}

    /** The streams of {@link #KINDS} from the standard script. */
    public static List<NodeStream> streams() {
        return streams(LifecycleScript.DEFAULT_REQUESTS);
    }

    /** The streams of {@link #KINDS} from a script of {@code requests} requests per mode. */
    public static List<NodeStream> streams(int requests) {
        LifecycleScript.Script s = LifecycleScript.build(requests, LifecycleScript.DEFAULT_SEED);
        List<NodeStream> out = new ArrayList<>();
        for (NodeKind k : KINDS) {
            out.add(s.stream(k));
        }
        return out;
    }

    /** {@code events}, each {@code deltaNs} later. */
    public static NodeEvent[] moved(NodeEvent[] events, long deltaNs) {
        NodeEvent[] out = new NodeEvent[events.length];
        for (int i = 0; i < events.length; i++) {
            out[i] = NodeEvents.at(events[i], events[i].atNs() + deltaNs);
        }
        return out;
    }

    /** The state hash the reducer reaches on {@code events} from a fresh state of the stream. */
    public static long expectedHash(NodeStream stream, NodeEvent[] events) {
        NodeState state = stream.freshState();
        List<io.kvledger.core.effect.Effect> sink = new ArrayList<>(16);
        for (NodeEvent e : events) {
            sink.clear();
            NodeReducer.applyInto(state, e, sink);
        }
        return state.stateHash();
    }
}
