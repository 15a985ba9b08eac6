package io.kvledger.core.config;

/**
 * The connector role of a node, as vLLM's {@code kv_role} names it: {@code kv_producer}
 * (prefill), {@code kv_consumer} (decode) or {@code kv_both}.
 *
 * <p>{@code kv_both} is asymmetric upstream (moriio-protocol.md 1.1, class 36): the scheduler tests
 * {@code kv_role == "kv_producer"}, so its scheduler side is a consumer's, while the worker tests
 * {@code is_kv_producer}, true for {@code kv_both}, so its worker side is a producer's.
 * {@link NodeConfig#isProducer()} is the scheduler's view, {@link NodeConfig#workerIsProducer()}
 * the worker's.
 */
public enum Role {
    PRODUCER,
    CONSUMER,
    BOTH;

    /** Maps vLLM's {@code kv_role}; anything but {@code kv_producer} and {@code kv_both} is a consumer, as upstream. */
    public static Role fromKvRole(String kvRole) {
        return "kv_producer".equals(kvRole) ? PRODUCER : "kv_both".equals(kvRole) ? BOTH : CONSUMER;
    }

    /** vLLM's {@code kv_role} string. */
    public String kvRole() {
        return switch (this) {
            case PRODUCER -> "kv_producer";
            case CONSUMER -> "kv_consumer";
            case BOTH -> "kv_both";
        };
    }
}
