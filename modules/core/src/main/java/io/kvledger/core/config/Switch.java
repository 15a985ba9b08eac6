package io.kvledger.core.config;

/**
 * Every behavioural difference between connector versions that the reducer reproduces, each tied
 * to the upstream change that introduced it. Numbers 1 to 28 are the differences between the seed
 * scheduler and the newest upstream one, vLLM main at 3c201bf2 (seed-vs-newest.md section A; each
 * re-read from 3c201bf2's moriio_connector.py, where it is on); the rest are open upstream
 * PRs or older worker behaviour, off in every preset, that a replay may turn on to ask "would that
 * change have avoided this hang?", and (section E) the scheduler of vLLM main at 239b5ff30, on in
 * the {@code vllm-239b5ff30} preset only.
 *
 * <p>The switch name (kebab case) is the stable, user-facing identifier: it is written to journal
 * headers and accepted by {@code --set}.
 *
 * <p>The READ decode's eager handshake and its TP-wide {@code all_reduce(MIN)} vote (#46116, June)
 * have no switch: the seed dates from after #48534 (August), so both presets run them as the
 * newest worker does. Whether a journal carries the vote is the recorder's business, not the
 * connector version's: {@code NodeConfig.awaitsTpVote}.
 */
public enum Switch {
    // A1. Connector shell
    CONNECTOR_SUPPORTS_HMA(1, "connector-supports-hma", "#53721", true,
            "request_finished receives one block list per KV group (SupportsHMA)"),
    FINISH_ALL_GROUPS_ENTRY(2, "finish-all-groups-entry", "#53721, #51052", true,
            "the all-groups finish entry splits hybrid requests into attention and mamba groups"),
    ON_NEW_REQUEST_P_TRUNCATION(3, "on-new-request-p-truncation", "#51052", true,
            "a hybrid producer drops the last prompt token once on admission"),
    READ_FULL_CUDAGRAPH_WARNING(4, "read-full-cudagraph-warning", "not pinned (after #48534)", false,
            "a READ consumer with full CUDA graphs logs a once-only warning at construction"),
    CONNECTOR_FULL_STEP_COMPLETION(5, "connector-full-step-completion", "not pinned (N+t)", true,
            "requires_full_step_completion is true iff READ"),
    CONNECTOR_DIVERGENT_HYBRID_HITS(6, "connector-divergent-hybrid-hits", "#51052", true,
            "supports_divergent_local_hybrid_hits is true iff READ with a mamba transfer group"),
    // A2. Constructor and config
    SCHED_CTOR_KV_CACHE_CONFIG(7, "sched-ctor-kv-cache-config", "#53721, #51052", true,
            "the scheduler knows the KV cache config; groups that opt out of transfer are invisible"),
    INIT_HYBRID_VALIDATION(8, "init-hybrid-validation", "#51052", true,
            "hybrid models are validated at construction (MoRIIOError)"),
    INIT_HMA_VALIDATION(9, "init-hma-validation", "#53721", true,
            "HMA with non-full-attention groups is validated at construction (NotImplementedError)"),
    SWA_BLOCKS_PER_GROUP(10, "swa-blocks-per-group", "#53721", true,
            "sliding-window groups keep ceil(window / block size) + 1 blocks"),
    DECODE_TAIL_TOLERANCE(11, "decode-tail-tolerance", "#51052", true,
            "READ alignment tolerates ceil((1 + lookahead [+ spec]) / block size) extra local blocks (the cache's "
                    + "block size, a hybrid model's attention group's; a mamba group tolerates 1)"),
    // A3. get_num_new_matched_tokens
    READ_MATCH_REQUIRES_REMOTE_PREFILL(12, "read-match-requires-remote-prefill", "not pinned (N+t)", true,
            "a READ consumer matches tokens only for requests with do_remote_prefill"),
    MATCH_COUNTS_NUM_PROMPT_TOKENS(13, "match-counts-num-prompt-tokens", "not pinned", true,
            "matched tokens count request.num_prompt_tokens instead of len(prompt_token_ids)"),
    MATCH_CLAMPS_AT_ZERO(14, "match-clamps-at-zero", "not pinned", true,
            "matched token counts are clamped at zero"),
    // A4. update_state_after_alloc
    SAVE_STAGING_WRITE_ONLY(15, "save-staging-write-only", "not pinned", true,
            "saves are staged only in WRITE mode"),
    SAVE_BLOCK_IDS_GROUPED(16, "save-block-ids-grouped", "#53721", true,
            "staged save block ids keep every group"),
    READ_RECV_GROUPED_CLIPPED(17, "read-recv-grouped-clipped", "#53721, #51052", true,
            "READ recv pairs every transfer group, group counts checked; SWA groups clipped under the hybrid KV-cache "
                    + "manager (a hybrid mamba model's groups are not)"),
    READ_ALIGN_LOCAL_REMOTE(18, "read-align-local-remote", "#51052", true,
            "READ aligns local suffix with remote tail instead of asserting local <= remote"),
    READ_SNAPSHOT_ADJUSTED_REMOTE(19, "read-snapshot-adjusted-remote", "#51052, #53721", true,
            "the recv params snapshot carries the aligned remote block ids"),
    READ_FULL_HIT_EMPTY_GROUPS(20, "read-full-hit-empty-groups", "#53721, #51052", true,
            "a full prefix hit stages one empty list per remote group"),
    // A5. build_connector_meta
    PENDING_SAVE_PER_GROUP_APPEND(21, "pending-save-per-group-append", "#53721", true,
            "chunked-prefill pending saves append new block ids per group"),
    CHUNK_COVERAGE_FULL_ATTN_GROUP(22, "chunk-coverage-full-attn-group", "#53721", true,
            "chunk coverage uses the first full-attention group and its own block size"),
    // A6. request_finished
    READ_ABORT_RECV_BLOCKS_SHAPE(23, "read-abort-recv-blocks-shape", "#51052", true,
            "a READ abort before alloc stages one empty list per transfer group (a hybrid model: its allocated "
                    + "[attention, *mamba] blocks)"),
    REMOTE_BLOCK_IDS_GROUPED(24, "remote-block-ids-grouped", "#53721", true,
            "the producer returns remote_block_ids as a list of lists"),
    REMOTE_BLOCK_IDS_SWA_CLIPPED(25, "remote-block-ids-swa-clipped", "#53721", true,
            "returned sliding-window groups are clipped to their keep count"),
    REMOTE_BLOCK_IDS_HYBRID_LAYOUT(26, "remote-block-ids-hybrid-layout", "#51052", true,
            "a hybrid producer returns [attention, *mamba groups]"),
    DELAY_FREE_ANY_GROUP(27, "delay-free-any-group", "#53721", true,
            "the free is delayed iff any group is non-empty"),
    FINISH_BLOCK_IDS_SIGNATURE(28, "finish-block-ids-signature", "#53721, #51052", true,
            "request_finished accepts grouped or flat block ids"),

