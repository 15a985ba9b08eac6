package io.kvledger.node;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.moriio.RequestIds;
import io.kvledger.core.moriio.ZmqAddress;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalReader;
import io.kvledger.node.engine.HookPort;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Deadlines the reducer holds come back as journaled ticks at the right time, with no engine
 * calling anything, and an idle node does not tick again.
 */
class NodeTimersTest {

    @TempDir
    Path dir;

    @Test
    void aDeferredWriteExpiresOnATickAndTheIdleNodeThenSleeps() throws Exception {
        int base = TestNodes.freePortBase(4);
        // A decode that answers the handshake and never sends remote_blocks.
        NodeService d = NodeService.start(TestNodes.options("D0", TestNodes.config(Role.CONSUMER, TransferMode.WRITE,
                base + 2, base + 3), dir.resolve("D0")).withEngine(NodeOptions.EngineKind.NONE));
        NodeConfig cfg = NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).hostIp("127.0.0.1")
                .handshakePort(base).notifyPort(base + 1).deferTimeoutNs(300_000_000L)
                .transferTimeoutNs(NodeConfig.seconds(5)).build();
        NodeService p = NodeService.start(TestNodes.options("P0", cfg, dir.resolve("P0"))
                .withEngine(NodeOptions.EngineKind.NONE));
        long ticksAfterExpiry;
        try {
            HookPort port = p.hookPort();
            ZmqAddress decode = new ZmqAddress("127.0.0.1", base + 2, base + 3);
            String rid = "cmpl-" + RequestIds.proxyRequestId(new ZmqAddress("127.0.0.1", base, base + 1), decode,
                    "0123456789abcdef0123456789abcdef") + "-0-00000001";
            KvParams params = KvParams.of("remote_dp_size", 1, "remote_tp_size", 1, "transfer_id", "tx-timer",
                    "do_remote_decode", true, "do_remote_prefill", false, "remote_engine_id", null, "remote_block_ids", null);
            long t = p.clock().getAsLong();
            port.call(new NodeEvent.RequestAdmitted(t, rid, 20, 20, params));
            port.call(new NodeEvent.MatchedTokensQueried(t, rid, 0));
            port.call(new NodeEvent.BlocksAllocated(t, rid, BlockGroups.single(0, 1), 0));
            port.call(new NodeEvent.StepScheduled(t, 1, List.of()));
            port.call(new NodeEvent.LoadStarted(t));
            for (String layer : cfg.layerNames()) {
                port.call(new NodeEvent.LayerSaved(p.clock().getAsLong(), layer));
            }
            assertThat(TestNodes.eventually(Duration.ofSeconds(120), () -> p.dataPlane().sessionsBound() > 0)).isTrue();
            // The next forward finds the handshake done and defers each layer's write until remote_blocks.
            t = p.clock().getAsLong();
            port.call(new NodeEvent.StepScheduled(t, 2, List.of()));
            port.call(new NodeEvent.LoadStarted(t));
            for (String layer : cfg.layerNames()) {
                port.call(new NodeEvent.LayerSaved(p.clock().getAsLong(), layer));
            }
            // No remote_blocks ever comes: only the loop's own tick can expire the deferred writes.
            assertThat(TestNodes.eventually(Duration.ofSeconds(120), () -> expired(dir.resolve("P0"))))
                    .as("journal: %s", new Object() {
                        @Override
                        public String toString() {
                            return TestNodes.dump(dir.resolve("P0"));
                        }
                    }).isTrue();
            ticksAfterExpiry = p.loop().ticks();
            assertThat(ticksAfterExpiry).isPositive();
            Thread.sleep(1_000);
            assertThat(p.loop().ticks()).as("an idle node does not keep ticking").isLessThanOrEqualTo(ticksAfterExpiry + 1);
        } finally {
            p.close();
            d.close();
        }
    }

    /** Whether a Tick's effects hold the WRITE_TASK_EXPIRED anomaly. */
    private static boolean expired(Path journal) {
        try (JournalReader r = JournalReader.open(journal)) {
            long tickSeq = -1;
            for (JournalEntry e : r) {
                if (e instanceof JournalEntry.Input in && in.event() instanceof NodeEvent.Tick) {
                    tickSeq = in.seq();
                }
                if (e instanceof JournalEntry.Derived d && d.causeSeq() == tickSeq && d.effect() instanceof Effect.Anomaly a
                        && a.kind() == AnomalyKind.WRITE_TASK_EXPIRED) {
                    return true;
                }
            }
        }
        return false;
    }
}
