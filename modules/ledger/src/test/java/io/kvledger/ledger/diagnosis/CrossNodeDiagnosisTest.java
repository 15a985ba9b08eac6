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
import io.kvledger.core.moriio.RequestIds;
import io.kvledger.core.moriio.ZmqAddress;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Hand-built two-node READ flows whose hang only shows across nodes. */
class CrossNodeDiagnosisTest {

    private static final String UUID = "0123456789abcdef0123456789abcdef";
    private static final long S = 1_000_000_000L;

    /** Nodes, their states, and a ledger fed with every transition. */
    static final class Cluster {
        final Map<String, NodeState> states = new LinkedHashMap<>();
        final Ledger ledger = new Ledger();

        void node(String name, NodeConfig c) {
            states.put(name, NodeState.initial(c));
            ledger.nodeStarted(name, c, NodeReducer.startupChecks(c));
        }

        List<Effect> on(String node, NodeEvent e) {
            List<Effect> fx = NodeReducer.apply(states.get(node), e).effects();
            ledger.observe(node, e, fx);
            return fx;
        }

        /** Prefill leg of a READ request up to request_finished; returns the params it hands the decode. */
        KvParams prefillLeg(String node, String rid, KvParams params) {
            on(node, new NodeEvent.RequestAdmitted(0, rid, 32, 32, params));
            on(node, new NodeEvent.MatchedTokensQueried(1, rid, 0));
            on(node, new NodeEvent.BlocksAllocated(2, rid, BlockGroups.single(4, 5), 0));
            on(node, new NodeEvent.StepScheduled(3, 1, List.of()));
            List<Effect> fin = on(node, new NodeEvent.RequestFinished(4, rid, FinishStatus.FINISHED_LENGTH_CAPPED,
                    BlockGroups.single(4, 5)));
            return only(fin, Effect.FinishDecision.class).get(0).params().copy();
        }

        /** Decode leg of a READ request: admitted, handshaken, every read done; returns the release it sends. */
        Effect.SendRelease decodeLegToRelease(String node, String rid, KvParams params) {
            on(node, new NodeEvent.RequestAdmitted(5, rid, 32, 32, params));
            on(node, new NodeEvent.MatchedTokensQueried(6, rid, 0));
            on(node, new NodeEvent.BlocksAllocated(7, rid, BlockGroups.single(8, 9), 31));
            on(node, new NodeEvent.StepScheduled(8, 1, List.of()));
            List<Effect> load = on(node, new NodeEvent.LoadStarted(9));
            for (Effect.StartHandshake h : only(load, Effect.StartHandshake.class)) {
                load = new ArrayList<>(load);
                load.addAll(on(node, new NodeEvent.HandshakeCompleted(10, h.key())));
            }
            for (Effect.PostRead r : only(load, Effect.PostRead.class)) {
                on(node, new NodeEvent.TransferCompleted(11, r.statusId(), true, 0, "ok"));
            }
            return only(on(node, new NodeEvent.FinishedPolled(12)), Effect.SendRelease.class).get(0);
        }

        /** The node name of decode TP rank {@code t} in {@link #readDeployment}. */
        static String decodeRank(int t) {
            return t == 0 ? "D0" : "D0-tp" + t;
        }

