package io.kvledger.ledger.properties;

import io.kvledger.core.node.properties.ReducerFixtures;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.TransferMode;
import io.kvledger.ledger.diagnosis.Bounds;
import io.kvledger.ledger.diagnosis.Finding;
import io.kvledger.ledger.diagnosis.HangDetectors;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.moriio.PortMath;
import io.kvledger.ledger.properties.ClusterHarness.Applied;
import io.kvledger.ledger.properties.ClusterHarness.Outcome;
import io.kvledger.ledger.properties.ClusterHarness.Plan;
import io.kvledger.ledger.properties.ClusterHarness.ReqPlan;
import io.kvledger.ledger.properties.ClusterHarness.Shape;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Prefill and decode at different TP sizes (1:2, 2:1, 1:4, 4:1, prefill:decode), READ and WRITE,
 * under the seed and newest presets, played by {@link ClusterHarness} with one reducer per engine
 * rank. What each version's code does there (its decode scheduler loops {@code range(own tp_size)}
 * over the 2-argument port offset for {@code remote_blocks}; a prefill worker sends
 * {@code write_done} to {@code decode notify port + dp + own tp_rank}; a READ decode rank d reads
 * from and releases to prefill rank {@code get_moriio_remote_tp_rank(d, D_tp, P_tp)} with
 * {@code consumer_tp_size}, and a prefill rank waits for {@code get_moriio_expected_ack_count}
 * releases) decides what a run may look like:
 * <ul>
 *   <li>READ with a decode TP that is a multiple of the prefill's: healthy, no finding;</li>
 *   <li>READ with the prefill TP above the decode's: the unread prefill ranks are freed by the reap
 *       (class 22, the residual of moriio-protocol.md section 5.7), nothing else;</li>
 *   <li>WRITE with the prefill TP above the decode's: the prefill ranks the decode never notifies
 *       expire their writes at defer_timeout (class 22, never class 27: nothing was lost);</li>
 *   <li>WRITE with the decode TP above the prefill's: the decode ranks above the prefill's never
 *       get write_done and the request hangs (class 22, not a lost notify).</li>
 * </ul>
 * A frame lost on the wire in these deployments still gets the finding of a lost frame.
 */
class HeterogeneousTpTest {

    private static final List<ReqPlan> TWO = List.of(new ReqPlan(40, 1, 0, 0, false), new ReqPlan(17, 1, 0, 0, false));

