package io.kvledger.wire.bridge;

/**
 * The calls of the engine bridge protocol, named on the wire exactly as the vLLM connector
 * methods they forward ({@link #wireName()}), plus two control calls of the bridge itself.
 */
public enum BridgeHook {
    /** A request entered the scheduler (vLLM has no connector hook here; the bridge adds one). */
    ADD_REQUEST("add_request", true),
    GET_NUM_NEW_MATCHED_TOKENS("get_num_new_matched_tokens", true),
    UPDATE_STATE_AFTER_ALLOC("update_state_after_alloc", true),
    BUILD_CONNECTOR_META("build_connector_meta", true),
    REQUEST_FINISHED("request_finished", true),
    UPDATE_CONNECTOR_OUTPUT("update_connector_output", true),
    START_LOAD_KV("start_load_kv", true),
    SAVE_KV_LAYER("save_kv_layer", true),
    WAIT_FOR_SAVE("wait_for_save", true),
    GET_FINISHED("get_finished", true),
    /**
     * The TP-wide eager-handshake vote of start_load_kv ({@code all_reduce(MIN)} over the TP
     * group), as the engine core computed it for one remote engine (vLLM has no hook: the bridge
     * adds one so that each rank's journal records the vote its worker saw).
     */
    HANDSHAKE_VOTED("handshake_voted", true),
    /** Version and role handshake: answered by the bridge server with the node's identity. */
    HELLO("hello", false),
    /** Liveness of the bridge's socket thread: answered at once with an empty result. */
    PING("ping", false);

    private final String wireName;
    private final boolean engineHook;

    BridgeHook(String wireName, boolean engineHook) {
        this.wireName = wireName;
        this.engineHook = engineHook;
    }

    /** The {@code hook} string on the wire. */
    public String wireName() {
        return wireName;
    }

    /** Whether this call becomes a {@code NodeEvent} for the reducer (false for hello and ping). */
    boolean isEngineHook() {
        return engineHook;
    }

    /** The hook with this wire name, or {@code null} when none has it. */
    static BridgeHook ofWireName(String name) {
        for (BridgeHook h : values()) {
            if (h.wireName.equals(name)) {
                return h;
            }
        }
        return null;
    }
}
