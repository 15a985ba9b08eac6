package io.kvledger.wire.bridge;

import io.kvledger.core.model.PyValue;

/**
 * A decoded reply frame, as the engine side sees it (for Java engine clients and tests).
 *
 * @param id     the request's correlation id, or {@code null} when the request's could not be read
 * @param ok     whether the call succeeded
 * @param result the result dict when {@code ok}, else {@code null}
 * @param error  the error text when not {@code ok}, else {@code null}
 */
public record BridgeReply(Long id, boolean ok, PyValue.Map result, String error) {}
