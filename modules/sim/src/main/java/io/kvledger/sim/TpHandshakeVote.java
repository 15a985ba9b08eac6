package io.kvledger.sim;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.ReqMeta;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The engine core's side of the eager handshake's TP-wide vote ({@code all_reduce(MIN)} in vLLM's
 * {@code start_load_kv}), for an engine whose DP rank has several TP ranks that await it (a READ
 * decode): each rank's vote for a remote engine is 0 when one of its handshakes with that engine
 * failed, the engine's is the minimum, and a failed vote raises, so the engines after it are not
 * voted on in that step. An engine whose vote passed is not voted on again. One per engine; the
 * live node's simulated engine asks its TP ranks for their failed handshakes and forwards the
 * ballots as {@link NodeEvent.HandshakeVoted}. Pure: no clock, no I/O.
 */
public final class TpHandshakeVote {

    /** Remote engines whose vote passed, in the order they passed. */
    private final Set<String> passed = new LinkedHashSet<>();

    /** One engine's vote: 1 when no TP rank failed a handshake with it, else 0 with the ranks that did. */
    public record Ballot(String remoteEngineId, int vote, List<Integer> failedTpRanks) {
        public Ballot {
            failedTpRanks = List.copyOf(failedTpRanks);
        }

        /** The event that hands this vote to a rank at {@code atNs}. */
        public NodeEvent.HandshakeVoted event(long atNs) {
            return new NodeEvent.HandshakeVoted(atNs, remoteEngineId, vote, failedTpRanks);
        }
    }

    /** The remote engines the step's {@code build_connector_meta} reply names to receive from and that have not passed yet, in order. */
    public Set<String> pending(Effect.MetadataBuilt built) {
        Set<String> engines = new LinkedHashSet<>();
        if (built != null && built.reqsToRecv() != null) {
            for (ReqMeta m : built.reqsToRecv()) {
                if (!passed.contains(m.handshakeEngineId())) {
                    engines.add(m.handshakeEngineId());
                }
            }
        }
        return engines;
    }

    /**
     * The ballots of {@code engines}, in order, up to and including the first that fails.
     * {@code failedKeysByRank} holds, per TP rank (rank 0 first), the keys of its failed handshakes
     * ({@code <engine id>_dp<rank>}, as the connector keys them).
     */
    public List<Ballot> ballots(Collection<String> engines, List<List<String>> failedKeysByRank) {
        List<Ballot> out = new ArrayList<>();
        for (String eid : engines) {
            List<Integer> failedRanks = new ArrayList<>();
            for (int rank = 0; rank < failedKeysByRank.size(); rank++) {
                for (String key : failedKeysByRank.get(rank)) {
                    if (key.startsWith(eid + "_dp")) {
                        failedRanks.add(rank);
                        break;
                    }
                }
            }
            Ballot b = new Ballot(eid, failedRanks.isEmpty() ? 1 : 0, failedRanks);
            out.add(b);
            if (b.vote() == 0) {
                break;
            }
        }
        return out;
    }

    /** Records that {@code remoteEngineId}'s vote passed and reached every rank: it is not voted on again. */
    public void passed(String remoteEngineId) {
        passed.add(remoteEngineId);
    }
}
