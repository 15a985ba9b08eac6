package io.kvledger.node.engine;

import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.PyValue;
import io.kvledger.wire.bridge.BridgeReply;
import io.kvledger.wire.bridge.HookCall;
import io.kvledger.zmq.EngineBridgeClient;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The other TP ranks of a simulated engine's DP rank, as vLLM's engine core sees its workers:
 * each is the node of one TP rank ({@code kvledger node --engine sim-worker}), reached through its
 * engine bridge. The engine of TP rank 0 hands them every hook call it makes on its own node, so
 * that each rank's reducer gets the same scheduler calls (its worker side then sees the same
 * connector metadata, as vLLM's workers get the scheduler output) and runs its own worker hooks
 * (its own handshakes, transfers and notifies); {@link #poll} collects each rank's
 * {@code get_finished} for the engine to aggregate as vLLM's {@code KVOutputAggregator} does.
 *
 * <p>Owned by the engine's thread. A failed or late call throws
 * {@link EngineBridgeClient.BridgeCallException}; a rank that once let a call time out is taken
 * for dead and every later call fails at once (as a vLLM engine core stops with a dead worker:
 * its DP rank serves nothing more, and the requests it holds hang until the client gives up).
 */
public final class TpWorkers implements AutoCloseable {

    /** One rank's {@code get_finished}: request ids (none: empty) and the blocks that failed to load. */
    record Polled(List<String> doneSending, List<String> doneRecving, List<Integer> loadErrorBlocks) {}

    private final List<EngineBridgeClient> clients = new ArrayList<>();
    private final long timeoutNs;
    /** The first rank that did not answer in time, or -1. */
    private int dead = -1;

    /**
     * @param endpoints the bridge endpoints of TP ranks 1, 2, ... in rank order
     * @param timeoutNs how long one call may wait for its reply (a forward hook is answered once
     *                  the rank's handshakes and reads settled, so at least the transfer timeout)
     */
    public TpWorkers(List<String> endpoints, long timeoutNs) {
        for (String e : endpoints) {
            clients.add(new EngineBridgeClient(e));
        }
        this.timeoutNs = timeoutNs;
    }

    /** The number of other ranks. */
    public int size() {
        return clients.size();
    }

    /** Sends the call of {@code e} to every rank and waits for every reply. */
    public void call(NodeEvent e) {
        await(send(e));
    }

    /** Sends the call of {@code e} to every rank; the ids to {@link #await}. */
    public long[] send(NodeEvent e) {
        if (dead >= 0) {
            throw new EngineBridgeClient.BridgeCallException("TP rank " + (dead + 1) + " (" + clients.get(dead).endpoint()
                    + ") did not answer in time before: taken for dead");
        }
        HookCall call = toCall(e);
        long[] ids = new long[clients.size()];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = clients.get(i).send(call);
        }
        return ids;
    }

    /** Waits for the replies to {@link #send}. */
    public List<BridgeReply> await(long[] ids) {
        List<BridgeReply> out = new ArrayList<>(ids.length);
        for (int i = 0; i < ids.length; i++) {
            try {
                out.add(clients.get(i).await(ids[i], timeoutNs));
            } catch (EngineBridgeClient.BridgeCallException e) {
                if (e.timedOut()) {
                    dead = i;
                }
                throw e;
            }
        }
        return out;
    }

    /** Reads the replies of {@code get_finished} calls. */
    static List<Polled> polled(List<BridgeReply> replies) {
        List<Polled> out = new ArrayList<>(replies.size());
        for (BridgeReply r : replies) {
            PyValue.Map m = r.result() == null ? NO_RESULT : r.result();
            out.add(new Polled(strings(m.get("finished_sending")), strings(m.get("finished_recving")),
                    ints(m.get("load_error_blocks"))));
        }
        return out;
    }

    private static final PyValue.Map NO_RESULT = new PyValue.Map(Map.of());

    /** The items of a list as text (a str as it is); anything but a list gives none. */
    static List<String> strings(PyValue v) {
        List<String> out = new ArrayList<>();
        if (v instanceof PyValue.List l) {
            for (PyValue o : l.items()) {
                out.add(o instanceof PyValue.Str s ? s.value() : String.valueOf(o.toObject()));
            }
        }
        return out;
    }

    /** The numbers of a list as ints (a float truncated); other items and anything but a list give none. */
    private static List<Integer> ints(PyValue v) {
        List<Integer> out = new ArrayList<>();
        if (v instanceof PyValue.List l) {
            for (PyValue o : l.items()) {
                if (o instanceof PyValue.Int i) {
                    out.add((int) i.value());
                } else if (o instanceof PyValue.BigInt b) {
                    out.add(b.value().intValue());
                } else if (o instanceof PyValue.Float f) {
                    out.add((int) f.value());
                }
            }
        }
        return out;
    }

    /**
     * The bridge call an engine makes for {@code e} (the hooks a simulated engine calls; any other
     * event is refused: it is not something an engine sends).
     */
    static HookCall toCall(NodeEvent e) {
        if (e instanceof NodeEvent.RequestAdmitted a) {
            return new HookCall.AddRequest(a.requestId(), a.numPromptTokens(), a.promptTokenIds(), a.params());
        } else if (e instanceof NodeEvent.MatchedTokensQueried q) {
            return new HookCall.GetNumNewMatchedTokens(q.requestId(), q.numComputedTokens());
        } else if (e instanceof NodeEvent.BlocksAllocated b) {
            return new HookCall.UpdateStateAfterAlloc(b.requestId(), b.blocks(), b.numExternalTokens());
        } else if (e instanceof NodeEvent.StepScheduled s) {
            return new HookCall.BuildConnectorMeta(s.step(), s.cachedRequests(), s.scheduledNewReqs(), s.preemptedReqIds());
        } else if (e instanceof NodeEvent.RequestFinished f) {
            return new HookCall.RequestFinished(f.requestId(), f.status(), f.blockIds());
        } else if (e instanceof NodeEvent.ConnectorOutputReceived o) {
            return new HookCall.UpdateConnectorOutput(o.finishedSending(), o.finishedRecving());
        } else if (e instanceof NodeEvent.LoadStarted) {
            return new HookCall.StartLoadKv();
        } else if (e instanceof NodeEvent.LayerSaved l) {
            return new HookCall.SaveKvLayer(l.layerName());
        } else if (e instanceof NodeEvent.SaveWaited) {
            return new HookCall.WaitForSave();
        } else if (e instanceof NodeEvent.FinishedPolled) {
            return new HookCall.GetFinished();
        } else if (e instanceof NodeEvent.HandshakeVoted v) {
            return new HookCall.HandshakeVoted(v.remoteEngineId(), v.vote(), v.failedTpRanks());
        }
        throw new IllegalArgumentException("not an engine hook: " + e.getClass().getSimpleName());
    }

    @Override
    public void close() {
        for (EngineBridgeClient c : clients) {
            c.close();
        }
    }
}