        /**
         * A READ deployment up to the decode's reads: prefills {@code P0..} (host 10.0.0.p+1) and one
         * decode of TP {@code decodeTp} on 10.0.1.1 ({@link #decodeRank}); request {@code i} prefilled
         * on {@code P(i % prefills)} with transfer id {@code tx-i}, each prefill that holds one loaded;
         * then rank by rank, every request ({@code d-i}, blocks 8+2i and 9+2i) admitted, allocated,
         * scheduled and loaded, its handshakes answered, and {@code reads} given the rank and the reads
         * it posted (before the next rank starts).
         */
        void readDeployment(int prefills, int decodeTp, int requests,
                            java.util.function.BiConsumer<String, List<Effect.PostRead>> reads) {
            for (int p = 0; p < prefills; p++) {
                node("P" + p, NodeConfig.builder(Role.PRODUCER, TransferMode.READ).hostIp("10.0.0." + (p + 1)).build());
            }
            for (int t = 0; t < decodeTp; t++) {
                node(decodeRank(t), NodeConfig.builder(Role.CONSUMER, TransferMode.READ).hostIp("10.0.1.1").tp(t, decodeTp).build());
            }
            List<KvParams> back = new ArrayList<>();
            for (int i = 0; i < requests; i++) {
                back.add(prefillLeg("P" + (i % prefills), "p-" + i, KvParams.of("do_remote_decode", true,
                        "transfer_id", "tx-" + i)));
            }
            for (int p = 0; p < Math.min(prefills, requests); p++) {
                on("P" + p, new NodeEvent.LoadStarted(5));
            }
            for (int t = 0; t < decodeTp; t++) {
                String node = decodeRank(t);
                for (int i = 0; i < requests; i++) {
                    on(node, new NodeEvent.RequestAdmitted(6, "d-" + i, 32, 32, back.get(i)));
                    on(node, new NodeEvent.MatchedTokensQueried(6, "d-" + i, 0));
                    on(node, new NodeEvent.BlocksAllocated(6, "d-" + i, BlockGroups.single(8 + 2 * i, 9 + 2 * i), 31));
                }
                on(node, new NodeEvent.StepScheduled(7, 1, List.of()));
                List<Effect> load = new ArrayList<>(on(node, new NodeEvent.LoadStarted(8)));
                for (Effect.StartHandshake h : only(load, Effect.StartHandshake.class)) {
                    load.addAll(on(node, new NodeEvent.HandshakeCompleted(9, h.key())));
                }
                reads.accept(node, only(load, Effect.PostRead.class));
            }
        }

        /**
         * Each of the first {@code prefills} prefills polls what it finished sending (t=13), hands it
         * back to the scheduler (t=14), and gets an empty connector output at 61 s (past the defer
         * timeout).
         */
        void settlePrefills(int prefills) {
            for (int p = 0; p < prefills; p++) {
                List<String> done = new ArrayList<>();
                for (Effect.FinishedReported f : only(on("P" + p, new NodeEvent.FinishedPolled(13)), Effect.FinishedReported.class)) {
                    if (f.doneSending() != null) {
                        done.addAll(f.doneSending());
                    }
                }
                on("P" + p, new NodeEvent.ConnectorOutputReceived(14, done, List.of()));
                on("P" + p, new NodeEvent.ConnectorOutputReceived(61 * 1_000_000_000L, List.of(), List.of()));
            }
        }

        <T extends Effect> List<T> only(List<Effect> fx, Class<T> type) {
            List<T> out = new ArrayList<>();
            for (Effect e : fx) {
                if (type.isInstance(e)) {
                    out.add(type.cast(e));
                }
            }
            return out;
        }
    }

