package io.kvledger.core.node.worker;

import static io.kvledger.core.node.worker.WorkerFixtures.S;
import static io.kvledger.core.node.worker.WorkerFixtures.anomalies;
import static io.kvledger.core.node.worker.WorkerFixtures.consumer;
import static io.kvledger.core.node.worker.WorkerFixtures.groups;
import static io.kvledger.core.node.worker.WorkerFixtures.ids;
import static io.kvledger.core.node.worker.WorkerFixtures.only;
import static io.kvledger.core.node.worker.WorkerFixtures.readDecodeParams;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Switch;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.node.worker.WorkerFixtures.Node;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The TP-wide vote that ends the READ decode's eager handshake ({@code _eager_handshake_all_dp_ranks},
 * #46116; protocol 5.5 step 4, bug classes 21 and 37). Both presets: the seed postdates #46116,
 * so its worker votes as the newest one does.
 */
class EagerHandshakeVoteTest {

    private static final String HOST = "10.0.0.1";
    private static final int HS = 6301;
    private static final int NOTIFY = 61005;
    private static final String EID = HOST + ":" + HS;

    static Stream<Behaviour> presets() {
        return Stream.of(Behaviour.seed(), Behaviour.newest());
    }

    /** TP rank 0 of 2 of a READ decode whose journal carries the vote (awaits_tp_vote). */
    private static Node voting(Behaviour b, int remoteDpSize) {
        return Node.of(consumer(TransferMode.READ).tp(0, 2).behaviour(b).awaitsTpVote(true));
    }

    /** Admits, allocates and hands one READ receive to start_load_kv; returns its effects. */
    private static List<Effect> stage(Node n, String rid, String tid, int remoteDpSize) {
        // the seed's READ decode takes P's flat block list (seed-vs-newest #24), the newest one groups
        Object remote = n.config().on(Switch.REMOTE_BLOCK_IDS_GROUPED) ? groups(ids(17, 18)) : List.of(17L, 18L);
        n.admit(rid, 32, readDecodeParams(tid, remote, HOST, HS, NOTIFY, 2, 0, remoteDpSize));
        n.match(rid, 0);
        n.alloc(rid, BlockGroups.single(7, 8), 31);
        n.schedule();
        return n.load();
    }

    private static List<Effect> vote(Node n, int vote, List<Integer> failed) {
        return n.on(new NodeEvent.HandshakeVoted(n.nowNs, EID, vote, failed));
    }

    @ParameterizedTest
    @MethodSource("presets")
    void test_eager_handshake_reads_wait_for_the_tp_wide_vote_before_the_forward(Behaviour b) {
        Node n = voting(b, 2);
        List<Effect> started = stage(n, "rid-v", "tx-v", 2);
        assertThat(only(started, Effect.StartHandshake.class)).extracting(Effect.StartHandshake::key)
                .containsExactly(EID + "_dp0", EID + "_dp1");
        assertThat(only(n.handshakeDone(EID + "_dp0"), Effect.PostRead.class)).isEmpty();
        assertThat(only(n.handshakeDone(EID + "_dp1"), Effect.PostRead.class))
                .as("own handshakes done: still blocked in the all_reduce until every TP rank arrives").isEmpty();
        assertThat(n.state.readsInFlight()).isEqualTo(1);
        assertThat(n.state.leftovers()).containsEntry("recv_awaiting_vote", 1);
        List<Effect> passed = vote(n, 1, null);
        assertThat(only(passed, Effect.PostRead.class)).hasSize(2).allSatisfy(r -> assertThat(r.sessionKey()).isEqualTo(EID + "_dp0"));
        assertThat(n.state.phaseOf("rid-v")).isEqualTo(RequestPhase.READS_IN_FLIGHT);
        assertThat(n.state.leftovers()).doesNotContainKey("recv_awaiting_vote");
    }

    @ParameterizedTest
    @MethodSource("presets")
    void test_eager_handshake_fires_once_per_engine_later_steps_read_without_a_vote(Behaviour b) {
        Node n = voting(b, 1);
        stage(n, "rid-1", "tx-1", 1);
        n.handshakeDone(EID + "_dp0");
        assertThat(only(vote(n, 1, null), Effect.PostRead.class)).hasSize(2);
        List<Effect> second = stage(n, "rid-2", "tx-2", 1);
        assertThat(only(second, Effect.StartHandshake.class)).isEmpty();
        assertThat(only(second, Effect.PostRead.class)).as("engine in _eager_handshaked_engines: no second vote").hasSize(2);
    }

