package io.kvledger.core.node.scheduler;

import static io.kvledger.core.node.scheduler.SchedulerFixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.KvParams;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code get_num_new_matched_tokens}: protocol 5.2 step 1, 5.4 step 1, 5.5 step 1, 8.4, and
 * seed-vs-newest A3 (#12 to #14) and C.11.
 */
class MatchedTokensTest {

    private static final KvParams REMOTE_PREFILL = params("do_remote_prefill", true, "transfer_id", "t");

    /** Params None, {}, do_remote_prefill False, do_remote_prefill True. */
    private static List<KvParams> readCases() {
        return Arrays.asList(null, KvParams.empty(), params("do_remote_prefill", false),
                params("do_remote_prefill", true));
    }

    @Test
    void test_read_matches_only_requests_with_pending_remote_prefill() {
        Node d = new Node(consumer(TransferMode.READ));
        List<Effect.MatchedTokens> got = new ArrayList<>();
        List<Effect> fx = new ArrayList<>();
        int i = 0;
        for (KvParams kv : readCases()) {
            String rid = "r" + i++;
            d.admit(rid, 32, kv);
            List<Effect> m = d.match(rid, 0);
            fx.addAll(m);
            got.add(single(m, Effect.MatchedTokens.class));
        }

        assertThat(got).extracting(Effect.MatchedTokens::count, Effect.MatchedTokens::loadAsync)
                .containsExactly(org.assertj.core.groups.Tuple.tuple(0, false), org.assertj.core.groups.Tuple.tuple(0, false),
                        org.assertj.core.groups.Tuple.tuple(0, false), org.assertj.core.groups.Tuple.tuple(31, false));
        assertThat(anomalies(fx)).doesNotContain(AnomalyKind.READ_MATCH_WITHOUT_RECV);
    }

    @Test
    void seed_read_matches_every_request_and_flags_the_ones_nothing_will_read() {
        Node d = new Node(consumer(TransferMode.READ).behaviour(seed()));
        List<Integer> counts = new ArrayList<>();
        List<Boolean> flagged = new ArrayList<>();
        int i = 0;
        for (KvParams kv : readCases()) {
            String rid = "r" + i++;
            d.admit(rid, 32, kv);
            List<Effect> m = d.match(rid, 0);
            Effect.MatchedTokens t = single(m, Effect.MatchedTokens.class);
            assertThat(t.loadAsync()).isFalse();
            counts.add(t.count());
            flagged.add(anomalies(m).contains(AnomalyKind.READ_MATCH_WITHOUT_RECV));
        }

        assertThat(counts).containsExactly(31, 31, 31, 31);
        assertThat(flagged).containsExactly(true, true, true, false);
    }

    @Test
    void producer_never_loads_kv() {
        for (TransferMode mode : TransferMode.values()) {
            Node p = new Node(producer(mode));
            p.admit("r", 40, params("do_remote_prefill", true, "do_remote_decode", true));

            assertThat(p.matched("r", 0)).as(mode.name()).isEqualTo(new Effect.MatchedTokens("r", 0, false));
        }
    }

    @Test
    void write_consumer_matches_prompt_minus_computed_asynchronously_even_without_params() {
        Node d = new Node(consumer(TransferMode.WRITE));
        d.admit("with", 40, REMOTE_PREFILL);
        d.admit("without", 40, null);

        assertThat(d.matched("with", 8)).isEqualTo(new Effect.MatchedTokens("with", 32, true));
        assertThat(d.matched("without", 8)).isEqualTo(new Effect.MatchedTokens("without", 32, true));
    }

    @Test
    void read_consumer_keeps_the_last_prompt_token_and_loads_synchronously() {
        Node d = new Node(consumer(TransferMode.READ));
        d.admit("r", 40, REMOTE_PREFILL);

        assertThat(d.matched("r", 16)).isEqualTo(new Effect.MatchedTokens("r", 23, false));
    }

    @Test
    void newest_clamps_matched_tokens_at_zero() {
        Node w = new Node(consumer(TransferMode.WRITE));
        Node r = new Node(consumer(TransferMode.READ));
        w.admit("w", 32, REMOTE_PREFILL);
        r.admit("r", 32, REMOTE_PREFILL);

        List<Effect> wf = w.match("w", 40);
        List<Effect> rf = r.match("r", 32);

        assertThat(single(wf, Effect.MatchedTokens.class)).isEqualTo(new Effect.MatchedTokens("w", 0, true));
        assertThat(single(rf, Effect.MatchedTokens.class)).isEqualTo(new Effect.MatchedTokens("r", 0, false));
        assertThat(anomalies(wf)).doesNotContain(AnomalyKind.NEGATIVE_MATCHED_TOKENS);
        assertThat(anomalies(rf)).doesNotContain(AnomalyKind.NEGATIVE_MATCHED_TOKENS);
    }

    @Test
    void seed_does_not_clamp_and_reports_negative_counts() {
        Node w = new Node(consumer(TransferMode.WRITE).behaviour(seed()));
        Node r = new Node(consumer(TransferMode.READ).behaviour(seed()));
        w.admit("w", 32, REMOTE_PREFILL);
        r.admit("r", 32, REMOTE_PREFILL);

        List<Effect> wf = w.match("w", 40);
        List<Effect> rf = r.match("r", 40);

        assertThat(single(wf, Effect.MatchedTokens.class)).isEqualTo(new Effect.MatchedTokens("w", -8, true));
        assertThat(single(rf, Effect.MatchedTokens.class)).isEqualTo(new Effect.MatchedTokens("r", -9, false));
        assertThat(anomalies(wf)).contains(AnomalyKind.NEGATIVE_MATCHED_TOKENS);
        assertThat(anomalies(rf)).contains(AnomalyKind.NEGATIVE_MATCHED_TOKENS);
    }

    @Test
    void seed_counts_prompt_token_ids_and_newest_counts_num_prompt_tokens() {
        // A13: a prompt-embeds request has prompt_token_ids None (-1 here) but 40 prompt tokens.
        for (TransferMode mode : TransferMode.values()) {
            Node s = new Node(consumer(mode).behaviour(seed()));
            Node n = new Node(consumer(mode).behaviour(Behaviour.newest()));
            s.admit("embeds", 40, -1, REMOTE_PREFILL);
            n.admit("embeds", 40, -1, REMOTE_PREFILL);
            s.admit("partial", 40, 30, REMOTE_PREFILL);

            int seedEmbeds = s.matched("embeds", 0).count();
            int newestEmbeds = n.matched("embeds", 0).count();
            int seedPartial = s.matched("partial", 0).count();

            if (mode == TransferMode.WRITE) {
                assertThat(seedEmbeds).isEqualTo(0);
                assertThat(newestEmbeds).isEqualTo(40);
                assertThat(seedPartial).isEqualTo(30);
            } else {
                assertThat(seedEmbeds).isEqualTo(-1);
                assertThat(newestEmbeds).isEqualTo(39);
                assertThat(seedPartial).isEqualTo(29);
            }
        }
    }

    @Test
    void seed_prompt_embeds_read_request_goes_negative() {
        Node s = new Node(consumer(TransferMode.READ).behaviour(seed()));
        s.admit("embeds", 40, -1, REMOTE_PREFILL);

        List<Effect> fx = s.match("embeds", 0);

        assertThat(single(fx, Effect.MatchedTokens.class).count()).isEqualTo(-1);
        assertThat(anomalies(fx)).contains(AnomalyKind.NEGATIVE_MATCHED_TOKENS);
    }

    @Test
    void write_consumer_asked_again_after_its_load_finished_is_reparked() {
        // C.11 / #57705: after finished_recving the scheduler asks with N-1 computed and gets (1, True).
        Node d = new Node(consumer(TransferMode.WRITE));
        String rid = proxyRid("repark");
        d.admit(rid, 40, params("do_remote_prefill", true, "transfer_id", "tx-rp"));
        d.match(rid, 0);
        d.alloc(rid, one(1, 2, 3), 40);
        d.output(null, List.of(rid));

        List<Effect> fx = d.match(rid, 39);

        assertThat(single(fx, Effect.MatchedTokens.class)).isEqualTo(new Effect.MatchedTokens(rid, 1, true));
        assertThat(anomalies(fx)).contains(AnomalyKind.WRITE_RECV_REPARKED);
    }
}
