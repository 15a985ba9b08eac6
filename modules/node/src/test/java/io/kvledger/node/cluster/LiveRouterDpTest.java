package io.kvledger.node.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.TransferMode;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.moriio.ZmqAddress;
import io.kvledger.node.engine.Completion;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** The router over DP ranks: one leg per rank, flat interleaved, the prefill's rank handed to the decode. */
class LiveRouterDpTest {

    /** A leg that records what it was sent and answers at once. */
    record Recording(String name, ZmqAddress zmqAddress, int dpSize, int tpSize, int dpRank, List<String> log)
            implements Leg {
        @Override
        public CompletableFuture<Completion> submit(String xRequestId, int promptTokens, int maxTokens, KvParams params) {
            log.add(name + " " + params.get("remote_dp_rank") + " " + params.get("remote_dp_size"));
            return CompletableFuture.completedFuture(new Completion(xRequestId, FinishStatus.FINISHED_LENGTH_CAPPED,
                    promptTokens, maxTokens, null, 1, null, false, null));
        }
    }

    @Test
    void eachDpRankIsALegAndTheDecodeIsToldThePrefillsRank() {
        List<String> log = new ArrayList<>();
        ZmqAddress p = new ZmqAddress("127.0.0.1", 21000, 22000);
        ZmqAddress d = new ZmqAddress("127.0.0.1", 23000, 24000);
        // two prefill instances of DP 2 in flat interleaved order (rank 0 of each, then rank 1), one decode of DP 2
        List<Leg> prefills = List.of(new Recording("P0-dp0", p, 2, 1, 0, log), new Recording("P1-dp0", p, 2, 1, 0, log),
                new Recording("P0-dp1", p, 2, 1, 1, log), new Recording("P1-dp1", p, 2, 1, 1, log));
        List<Leg> decodes = List.of(new Recording("D0-dp0", d, 2, 1, 0, log), new Recording("D0-dp1", d, 2, 1, 1, log));
        LiveRouter router = new LiveRouter(prefills, decodes, TransferMode.WRITE, 1);
        for (int i = 0; i < 4; i++) {
            assertThat(router.send(64, 2).join().ok()).isTrue();
        }
        // the prefill leg names the decode's DP size; the decode leg the prefill rank it pairs with
        assertThat(log).containsExactly(
                "P0-dp0 null 2", "D0-dp0 0 2",
                "P1-dp0 null 2", "D0-dp1 0 2",
                "P0-dp1 null 2", "D0-dp0 1 2",
                "P1-dp1 null 2", "D0-dp1 1 2");
    }

    @Test
    void withOneDpRankNoRankIsPinned() {
        List<String> log = new ArrayList<>();
        ZmqAddress a = new ZmqAddress("127.0.0.1", 21000, 22000);
        LiveRouter router = new LiveRouter(List.of(new Recording("P0", a, 1, 1, 0, log)),
                List.of(new Recording("D0", a, 1, 1, 0, log)), TransferMode.WRITE, 1);
        router.send(64, 2).join();
        assertThat(log).containsExactly("P0 null 1", "D0 null 1");
    }
}
