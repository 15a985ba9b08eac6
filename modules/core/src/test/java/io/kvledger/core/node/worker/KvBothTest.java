package io.kvledger.core.node.worker;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code kv_role: kv_both} (moriio-protocol.md 1.1, class 36, the same in seed and newest): the
 * scheduler tests {@code kv_role == "kv_producer"} and runs as a consumer, the worker tests
 * {@code is_kv_producer} and runs as a producer.
 */
class KvBothTest {

    private static NodeConfig both(TransferMode mode) {
        return NodeConfig.builder(Role.fromKvRole("kv_both"), mode).hostIp("10.0.1.1").build();
    }

    private static List<Effect> apply(NodeState s, NodeEvent e) {
        return NodeReducer.apply(s, e).effects();
    }

    private static List<AnomalyKind> anomalies(List<Effect> fx) {
        List<AnomalyKind> out = new ArrayList<>();
        for (Effect e : fx) {
            if (e instanceof Effect.Anomaly a) {
                out.add(a.kind());
            }
        }
        return out;
    }

    @Test
    void kv_both_is_a_consumer_scheduler_and_a_producer_worker() {
        NodeConfig c = both(TransferMode.READ);
        assertThat(c.role()).isEqualTo(Role.BOTH);
        assertThat(c.role().kvRole()).isEqualTo("kv_both");
        assertThat(c.isProducer()).isFalse();
        assertThat(c.workerIsProducer()).isTrue();
        assertThat(anomalies(NodeReducer.startupChecks(c))).containsExactly(AnomalyKind.KV_BOTH_ROLE_ASYMMETRY);
        assertThat(anomalies(NodeReducer.startupChecks(NodeConfig.builder(Role.CONSUMER, TransferMode.READ).build())))
                .doesNotContain(AnomalyKind.KV_BOTH_ROLE_ASYMMETRY);
    }

    /** READ: the consumer scheduler stages the receive; the producer worker's start_load_kv never reads it. */
    @Test
    void read_receives_staged_by_the_scheduler_are_never_read_by_the_worker() {
        NodeState s = NodeState.initial(both(TransferMode.READ));
        KvParams p = KvParams.of("do_remote_prefill", true, "remote_block_ids", List.of(List.of(4, 5)),
                "remote_engine_id", "10.0.0.1:6301", "remote_host", "10.0.0.1", "remote_handshake_port", "6301",
                "remote_notify_port", "61005", "transfer_id", "tx-b");
        apply(s, new NodeEvent.RequestAdmitted(0, "r", 32, 32, p));
        Effect.MatchedTokens m = (Effect.MatchedTokens) apply(s, new NodeEvent.MatchedTokensQueried(0, "r", 0)).stream()
                .filter(e -> e instanceof Effect.MatchedTokens).findFirst().orElseThrow();
        assertThat(m.count()).as("the consumer scheduler's READ count").isEqualTo(31);
        apply(s, new NodeEvent.BlocksAllocated(0, "r", BlockGroups.single(8, 9), 31));
        List<Effect> meta = apply(s, new NodeEvent.StepScheduled(1, 1, List.of()));
        assertThat(meta).anySatisfy(e -> assertThat(e).isInstanceOfSatisfying(Effect.MetadataBuilt.class,
                b -> assertThat(b.reqsToRecv()).hasSize(1)));
        List<Effect> load = apply(s, new NodeEvent.LoadStarted(2));
        assertThat(load).noneMatch(e -> e instanceof Effect.PostRead || e instanceof Effect.StartHandshake
                || e instanceof Effect.SendRelease);
        assertThat(load).singleElement().isInstanceOfSatisfying(Effect.Anomaly.class, a -> {
            assertThat(a.kind()).isEqualTo(AnomalyKind.KV_BOTH_ROLE_ASYMMETRY);
            assertThat(a.requestId()).isEqualTo("r");
            assertThat(a.transferId()).isEqualTo("tx-b");
        });
    }

    /** WRITE: the producer worker accepts remote_blocks, and its listener asserts on write_done. */
    @Test
    void write_done_kills_the_producer_workers_listener_and_remote_blocks_are_taken() {
        NodeState s = NodeState.initial(both(TransferMode.WRITE));
        assertThat(anomalies(apply(s, new NodeEvent.RemoteBlocksReceived(1, "d", "tx-w", List.of(3), 0, false)))).isEmpty();
        assertThat(anomalies(apply(s, new NodeEvent.WriteDoneReceived(2, "tx-w"))))
                .containsExactly(AnomalyKind.NOTIFY_ROLE_MISMATCH, AnomalyKind.LISTENER_WOULD_DIE_IN_PYTHON);
    }
}
