package io.kvledger.core.node;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.KvGroupSpec;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.moriio.PortMath;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.Test;

/** The connector's capability hooks and the heterogeneous-TP head guard (protocol 8.4). */
class CapabilityTest {

    private static final List<KvGroupSpec> HYBRID = List.of(KvGroupSpec.fullAttention(16), KvGroupSpec.mamba(16));

    @ParameterizedTest(name = "local {0}, remote {1}, heads {2}")
    @CsvSource({"4,4,8", "8,4,4", "4,8,4"})
    void test_heterogeneous_tp_head_guard_allows_supported_layouts(int local, int remote, int heads) {
        assertThat(PortMath.heterogeneousTpHeadGuard(local, remote, heads, false).isOk()).isTrue();
    }

    @ParameterizedTest(name = "local {0}, remote {1}, heads {2}")
    @CsvSource({"4,2,4", "2,4,4", "2,8,16"})
    void test_heterogeneous_tp_head_guard_allows_mla_layouts(int local, int remote, int heads) {
        assertThat(PortMath.heterogeneousTpHeadGuard(local, remote, heads, true).isOk()).isTrue();
    }

    @ParameterizedTest(name = "local {0}, remote {1}, heads {2}")
    @CsvSource({"4,2,4", "2,4,4"})
    void test_heterogeneous_tp_head_guard_rejects_split_kv_heads(int local, int remote, int heads) {
        var r = PortMath.heterogeneousTpHeadGuard(local, remote, heads, false);
        assertThat(r.isOk()).isFalse();
        assertThat(r.error()).contains("requires replicated KV heads");
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void test_requested_cudagraph_mode_is_never_overridden(TransferMode mode) {
        for (Role role : Role.values()) {
            assertThat(NodeReducer.requiresPiecewiseForCudagraph(
                    NodeConfig.builder(role, mode).fullCudagraph(true).build())).isFalse();
        }
    }

    @Test
    void test_sync_read_initializes_only_supported_attention_destinations() {
        BlockGroups allocated = BlockGroups.of(new int[] {3, 4, 5}, new int[] {9});
        NodeConfig hybridReadConsumer = NodeConfig.builder(Role.CONSUMER, TransferMode.READ).groups(HYBRID).build();
        assertThat(NodeReducer.syncLoadBlockIds(hybridReadConsumer, allocated, true)).containsExactly(3, 4, 5);
        // another layout, a non-hybrid model, WRITE, or a producer: nothing to initialise
        assertThat(NodeReducer.syncLoadBlockIds(hybridReadConsumer, allocated, false)).isEmpty();
        assertThat(NodeReducer.syncLoadBlockIds(NodeConfig.builder(Role.CONSUMER, TransferMode.READ).build(),
                BlockGroups.single(3, 4, 5), true)).isEmpty();
        assertThat(NodeReducer.syncLoadBlockIds(NodeConfig.builder(Role.CONSUMER, TransferMode.WRITE).groups(HYBRID).build(),
                allocated, true)).isEmpty();
        assertThat(NodeReducer.syncLoadBlockIds(NodeConfig.builder(Role.PRODUCER, TransferMode.READ).groups(HYBRID).build(),
                allocated, true)).isEmpty();
    }

    @Test
    void test_read_requires_completion_of_draft_kv_writes() {
        assertThat(NodeReducer.requiresFullStepCompletion(NodeConfig.builder(Role.CONSUMER, TransferMode.READ).build())).isTrue();
        assertThat(NodeReducer.requiresFullStepCompletion(NodeConfig.builder(Role.CONSUMER, TransferMode.WRITE).build())).isFalse();
        assertThat(NodeReducer.requiresFullStepCompletion(NodeConfig.builder(Role.CONSUMER, TransferMode.READ)
                .behaviour(io.kvledger.core.config.Behaviour.seed()).build())).isFalse();
    }
}
