package io.kvledger.bench;

import io.kvledger.bench.LifecycleScript.NodeKind;
import io.kvledger.bench.LifecycleScript.NodeStream;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import java.util.ArrayList;
import java.util.List;

/**
 * The node-loop benchmark's workload ({@link NodeLoopRunner}): the WRITE producer and READ
 * consumer streams of a {@link LifecycleScript} (every hook call and notify of their lifecycles), moved in
 * time so that a live loop on {@code io.kvledger.service.ServiceClock} sees them in its future.
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
            out[i] = at(events[i], events[i].atNs() + deltaNs);
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

    /** The same event at time {@code t}; no default, so a new event type breaks the build here. */
    static NodeEvent at(NodeEvent e, long t) {
        return switch (e) {
            case NodeEvent.RequestAdmitted x -> new NodeEvent.RequestAdmitted(t, x.requestId(), x.numPromptTokens(),
                    x.promptTokenIds(), x.params());
            case NodeEvent.MatchedTokensQueried x -> new NodeEvent.MatchedTokensQueried(t, x.requestId(),
                    x.numComputedTokens());
            case NodeEvent.BlocksAllocated x -> new NodeEvent.BlocksAllocated(t, x.requestId(), x.blocks(),
                    x.numExternalTokens());
            case NodeEvent.StepScheduled x -> new NodeEvent.StepScheduled(t, x.step(), x.cachedRequests());
            case NodeEvent.RequestFinished x -> new NodeEvent.RequestFinished(t, x.requestId(), x.status(), x.blockIds());
            case NodeEvent.ConnectorOutputReceived x -> new NodeEvent.ConnectorOutputReceived(t, x.finishedSending(),
                    x.finishedRecving());
            case NodeEvent.LoadStarted x -> new NodeEvent.LoadStarted(t);
            case NodeEvent.LayerSaved x -> new NodeEvent.LayerSaved(t, x.layerName());
            case NodeEvent.SaveWaited x -> new NodeEvent.SaveWaited(t);
            case NodeEvent.FinishedPolled x -> new NodeEvent.FinishedPolled(t);
            case NodeEvent.HandshakeCompleted x -> new NodeEvent.HandshakeCompleted(t, x.key());
            case NodeEvent.HandshakeFailed x -> new NodeEvent.HandshakeFailed(t, x.key(), x.reason());
            case NodeEvent.TransferCompleted x -> new NodeEvent.TransferCompleted(t, x.statusId(), x.succeeded(),
                    x.code(), x.message());
            case NodeEvent.RemoteBlocksReceived x -> new NodeEvent.RemoteBlocksReceived(t, x.reqId(), x.transferId(),
                    x.blockNotifyList(), x.decodeRank(), x.legacyWithoutType());
            case NodeEvent.WriteDoneReceived x -> new NodeEvent.WriteDoneReceived(t, x.transferId());
            case NodeEvent.ReleaseReceived x -> new NodeEvent.ReleaseReceived(t, x.transferId(), x.consumerTpSize());
            case NodeEvent.RawCompletionReceived x -> new NodeEvent.RawCompletionReceived(t, x.completionId());
            case NodeEvent.FrameRejected x -> new NodeEvent.FrameRejected(t, x.reason(), x.frame(),
                    x.wouldKillPythonListener());
            case NodeEvent.NotifySendFailed x -> new NodeEvent.NotifySendFailed(t, x.endpoint(), x.messageType(),
                    x.transferId(), x.reason(), x.frame());
            case NodeEvent.Tick x -> new NodeEvent.Tick(t);
        };
    }
}
