package io.kvledger.core.config;

/**
 * One KV-cache group of the engine's {@code KVCacheConfig}.
 *
 * @param kind             what the group holds
 * @param blockSizeTokens  tokens per block of this group
 * @param slidingWindowTokens the window of a sliding-window group, 0 otherwise
 * @param enableKvTransfer whether the group takes part in KV transfer ({@code enable_kv_transfer})
 * @param mambaStates      the number of recurrent states of a mamba group (2 is the only valid value)
 */
public record KvGroupSpec(GroupKind kind, int blockSizeTokens, int slidingWindowTokens,
                          boolean enableKvTransfer, int mambaStates) {

    public static KvGroupSpec fullAttention(int blockSizeTokens) {
        return new KvGroupSpec(GroupKind.FULL_ATTENTION, blockSizeTokens, 0, true, 0);
    }

    public static KvGroupSpec slidingWindow(int blockSizeTokens, int windowTokens) {
        return new KvGroupSpec(GroupKind.SLIDING_WINDOW, blockSizeTokens, windowTokens, true, 0);
    }

    public static KvGroupSpec mamba(int blockSizeTokens) {
        return new KvGroupSpec(GroupKind.MAMBA, blockSizeTokens, 0, true, 2);
    }

    public KvGroupSpec withTransfer(boolean enable) {
        return new KvGroupSpec(kind, blockSizeTokens, slidingWindowTokens, enable, mambaStates);
    }
}