    static List<Arguments> shapes() {
        List<Arguments> out = new ArrayList<>();
        for (String profile : List.of("seed", "newest")) {
            for (TransferMode mode : TransferMode.values()) {
                for (int[] r : new int[][] {{1, 2}, {2, 1}, {1, 4}, {4, 1}}) {
                    out.add(Arguments.of(Shape.tp(mode, profile, r[0], r[1])));
                }
            }
        }
        return out;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("shapes")
    void each_ratio_gets_what_its_code_does_and_no_false_class_27(Shape shape) {
        Outcome o = ClusterHarness.run(new Plan(shape, TWO, List.of()));
        List<Finding> findings = HangDetectors.run(o.ledger(), Bounds.defaults());
        String all = render(findings);

        // which prefill ports the decode scheduler sent remote_blocks to: its own TP size's ranks
        if (shape.mode() == TransferMode.WRITE) {
            assertThat(remoteBlocksPorts(o, "D0t0")).as(all)
                    .containsExactlyElementsOf(range(61005, shape.dTp()));
        }
        assertThat(anomalies(o, AnomalyKind.WRITE_TASK_EXPIRED)).as(all).isEmpty();
        for (Finding f : findings) {
            // (WRITE P_tp > D_tp: the un-notified ranks' self-ACKs at defer_timeout come in the very call
            // that finds the deferral expired, which the engine logs as "Reaped N deferred sends":
            // reaped-warning, no class, not a leak)
            if (f.detector().equals("reaped-warning")) {
                assertThat(f.bugClass()).as(all).isZero();
                assertThat(shape.mode() == TransferMode.WRITE && shape.pTp() > shape.dTp()).as(all).isTrue();
                continue;
            }
            assertThat(f.bugClass()).as(all).isEqualTo(22);
            assertThat(f.message()).as(all).doesNotContain("lost notify");
        }
        assertReplaysTheSame(o);
        boolean healthy = shape.mode() == TransferMode.READ && shape.dTp() >= shape.pTp();
        if (healthy) {
            assertThat(o.stuck()).isNull();
            assertThat(findings).isEmpty();
            assertThat(HangDetectors.inFlight(o.ledger(), Bounds.defaults())).isEmpty();
            int expected = PortMath.expectedAckCount(shape.pTp(), shape.dTp()).value();
            assertThat(expected).isEqualTo(shape.dTp() / shape.pTp());
            for (int t = 0; t < shape.pTp(); t++) {
                assertThat(releasesTo(o, "P0t" + t)).isEqualTo((long) expected * TWO.size());
            }
            return;
        }
        assertThat(findings).as("a finding for what the topology does").isNotEmpty();
        if (shape.pTp() > shape.dTp()) {
            // completes, the prefill ranks the decode cannot reach are freed late
            assertThat(o.stuck()).isNull();
            assertThat(HangDetectors.inFlight(o.ledger(), Bounds.defaults())).isEmpty();
            for (int t = shape.dTp(); t < shape.pTp(); t++) {
                String node = "P0t" + t;
                assertThat(findings).as(all).anyMatch(f -> f.node().equals(node));
                if (shape.mode() == TransferMode.WRITE) {
                    assertThat(anomalies(o, AnomalyKind.WRITE_RANK_NOT_NOTIFIED).stream().filter(n -> n.equals(node)))
                            .as(all).hasSize(TWO.size());
                    assertThat(releasesTo(o, node)).isZero();
                }
            }
            if (shape.mode() == TransferMode.READ) {
                assertThat(releasesTo(o, "P0t0")).isEqualTo(TWO.size());
            }
        } else {
            // WRITE, decode TP above the prefill's: the decode ranks above it never get write_done
            assertThat(o.stuck()).isNotNull();
            assertThat(findings).as(all).anyMatch(f -> f.node().equals("D0t1") && f.detector().equals("stuck-waiting")
                    && f.message().contains("no prefill TP rank sends write_done to this rank"));
            assertThat(findings).as(all).anyMatch(f -> f.detector().equals("notify-no-listener")
                    && f.message().contains("heterogeneous TP"));
        }
    }

    /**
     * vLLM 239b5ff30's WRITE decode scheduler sends remote_blocks from every TP rank's scheduler
     * call, per its own TP index, to the DECODE address of the request id (switch
     * write-notify-decode-address): D_tp frames to decode notify + remote_dp_rank + 0..D_tp-1,
     * whatever the prefill's TP size, and none reaches a prefill rank.
     */
    @ParameterizedTest(name = "vllm-239b5ff30 WRITE P tp{0} D tp{1}")
    @org.junit.jupiter.params.provider.CsvSource({"1,2", "2,1", "1,4", "4,1"})
    void vllm_239b5ff30_decode_notifies_its_own_address_per_own_tp_index(int pTp, int dTp) {
        Outcome o = ClusterHarness.run(new Plan(Shape.tp(TransferMode.WRITE, "vllm-239b5ff30", pTp, dTp), TWO, List.of()));
        assertThat(remoteBlocksPorts(o, "D0t0")).containsExactlyElementsOf(range(71005, dTp));
        for (int t = 0; t < pTp; t++) {
            String node = "P0t" + t;
            assertThat(o.applied()).noneMatch(a -> a.node().equals(node)
                    && a.event() instanceof io.kvledger.core.event.NodeEvent.RemoteBlocksReceived);
        }
        assertReplaysTheSame(o);
    }

    static List<Arguments> lossy() {
        List<Arguments> out = new ArrayList<>();
        for (String profile : List.of("seed", "newest")) {
            out.add(Arguments.of(Shape.tp(TransferMode.READ, profile, 1, 2), "D0t1 release tx-0 -> P0t0"));
            out.add(Arguments.of(Shape.tp(TransferMode.READ, profile, 1, 4), "D0t3 release tx-0 -> P0t0"));
            out.add(Arguments.of(Shape.tp(TransferMode.READ, profile, 2, 1), "D0t0 release tx-0 -> P0t0"));
            out.add(Arguments.of(Shape.tp(TransferMode.READ, profile, 4, 1), "D0t0 release tx-0 -> P0t0"));
            out.add(Arguments.of(Shape.tp(TransferMode.WRITE, profile, 2, 1), "D0t0 remote_blocks tx-0 -> P0t0"));
            out.add(Arguments.of(Shape.tp(TransferMode.WRITE, profile, 4, 1), "D0t0 remote_blocks tx-0 -> P0t0"));
            out.add(Arguments.of(Shape.tp(TransferMode.WRITE, profile, 1, 2), "P0t0 write_done tx-0 -> D0t0"));
            out.add(Arguments.of(Shape.tp(TransferMode.WRITE, profile, 1, 4), "P0t0 write_done tx-0 -> D0t0"));
        }
        return out;
    }

    @ParameterizedTest(name = "{0} loses {1}")
    @MethodSource("lossy")
    void a_lost_notify_gets_the_finding_of_a_lost_notify(Shape shape, String lose) {
        Outcome o = ClusterHarness.run(new Plan(shape, TWO, List.of(), lose));
        assertThat(o.log()).as("the frame was lost").anyMatch(line -> line.contains("lost on the wire: " + lose));
        List<Finding> findings = HangDetectors.run(o.ledger(), Bounds.defaults());
        String all = render(findings);
        String to = lose.substring(lose.lastIndexOf(' ') + 1);
        if (lose.contains(" release ")) {
            // the prefill rank that should have had it is freed by the reap, for tx-0 only, not as a TP gap
            assertThat(findings).as(all).anyMatch(f -> f.node().equals(to) && f.detector().equals("reaped-without-ack")
                    && "tx-0".equals(f.transferId()) && f.bugClass() == 7);
            assertThat(findings).as(all).noneMatch(f -> f.node().equals(to) && "tx-1".equals(f.transferId())
                    && f.bugClass() != 22);
        } else if (lose.contains(" remote_blocks ")) {
            // the rank the decode does notify expires for real: class 27 on P0t0 for tx-0, and the
            // decode leg waits on it; the ranks it never notifies stay class 22
            assertThat(anomalies(o, AnomalyKind.WRITE_TASK_EXPIRED)).as(all).containsExactly("P0t0");
            assertThat(findings).as(all).anyMatch(f -> f.node().equals("P0t0") && f.bugClass() == 27
                    && "tx-0".equals(f.transferId()));
            assertThat(findings).as(all).anyMatch(f -> f.node().equals("D0t0") && f.detector().equals("stuck-waiting")
                    && "tx-0".equals(f.transferId()) && f.bugClass() == 27
                    && f.message().contains("remote_blocks sent to P0t0") && f.message().contains("lost notify"));
            // (a self-ACK that comes after the reap is an unknown completion id there, class 1; one that
            // comes in the reaping call is the engine's "Reaped N" warning: reaped-warning, no class)
            assertThat(findings).as(all).noneMatch(f -> f.node().startsWith("P0t") && !f.node().equals("P0t0")
                    && f.bugClass() != 22 && f.bugClass() != 1 && !f.detector().equals("reaped-warning"));
        } else {
            // write_done lost on its way to the one decode rank the prefill does send it to
            assertThat(findings).as(all).anyMatch(f -> f.node().equals("D0t0") && f.detector().equals("stuck-waiting")
                    && "tx-0".equals(f.transferId()) && f.message().contains("lost notify"));
        }
    }

    /**
     * What replay --verify checks, per rank: its journaled inputs, run again through a fresh
     * reducer from its configuration, give the very effects the run took.
     */
    private static void assertReplaysTheSame(Outcome o) {
        for (ClusterHarness.Rank k : o.ranks()) {
            ReducerFixtures.Run again = new ReducerFixtures.Run(k.run().config);
            for (int i = 0; i < k.run().events.size(); i++) {
                List<Effect> effects = again.apply(k.run().events.get(i));
                assertThat(effects.stream().map(ReducerFixtures::canonical).toList())
                        .as(k.name() + " #" + i)
                        .isEqualTo(k.run().effects.get(i).stream().map(ReducerFixtures::canonical).toList());
            }
        }
    }

    private static List<Integer> remoteBlocksPorts(Outcome o, String node) {
        TreeSet<Integer> ports = new TreeSet<>();
        for (Applied a : o.applied()) {
            if (a.node().equals(node)) {
                for (Effect e : a.effects()) {
                    if (e instanceof Effect.SendRemoteBlocks rb) {
                        ports.add(rb.port());
                    }
                }
            }
        }
        return List.copyOf(ports);
    }

    private static List<Integer> range(int base, int n) {
        List<Integer> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(base + i);
        }
        return out;
    }

    private static List<String> anomalies(Outcome o, AnomalyKind kind) {
        List<String> nodes = new ArrayList<>();
        for (Applied a : o.applied()) {
            for (Effect e : a.effects()) {
                if (e instanceof Effect.Anomaly an && an.kind() == kind) {
                    nodes.add(a.node());
                }
            }
        }
        return nodes;
    }

    private static long releasesTo(Outcome o, String node) {
        return o.applied().stream().filter(a -> a.node().equals(node)
                && a.event() instanceof io.kvledger.core.event.NodeEvent.ReleaseReceived).count();
    }

    private static String render(List<Finding> findings) {
        StringBuilder b = new StringBuilder();
        for (Finding f : findings) {
            b.append('\n').append(f.node()).append(' ').append(f.detector()).append(" class ").append(f.bugClass())
                    .append(' ').append(f.transferId()).append(": ").append(f.message());
        }
        return b.toString();
    }
}