    // D. Open upstream PRs (off in every preset)
    MAP_FIRST_OWNER_WINS(0, "map-first-owner-wins", "#56468 (open)", false,
            "first owner keeps a transfer id; colliding rids are not staged; guarded unmap fallback"),
    WRITE_MATCH_AFTER_RECV_DONE(0, "write-match-after-recv-done", "#53549, #57705 (open)", false,
            "a WRITE consumer that has received its KV matches (0, False)"),
    HOLD_UNTIL_REAL_ACK(0, "hold-until-real-ack", "#56465 (open)", false,
            "deferred frees are never reaped; blocks are held until a real ACK"),
    DEFER_TIMEOUT_ENV(0, "defer-timeout-env", "#51301 (open)", false,
            "defer_timeout precedence env > extra_config > 300 s default"),
    READ_ASYNC_LOAD(0, "read-async-load", "#54301 (open)", false,
            "READ consumers load asynchronously (n, True)"),
    UNMAPPED_ACK_BOUNDS(0, "unmapped-ack-bounds", "#50674 (open)", false,
            "ACKs waiting for the worker mapping expire after a TTL and are capped"),
    REJECT_TERMINAL_DUPLICATE_RELEASE(0, "reject-terminal-duplicate-release", "#50674 (open)", false,
            "a duplicate release for a terminal transfer id is rejected"),
    RELEASE_ON_RECV_TIMEOUT(0, "release-on-recv-timeout", "#56465 (open)", false,
            "a READ receive abort also sends release to the producer"),
    WRITE_FAILED_NOTIFY(0, "write-failed-notify", "#57705 (open)", false,
            "an expired or failed WRITE tells the decode side with a write_failed message"),
    WRITE_DONE_WORKER_POD_HOSTS(0, "write-done-worker-pod-hosts", "docs-latest 2026-09-23 (N carries them per WriteTask)",
            false, "write_done routing takes multi_pod_hosts and remote_dp_size_local stashed on the worker by the last "
                    + "scheduled write (last writer wins), not its own request's: the WRITE multi-pod host race, class 32"),

