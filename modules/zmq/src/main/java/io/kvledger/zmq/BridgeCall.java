package io.kvledger.zmq;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.wire.bridge.BridgeCodec;
import io.kvledger.wire.bridge.BridgeHook;
import io.kvledger.wire.bridge.BridgeRequest;
import io.kvledger.wire.bridge.HookCall;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One engine hook call received by an {@link EngineBridgeServer}, waiting for its answer.
 *
 * <p>Answer it exactly once, from any thread: {@link #reply(List)} with the effects of the
 * reducer transition the call's event caused, or {@link #fail(String)}. The first answer wins;
 * later ones (and answers after the server's reply timeout answered for you, or after close)
 * return {@code false} and send nothing. Both encode on the calling thread before returning, so
 * the effect list may be reused as soon as {@code reply} returns.
 */
public final class BridgeCall {

    private final EngineBridgeServer server;
    private final BridgeRequest request;
    private final HookCall.Engine call;
    private final long receivedAtNs;
    final byte[] identity;
    final boolean reqFraming;
    final long seq;
    final long deadlineNs;
    /** The batch this call came in, or {@code null}; its answer then goes into the batch's reply. */
    final EngineBridgeServer.BatchReply batch;
    /** The call's place in its batch. */
    final int index;
    private final AtomicBoolean answered = new AtomicBoolean();
    /** The reply of a call whose answer agrees with its {@code acted}, in a batch of the agreed form. */
    private static final byte[] AGREED = new byte[0];

    BridgeCall(EngineBridgeServer server, BridgeRequest request, long receivedAtNs, byte[] identity, boolean reqFraming,
               long seq, long deadlineNs) {
        this(server, request, receivedAtNs, identity, reqFraming, seq, deadlineNs, null, 0);
    }

    BridgeCall(EngineBridgeServer server, BridgeRequest request, long receivedAtNs, byte[] identity, boolean reqFraming,
               long seq, long deadlineNs, EngineBridgeServer.BatchReply batch, int index) {
        this.server = server;
        this.request = request;
        this.call = (HookCall.Engine) request.call();
        this.receivedAtNs = receivedAtNs;
        this.identity = identity;
        this.reqFraming = reqFraming;
        this.seq = seq;
        this.deadlineNs = deadlineNs;
        this.batch = batch;
        this.index = index;
    }

    /** The caller's correlation id. */
    long id() {
        return request.id();
    }

    public BridgeHook hook() {
        return request.hook();
    }

    /** The decoded arguments. */
    HookCall.Engine call() {
        return call;
    }

    BridgeRequest request() {
        return request;
    }

    /** When the server read the call (the server's clock, monotonic nanoseconds). */
    long receivedAtNs() {
        return receivedAtNs;
    }

    /** The call as a reducer event, stamped with the time the server read it. */
    public NodeEvent event() {
        return call.at(receivedAtNs);
    }

    /** The call as a reducer event stamped {@code atNs} (e.g. when the node loop dequeues it). */
    NodeEvent event(long atNs) {
        return call.at(atNs);
    }

    /**
     * Answers with the reply {@link BridgeCodec#encodeReply} builds from {@code effects} (only the
     * hook-reply effects matter; the others are ignored).
     *
     * @return whether this was the call's first answer (and is now queued for sending)
     */
    public boolean reply(List<? extends Effect> effects) {
        return reply(effects, java.util.Map.of());
    }

    /**
     * As {@link #reply(List)}, with {@code extra} entries added to the result.
     *
     * @return whether this was the call's first answer (and is now queued for sending)
     */
    public boolean reply(List<? extends Effect> effects, java.util.Map<String, io.kvledger.core.model.PyValue> extra) {
        if (!answered.compareAndSet(false, true)) {
            server.lateAnswer();
            return false;
        }
        // a batch asking for the agreed form leaves out an answer equal to the one vLLM acted on:
        // an empty frame stands for it (no reply frame is empty), nothing is encoded; another answer
        // to a call carrying acted is listed even when it is empty
        byte[] frame;
        if (batch != null && batch.brief && request.hook() == BridgeHook.BUILD_CONNECTOR_META && extra.isEmpty()
                && BridgeCodec.metadataBuilt(effects)) {
            frame = AGREED; // the metadata, left out: the client asked for the brief form
        } else if (batch != null && batch.agreed && BridgeCodec.carriesActed(call)) {
            if (extra.isEmpty() && BridgeCodec.agrees(call, effects)) {
                frame = AGREED;
            } else {
                batch.kept[index] = true;
                frame = BridgeCodec.encodeReply(request.id(), request.hook(), effects, extra);
            }
        } else {
            frame = BridgeCodec.encodeReply(request.id(), request.hook(), effects, extra);
        }
        return server.answer(this, frame, true);
    }

    /**
     * Answers {@code ok: False} with {@code error}.
     *
     * @return whether this was the call's first answer
     */
    public boolean fail(String error) {
        if (!answered.compareAndSet(false, true)) {
            server.lateAnswer();
            return false;
        }
        return server.answer(this, BridgeCodec.encodeError(request.id(), error), false);
    }

    /** Whether the call has been answered (by the handler, a timeout or the server's close). */
    boolean isAnswered() {
        return answered.get();
    }

    /** Claims the call for an answer the server gives itself (timeout, close, handler failure). */
    boolean claim() {
        return answered.compareAndSet(false, true);
    }

    @Override
    public String toString() {
        return "BridgeCall[" + request.hook().wireName() + " id=" + request.id() + "]";
    }
}
