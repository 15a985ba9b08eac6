package io.kvledger.bench;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.moriio.RequestIds;
import io.kvledger.core.moriio.ZmqAddress;
import java.util.List;
import java.util.Random;
import java.util.UUID;

/**
 * The connector's own scheduler workload, one request at a time, as vLLM's scheduler drives the
 * seed's {@code MoRIIOConnectorScheduler}: the event arrays {@link SeedHookMixBenchmark} replays
 * and {@code benchmarks/seed_hook_mix.py} mirrors on the Python side (the same prompt lengths,
 * block ids and params, and request and transfer ids of the same shape).
 *
 * <p>Per request, six hook calls (the figures count these) after one {@code RequestAdmitted}
 * (kvledger's admission event, which upstream has no hook for: the Python side builds its
 * {@code Request} objects before the clock starts; the Java side applies the event inside the
 * timed loop but does not count it):
 * <ul>
 *   <li>WRITE producer: {@code get_num_new_matched_tokens}, {@code update_state_after_alloc},
 *       {@code build_connector_meta} (the save's ReqMeta, the decode address parsed from the
 *       request id), {@code request_finished} (FINISHED_LENGTH_CAPPED: deferred free, params
 *       returned), {@code update_connector_output} with the request's ACK in
 *       {@code finished_sending} (surfaced, unmapped, freed), and an empty
 *       {@code update_connector_output};</li>
 *   <li>READ consumer: {@code get_num_new_matched_tokens}, {@code update_state_after_alloc} (the
 *       receive staged against the producer's flat {@code remote_block_ids}),
 *       {@code build_connector_meta} (the receive's ReqMeta, the prefill address parsed from the
 *       request id), an empty {@code update_connector_output} (the seed's READ load is
 *       synchronous: no {@code finished_recving}), {@code request_finished} (FINISHED_STOPPED,
 *       unmapped) and an empty {@code update_connector_output}.</li>
 * </ul>
 * Request ids are the toy proxy's {@code ___prefill_addr_…___decode_addr_…_<32 hex>} plus vLLM's
 * {@code -<8 hex>} suffix; prompts are {@code 256 + (i * 37) % 769} tokens in 16-token blocks
 * (16 to 64 blocks, 40 on average). Nodes run the {@code seed} behaviour preset.
 */
public final class SeedHookMix {

    /** Hook calls per request (the admission is not counted). */
    public static final int HOOKS_PER_REQUEST = 6;
    /** Events per request in the arrays (the six hooks and the admission). */
    public static final int EVENTS_PER_REQUEST = 7;
    static final int BLOCK_SIZE = 16;
    static final long STEP_NS = 1_000_000L;

    static final ZmqAddress PREFILL = new ZmqAddress("10.0.1.1", 6301, 61005);
    static final ZmqAddress DECODE = new ZmqAddress("10.0.1.2", 6301, 61005);

    /** The two mixes. */
    public enum Mix {
        WRITE_PRODUCER(Role.PRODUCER, TransferMode.WRITE, "10.0.1.1"),
        READ_CONSUMER(Role.CONSUMER, TransferMode.READ, "10.0.1.2");

        final Role role;
        final TransferMode mode;
        final String host;

        Mix(Role role, TransferMode mode, String host) {
            this.role = role;
            this.mode = mode;
            this.host = host;
        }

        /** The node: the {@code seed} preset, this host, 16-token blocks, two layers. */
        public NodeConfig config() {
            return NodeConfig.builder(role, mode).hostIp(host).cacheBlockSize(BLOCK_SIZE)
                    .layerNames(LifecycleScript.LAYERS).behaviour(Behaviour.seed()).build();
        }
    }

    private SeedHookMix() {}

    /** Prompt tokens of request {@code i}. */
    static int promptTokens(int i) {
        return 256 + (i * 37) % 769;
    }

