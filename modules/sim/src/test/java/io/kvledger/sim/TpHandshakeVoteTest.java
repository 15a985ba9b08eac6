package io.kvledger.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.ReqMeta;
import java.util.List;
import org.junit.jupiter.api.Test;

class TpHandshakeVoteTest {

    private static ReqMeta recv(String rid, String host, int port) {
        return new ReqMeta(rid, BlockGroups.of(new int[] {1}), null, null, host, port, 61005, 0, 1, 1, 2, null, null, false);
    }

    @Test
    void a_vote_is_the_minimum_over_the_ranks_and_stops_at_the_first_engine_that_fails() {
        TpHandshakeVote v = new TpHandshakeVote();
        List<TpHandshakeVote.Ballot> b = v.ballots(List.of("a:1", "b:2", "c:3"),
                List.of(List.of(), List.of("b:2_dp0"), List.of("b:2_dp0", "c:3_dp0")));
        assertThat(b).containsExactly(new TpHandshakeVote.Ballot("a:1", 1, List.of()),
                new TpHandshakeVote.Ballot("b:2", 0, List.of(1, 2)));
        assertThat(b.get(1).event(42).atNs()).isEqualTo(42);
        assertThat(b.get(1).event(42).failedTpRanks()).containsExactly(1, 2);
    }

    @Test
    void an_engine_whose_vote_passed_is_not_pending_again() {
        TpHandshakeVote v = new TpHandshakeVote();
        Effect.MetadataBuilt built = new Effect.MetadataBuilt(1, List.of(recv("r1", "10.0.0.1", 6301),
                recv("r2", "10.0.0.2", 6301), recv("r3", "10.0.0.1", 6301)), List.of(), List.of(), 0);
        assertThat(v.pending(built)).containsExactly("10.0.0.1:6301", "10.0.0.2:6301");
        v.passed("10.0.0.1:6301");
        assertThat(v.pending(built)).containsExactly("10.0.0.2:6301");
        assertThat(v.pending(null)).isEmpty();
    }
}
