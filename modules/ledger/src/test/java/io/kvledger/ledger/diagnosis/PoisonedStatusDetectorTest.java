package io.kvledger.ledger.diagnosis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.ledger.diagnosis.CrossNodeDiagnosisTest.Cluster;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.KvParams;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The transfer-status-poisoned detector (class 9): a failed status, then no completion ever again on that engine. */
class PoisonedStatusDetectorTest {

    private static final long S = 1_000_000_000L;

    private final Cluster c = new Cluster();

    /** D0 admits a READ decode at {@code at}, schedules it and starts its load; returns its posted reads. */
    private List<Effect.PostRead> read(String rid, String tid, long at, int step) {
        c.on("D0", new NodeEvent.RequestAdmitted(at, rid, 32, 32, KvParams.of("do_remote_prefill", true,
                "do_remote_decode", false, "transfer_id", tid, "remote_host", "10.0.0.1", "remote_handshake_port", 6301L,
                "remote_notify_port", 61005L, "remote_engine_id", "10.0.0.1:6301", "remote_block_ids", List.of(List.of(4L, 5L)))));
        c.on("D0", new NodeEvent.MatchedTokensQueried(at + 1, rid, 0));
        c.on("D0", new NodeEvent.BlocksAllocated(at + 2, rid, BlockGroups.single(8, 9), 31));
        c.on("D0", new NodeEvent.StepScheduled(at + 3, step, List.of()));
        List<Effect> load = new ArrayList<>(c.on("D0", new NodeEvent.LoadStarted(at + 4)));
        for (Effect.StartHandshake h : c.only(load, Effect.StartHandshake.class)) {
            load.addAll(c.on("D0", new NodeEvent.HandshakeCompleted(at + 5, h.key())));
        }
        List<Effect.PostRead> reads = c.only(load, Effect.PostRead.class);
        assertThat(reads).isNotEmpty();
        return reads;
    }

    @Test
    void reads_posted_after_a_failed_status_that_never_complete_name_the_engine_error() {
        c.node("D0", NodeConfig.builder(Role.CONSUMER, TransferMode.READ).hostIp("10.0.1.1").build());
        List<Effect.PostRead> first = read("req-a", "tx-a", 0, 1);
        c.on("D0", new NodeEvent.TransferCompleted(S, first.get(0).statusId(), false, -12, "ibv_post_send: ENOMEM"));
        List<Effect.PostRead> second = read("req-b", "tx-b", 2 * S, 2);
        c.on("D0", new NodeEvent.StepScheduled(61 * S, 3, List.of()));

        List<Finding> f = HangDetectors.run(c.ledger, Bounds.defaults());
        assertThat(f).anySatisfy(x -> {
            assertThat(x.detector()).isEqualTo("transfer-status-poisoned");
            assertThat(x.node()).isEqualTo("D0");
            assertThat(x.requestId()).isEqualTo("req-b");
            assertThat(x.transferId()).isEqualTo("tx-b");
            assertThat(x.bugClass()).isEqualTo(9);
            assertThat(x.message()).contains(String.valueOf(second.get(0).statusId())).contains("-12 ibv_post_send: ENOMEM")
                    .contains("transfer tx-a").contains("60.000000 s");
        });
        assertThat(f).noneSatisfy(x -> assertThat(x.detector() + " " + x.requestId()).isEqualTo("stuck req-b"));
    }

    @Test
    void a_success_after_the_failure_clears_it() {
        c.node("D0", NodeConfig.builder(Role.CONSUMER, TransferMode.READ).hostIp("10.0.1.1").build());
        List<Effect.PostRead> first = read("req-a", "tx-a", 0, 1);
        c.on("D0", new NodeEvent.TransferCompleted(S, first.get(0).statusId(), false, -12, "ibv_post_send: ENOMEM"));
        read("req-b", "tx-b", 2 * S, 2);
        List<Effect.PostRead> third = read("req-c", "tx-c", 3 * S, 3);
        c.on("D0", new NodeEvent.TransferCompleted(4 * S, third.get(0).statusId(), true, 0, "ok"));
        c.on("D0", new NodeEvent.StepScheduled(61 * S, 4, List.of()));
        assertThat(HangDetectors.run(c.ledger, Bounds.defaults()))
                .noneSatisfy(x -> assertThat(x.detector()).isEqualTo("transfer-status-poisoned"));
    }
}