    /** Request {@code i}'s id: the toy proxy's id and vLLM's suffix, from a seeded generator. */
    static String[] requestIds(int requests, Random rnd) {
        String[] ids = new String[requests];
        for (int i = 0; i < requests; i++) {
            String uuidHex = hex(rnd.nextLong(), 16) + hex(rnd.nextLong(), 16);
            ids[i] = RequestIds.proxyRequestId(PREFILL, DECODE, uuidHex) + "-" + hex(rnd.nextInt(), 8);
        }
        return ids;
    }

    /**
     * The events of {@code requests} requests of {@code mix}, request after request, each request
     * in its own scheduler step ({@value #EVENTS_PER_REQUEST} events each).
     */
    public static NodeEvent[] events(Mix mix, int requests, long seed) {
        Random rnd = new Random(seed);
        String[] ids = requestIds(requests, rnd);
        NodeEvent[] out = new NodeEvent[requests * EVENTS_PER_REQUEST];
        int k = 0;
        int nextBlock = 1;
        for (int i = 0; i < requests; i++) {
            String rid = ids[i];
            String tid = "tx-" + new UUID((rnd.nextLong() & ~0xF000L) | 0x4000L,
                    (rnd.nextLong() & 0x3FFFFFFFFFFFFFFFL) | 0x8000000000000000L);
            int tokens = promptTokens(i);
            int nBlocks = (tokens + BLOCK_SIZE - 1) / BLOCK_SIZE;
            int[] blocks = new int[nBlocks];
            for (int b = 0; b < nBlocks; b++) {
                blocks[b] = nextBlock;
                nextBlock = nextBlock == 40_000 ? 1 : nextBlock + 1;
            }
            BlockGroups groups = BlockGroups.single(blocks);
            long t = (long) i * STEP_NS;
            if (mix == Mix.WRITE_PRODUCER) {
                KvParams params = KvParams.of("remote_dp_size", 1L, "remote_tp_size", 1L, "transfer_id", tid,
                        "do_remote_decode", true, "do_remote_prefill", false, "remote_engine_id", null,
                        "remote_block_ids", null);
                out[k++] = new NodeEvent.RequestAdmitted(t, rid, tokens, tokens, params);
                out[k++] = new NodeEvent.MatchedTokensQueried(t + 1, rid, 0);
                out[k++] = new NodeEvent.BlocksAllocated(t + 2, rid, groups, 0);
                out[k++] = new NodeEvent.StepScheduled(t + 3, i, List.of());
                out[k++] = new NodeEvent.RequestFinished(t + 4, rid, FinishStatus.FINISHED_LENGTH_CAPPED, groups);
                out[k++] = new NodeEvent.ConnectorOutputReceived(t + 5, List.of(rid), null);
                out[k++] = new NodeEvent.ConnectorOutputReceived(t + 6, null, null);
            } else {
                int[] remote = new int[nBlocks];
                for (int b = 0; b < nBlocks; b++) {
                    remote[b] = 100_000 + blocks[b];
                }
                KvParams params = KvParams.of("do_remote_decode", false, "do_remote_prefill", true,
                        "remote_engine_id", PREFILL.host() + ":" + PREFILL.handshakePort(),
                        "remote_block_ids", BlockGroups.flatValue(remote), "transfer_id", tid,
                        "remote_dp_size", 1L, "remote_tp_size", 1L);
                out[k++] = new NodeEvent.RequestAdmitted(t, rid, tokens, tokens, params);
                out[k++] = new NodeEvent.MatchedTokensQueried(t + 1, rid, 0);
                out[k++] = new NodeEvent.BlocksAllocated(t + 2, rid, groups, tokens - 1);
                out[k++] = new NodeEvent.StepScheduled(t + 3, i, List.of());
                out[k++] = new NodeEvent.ConnectorOutputReceived(t + 4, null, null);
                out[k++] = new NodeEvent.RequestFinished(t + 5, rid, FinishStatus.FINISHED_STOPPED, groups);
                out[k++] = new NodeEvent.ConnectorOutputReceived(t + 6, null, null);
            }
        }
        return out;
    }

    private static String hex(long v, int digits) {
        String h = Long.toHexString(v);
        if (h.length() > digits) {
            h = h.substring(h.length() - digits);
        }
        return "0".repeat(digits - h.length()) + h;
    }
}