    @ParameterizedTest
    @MethodSource("presets")
    void test_failed_vote_raises_handshake_error_on_a_rank_whose_own_handshakes_succeeded(Behaviour b) {
        Node n = voting(b, 1);
        stage(n, "rid-f", "tx-f", 1);
        n.handshakeDone(EID + "_dp0");
        n.advance(2 * S);
        List<Effect> fx = vote(n, 0, List.of(1));
        List<Effect.Anomaly> raised = anomalies(fx, AnomalyKind.HANDSHAKE_VOTE_FAILED);
        assertThat(raised).hasSize(1);
        assertThat(raised.getFirst().requestId()).isEqualTo("rid-f");
        assertThat(raised.getFirst().detail()).contains("HandshakeError", "TP rank(s) [1]",
                "this rank's own handshakes with " + EID + " succeeded", "never posted");
        assertThat(only(fx, Effect.PostRead.class)).as("the raise unwinds start_load_kv before any read").isEmpty();
        assertThat(only(fx, Effect.SendRelease.class)).as("no release: the prefill waits for its reap").isEmpty();
        assertThat(n.state.phaseOf("rid-f")).as("the connector changes nothing else").isEqualTo(RequestPhase.RECV_STAGED);
        assertThat(n.state.readsInFlight()).isZero();
        assertThat(only(n.handshakeDone(EID + "_dp0"), Effect.PostRead.class)).as("the lost receive is never read later").isEmpty();
    }

    @ParameterizedTest
    @MethodSource("presets")
    void test_failed_vote_names_the_rank_own_failed_handshake_and_a_later_step_votes_again(Behaviour b) {
        Node n = voting(b, 1);
        stage(n, "rid-a", "tx-a", 1);
        List<Effect> failed = n.on(new NodeEvent.HandshakeFailed(n.nowNs, EID + "_dp0", "connection refused"));
        assertThat(anomalies(failed, AnomalyKind.HANDSHAKE_FAILED)).extracting(Effect.Anomaly::requestId)
                .contains("rid-a");
        List<Effect> fx = vote(n, 0, null);
        assertThat(anomalies(fx, AnomalyKind.HANDSHAKE_VOTE_FAILED)).singleElement().satisfies(a -> assertThat(a.detail())
                .contains("at least one TP rank", "this rank's own handshake " + EID + "_dp0 failed"));
        // _eager_handshaked_engines was not updated: the next step that names the engine handshakes and votes again
        List<Effect> again = stage(n, "rid-b", "tx-b", 1);
        assertThat(only(again, Effect.StartHandshake.class)).extracting(Effect.StartHandshake::key).containsExactly(EID + "_dp0");
        n.handshakeDone(EID + "_dp0");
        assertThat(only(vote(n, 1, null), Effect.PostRead.class)).extracting(Effect.PostRead::requestId)
                .containsOnly("rid-b");
    }

    @ParameterizedTest
    @MethodSource("presets")
    void test_vote_without_awaits_tp_vote_replays_reads_at_handshake_completion_as_before(Behaviour b) {
        Node n = Node.of(consumer(TransferMode.READ).tp(0, 2).behaviour(b));
        stage(n, "rid-o", "tx-o", 2);
        assertThat(only(n.handshakeDone(EID + "_dp0"), Effect.PostRead.class)).isEmpty();
        List<Effect> fx = vote(n, 0, List.of(1));
        assertThat(anomalies(fx, AnomalyKind.HANDSHAKE_VOTE_FAILED)).extracting(Effect.Anomaly::requestId)
                .containsExactly("rid-o");
        assertThat(only(n.handshakeDone(EID + "_dp1"), Effect.PostRead.class)).as("dropped by the raise").isEmpty();
        assertThat(n.state.leftovers()).doesNotContainKeys("recv_awaiting_handshake", "recv_awaiting_vote");
    }

    @ParameterizedTest
    @MethodSource("presets")
    void test_vote_is_only_taken_by_a_read_consumer(Behaviour b) {
        Node p = Node.of(WorkerFixtures.producer(TransferMode.READ).behaviour(b).awaitsTpVote(true));
        assertThat(vote(p, 0, null)).isEmpty();
        Node w = Node.of(consumer(TransferMode.WRITE).behaviour(b).awaitsTpVote(true));
        assertThat(vote(w, 0, null)).isEmpty();
    }

    @ParameterizedTest
    @MethodSource("presets")
    void test_failed_vote_with_nothing_staged_still_raises_once(Behaviour b) {
        Node n = voting(b, 1);
        List<Effect> fx = vote(n, 0, List.of(0, 1));
        assertThat(anomalies(fx, AnomalyKind.HANDSHAKE_VOTE_FAILED)).singleElement()
                .satisfies(a -> assertThat(a.requestId()).isNull());
        NodeConfig c = n.config();
        assertThat(c.awaitsTpVote()).isTrue();
    }
}