    // Older worker behaviour, off in every preset: on reproduces the connector before the fix
    WRITE_UNSEALED_COMPLETION(0, "write-unsealed-completion", "before #40344 (every preset has the sealed writer)", false,
            "the WRITE writer before sealing (class 6): it expects one write per registered layer, counts every "
                    + "save_kv_layer call as one (no de-duplication per transfer and layer), and wait_for_save neither "
                    + "re-invokes save_kv_layer for the layers without a hook nor seals: write_done goes early when a "
                    + "layer's hook fires twice, never when a layer's hook does not fire"),

    // Older worker behaviour (on in every preset; off reproduces the older connector)
    READ_BATCH_VERDICT(0, "read-batch-verdict", "#51052", true,
            "READ completion is judged over every status of a transfer, not only the last"),
    RETRY_UNMAPPED_ACKS(0, "retry-unmapped-acks", "not pinned (N)", true,
            "ACKs that arrive before the worker mapping are retried instead of dropped"),

    // E. The scheduler side of vLLM main at 239b5ff30 (2026-05-18), read from its
    // moriio_connector.py, where it differs from the seed: on in vllm-239b5ff30 only (a journal
    // written before these switches existed lists none of them, so it replays as it did).
    MODE_FROM_ENV(0, "mode-from-env", "239b5ff30 (the seed reads the extra config's read_mode)", false, false, true,
            "the mode is VLLM_MORIIO_CONNECTOR_READ_MODE as vLLM's envs parses it (\"true\" or \"1\", any case, "
                    + "default False), not the extra config's read_mode; a recording's header carries the mode itself"),
    TRANSFER_ID_REQUIRED(0, "transfer-id-required", "239b5ff30 (the seed synthesizes sidecar-<rid>)", false, false, true,
            "update_state_after_alloc reads params[\"transfer_id\"]: KeyError when absent, an empty one mapped as it is"),
    READ_RECV_ALIGNS_FULL_HIT(0, "read-recv-aligns-full-hit", "239b5ff30 (the seed stages [] without external tokens)",
            false, false, true, "a READ receive aligns the allocation's blocks with the remote ones whatever "
                    + "num_external_tokens is"),
    WRITE_NOTIFY_DECODE_ADDRESS(0, "write-notify-decode-address", "239b5ff30 (the seed routes to the prefill)", false,
            false, true, "the WRITE remote_blocks notify goes from every rank, per TP index, to the notify port of the "
                    + "DECODE address in the request id plus remote_dp_rank (ValueError without one), with the "
                    + "allocation's first group"),
    PENDING_SAVE_UNKNOWN_RAISES(0, "pending-save-unknown-raises", "239b5ff30 (the seed skips them, #45043)", false,
            false, true, "a WRITE producer raises KeyError for a scheduled request with new blocks and no pending save"),
    META_WITHOUT_ROUTING_FIELDS(0, "meta-without-routing-fields", "239b5ff30", false, false, true,
            "add_new_req takes host and ports from the request id only, requires remote_engine_id, reads tp_size "
                    + "and remote_dp_size with default 1, and has no DP rank, local DP size or pod hosts"),
    FINISH_UNMAP_EVERY_ROLE(0, "finish-unmap-every-role", "239b5ff30 (the seed unmaps consumers only)", false, false,
            true, "request_finished unmaps the transfer id on every role, by request id only"),
    WRITE_ABORT_STAGES_RECV(0, "write-abort-stages-recv", "239b5ff30 (the seed sends release)", false, false, true,
            "a WRITE request finished before allocation stages an empty receive, as READ does"),
    FINISH_PARAMS_SIX_KEYS(0, "finish-params-six-keys", "239b5ff30 (the seed adds the routing keys)", false, false,
            true, "request_finished returns do_remote_prefill, do_remote_decode, remote_block_ids, remote_engine_id, "
                    + "tp_size and transfer_id only"),
    NO_CONNECTOR_OUTPUT_HOOK(0, "no-update-connector-output", "239b5ff30 (the seed reconciles ACKs)", false, false,
            true, "no deferral deadlines and no update_connector_output (the base's does nothing): finished_sending "
                    + "frees what it names, nothing is parked, reaped or dropped"),
    WRITE_CONSUMER_RECV_NEW_REQS(0, "write-consumer-recv-new-reqs", "239b5ff30 (gone by the seed)", false, false,
            true, "a WRITE consumer's build_connector_meta adds every scheduled new request to reqs_to_recv");

