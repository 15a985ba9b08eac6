package io.kvledger.core.config;

/** The connector role of a node: {@code kv_producer} (prefill) or {@code kv_consumer} (decode). */
public enum Role {
    PRODUCER,
    CONSUMER;

    /**
     * Maps vLLM's {@code kv_role}. The scheduler tests {@code kv_role == "kv_producer"}, so anything
     * else (including {@code kv_both}) gives a consumer scheduler.
     */
    public static Role fromKvRole(String kvRole) {
        return "kv_producer".equals(kvRole) ? PRODUCER : CONSUMER;
    }
}