    /**
     * Prefill P1 (global DP rank 1 of 2, TP rank 0 of 2) and a READ decode D0 (TP 0 of 2). The
     * decode's release uses the 3-argument offset (base + 1*2 + 0) while P1 listens on the
     * 2-argument one (base + 1 + 0): the release goes nowhere and P1 reaps.
     */
    @Test
    void release_to_the_three_argument_port_is_diagnosed_on_both_legs() {
        Cluster c = new Cluster();
        NodeConfig p = NodeConfig.builder(Role.PRODUCER, TransferMode.READ).hostIp("10.0.0.1").dp(1, 2, 2).tp(0, 2).build();
        NodeConfig d = NodeConfig.builder(Role.CONSUMER, TransferMode.READ).hostIp("10.0.1.1").tp(0, 2).build();
        c.node("P1", p);
        c.node("D0", d);
        String pAddr = new ZmqAddress("10.0.0.1", 6301, 61005).format();
        String dAddr = new ZmqAddress("10.0.1.1", 6301, 61005).format();
        String base = RequestIds.proxyRequestId(ZmqAddress.parse(pAddr).value(), ZmqAddress.parse(dAddr).value(), UUID);
        String prid = "cmpl-" + base + "-0-aaaaaaaa";
        String drid = "cmpl-" + base + "-0-bbbbbbbb";
        KvParams returned = c.prefillLeg("P1", prid, KvParams.of("do_remote_decode", true,
                "do_remote_prefill", false, "transfer_id", "tx-port"));
        returned.put("remote_tp_size", 2L);
        Effect.SendRelease release = c.decodeLegToRelease("D0", drid, returned);
        assertThat(release.port()).isEqualTo(61005 + 2);
        c.on("D0", new NodeEvent.RequestFinished(13, drid, FinishStatus.FINISHED_STOPPED, BlockGroups.single(8, 9)));
        // the release never reaches P1 (it listens on 61006); P1 reaps at defer_timeout
        c.on("P1", new NodeEvent.ConnectorOutputReceived(61 * S, null, null));

        List<Finding> f = HangDetectors.run(c.ledger, Bounds.defaults());
        assertThat(f).anySatisfy(x -> {
            assertThat(x.detector()).isEqualTo("wrong-port-offset-form");
            assertThat(x.node()).isEqualTo("D0");
            assertThat(x.bugClass()).isEqualTo(23);
            assertThat(x.message()).contains("10.0.0.1:61007").contains("P1").contains("61006");
        });
        assertThat(f).anySatisfy(x -> {
            assertThat(x.detector()).isEqualTo("reaped-without-ack");
            assertThat(x.node()).isEqualTo("P1");
            assertThat(x.requestId()).isEqualTo(prid);
            assertThat(x.message()).contains("3-argument form");
        });
        // and P1's own startup topology check (DP 2 x TP 2) names the same hazard
        assertThat(f).anySatisfy(x -> {
            assertThat(x.detector()).isEqualTo("wrong-port-offset-form");
            assertThat(x.node()).isEqualTo("P1");
            assertThat(x.message()).startsWith("topology check");
        });
    }

    /**
     * READ 1P1D behind a tap (the live demo's shape): the request ids and params name the tap's
     * port, 61105, in front of P0's 61005. A release the tap's journal shows crossing is followed
     * through the tap to P0; one it never shows crossing is named with the tap.
     */
    @Test
    void a_release_sent_to_a_taps_port_is_followed_through_the_tap() {
        Cluster c = new Cluster();
        NodeConfig pc = NodeConfig.builder(Role.PRODUCER, TransferMode.READ).hostIp("10.0.0.1").build();
        c.node("P0", pc);
        c.node("D0", NodeConfig.builder(Role.CONSUMER, TransferMode.READ).hostIp("10.0.1.1").build());
        String tap = "tap P-10.0.0.1-61005";
        c.node(tap, pc);
        c.ledger.tap(tap, "10.0.0.1", 61105);
        String[] tids = {"tx-crossed", "tx-not-crossed"};
        for (int i = 0; i < tids.length; i++) {
            String base = RequestIds.proxyRequestId(new ZmqAddress("10.0.0.1", 6301, 61105),
                    new ZmqAddress("10.0.1.1", 6301, 61005), UUID.substring(1) + i);
            String prid = "cmpl-" + base + "-0-aaaaaaaa";
            String drid = "cmpl-" + base + "-0-bbbbbbbb";
            KvParams returned = c.prefillLeg("P0", prid, KvParams.of("do_remote_decode", true,
                    "do_remote_prefill", false, "transfer_id", tids[i]));
            returned.put("remote_notify_port", 61105L);
            Effect.SendRelease release = c.decodeLegToRelease("D0", drid, returned);
            assertThat(release.port()).as("the release goes to the tap").isEqualTo(61105);
            c.on("D0", new NodeEvent.RequestFinished(13, drid, FinishStatus.FINISHED_STOPPED, BlockGroups.single(8, 9)));
            if (i == 0) {
                // on the tap's own clock (another process's); what its reducer would decide is ignored
                c.on(tap, new NodeEvent.ReleaseReceived(1_000_000 * S, tids[i], 1));
                c.on("P0", new NodeEvent.ReleaseReceived(15, tids[i], 1));
            }
        }
        assertThat(c.ledger.lastAtNs()).as("the tap's clock does not stretch the nodes' journals").isLessThan(S);
        List<Finding> f = HangDetectors.run(c.ledger, Bounds.defaults());
        assertThat(f).as("%s", f).noneSatisfy(x -> assertThat(x.transferId()).isEqualTo("tx-crossed"));
        assertThat(f).anySatisfy(x -> {
            assertThat(x.detector()).isEqualTo("notify-no-listener");
            assertThat(x.transferId()).isEqualTo("tx-not-crossed");
            assertThat(x.node()).isEqualTo("D0");
            assertThat(x.message()).contains("release sent to 10.0.0.1:61105").contains("the port of " + tap)
                    .contains("forwarding to 10.0.0.1:61005").contains("never shows it crossing");
        });
    }

