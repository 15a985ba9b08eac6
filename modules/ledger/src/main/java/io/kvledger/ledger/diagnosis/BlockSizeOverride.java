package io.kvledger.ledger.diagnosis;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.KvGroupSpec;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.ledger.diagnosis.Ledger.NodeView;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Detector {@code block-size-override} (bug class 15 of moriio-protocol.md section 7): an attention
 * backend (FlashMLA forces 64) allocated the KV cache with another block size than the one the
 * connector was configured with, and the connector version in use computes its offsets with the
 * configured one and asserts the two equal at {@code register_kv_caches}, so the worker stops there.
 *
 * <p>Evidence: the worker's {@code kv_caches_registered} (the recorder's record of what
 * {@code register_kv_caches} was handed: each tensor's shape and the configured block size) and the
 * profile the journal replays under. vLLM 239b5ff30 reads the block size from the first tensor
 * (MLA {@code [num_blocks, block_size, latent]}: axis 1; otherwise the third axis from the end) and
 * asserts it equals {@code cache_config.block_size}; the newest connector takes the block size from
 * the tensor (#37716/#39276 Fix B) and gives no finding; the seed holds no worker side, so under
 * the seed profile the finding says the check is not known. Without the registration, an engine
 * whose header shows a KV-cache group with another block size than {@code cache_block_size} gets a
 * finding saying what the journal lacks rather than a class.
 */
final class BlockSizeOverride {

    static final String DETECTOR = "block-size-override";

    private BlockSizeOverride() {}

    /** How the connector the node replays as reads the registered block size. */
    enum Check {
        /** vLLM 239b5ff30: asserts the first tensor's block axis equals the configured block size. */
        ASSERTS,
        /** The newest connector: the block size is taken from the tensor. */
        TRUSTS_TENSOR,
        /** Not known (the seed has no worker side). */
        UNKNOWN
    }

    static Check check(Behaviour b) {
        String p = b.profile();
        if (p.startsWith(Behaviour.V239B5FF30)) {
            return Check.ASSERTS;
        }
        if (p.startsWith("newest")) {
            return Check.TRUSTS_TENSOR;
        }
        return Check.UNKNOWN;
    }

    /**
     * The block size vLLM 239b5ff30's {@code register_kv_caches} reads off a tensor shape: MLA
     * (three axes) the middle one, otherwise the third from the end; -1 for a shape it cannot read.
     */
    static int readBlockSize(List<Integer> shape) {
        if (shape.size() == 3) {
            return shape.get(1);
        }
        return shape.size() >= 4 ? shape.get(shape.size() - 3) : -1;
    }

    static void run(Ledger l, List<Finding> out) {
        // one engine (a DP rank of one instance) has a scheduler journal and a worker journal per TP
        // rank: the registration is the worker's, the "journal lacks it" finding is given once
        Map<String, Boolean> registeredEngines = new LinkedHashMap<>();
        for (NodeView n : l.nodes.values()) {
            if (!n.tap()) {
                registeredEngines.merge(engine(n), n.registered != null, Boolean::logicalOr);
            }
        }
        java.util.Set<String> told = new java.util.LinkedHashSet<>();
        for (NodeView n : l.nodes.values()) {
            if (n.tap()) {
                continue;
            }
            Check check = check(n.config.behaviour());
            if (check == Check.TRUSTS_TENSOR) {
                continue;
            }
            NodeEvent.KvCachesRegistered reg = n.registered;
            if (reg != null) {
                registered(l, n, reg, check, out);
            } else if (!registeredEngines.get(engine(n)) && told.add(engine(n))) {
                unregistered(n, l.firstAtNs, check, out);
            }
        }
    }

    private static String engine(NodeView n) {
        return n.config.hostIp() + ":" + n.config.handshakePort() + "/dp" + n.config.dpRank();
    }

    private static void registered(Ledger l, NodeView n, NodeEvent.KvCachesRegistered reg, Check check,
                                   List<Finding> out) {
        int configured = reg.configBlockSize() > 0 ? reg.configBlockSize() : n.config.cacheBlockSize();
        if (configured <= 0 || reg.tensors().isEmpty()) {
            return;
        }
        NodeEvent.KvCacheTensor first = reg.tensors().getFirst();
        int read = readBlockSize(first.shape());
        if (read < 0 || read == configured) {
            return;
        }
        List<Integer> s = first.shape();
        String layout;
        if (s.size() == 3) {
            layout = "MLA [num_blocks, block_size, latent]: block axis " + read;
        } else if (s.size() == 5 && s.get(3) == configured) {
            layout = "HND: the block axis (axis 3) is " + configured + ", but vLLM 239b5ff30 reads axis 2 (" + read
                    + ") as the block size";
        } else {
            layout = "block axis " + read;
        }
        String backend = reg.attnBackend() == null ? "" : ", backend " + reg.attnBackend();
        String after = n.lastAtNs <= reg.atNs() ? "; nothing follows it in this journal (the worker stopped there)"
                : "";
        String verdict = check == Check.ASSERTS
                ? "vLLM 239b5ff30's register_kv_caches asserts the two equal and the worker stops (Fix B of "
                  + "#37716/#39276 takes the block size from the tensor)"
                : "under the " + n.config.behaviour().profile() + " profile kvledger does not know this worker's check "
                  + "(the seed holds the scheduler side only): class 15 if it asserts the two equal, nothing if it "
                  + "takes the block size from the tensor";
        out.add(new Finding(DETECTOR, n.name, null, null, null, 15, reg.atNs(), -1,
                n.name + " registered " + first.layerName() + " as " + s + (first.dtype() == null ? "" : " " + first.dtype())
                        + " (" + layout + backend + ") while the connector was configured with block_size " + configured
                        + " and computes its offsets with it; " + verdict + after));
    }

    private static void unregistered(NodeView n, long firstAt, Check check, List<Finding> out) {
        int configured = n.config.cacheBlockSize();
        if (configured <= 0) {
            return;
        }
        for (KvGroupSpec g : n.config.groups()) {
            if (g.blockSizeTokens() > 0 && g.blockSizeTokens() != configured) {
                out.add(new Finding(DETECTOR, n.name, null, null, null, 0, firstAt, -1,
                        "one of 15 or none: " + n.name + "'s KV-cache group " + g.kind() + " has block size "
                                + g.blockSizeTokens() + " where cache_block_size is " + configured
                                + " (an attention backend's override), which "
                                + (check == Check.ASSERTS ? "vLLM 239b5ff30's register_kv_caches asserts against"
                                        : "a connector that does not take the block size from the tensor asserts against")
                                + "; the journal lacks the registered tensor shapes (kv_caches_registered, recorded by "
                                + "the worker's recorder), so whether the worker stopped there cannot be told"));
                return;
            }
        }
    }
}
