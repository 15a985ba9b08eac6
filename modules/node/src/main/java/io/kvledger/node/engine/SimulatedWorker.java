package io.kvledger.node.engine;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.moriio.PortMath;
import io.kvledger.node.data.KvLayout;
import io.kvledger.node.data.KvPattern;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The model runner of one TP rank above 0 of a simulated engine ({@code kvledger node --engine
 * sim-worker}): the node's hooks come over the engine bridge from the {@link SimulatedEngine} of TP
 * rank 0 ({@link TpWorkers}), and this class does to the rank's own KV region what that rank's
 * forward would: it keeps the requests' blocks from the scheduler calls (as vLLM's model runner
 * keeps its input batch from the scheduler output), fills a prefill's blocks with this rank's
 * pattern ({@link #patternKey}) before the forward saves them, zeroes a decode's blocks at
 * allocation, and checks every byte that arrived: a READ decode after the forward that loaded it
 * (unless the rank reported its blocks as load errors), a WRITE decode when its
 * {@code get_finished} reports it received.
 *
 * <p>{@link #before} runs on the bridge's socket thread before the call is handed to the loop,
 * {@link #after} when the loop answered it; both are synchronized.
 */
public final class SimulatedWorker {

    private static final System.Logger LOG = System.getLogger("io.kvledger.node");

    private static final class Req {
        final int prompt;
        final String transferId;
        final boolean prefillLeg;
        final int remoteTpSize;
        final List<Integer> blocks = new ArrayList<>();
        int external;
        boolean loadFailed;
        boolean verified;

        Req(int prompt, KvParams params) {
            this.prompt = prompt;
            this.transferId = params != null && params.get("transfer_id") instanceof String s ? s : null;
            this.prefillLeg = params != null && params.truthy("do_remote_decode");
            Long t = params == null ? null : KvParams.asLong(params.get("remote_tp_size"));
            this.remoteTpSize = t == null ? 0 : (int) (long) t;
        }

        int[] blockArray() {
            int[] a = new int[blocks.size()];
            for (int i = 0; i < a.length; i++) {
                a[i] = blocks.get(i);
            }
            return a;
        }
    }

    private final NodeConfig config;
    private final KvLayout layout;
    private final MemorySegment kv;
    private final int blockTokens;
    private final Map<String, Req> requests = new HashMap<>();
    private final List<String> syncLoads = new ArrayList<>();
    private final AtomicLong verifiedBytes = new AtomicLong();
    private final AtomicLong verifiedRequests = new AtomicLong();
    private final AtomicLong corruptRequests = new AtomicLong();

    public SimulatedWorker(NodeConfig config, KvLayout layout, MemorySegment kv) {
        this.config = config;
        this.layout = layout;
        this.kv = kv;
        this.blockTokens = Math.max(1, config.cacheBlockSize());
    }

    /**
     * The key of the pattern TP rank {@code tpRank} of a prefill writes for {@code transferId}: the
     * transfer id itself on rank 0 (as a TP-1 engine writes it), else with the rank appended, so a
     * block that arrived from another rank than the one this rank reads from fails the check.
     */
    static String patternKey(String transferId, int tpRank) {
        return tpRank == 0 ? transferId : transferId + "/tp" + tpRank;
    }

    /** Sees a hook call before the node applies it. */
    public synchronized void before(NodeEvent e) {
        if (e instanceof NodeEvent.RequestAdmitted a) {
            requests.put(a.requestId(), new Req(a.numPromptTokens(), a.params()));
        } else if (e instanceof NodeEvent.BlocksAllocated b) {
            Req r = requests.get(b.requestId());
            if (r == null) {
                return;
            }
            for (int id : b.blocks().first()) {
                r.blocks.add(id);
            }
            r.external = Math.max(r.external, b.numExternalTokens());
            if (config.isProducer()) {
                fill(r);
            } else if (b.numExternalTokens() > 0) {
                KvPattern.clear(kv, layout, b.blocks().first());
                if (config.mode() == TransferMode.READ) {
                    syncLoads.add(b.requestId());
                }
            }
        } else if (e instanceof NodeEvent.StepScheduled s) {
            for (NodeEvent.CachedRequest c : s.cachedRequests()) {
                Req r = requests.get(c.requestId());
                if (r == null || c.newBlockIds() == null) {
                    continue;
                }
                for (int id : c.newBlockIds().first()) {
                    r.blocks.add(id);
                }
                if (config.isProducer()) {
                    fill(r);
                }
            }
        }
    }

    /** Sees the node's answer to a hook call. */
    public synchronized void after(NodeEvent e, List<Effect> effects) {
        if (e instanceof NodeEvent.FinishedPolled) {
            Effect.FinishedReported f = null;
            for (Effect x : effects) {
                if (x instanceof Effect.FinishedReported r) {
                    f = r;
                }
            }
            if (f != null && f.loadErrorBlocks() != null && !f.loadErrorBlocks().isEmpty()) {
                for (Req r : requests.values()) {
                    for (int b : r.blocks) {
                        if (f.loadErrorBlocks().contains(b)) {
                            r.loadFailed = true;
                            break;
                        }
                    }
                }
            }
            for (String id : syncLoads) {
                verify(id);
            }
            syncLoads.clear();
            if (f != null && f.doneRecving() != null) {
                for (String id : f.doneRecving()) {
                    verify(id);
                }
            }
        } else if (e instanceof NodeEvent.RequestFinished f) {
            syncLoads.remove(f.requestId());
            requests.remove(f.requestId());
        }
    }

    private void fill(Req r) {
        if (r.prefillLeg && r.transferId != null) {
            KvPattern.fill(kv, layout, patternKey(r.transferId, config.tpRank()), r.blockArray());
        }
    }

    private void verify(String id) {
        Req r = requests.get(id);
        if (r == null || r.verified || r.loadFailed || r.transferId == null) {
            return;
        }
        r.verified = true;
        int source = PortMath.effectiveRemoteTpRank(config.tpRank(), config.tpSize(), r.remoteTpSize)
                .orElse(config.tpRank());
        int positions = (Math.min(r.external, r.prompt) + blockTokens - 1) / blockTokens;
        KvPattern.Check check = KvPattern.verify(kv, layout, patternKey(r.transferId, source), r.blockArray(), positions);
        verifiedBytes.addAndGet(check.bytesOk());
        if (check.passed()) {
            verifiedRequests.incrementAndGet();
        } else {
            corruptRequests.incrementAndGet();
            LOG.log(System.Logger.Level.WARNING, "tp" + config.tpRank() + ": KV of " + id + " differs from prefill rank "
                    + source + "'s: " + check.mismatch());
        }
    }

    /** KV bytes this rank checked against the prefill rank's pattern. */
    public long verifiedBytes() {
        return verifiedBytes.get();
    }

    /** Decode requests whose every received byte matched. */
    public long verifiedRequests() {
        return verifiedRequests.get();
    }

    /** Decode requests whose received KV differed. */
    public long corruptRequests() {
        return corruptRequests.get();
    }
}