    /**
     * A live node's journal that ends without a shutdown while the others go on (its process was
     * killed): its request waited until its own journal ended, and is named as on a dead node, not
     * as waiting until the other journals end.
     */
    @Test
    void a_request_on_a_node_whose_journal_ends_without_a_shutdown_is_named_as_such() {
        for (boolean live : new boolean[] {true, false}) {
            Cluster c = new Cluster();
            c.node("P0", NodeConfig.builder(Role.PRODUCER, TransferMode.READ).hostIp("10.0.0.1").build());
            c.node("D1", NodeConfig.builder(Role.CONSUMER, TransferMode.READ).hostIp("10.0.1.1").build());
            if (live) {
                c.ledger.liveNode("P0");
                c.ledger.liveNode("D1");
            }
            String base = RequestIds.proxyRequestId(new ZmqAddress("10.0.0.1", 6301, 61005),
                    new ZmqAddress("10.0.1.1", 6301, 61005), UUID);
            KvParams returned = c.prefillLeg("P0", "cmpl-" + base + "-0-aaaaaaaa", KvParams.of("do_remote_decode", true,
                    "do_remote_prefill", false, "transfer_id", "tx-dead"));
            String drid = "cmpl-" + base + "-0-bbbbbbbb";
            c.on("D1", new NodeEvent.RequestAdmitted(4 * S, drid, 32, 32, returned));
            // D1 is killed here; P0 goes on for 8 s more and shuts down
            c.on("P0", new NodeEvent.ConnectorOutputReceived(12 * S, null, null));
            c.on("P0", new NodeEvent.ShutDown(12 * S, List.of()));
            List<Finding> f = HangDetectors.run(c.ledger, new Bounds(2 * S));
            if (live) {
                assertThat(f).anySatisfy(x -> {
                    assertThat(x.node()).isEqualTo("D1");
                    assertThat(x.requestId()).isEqualTo(drid);
                    assertThat(x.message()).contains("for 0.000000 s when D1's journal ended at t+4.000000 s without a shutdown "
                            + "(its process was killed").doesNotContain("until the journal ends");
                });
            } else {
                assertThat(f).anySatisfy(x -> {
                    assertThat(x.requestId()).isEqualTo(drid);
                    assertThat(x.message()).contains("for 8.000000 s until the journal ends");
                });
            }
        }
    }

