package io.kvledger.node;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.node.cluster.LocalLeg;
import io.kvledger.node.cluster.LiveRouter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Two live nodes in one JVM (real ZMQ on loopback, the in-JVM transfer engine): a prefill and a
 * decode serve requests routed as the toy proxy routes them, and every transferred byte checks.
 */
class LiveNodeInProcessTest {

    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void oneToOneServesEveryRequestAndFreesEveryBlock(TransferMode mode) throws Exception {
        int base = TestNodes.freePortBase(4);
        NodeService p = NodeService.start(TestNodes.options("P0",
                TestNodes.config(Role.PRODUCER, mode, base, base + 1), dir.resolve("P0")));
        NodeService d = NodeService.start(TestNodes.options("D0",
                TestNodes.config(Role.CONSUMER, mode, base + 2, base + 3), dir.resolve("D0")));
        try {
            LiveRouter router = new LiveRouter(List.of(new LocalLeg(p)), List.of(new LocalLeg(d)), mode, 7);
            List<CompletableFuture<LiveRouter.Outcome>> all = new ArrayList<>();
            for (int i = 0; i < 40; i++) {
                all.add(router.send(20 + (i * 37) % 300, 1 + i % 5));
            }
            for (CompletableFuture<LiveRouter.Outcome> f : all) {
                LiveRouter.Outcome o = f.get(120, TimeUnit.SECONDS);
                assertThat(o.ok()).as("request %s: %s", o.xRequestId(), o).isTrue();
                assertThat(o.decodeLeg().verifiedBytes()).as("verified KV bytes of %s", o.xRequestId()).isPositive();
                assertThat(o.decodeLeg().mismatch()).isNull();
            }
            int blocks = p.options().layout().numBlocks();
            assertThat(TestNodes.eventually(Duration.ofSeconds(120), () -> p.engine().freeBlocks() == blocks))
                    .as("the prefill freed every block (free now: %d)", p.engine().freeBlocks()).isTrue();
            assertThat(TestNodes.eventually(Duration.ofSeconds(120), () -> d.engine().freeBlocks() == blocks)).isTrue();
            assertThat(d.engine().verifiedBytes()).isPositive();
            assertThat(p.status().eventsLost() + d.status().eventsLost()).isZero();
        } finally {
            d.close();
            p.close();
        }
        for (String node : List.of("P0", "D0")) {
            Recovery r = Recovery.replay(dir.resolve(node), TestNodes.config(
                    node.startsWith("P") ? Role.PRODUCER : Role.CONSUMER, mode, 1, 2));
            Map<String, RequestPhase> phases = r.state().phases();
            assertThat(phases).as(node).hasSize(40);
            assertThat(phases.values()).as(node + " phases").allMatch(RequestPhase::terminal);
            assertThat(r.state().liveRequests()).as(node + " live requests").isZero();
        }
    }
}
