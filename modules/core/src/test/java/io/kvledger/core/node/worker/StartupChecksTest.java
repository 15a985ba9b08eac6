package io.kvledger.core.node.worker;

import static io.kvledger.core.node.worker.WorkerFixtures.anomalyKinds;
import static io.kvledger.core.node.worker.WorkerFixtures.consumer;
import static io.kvledger.core.node.worker.WorkerFixtures.hybridGroups;
import static io.kvledger.core.node.worker.WorkerFixtures.producer;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.KvGroupSpec;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.model.AnomalyKind;
import io.kvledger.core.node.NodeReducer;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link NodeReducer#startupChecks} and the connector's static hooks: what the constructors raise
 * or warn about (seed-vs-newest #4, #5, #8, #9; protocol 2.1 and bug class 23).
 */
class StartupChecksTest {

    private static List<AnomalyKind> checks(NodeConfig.Builder b) {
        List<Effect> fx = NodeReducer.startupChecks(b.build());
        assertThat(fx).allSatisfy(e -> assertThat(e).isInstanceOf(Effect.Anomaly.class));
        return anomalyKinds(fx);
    }

    @Test
    void port_forms_disagree_for_dp_2_and_tp_2() {
        assertThat(checks(producer(TransferMode.WRITE).dp(0, 2, 2).tp(0, 2)))
                .containsExactly(AnomalyKind.PORT_FORMS_DISAGREE);
    }

    @Test
    void port_forms_agree_for_dp_1_and_tp_8() {
        assertThat(checks(producer(TransferMode.WRITE).dp(0, 1, 1).tp(3, 8))).isEmpty();
    }

    @Test
    void port_forms_agree_for_dp_8_and_tp_1() {
        assertThat(checks(consumer(TransferMode.READ).dp(5, 8, 8).tp(0, 1))).isEmpty();
    }

    @Test
    void read_full_cudagraph_warning_only_under_seed_for_a_read_consumer() {
        assertThat(checks(consumer(TransferMode.READ).fullCudagraph(true).behaviour(Behaviour.seed())))
                .containsExactly(AnomalyKind.READ_FULL_CUDAGRAPH);
        assertThat(checks(consumer(TransferMode.READ).fullCudagraph(true))).as("newest").isEmpty();
    }

    @Test
    void read_full_cudagraph_warning_needs_read_consumer_and_full_graphs() {
        Behaviour seed = Behaviour.seed();
        assertThat(checks(consumer(TransferMode.WRITE).fullCudagraph(true).behaviour(seed))).isEmpty();
        assertThat(checks(producer(TransferMode.READ).fullCudagraph(true).behaviour(seed))).isEmpty();
        assertThat(checks(consumer(TransferMode.READ).fullCudagraph(false).behaviour(seed))).isEmpty();
    }

    @Test
    void hybrid_write_config_is_invalid_under_newest_only() {
        assertThat(checks(producer(TransferMode.WRITE).groups(hybridGroups())))
                .containsExactly(AnomalyKind.INIT_HYBRID_INVALID);
        assertThat(checks(producer(TransferMode.WRITE).groups(hybridGroups()).behaviour(Behaviour.seed())))
                .isEmpty();
    }

    @Test
    void hybrid_read_config_with_one_attention_group_is_valid() {
        assertThat(checks(consumer(TransferMode.READ).groups(hybridGroups()))).isEmpty();
        assertThat(checks(consumer(TransferMode.READ).groups(hybridGroups()).speculative("dspark", 2))).isEmpty();
    }

    @Test
    void hybrid_read_config_rejects_other_speculative_methods_and_extra_attention_groups() {
        assertThat(checks(consumer(TransferMode.READ).groups(hybridGroups()).speculative("eagle", 2)))
                .containsExactly(AnomalyKind.INIT_HYBRID_INVALID);
        List<KvGroupSpec> twoAttention = List.of(KvGroupSpec.fullAttention(16), KvGroupSpec.fullAttention(16),
                KvGroupSpec.mamba(16));
        assertThat(checks(consumer(TransferMode.READ).groups(twoAttention)))
                .containsExactly(AnomalyKind.INIT_HYBRID_INVALID);
    }

    @Test
    void hma_write_with_a_sliding_window_group_is_unsupported_under_newest() {
        List<KvGroupSpec> swa = List.of(KvGroupSpec.fullAttention(16), KvGroupSpec.slidingWindow(16, 128));
        assertThat(checks(producer(TransferMode.WRITE).groups(swa).hmaEnabled(true)))
                .containsExactly(AnomalyKind.INIT_HMA_UNSUPPORTED);
        assertThat(checks(producer(TransferMode.READ).groups(swa).hmaEnabled(true))).isEmpty();
    }

    @Test
    void test_read_requires_completion_of_draft_kv_writes() {
        assertThat(NodeReducer.requiresFullStepCompletion(consumer(TransferMode.READ).build())).isTrue();
        assertThat(NodeReducer.requiresFullStepCompletion(producer(TransferMode.READ).build())).isTrue();
        assertThat(NodeReducer.requiresFullStepCompletion(consumer(TransferMode.WRITE).build())).isFalse();
        assertThat(NodeReducer.requiresFullStepCompletion(producer(TransferMode.WRITE).build())).isFalse();
        assertThat(NodeReducer.requiresFullStepCompletion(
                consumer(TransferMode.READ).behaviour(Behaviour.seed()).build())).as("seed inherits false").isFalse();
    }
}
