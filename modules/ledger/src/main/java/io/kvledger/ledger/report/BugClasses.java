package io.kvledger.ledger.report;

import java.util.Map;

/**
 * The titles of the bug classes of moriio-protocol.md section 7, which findings and anomalies
 * name by number ({@code Finding.bugClass()}, {@code AnomalyKind.bugClass()}).
 */
final class BugClasses {

    private BugClasses() {}

    /** The title of bug class {@code n} of moriio-protocol.md section 7, or "" when unknown. */
    static String title(int n) {
        return BUG_CLASSES.getOrDefault(n, "");
    }

    private static final Map<Integer, String> BUG_CLASSES = Map.ofEntries(
            Map.entry(1, "completion id mismatch (scheduler assertion)"),
            Map.entry(2, "failed RDMA statuses ignored"),
            Map.entry(3, "last-status-only completion"),
            Map.entry(4, "busy-spin without deadline"),
            Map.entry(5, "transfer wait aborts on the first error"),
            Map.entry(6, "WRITE completion race / sealing"),
            Map.entry(7, "KV block leak when an ACK is lost (reaping)"),
            Map.entry(8, "reaping is a use-after-free"),
            Map.entry(9, "RDMA notification poisoning"),
            Map.entry(10, "READ treated as async"),
            Map.entry(11, "early ACK before request_finished"),
            Map.entry(12, "ACK before the worker mapping exists"),
            Map.entry(13, "unmap miss after request-id mutation"),
            Map.entry(14, "kv_transfer_params mutated or cleared between alloc and meta build"),
            Map.entry(15, "backend block-size override assertion"),
            Map.entry(16, "missing MoRIIO-specific keys from external coordinators"),
            Map.entry(17, "engine_id collision in multi-node DP"),
            Map.entry(18, "wide-EP multi-pod routing"),
            Map.entry(19, "non-disagg request in WRITE pending-save"),
            Map.entry(20, "hard-coded DP0 read target"),
            Map.entry(21, "lazy handshake divergence (NCCL hang)"),
            Map.entry(22, "heterogeneous TP"),
            Map.entry(23, "port-offset inconsistency with DP > 1 and TP > 1"),
            Map.entry(24, "transient RDMA SQ-full treated as failure"),
            Map.entry(25, "forward consumed unfinished READs"),
            Map.entry(26, "lost RDMA completion hangs the decode worker"),
            Map.entry(27, "WRITE requests stranded in WAITING_FOR_REMOTE_KVS"),
            Map.entry(28, "empty remote_blocks rejected; listener thread death"),
            Map.entry(29, "n > 1 / best_of_n siblings share a transfer_id"),
            Map.entry(30, "toy-proxy DP aliasing and burst resets"),
            Map.entry(31, "vllm-router breaks READ ordering"),
            Map.entry(32, "WRITE multi-pod host race"),
            Map.entry(33, "READ-mode WideEP partial completions"),
            Map.entry(34, "hybrid (mamba/KDA) failures fail closed"),
            Map.entry(35, "mapping and reqs_to_send leaks on the producer"),
            Map.entry(36, "kv_role asymmetry"),
            Map.entry(37, "READ eager handshake is not pod-aware"));
}
