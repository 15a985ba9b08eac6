package io.kvledger.ledger.diagnosis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.Switch;
import io.kvledger.core.config.TransferMode;
import io.kvledger.ledger.diagnosis.CrossNodeDiagnosisTest.Cluster;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.KvParams;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The negative-matched-tokens detector: a finding (not only a warning record) that outlives the request. */
class NegativeMatchedTokensDetectorTest {

    private static final String RID = "req-neg";

    private Cluster decode(Behaviour b) {
        Cluster c = new Cluster();
        c.node("D0", NodeConfig.builder(Role.CONSUMER, TransferMode.READ).hostIp("10.0.1.1").behaviour(b).build());
        // prompt embeds: no prompt token ids, so an unclamped READ count is 0 - 1 - 0
        c.on("D0", new NodeEvent.RequestAdmitted(0, RID, 32, 0, KvParams.of("do_remote_prefill", true,
                "do_remote_decode", false, "transfer_id", "tx-neg")));
        c.on("D0", new NodeEvent.MatchedTokensQueried(1, RID, 0));
        c.on("D0", new NodeEvent.BlocksAllocated(2, RID, BlockGroups.single(8, 9), 0));
        c.on("D0", new NodeEvent.RequestFinished(3, RID, FinishStatus.FINISHED_ABORTED, BlockGroups.single(8, 9)));
        return c;
    }

    @Test
    void an_unclamped_negative_count_is_a_finding_naming_the_counts_even_after_the_request_ended() {
        Cluster c = decode(Behaviour.newest().with(Switch.MATCH_CLAMPS_AT_ZERO, false)
                .with(Switch.MATCH_COUNTS_NUM_PROMPT_TOKENS, false));
        List<Finding> f = HangDetectors.run(c.ledger, Bounds.defaults());
        assertThat(f).anySatisfy(x -> {
            assertThat(x.detector()).isEqualTo("negative-matched-tokens");
            assertThat(x.node()).isEqualTo("D0");
            assertThat(x.requestId()).isEqualTo(RID);
            assertThat(x.transferId()).isEqualTo("tx-neg");
            assertThat(x.message()).contains("returned -1").contains("prompt_token_ids 0").contains("num_computed_tokens 0");
        });
    }

    @Test
    void the_clamped_newest_count_is_no_finding() {
        Cluster c = decode(Behaviour.newest());
        assertThat(HangDetectors.run(c.ledger, Bounds.defaults()))
                .noneSatisfy(x -> assertThat(x.detector()).isEqualTo("negative-matched-tokens"));
    }
}
