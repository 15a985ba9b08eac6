package io.kvledger.wire;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The second handshake reply (protocol spec 3.2): layer name to the packed mori
 * {@code MemoryDesc}s of its registered regions (one for an attention layer, two for a KDA layer),
 * in registration order. The blobs are opaque and passed through untouched.
 */
public record LayerMap(Map<String, List<OpaqueBytes>> layers) {

    public LayerMap {
        Objects.requireNonNull(layers, "layers");
        LinkedHashMap<String, List<OpaqueBytes>> copy = new LinkedHashMap<>();
        layers.forEach((k, v) -> copy.put(Objects.requireNonNull(k, "layer name"), List.copyOf(v)));
        layers = Collections.unmodifiableMap(copy);
    }

    /** Starts an insertion-ordered builder. */
    public static Builder builder() {
        return new Builder();
    }

    public static final class Builder {
        private final LinkedHashMap<String, List<OpaqueBytes>> layers = new LinkedHashMap<>();

        public Builder layer(String name, OpaqueBytes... descs) {
            layers.put(name, List.of(descs));
            return this;
        }

        public LayerMap build() {
            return new LayerMap(layers);
        }
    }
}
