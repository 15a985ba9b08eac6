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
 * @param profile  the behaviour profile the node runs ({@code Behaviour#profile()}, "+custom" when
 *                 switches were changed), or {@code null} when not known (then not checked)
 */
public record BridgeNodeInfo(Role role, TransferMode mode, int dpRank, int dpSize, int tpRank, int tpSize,
                             String engineId, String profile) {

    public BridgeNodeInfo {
        Objects.requireNonNull(role, "role");
        Objects.requireNonNull(mode, "mode");
        Objects.requireNonNull(engineId, "engineId");
    }

    /** A node whose profile is not known (a {@code hello} naming a vLLM install is not checked against it). */
    BridgeNodeInfo(Role role, TransferMode mode, int dpRank, int dpSize, int tpRank, int tpSize, String engineId) {
        this(role, mode, dpRank, dpSize, tpRank, tpSize, engineId, null);
    }

    public static BridgeNodeInfo of(NodeConfig c) {
        return new BridgeNodeInfo(c.role(), c.mode(), c.dpRank(), c.dpSize(), c.tpRank(), c.tpSize(), c.engineId(),
                c.behaviour().profile());
    }

    /** The preset the node's profile was made from ({@link #profile} without "+custom"), or {@code null}. */
    String baseProfile() {
        if (profile == null) {
            return null;
        }
        return profile.endsWith("+custom") ? profile.substring(0, profile.length() - "+custom".length()) : profile;
    }

    /** vLLM's {@code kv_role} string. */
    String kvRole() {
        return role.kvRole();
    }

    /** {@code "read"} or {@code "write"}. */
    String modeName() {
        return mode == TransferMode.READ ? "read" : "write";
    }
}
