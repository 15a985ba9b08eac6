package io.kvledger.ledger.diagnosis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.ledger.diagnosis.CrossNodeDiagnosisTest.Cluster;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * {@code forward-before-read-complete} (class 25) on families of READ decode engines as a vLLM
 * bridge recording shows them: a scheduler journal per DP rank (its {@code matched_tokens} replies)
 * and a worker journal per TP rank (its {@code forward_done} records and recorded {@code get_finished}
 * replies, fed to the ledger as {@code Hangs} feeds a worker stream's). Each step posts the reads of
 * a few requests; a request whose reads are first reported received after a poll that followed its
 * forward did not report them is named 25 on that worker, and nothing else is. Reads reported in the
 * poll right after their forward (the journal cannot tell when they landed), a connector that never
 * reports READs received (the newest), and asynchronous loads give nothing.
 */
class ForwardBeforeReadCompleteFamilyTest {

    private static final long MS = 1_000_000L;

    /** One decode engine shape: DP size, TP size, requests per step, steps, and every k-th request late. */
    record Shape(int dp, int tp, int perStep, int steps, int lateEvery) {}

    static final List<Shape> SHAPES = List.of(new Shape(1, 1, 1, 6, 2), new Shape(1, 2, 3, 5, 3),
            new Shape(2, 1, 2, 8, 4), new Shape(1, 4, 4, 4, 5), new Shape(2, 1, 1, 10, 3), new Shape(1, 1, 8, 3, 7));

    /**
     * Plays a shape; returns the (worker node, request) pairs whose reads were reported only after a
     * later poll. {@code reportsReceived} false: the connector never reports a READ received (the
     * newest). {@code lateEvery} 0: every read is reported in the poll after its forward.
     */
    private static Set<String> play(Cluster c, Shape s, Behaviour b, boolean loadAsync, boolean reportsReceived,
                                    boolean late) {
        Set<String> expected = new LinkedHashSet<>();
        for (int dp = 0; dp < s.dp; dp++) {
            String sched = "D" + dp;
            c.node(sched, config(dp, s, 0, b));
            List<String> workers = new ArrayList<>();
            for (int tp = 0; tp < s.tp; tp++) {
                String w = "D" + dp + "-tp" + tp;
                workers.add(w);
                c.node(w, config(dp, s, tp, b));
            }
            List<String> carried = new ArrayList<>(); // reads reported one poll late
            long t = 10 * MS;
            int n = 0;
            for (int step = 1; step <= s.steps; step++) {
                List<String> posted = new ArrayList<>();
                for (int i = 0; i < s.perStep; i++) {
                    String rid = "cmpl-dp" + dp + "-" + (n++);
                    posted.add(rid);
                    // the scheduler's answer, as the recording holds it
                    c.ledger.observe(sched, new NodeEvent.MatchedTokensQueried(t, rid, 0),
                            List.of(new Effect.MatchedTokens(rid, 31, loadAsync)));
                }
                List<String> doneNow = new ArrayList<>(carried);
                carried.clear();
                for (int i = 0; i < posted.size(); i++) {
                    boolean isLate = late && s.lateEvery > 0 && (step * s.perStep + i) % s.lateEvery == 0;
                    (isLate ? carried : doneNow).add(posted.get(i));
                    if (isLate && reportsReceived && !loadAsync) {
                        for (String w : workers) {
                            expected.add(w + "|" + posted.get(i));
                        }
                    }
                }
                for (String w : workers) {
                    c.ledger.observe(w, new NodeEvent.LoadStarted(t + MS), List.of());
                    c.ledger.observe(w, new NodeEvent.ForwardDone(t + 5 * MS, posted, 32, 0, 100), List.of());
                    NodeEvent poll = new NodeEvent.FinishedPolled(t + 6 * MS);
                    c.ledger.observe(w, poll, List.of());
                    c.ledger.recorded(w, poll, List.of(new Effect.FinishedReported(null,
                            reportsReceived ? List.copyOf(doneNow) : null, null)));
                }
                t += 20 * MS;
            }
            for (String w : workers) { // the last late ones, reported in one more poll
                NodeEvent poll = new NodeEvent.FinishedPolled(t);
                c.ledger.observe(w, poll, List.of());
                c.ledger.recorded(w, poll, List.of(new Effect.FinishedReported(null,
                        reportsReceived ? List.copyOf(carried) : null, null)));
            }
        }
        return expected;
    }

    private static NodeConfig config(int dp, Shape s, int tp, Behaviour b) {
        return NodeConfig.builder(Role.CONSUMER, TransferMode.READ).hostIp("10.0.1.1").dp(dp, s.dp, s.dp)
                .tp(tp, s.tp).behaviour(b).build();
    }

    private static List<Finding> named(Cluster c) {
        return HangDetectors.run(c.ledger, Bounds.defaults()).stream()
                .filter(f -> f.detector().equals(ForwardBeforeReadComplete.DETECTOR)).toList();
    }

    @Test
    void every_read_reported_after_a_later_poll_is_named_25_on_its_worker_and_nothing_else() {
        int damaged = 0;
        for (Shape s : SHAPES) {
            Cluster c = new Cluster();
            Set<String> expected = play(c, s, Behaviour.vllm239b5ff30(), false, true, true);
            List<Finding> all = HangDetectors.run(c.ledger, Bounds.defaults());
            assertThat(all).as("shape %s", s).allSatisfy(f -> {
                assertThat(f.detector()).isEqualTo(ForwardBeforeReadComplete.DETECTOR);
                assertThat(f.bugClass()).isEqualTo(25);
                assertThat(f.message()).contains("did not report the reads received")
                        .contains("its scheduler answered load_kv_async=False");
            });
            assertThat(all.stream().map(f -> f.node() + "|" + f.requestId()).toList())
                    .as("shape %s", s).containsExactlyInAnyOrderElementsOf(expected);
            damaged += expected.size();
        }
        assertThat(damaged).as("damaged (worker, request) pairs over the shapes").isGreaterThan(20);
    }

    @Test
    void the_finding_names_the_evidence() {
        Cluster c = new Cluster();
        play(c, new Shape(1, 1, 1, 2, 2), Behaviour.vllm239b5ff30(), false, true, true);
        Finding f = named(c).getFirst();
        assertThat(f.node()).isEqualTo("D0-tp0");
        assertThat(f.requestId()).isEqualTo("cmpl-dp0-1");
        assertThat(f.message()).isEqualTo("D0-tp0's forward that posted the request's reads ended at t+0.025000 s after "
                + "32 wait_for_layer_load calls that blocked 0.000000 s in all; the get_finished poll after it "
                + "(t+0.026000 s) did not report the reads received; the one at t+0.040000 s did: the forward consumed KV "
                + "still being read (its blocks also entered the prefix cache; #48534's per-layer barrier holds each layer "
                + "until its reads land); its scheduler answered load_kv_async=False (the KV promised before the forward)");
    }

    @Test
    void clean_families_give_nothing() {
        for (Shape s : SHAPES) {
            // every read reported in the poll right after its forward
            Cluster onTime = new Cluster();
            play(onTime, s, Behaviour.vllm239b5ff30(), false, true, false);
            assertThat(HangDetectors.run(onTime.ledger, Bounds.defaults())).as("on time %s", s).isEmpty();
            // the newest connector: its barrier keeps the promise, and it reports no READ received
            Cluster newest = new Cluster();
            play(newest, s, Behaviour.newest(), false, false, true);
            assertThat(HangDetectors.run(newest.ledger, Bounds.defaults())).as("newest %s", s).isEmpty();
            // an asynchronous load: the scheduler waits for the reads, the request is not in that forward
            Cluster async = new Cluster();
            play(async, s, Behaviour.vllm239b5ff30(), true, true, true);
            assertThat(HangDetectors.run(async.ledger, Bounds.defaults())).as("async %s", s).isEmpty();
        }
    }

    @Test
    void without_the_scheduler_s_journal_the_finding_says_so() {
        Cluster c = new Cluster();
        Shape s = new Shape(1, 1, 1, 2, 2);
        c.node("D0-tp0", config(0, s, 0, Behaviour.vllm239b5ff30()));
        c.ledger.observe("D0-tp0", new NodeEvent.ForwardDone(5 * MS, List.of("r"), 0, 0, -1), List.of());
        for (int p = 0; p < 2; p++) {
            NodeEvent poll = new NodeEvent.FinishedPolled((6 + p) * MS);
            c.ledger.observe("D0-tp0", poll, List.of());
            c.ledger.recorded("D0-tp0", poll, List.of(new Effect.FinishedReported(null, p == 0 ? List.of() : List.of("r"),
                    null)));
        }
        List<Finding> f = named(c);
        assertThat(f).hasSize(1);
        assertThat(f.getFirst().message()).contains("after no wait_for_layer_load call")
                .endsWith("the scheduler's journal of this engine is not among the journals (READ answers "
                        + "load_kv_async=False in every version kvledger models)");
    }
}
