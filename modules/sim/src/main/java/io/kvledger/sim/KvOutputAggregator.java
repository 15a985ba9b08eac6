package io.kvledger.sim;

import io.kvledger.core.effect.Effect;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;

/**
 * vLLM's {@code KVOutputAggregator}, for an engine whose DP rank has several TP ranks: a request
 * is finished sending (receiving) once every TP rank's worker has reported it, in this step or an
 * earlier one; the blocks that failed to load are every rank's, as reported. One per engine; used
 * by the simulator's engine and the live node's.
 */
public final class KvOutputAggregator {

    /** Per request id, how many TP ranks have reported it finished sending (receiving) so far. */
    private final LinkedHashMap<String, Integer> sendingReports = new LinkedHashMap<>();
    private final LinkedHashMap<String, Integer> recvingReports = new LinkedHashMap<>();

    /**
     * One {@code get_finished} of every TP rank ({@code reports}, one per rank) made into the
     * engine's: the ids every rank has now reported (empty lists when none), and the load-error
     * blocks of all ranks together ({@code null} when no rank reported any list of them).
     */
    public Effect.FinishedReported aggregate(List<Effect.FinishedReported> reports) {
        int ranks = reports.size();
        List<String> sending = new ArrayList<>();
        List<String> recving = new ArrayList<>();
        List<Integer> errors = null;
        for (Effect.FinishedReported r : reports) {
            count(r.doneSending(), sendingReports, ranks, sending);
            count(r.doneRecving(), recvingReports, ranks, recving);
            if (r.loadErrorBlocks() != null) {
                if (errors == null) {
                    errors = new ArrayList<>();
                }
                errors.addAll(r.loadErrorBlocks());
            }
        }
        return new Effect.FinishedReported(sending, recving, errors);
    }

    private static void count(List<String> ids, LinkedHashMap<String, Integer> counts, int ranks, List<String> done) {
        if (ids == null) {
            return;
        }
        for (String id : ids) {
            int n = counts.merge(id, 1, Integer::sum);
            if (n >= ranks) {
                counts.remove(id);
                done.add(id);
            }
        }
    }
}
