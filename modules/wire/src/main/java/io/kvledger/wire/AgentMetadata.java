package io.kvledger.wire;

import java.util.Arrays;
import java.util.Objects;

/**
 * {@code MoRIIOAgentMetadata}, the first handshake reply (protocol spec 3.2): a msgspec
 * {@code Struct} with {@code omit_defaults=True} encoded as a map, fields in declaration order.
 * vLLM's struct declares no defaults, so all six fields are always present.
 *
 * @param engineId          the connector {@code engine_id} ({@code "{ip}:{handshake_port}"})
 * @param agentMetadata     mori {@code EngineDesc.pack()}, opaque
 * @param kvCachesBaseAddr  device pointers, one per registered region, as the 64 bits of unsigned
 *                          values (2^63 and more read back negative from {@code long})
 * @param numBlocks         blocks of the first attention layer
 * @param blockLen          bytes per block of the first attention layer
 * @param attnBackendName   the attention backend name
 */
public record AgentMetadata(String engineId, OpaqueBytes agentMetadata, long[] kvCachesBaseAddr, long numBlocks,
                            long blockLen, String attnBackendName) {

    public AgentMetadata {
        Objects.requireNonNull(engineId, "engineId");
        Objects.requireNonNull(agentMetadata, "agentMetadata");
        Objects.requireNonNull(attnBackendName, "attnBackendName");
        kvCachesBaseAddr = kvCachesBaseAddr.clone();
    }

    @Override
    public long[] kvCachesBaseAddr() {
        return kvCachesBaseAddr.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof AgentMetadata m && engineId.equals(m.engineId) && agentMetadata.equals(m.agentMetadata)
                && Arrays.equals(kvCachesBaseAddr, m.kvCachesBaseAddr) && numBlocks == m.numBlocks
                && blockLen == m.blockLen && attnBackendName.equals(m.attnBackendName);
    }

    @Override
    public int hashCode() {
        return Objects.hash(engineId, agentMetadata, Arrays.hashCode(kvCachesBaseAddr), numBlocks, blockLen, attnBackendName);
    }

    @Override
    public String toString() {
        StringBuilder addrs = new StringBuilder("[");
        for (int i = 0; i < kvCachesBaseAddr.length; i++) {
            addrs.append(i == 0 ? "" : ", ").append(Long.toUnsignedString(kvCachesBaseAddr[i]));
        }
        return "AgentMetadata[engineId=" + engineId + ", agentMetadata=" + agentMetadata + ", kvCachesBaseAddr="
                + addrs + "], numBlocks=" + numBlocks + ", blockLen=" + blockLen + ", attnBackendName=" + attnBackendName + "]";
    }
}
