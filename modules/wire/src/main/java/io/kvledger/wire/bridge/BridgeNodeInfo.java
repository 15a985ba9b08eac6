package io.kvledger.wire.bridge;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import java.util.Objects;

/**
 * Who the node behind a bridge is, as {@code hello} reports it and checks the caller against.
 *
 * @param role     producer ({@code kv_producer}) or consumer ({@code kv_consumer})
 * @param mode     READ or WRITE
 * @param engineId {@code "{host_ip}:{handshake_port}"}
 */
public record BridgeNodeInfo(Role role, TransferMode mode, int dpRank, int dpSize, int tpRank, int tpSize,
                             String engineId) {

    public BridgeNodeInfo {
        Objects.requireNonNull(role, "role");
        Objects.requireNonNull(mode, "mode");
        Objects.requireNonNull(engineId, "engineId");
    }

    public static BridgeNodeInfo of(NodeConfig c) {
        return new BridgeNodeInfo(c.role(), c.mode(), c.dpRank(), c.dpSize(), c.tpRank(), c.tpSize(), c.engineId());
    }

    /** vLLM's {@code kv_role} string. */
    public String kvRole() {
        return role.kvRole();
    }

    /** {@code "read"} or {@code "write"}. */
    public String modeName() {
        return mode == TransferMode.READ ? "read" : "write";
    }
}