    /**
     * READ 1P1D where D0's release never leaves D0 (its publisher journals the failed send): P0
     * reaps, and both the reap and D0's anomaly name the failed send.
     */
    @Test
    void a_release_that_never_left_the_decode_is_named_in_the_reap() {
        Cluster c = new Cluster();
        c.node("P0", NodeConfig.builder(Role.PRODUCER, TransferMode.READ).hostIp("10.0.0.1").build());
        c.node("D0", NodeConfig.builder(Role.CONSUMER, TransferMode.READ).hostIp("10.0.1.1").build());
        String base = RequestIds.proxyRequestId(new ZmqAddress("10.0.0.1", 6301, 61005),
                new ZmqAddress("10.0.1.1", 6301, 61005), UUID);
        String prid = "cmpl-" + base + "-0-aaaaaaaa";
        String drid = "cmpl-" + base + "-0-bbbbbbbb";
        KvParams returned = c.prefillLeg("P0", prid, KvParams.of("do_remote_decode", true,
                "do_remote_prefill", false, "transfer_id", "tx-lost"));
        Effect.SendRelease release = c.decodeLegToRelease("D0", drid, returned);
        String endpoint = "tcp://" + release.host() + ":" + release.port();
        List<Effect> failed = c.on("D0", new NodeEvent.NotifySendFailed(13, endpoint, "release", String.valueOf(release.transferId()),
                "ZMQ refused the frame (errno 113)", new byte[0]));
        assertThat(c.only(failed, Effect.Anomaly.class)).extracting(Effect.Anomaly::requestId).containsExactly(drid);
        c.on("D0", new NodeEvent.RequestFinished(14, drid, FinishStatus.FINISHED_STOPPED, BlockGroups.single(8, 9)));
        c.on("P0", new NodeEvent.ConnectorOutputReceived(61 * S, null, null));

        List<Finding> f = HangDetectors.run(c.ledger, Bounds.defaults());
        assertThat(f).anySatisfy(x -> {
            assertThat(x.detector()).isEqualTo("reaped-without-ack");
            assertThat(x.node()).isEqualTo("P0");
            assertThat(x.requestId()).isEqualTo(prid);
            assertThat(x.message()).contains("never left D0").contains(endpoint).contains("errno 113")
                    .doesNotContain("lost notify");
        });
        assertThat(f).anySatisfy(x -> {
            assertThat(x.node()).isEqualTo("D0");
            assertThat(x.requestId()).isEqualTo(drid);
            assertThat(x.bugClass()).isEqualTo(7);
            assertThat(x.message()).contains("NOTIFY_SEND_FAILED").contains(endpoint);
        });
    }

    /**
     * The seed-002 mismatch: the decode acknowledges with its own request id as a raw completion;
     * the producer cannot map it, keeps retrying it, and reaps.
     */
    @Test
    void completion_with_the_decode_request_id_is_named_as_such() {
        Cluster c = new Cluster();
        c.node("P0", NodeConfig.builder(Role.PRODUCER, TransferMode.READ).hostIp("10.0.0.1").build());
        c.node("D0", NodeConfig.builder(Role.CONSUMER, TransferMode.READ).hostIp("10.0.1.1").build());
        String base = RequestIds.proxyRequestId(new ZmqAddress("10.0.0.1", 6301, 61005), new ZmqAddress("10.0.1.1", 6301, 61005), UUID);
        String prid = "cmpl-" + base + "-0-aaaaaaaa";
        String drid = "cmpl-" + base + "-0-bbbbbbbb";
        c.on("P0", new NodeEvent.RequestAdmitted(0, prid, 32, 32, KvParams.of("do_remote_decode", true, "transfer_id", "tx-id")));
        c.on("P0", new NodeEvent.BlocksAllocated(1, prid, BlockGroups.single(4, 5), 0));
        c.on("P0", new NodeEvent.StepScheduled(2, 1, List.of()));
        c.on("P0", new NodeEvent.LoadStarted(3));
        List<Effect> fin = c.on("P0", new NodeEvent.RequestFinished(4, prid, FinishStatus.FINISHED_LENGTH_CAPPED, BlockGroups.single(4, 5)));
        c.on("D0", new NodeEvent.RequestAdmitted(5, drid, 32, 32, c.only(fin, Effect.FinishDecision.class).get(0).params()));
        // the decode's (pre-#40344) acknowledgement: its own request id
        c.on("P0", new NodeEvent.RawCompletionReceived(6 * S, drid));
        for (long t = 7; t <= 62; t += 5) {
            c.on("P0", new NodeEvent.StepScheduled(t * S, t, List.of()));
            c.on("P0", new NodeEvent.LoadStarted(t * S));
            c.on("P0", new NodeEvent.FinishedPolled(t * S));
            c.on("P0", new NodeEvent.ConnectorOutputReceived(t * S, null, null));
        }
        List<Finding> f = HangDetectors.run(c.ledger, Bounds.defaults());
        assertThat(f).anySatisfy(x -> {
            assertThat(x.detector()).isEqualTo("unknown-completion-id");
            assertThat(x.node()).isEqualTo("P0");
            assertThat(x.bugClass()).isEqualTo(1);
            assertThat(x.message()).contains(drid).contains("D0's request id");
        });
        assertThat(f).anySatisfy(x -> {
            assertThat(x.detector()).isEqualTo("reaped-without-ack");
            assertThat(x.requestId()).isEqualTo(prid);
        });
    }
}
