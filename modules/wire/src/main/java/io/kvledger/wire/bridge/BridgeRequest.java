package io.kvledger.wire.bridge;

import java.util.Objects;

/**
 * One decoded bridge request.
 *
 * @param id   the caller's correlation id, echoed in the reply
 * @param call the hook and its arguments
 */
public record BridgeRequest(long id, HookCall call) {

    public BridgeRequest {
        Objects.requireNonNull(call, "call");
    }

    public BridgeHook hook() {
        return call.hook();
    }
}