    private final int seedDifference;
    private final String key;
    private final String upstream;
    private final boolean inNewest;
    private final String description;

    /** Membership of the seed and vllm-239b5ff30 presets when it is not the default one; null: default. */
    private final Boolean inSeed;
    private final Boolean in239b5ff30;

    Switch(int seedDifference, String key, String upstream, boolean inNewest, String description) {
        this(seedDifference, key, upstream, inNewest, null, null, description);
    }

    Switch(int seedDifference, String key, String upstream, boolean inNewest, Boolean inSeed, Boolean in239b5ff30,
            String description) {
        this.seedDifference = seedDifference;
        this.key = key;
        this.upstream = upstream;
        this.inNewest = inNewest;
        this.inSeed = inSeed;
        this.in239b5ff30 = in239b5ff30;
        this.description = description;
    }

    /** The number of this difference in seed-vs-newest.md section A, or 0 for other switches. */
    int seedDifference() {
        return seedDifference;
    }

    /** The stable kebab-case name. */
    public String key() {
        return key;
    }

    /** The upstream change (vllm-project/vllm PR numbers) that introduced the newer behaviour. */
    String upstream() {
        return upstream;
    }

    /** Whether the newest upstream connector (vLLM main at 3c201bf2) behaves this way. */
    boolean inNewest() {
        return inNewest;
    }

    /**
     * Whether the seed connector behaves this way: the seed lacks every scheduler difference; the
     * worker-side switches it shares with newest are on.
     */
    boolean inSeed() {
        if (inSeed != null) {
            return inSeed;
        }
        return seedDifference == 0 ? (this == READ_BATCH_VERDICT || this == RETRY_UNMAPPED_ACKS) : !inNewest;
    }

    /**
     * Whether vLLM main at 239b5ff30 behaves this way: its scheduler predates every seed-vs-newest
     * difference (1 to 28 off, as in the seed) and behaves as section E says; the open PRs are off
     * and the worker switches are the seed's (benchmarks/upstream-differential.sh compares the
     * scheduler side).
     */
    boolean in239b5ff30() {
        return in239b5ff30 != null ? in239b5ff30 : inSeed();
    }

    public String description() {
        return description;
    }

    /** Looks a switch up by its kebab-case key, or returns {@code null}. */
    public static Switch byKey(String key) {
        for (Switch s : values()) {
            if (s.key.equals(key)) {
                return s;
            }
        }
        return null;
    }
}
