package io.kvledger.wire.bridge;

import io.kvledger.core.model.PyValue;

/**
 * What the node remembers of one connection between its frames ({@link BridgeCodec#STEADY}): the
 * number and {@code cached_req_ids} of the last compact {@code build_connector_meta} read on it,
 * whatever became of that call afterwards (applied, refused busy). A compact one that cannot be
 * read empties it, so a step whose ids come as a number is refused until a step comes in full.
 * Nothing else carries over between frames. One per connection, used by the thread that decodes its
 * frames ({@link BridgeCodec#decode(byte[], io.kvledger.wire.WireLimits, BridgeSession)}).
 */
public final class BridgeSession {

    /** The last step read, or {@code null} when none is remembered. */
    private Long step;
    private PyValue ids;

    /** A session that remembers nothing yet: a new connection. */
    public BridgeSession() {}

    void remember(long step, PyValue ids) {
        this.step = step;
        this.ids = ids;
    }

    void forget() {
        step = null;
        ids = null;
    }

    /** The ids of step {@code n} when it is the one remembered, else {@code null}. */
    PyValue idsOf(long n) {
        return step != null && step == n ? ids : null;
    }

    /** The step remembered, or {@code null}. */
    Long step() {
        return step;
    }
}
