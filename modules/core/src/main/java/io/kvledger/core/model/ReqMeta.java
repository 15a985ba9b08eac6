package io.kvledger.core.model;

import java.util.List;

/**
 * One request's entry in the connector metadata the scheduler hands the worker each step
 * ({@code ReqMeta}, built by {@code add_new_req}).
 *
 * @param remoteEngineId     {@code remote_engine_id} as the params carry it ({@code null} when
 *                           absent or None, as on a WRITE producer's save; never synthesized).
 *                           The worker keys its handshakes by {@link #handshakeEngineId()} instead
 * @param remoteBlockIds     the remote block groups ({@code null} when None or not block ids)
 * @param remoteDpSizeLocal  {@code int(remote_dp_size_local)}, or {@code remote_dp_size} when the
 *                           key is absent; 0 is the external-DP sentinel (no folding)
 * @param remoteTpSize       {@code remote_tp_size or tp_size or 0} (0: unknown, homogeneous)
 * @param transferId         the transfer id as the params carry it (may be an empty string;
 *                           {@link TransferId#NONE} for None)
 * @param multiPodHosts      {@code remote_hosts} when the params give a non-empty one, else
 *                           {@code [remote_host]}: never empty for an entry add_new_req built
 * @param writeMode          true for {@code reqs_to_save} entries (P side, decode address)
 */
public record ReqMeta(
        String requestId,
        BlockGroups localBlockIds,
        BlockGroups remoteBlockIds,
        String remoteEngineId,
        String remoteHost,
        int remoteHandshakePort,
        int remoteNotifyPort,
        int remoteDpRank,
        int remoteDpSize,
        int remoteDpSizeLocal,
        int remoteTpSize,
        TransferId transferId,
        List<String> multiPodHosts,
        boolean writeMode) {

    public ReqMeta {
        transferId = transferId == null ? TransferId.NONE : transferId;
        multiPodHosts = multiPodHosts == null ? List.of() : List.copyOf(multiPodHosts);
    }

    /**
     * The engine id the worker keys its handshakes and sessions by:
     * {@code "{remote_host}:{remote_handshake_port}"}, recomputed from the resolved address (the
     * {@code remote_engine_id} param only has to be present for a READ receive to be staged).
     */
    public String handshakeEngineId() {
        return remoteHost + ":" + remoteHandshakePort;
    }

    /** The transfer id as a string, or {@code null} when the params carry none. */
    public String transferIdString() {
        return transferId.asString();
    }
}
