package io.kvledger.zmq;

import io.kvledger.wire.AgentMetadata;
import io.kvledger.wire.LayerMap;
import java.util.Objects;

/**
 * A completed handshake: the peer's metadata and layer map, stored by the caller under
 * {@code key} ({@code "{eid}_dp{R}"} or {@code "{eid}_dp{R}_tp{T}"}).
 */
public record HandshakeResult(String key, String endpoint, AgentMetadata metadata, LayerMap layers) {
    public HandshakeResult {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(metadata, "metadata");
        Objects.requireNonNull(layers, "layers");
    }
}
