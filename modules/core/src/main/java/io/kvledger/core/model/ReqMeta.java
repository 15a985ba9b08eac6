package io.kvledger.core.model;

import java.util.List;

/**
 * One request's entry in the connector metadata the scheduler hands the worker each step
 * ({@code ReqMeta}, built by {@code add_new_req}).
 *
 * @param remoteEngineId     {@code "{remote_host}:{remote_handshake_port}"}, recomputed from the
 *                           resolved address as the worker does
 * @param remoteBlockIds     the remote block groups ({@code null} when absent)
 * @param remoteTpSize       {@code remote_tp_size or tp_size or 0} (0: unknown, homogeneous)
 * @param transferId         the transfer id as the params carry it (may be empty or null)
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
        Object transferId,
        List<String> multiPodHosts,
        boolean writeMode) {

    public ReqMeta {
        multiPodHosts = multiPodHosts == null ? List.of() : List.copyOf(multiPodHosts);
    }

    /** The transfer id as a string, or {@code null} when the params carry none. */
    public String transferIdString() {
        return transferId instanceof String s ? s : null;
    }
}
