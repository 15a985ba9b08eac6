package io.kvledger.ledger.diagnosis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.ledger.diagnosis.CrossNodeDiagnosisTest.Cluster;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.moriio.RequestIds;
import io.kvledger.core.moriio.ZmqAddress;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The detectors of the TP-wide eager-handshake vote (#46116, class 21): a decode TP rank blocked
 * in the vote while a sibling TP rank still handshakes ({@code handshake-vote-waiting}), and a
 * failed vote ({@code handshake-vote-failed}). A prefill P0 (TP 1) and a decode instance of TP 2
 * (D0, D1), under both presets.
 */
class TpVoteDetectorTest {

    private static final String UUID = "0123456789abcdef0123456789abcdef";
    private static final long S = 1_000_000_000L;
    private static final String EID = "10.0.0.1:6301";

    static Stream<Behaviour> presets() {
        return Stream.of(Behaviour.seed(), Behaviour.newest());
    }

    private final Cluster c = new Cluster();
    private String prid;
    private String drid;

    /** P0 finishes its leg; D0 and D1 admit the decode leg, schedule it and start the eager handshake. */
    private String bothRanksHandshake(Behaviour b, boolean awaitsVote) {
        c.node("P0", NodeConfig.builder(Role.PRODUCER, TransferMode.READ).hostIp("10.0.0.1").behaviour(b).build());
        for (int tp = 0; tp < 2; tp++) {
            c.node("D" + tp, NodeConfig.builder(Role.CONSUMER, TransferMode.READ).hostIp("10.0.1.1").tp(tp, 2)
                    .behaviour(b).awaitsTpVote(awaitsVote).build());
        }
        String base = RequestIds.proxyRequestId(new ZmqAddress("10.0.0.1", 6301, 61005),
                new ZmqAddress("10.0.1.1", 6301, 61005), UUID);
        prid = "cmpl-" + base + "-0-aaaaaaaa";
        drid = "cmpl-" + base + "-0-bbbbbbbb";
        KvParams returned = c.prefillLeg("P0", prid, KvParams.of("do_remote_decode", true,
                "do_remote_prefill", false, "transfer_id", "tx-vote"));
        String key = null;
        for (String d : List.of("D0", "D1")) {
            c.on(d, new NodeEvent.RequestAdmitted(5, drid, 32, 32, returned));
            c.on(d, new NodeEvent.MatchedTokensQueried(6, drid, 0));
            c.on(d, new NodeEvent.BlocksAllocated(7, drid, BlockGroups.single(8, 9), 31));
            c.on(d, new NodeEvent.StepScheduled(8, 1, List.of()));
            List<Effect.StartHandshake> hs = c.only(c.on(d, new NodeEvent.LoadStarted(9)), Effect.StartHandshake.class);
            assertThat(hs).hasSize(1);
            key = hs.get(0).key();
        }
        return key;
    }

    @ParameterizedTest
    @MethodSource("presets")
    void test_rank_blocked_in_the_tp_vote_while_its_sibling_still_handshakes_is_named(Behaviour b) {
        String key = bothRanksHandshake(b, true);
        assertThat(c.only(c.on("D0", new NodeEvent.HandshakeCompleted(2 * S, key)), Effect.PostRead.class))
                .as("no read before the vote").isEmpty();
        c.on("P0", new NodeEvent.ConnectorOutputReceived(61 * S, null, null));

        List<Finding> f = HangDetectors.run(c.ledger, Bounds.defaults());
        assertThat(f).anySatisfy(x -> {
            assertThat(x.detector()).isEqualTo("handshake-vote-waiting");
            assertThat(x.node()).isEqualTo("D0");
            assertThat(x.requestId()).isEqualTo(drid);
            assertThat(x.bugClass()).isEqualTo(21);
            assertThat(x.message()).contains("TP rank 0 waits in the TP-wide eager-handshake vote", EID,
                    "for 59.000000 s", "sibling TP rank 1 (D1)", key + " with 10.0.0.1:6301", "never answered for 60.999999 s");
        });
        assertThat(f).anySatisfy(x -> {
            assertThat(x.detector()).isEqualTo("handshake-incomplete");
            assertThat(x.node()).isEqualTo("D1");
        });
        assertThat(f).noneSatisfy(x -> assertThat(x.detector() + " " + x.node()).isIn("stuck D0", "stuck D1"));
        assertThat(f).anySatisfy(x -> {
            assertThat(x.detector()).isEqualTo("reaped-without-ack");
            assertThat(x.node()).isEqualTo("P0");
        });
    }

    @ParameterizedTest
    @MethodSource("presets")
    void test_vote_waiting_needs_a_journal_that_carries_the_vote(Behaviour b) {
        String key = bothRanksHandshake(b, false);
        assertThat(c.only(c.on("D0", new NodeEvent.HandshakeCompleted(2 * S, key)), Effect.PostRead.class))
                .as("without awaits_tp_vote the read goes out at the rank's own handshake, as before").hasSize(2);
        c.on("P0", new NodeEvent.ConnectorOutputReceived(61 * S, null, null));
        assertThat(HangDetectors.run(c.ledger, Bounds.defaults()))
                .noneSatisfy(x -> assertThat(x.detector()).startsWith("handshake-vote"));
    }

    @ParameterizedTest
    @MethodSource("presets")
    void test_vote_passed_in_time_is_no_finding(Behaviour b) {
        String key = bothRanksHandshake(b, true);
        c.on("D0", new NodeEvent.HandshakeCompleted(2 * S, key));
        c.on("D1", new NodeEvent.HandshakeCompleted(3 * S, key));
        for (String d : List.of("D0", "D1")) {
            List<Effect> fx = c.on(d, new NodeEvent.HandshakeVoted(3 * S + 1, EID, 1, null));
            for (Effect.PostRead r : c.only(fx, Effect.PostRead.class)) {
                c.on(d, new NodeEvent.TransferCompleted(3 * S + 2, r.statusId(), true, 0, "ok"));
            }
            c.on(d, new NodeEvent.FinishedPolled(3 * S + 3));
        }
        c.on("P0", new NodeEvent.ReleaseReceived(4 * S, "tx-vote", 2));
        c.on("P0", new NodeEvent.ReleaseReceived(4 * S, "tx-vote", 2));
        c.on("P0", new NodeEvent.StepScheduled(40 * S, 2, List.of()));
        assertThat(HangDetectors.run(c.ledger, Bounds.defaults()))
                .noneSatisfy(x -> assertThat(x.detector()).startsWith("handshake-"));
    }

    @ParameterizedTest
    @MethodSource("presets")
    void test_failed_vote_names_the_failed_rank_and_its_reason_on_every_rank(Behaviour b) {
        String key = bothRanksHandshake(b, true);
        c.on("D0", new NodeEvent.HandshakeCompleted(2 * S, key));
        c.on("D1", new NodeEvent.HandshakeFailed(3 * S, key, "peer closed the connection"));
        for (String d : List.of("D0", "D1")) {
            c.on(d, new NodeEvent.HandshakeVoted(3 * S + 1, EID, 0, List.of(1)));
        }
        c.on("P0", new NodeEvent.ConnectorOutputReceived(61 * S, null, null));

        List<Finding> f = HangDetectors.run(c.ledger, Bounds.defaults());
        for (String d : List.of("D0", "D1")) {
            assertThat(f).anySatisfy(x -> {
                assertThat(x.detector()).isEqualTo("handshake-vote-failed");
                assertThat(x.node()).isEqualTo(d);
                assertThat(x.requestId()).isEqualTo(drid);
                assertThat(x.bugClass()).isEqualTo(21);
                assertThat(x.message()).contains("HandshakeError", "TP rank 1 (D1): handshake " + key,
                        "peer closed the connection");
            });
        }
        assertThat(f).anySatisfy(x -> assertThat(x.message()).contains("this rank's own handshakes with " + EID + " succeeded"));
        assertThat(f).anySatisfy(x -> {
            assertThat(x.detector()).isEqualTo("reaped-without-ack");
            assertThat(x.message()).contains("the TP-wide eager-handshake vote failed");
        });
    }
}
