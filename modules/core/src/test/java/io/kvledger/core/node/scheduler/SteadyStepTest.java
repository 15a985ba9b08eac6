package io.kvledger.core.node.scheduler;

import static io.kvledger.core.node.scheduler.SchedulerFixtures.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.model.FinishStatus;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A steady step (the same requests running, none new, finished or preempted, and none with new
 * blocks) answers the same whenever the node reads it: {@code build_connector_meta} reads a cached
 * request only for its new blocks, and no transition reads the step's time. So the drive client
 * may hold it for a later frame, as an idle step ({@code quiet}; the node stamps a call when it
 * reads it). Checked for each role and mode, in newest, seed and first-owner-wins, with a chunked
 * prefill's pending save, a deferred free pending and a prompt still loading: the step read 250 ms
 * or an hour later gives the same effects, and so does every event after it (at the same times).
 */
class SteadyStepTest {

    private static final long DEFER = NodeConfig.seconds(60);

    @Test
    void a_steady_steps_answer_and_all_that_follows_do_not_depend_on_when_it_is_read() {
        assertTheSameWheneverRead(false, (what, producer, mode, now) ->
                assertThat(now.get(0)).as(what).hasAtLeastOneElementOfType(Effect.MetadataBuilt.class));
    }

    /**
     * A decode step's usual news, new blocks for some of the same requests (none new, finished or
     * preempted), may wait too: {@code build_connector_meta} reads no time, and what else it reads
     * (pending saves, staged receives and saves) changes only by calls that stay behind it in order.
     * Here a chunked prefill's pending save completes and a decoding request without one gets a new
     * block (skipped, or {@code KeyError} where PENDING_SAVE_UNKNOWN_RAISES is on): the same effects
     * read at once, 250 ms or an hour later, and after it.
     */
    @Test
    void a_step_whose_news_is_new_blocks_answers_the_same_whenever_it_is_read() {
        assertTheSameWheneverRead(true, (what, producer, mode, now) -> {
            assertThat(now.get(0)).as(what).isNotEmpty();
            if (producer && mode == TransferMode.WRITE) {  // r1's pending save completes in it (staged, or
                // its metadata cannot be made: this fixture's request names no address)
                assertThat(now.get(0)).as(what).anyMatch(e -> e instanceof Effect.PhaseChanged pc
                        && pc.requestId().equals("r1") || e instanceof Effect.Anomaly a && "r1".equals(a.requestId()));
            }
        });
    }

    /** What each case checks of the effects read at once, beyond their being the same when read later. */
    private interface CaseCheck {
        void check(String what, boolean producer, TransferMode mode, List<List<Effect>> now);
    }

    /**
     * In newest, seed and first-owner-wins, each role and mode: the step ({@code newBlocks}: with new
     * blocks) read 250 ms or an hour late gives the same effects, for it and every later event, as
     * read at once; then {@code check} on those.
     */
    private static void assertTheSameWheneverRead(boolean newBlocks, CaseCheck check) {
        for (Behaviour b : List.of(Behaviour.newest(), seed(), firstOwnerWins())) {
            for (boolean producer : new boolean[] {true, false}) {
                for (TransferMode mode : TransferMode.values()) {
                    String what = b.profile() + (producer ? " producer " : " consumer ") + mode;
                    List<List<Effect>> now = run(b, producer, mode, 0, newBlocks);
                    for (long later : new long[] {NodeConfig.NS_PER_S / 4, NodeConfig.seconds(3600)}) {
                        List<List<Effect>> held = run(b, producer, mode, later, newBlocks);
                        assertThat(held).as(what + ", read %d ns later", later).isEqualTo(now);
                    }
                    check.check(what, producer, mode, now);
                }
            }
        }
    }

    /**
     * The effects of the steady step (read {@code late} ns after its turn) and of each event after it;
     * {@code blocks}: the step gives r1 (its prompt's last chunk) and r3 new blocks.
     */
    private static List<List<Effect>> run(Behaviour b, boolean producer, TransferMode mode, long late, boolean blocks) {
        Node n = new Node((producer ? producer(mode) : consumer(mode)).behaviour(b).deferTimeoutNs(DEFER));
        var p1 = producer ? params("do_remote_decode", true, "transfer_id", "tid-1")
                : params("do_remote_prefill", true, "transfer_id", "tid-1", "remote_block_ids", ids(7, 8, 9, 10),
                        "remote_engine_id", "e", "remote_host", "10.0.0.1", "remote_port", 6301);
        var p2 = producer ? params("do_remote_decode", true, "transfer_id", "tid-2")
                : params("do_remote_prefill", true, "transfer_id", "tid-2", "remote_block_ids", ids(11, 12),
                        "remote_engine_id", "e", "remote_host", "10.0.0.1", "remote_port", 6301);
        n.admit("r1", 64, p1);
        n.admit("r2", 32, p2);
        n.admit("r3", 16, null);
        n.match("r1", 0);
        n.alloc("r1", one(1), producer ? 0 : 64);  // a chunk of a prompt (producer), or a load
        n.alloc("r2", one(2, 3), 0);
        n.alloc("r3", one(4), 0);
        n.at(2_000_000L).step();
        n.at(3_000_000L).step(cached("r1", one(5)), cached("r2", null), cached("r3", null));
        n.at(4_000_000L).finish("r2", FinishStatus.FINISHED_LENGTH_CAPPED, one(2, 3));  // a deferred free (producer)
        n.at(5_000_000L).step(cached("r1", null), cached("r3", null));
        List<List<Effect>> out = new ArrayList<>();
        out.add(blocks ? n.at(6_000_000L + late).step(cached("r1", one(6, 7, 8, 9)), cached("r3", one(10)))
                : n.at(6_000_000L + late).step(cached("r1", null), cached("r3", null)));  // the steady step
        // what follows at the same times either way (after the latest read of the steady step)
        long t = NodeConfig.seconds(7200);
        out.add(n.at(t).output(null, null));
        out.add(n.at(t + 1).step(cached("r1", one(6, 7)), cached("r3", null)));
        out.add(n.output(List.of("r2"), null));
        out.add(n.at(t + 2).finish("r1", FinishStatus.FINISHED_LENGTH_CAPPED, one(1, 5, 6, 7)));
        out.add(n.at(t + 3 + DEFER).output(null, null));
        out.add(n.step(cached("r3", null)));
        return out;
    }
}
