package io.kvledger.ledger.diagnosis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.ledger.diagnosis.CrossNodeDiagnosisTest.Cluster;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The partial-completions detector (class 33, READ WideEP partial completions) and its neighbour
 * reads-never-completed (26 or 33), on a family of READ decode topologies: TP 1, 2 and 4, DP rank
 * 0 or 1 of 2, one or three layers, with and without healthy requests around the hang. The clean
 * family is the same topologies with the last read completing late (slow but progressing).
 */
class PartialCompletionsDetectorTest {

    private static final long S = 1_000_000_000L;

    private static String rank(int dp, int tp) {
        return "D" + dp + (tp == 0 ? "" : "-tp" + tp);
    }

    private static List<String> layers(int n) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add("model.layers." + i + ".self_attn.attn");
        }
        return out;
    }

    /** Admits {@code rid} on one rank and starts its load; returns its posted reads (one per layer). */
    private static List<Effect.PostRead> start(Cluster c, String node, String rid, String tid, long at, int step) {
        c.on(node, new NodeEvent.RequestAdmitted(at, rid, 32, 32, KvParams.of("do_remote_prefill", true,
                "do_remote_decode", false, "transfer_id", tid, "remote_host", "10.0.0.1", "remote_handshake_port", 6301L,
                "remote_notify_port", 61005L, "remote_engine_id", "10.0.0.1:6301", "remote_block_ids", List.of(List.of(4L, 5L)))));
        c.on(node, new NodeEvent.MatchedTokensQueried(at + 1, rid, 0));
        c.on(node, new NodeEvent.BlocksAllocated(at + 2, rid, BlockGroups.single(8, 9), 31));
        c.on(node, new NodeEvent.StepScheduled(at + 3, step, List.of()));
        List<Effect> load = new ArrayList<>(c.on(node, new NodeEvent.LoadStarted(at + 4)));
        for (Effect.StartHandshake h : c.only(load, Effect.StartHandshake.class)) {
            load.addAll(c.on(node, new NodeEvent.HandshakeCompleted(at + 5, h.key())));
        }
        List<Effect.PostRead> reads = c.only(load, Effect.PostRead.class);
        assertThat(reads).as(node + " " + rid + " posts reads").isNotEmpty();
        return reads;
    }

    private static void complete(Cluster c, String node, String rid, List<Effect.PostRead> reads, long at) {
        for (Effect.PostRead r : reads) {
            c.on(node, new NodeEvent.TransferCompleted(at, r.statusId(), true, 0, "ok"));
        }
        c.on(node, new NodeEvent.FinishedPolled(at + 1));
        c.on(node, new NodeEvent.RequestFinished(at + 2, rid, FinishStatus.FINISHED_STOPPED, BlockGroups.single(8, 9)));
    }

    /**
     * One topology: every rank of decode DP rank {@code dp} reads tx-hang; the last rank leaves
     * {@code missing} of its reads uncompleted (or, late, completes them at 40 s); {@code healthy}
     * requests go through on every rank around it. The journals end at 70 s.
     */
    private static List<Finding> run(int tpSize, int dp, int nLayers, int healthy, int missing, boolean late,
                                     boolean othersDone) {
        Cluster c = new Cluster();
        for (int t = 0; t < tpSize; t++) {
            c.node(rank(dp, t), NodeConfig.builder(Role.CONSUMER, TransferMode.READ).hostIp("10.0.1.1").dp(dp, 2, 2)
                    .tp(t, tpSize).layerNames(layers(nLayers)).build());
        }
        int step = 1;
        for (int h = 0; h < healthy; h++) {
            for (int t = 0; t < tpSize; t++) {
                List<Effect.PostRead> r = start(c, rank(dp, t), "ok-" + h, "tx-ok-" + h, h * S, step);
                complete(c, rank(dp, t), "ok-" + h, r, h * S + S / 10);
            }
            step++;
        }
        List<List<Effect.PostRead>> hang = new ArrayList<>();
        for (int t = 0; t < tpSize; t++) {
            hang.add(start(c, rank(dp, t), "hang", "tx-hang", 5 * S, step));
        }
        for (int t = 0; t < tpSize; t++) {
            List<Effect.PostRead> r = hang.get(t);
            if (t < tpSize - 1) {
                if (othersDone) {
                    complete(c, rank(dp, t), "hang", r, 5 * S + S / 10);
                }
                continue;
            }
            List<Effect.PostRead> done = r.subList(0, r.size() - missing);
            for (Effect.PostRead x : done) {
                c.on(rank(dp, t), new NodeEvent.TransferCompleted(5 * S + S / 10, x.statusId(), true, 0, "ok"));
            }
            if (late) {
                complete(c, rank(dp, t), "hang", r.subList(r.size() - missing, r.size()), 40 * S);
            }
        }
        for (int t = 0; t < tpSize; t++) {
            c.on(rank(dp, t), new NodeEvent.StepScheduled(70 * S, step + 1, List.of()));
        }
        // DP 2 with TP above 1 is also class 23's topology (listener and dialer port forms differ):
        // that node-level finding is right, and not this detector's
        return HangDetectors.run(c.ledger, Bounds.defaults()).stream()
                .filter(x -> !(x.requestId() == null && x.detector().equals("wrong-port-offset-form"))).toList();
    }

    @Test
    void a_rank_whose_reads_complete_only_in_part_is_class_33_on_every_topology() {
        int cases = 0;
        for (int tp : new int[] {1, 2, 4}) {
            for (int dp : new int[] {0, 1}) {
                for (int nLayers : new int[] {1, 3}) {
                    for (int healthy : new int[] {0, 3}) {
                        if (tp == 1 && nLayers == 1) {
                            continue; // one read on one rank: nothing can complete in part
                        }
                        String what = "tp" + tp + " dp" + dp + " layers " + nLayers + " healthy " + healthy;
                        List<Finding> f = run(tp, dp, nLayers, healthy, 1, false, true);
                        String stuckRank = rank(dp, tp - 1);
                        assertThat(f).as(what + ": " + f).anySatisfy(x -> {
                            assertThat(x.detector()).isEqualTo("partial-completions");
                            assertThat(x.bugClass()).isEqualTo(33);
                            assertThat(x.node()).isEqualTo(stuckRank);
                            assertThat(x.requestId()).isEqualTo("hang");
                            assertThat(x.transferId()).isEqualTo("tx-hang");
                            assertThat(x.message()).contains("completions that never add up")
                                    .contains(stuckRank + " tp" + (tp - 1) + " " + (nLayers - 1) + "/" + nLayers + " done");
                        });
                        // nothing else: not the healthy requests, not the ranks that finished
                        assertThat(f).as(what + ": " + f).allSatisfy(x -> {
                            assertThat(x.requestId()).isEqualTo("hang");
                            assertThat(x.node()).isEqualTo(stuckRank);
                            assertThat(x.bugClass()).isNotEqualTo(0);
                        });
                        cases++;
                    }
                }
            }
        }
        assertThat(cases).isEqualTo(20);
    }

    @Test
    void reads_of_which_none_completed_anywhere_say_the_journal_cannot_tell_26_from_33() {
        for (int tp : new int[] {1, 2}) {
            for (int nLayers : new int[] {1, 3}) {
                List<Finding> f = run(tp, 0, nLayers, 2, nLayers, false, false);
                assertThat(f).as("tp" + tp + " layers " + nLayers + ": " + f).anySatisfy(x -> {
                    assertThat(x.detector()).isEqualTo("reads-never-completed");
                    assertThat(x.bugClass()).isEqualTo(26);
                    assertThat(x.requestId()).isEqualTo("hang");
                    assertThat(x.message()).startsWith("one of 26 or 33").contains("the journal lacks");
                });
                assertThat(f).noneSatisfy(x -> assertThat(x.bugClass()).isIn(0, 33));
            }
        }
    }

    @Test
    void clean_family_slow_but_complete_reads_give_no_finding() {
        for (int tp : new int[] {1, 2, 4}) {
            for (int dp : new int[] {0, 1}) {
                for (int nLayers : new int[] {1, 3}) {
                    List<Finding> f = run(tp, dp, nLayers, 3, 1, true, true);
                    assertThat(f).as("tp" + tp + " dp" + dp + " layers " + nLayers).isEmpty();
                }
            }
        }
    }
}
