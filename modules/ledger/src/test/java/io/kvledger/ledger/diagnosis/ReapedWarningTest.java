package io.kvledger.ledger.diagnosis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.KvParams;
import io.kvledger.ledger.diagnosis.CrossNodeDiagnosisTest.Cluster;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The seed's "Reaped N deferred sends" warning counts every deferral past its deadline in that
 * update_connector_output, including one whose ACK came in the same call (which frees it):
 * hangs names the warning as the engine logs it, on the reaped request and on the one its ACK freed.
 */
class ReapedWarningTest {

    private static final long S = 1_000_000_000L;

    private static KvParams params(String tid) {
        return KvParams.of("do_remote_decode", true, "do_remote_prefill", false, "transfer_id", tid,
                "remote_host", "10.0.1.1", "remote_handshake_port", 6301L, "remote_notify_port", 61005L);
    }

    @Test
    void an_ack_in_the_call_that_reaps_is_named_with_the_engines_warning_and_is_no_leak() {
        // the reaping is the scheduler's, the same in READ and WRITE and in the seed and newest profiles
        for (Behaviour mode : List.of(Behaviour.newest(), Behaviour.seed())) {
            Cluster c = new Cluster();
            c.node("P0", NodeConfig.builder(Role.PRODUCER, TransferMode.READ).hostIp("10.0.0.1").behaviour(mode).build());
            c.prefillLeg("P0", "acked", params("tx-a"));
            c.prefillLeg("P0", "lost", params("tx-l"));
            c.prefillLeg("P0", "ok", params("tx-o"));
            c.on("P0", new NodeEvent.ConnectorOutputReceived(S, List.of("ok"), List.of()));
            // both deferrals are past their 60 s deadline when "acked"'s ACK arrives
            c.on("P0", new NodeEvent.ConnectorOutputReceived(61 * S, List.of("acked"), List.of()));

            // (the seed also stages saves in READ, and these minimal params lack remote_block_ids:
            // its META_PARAM_MISSING finding is right, and not this test's)
            List<Finding> f = HangDetectors.run(c.ledger, Bounds.defaults()).stream()
                    .filter(x -> x.detector().startsWith("reaped")).toList();
            String warning = "the engine logs \"Reaped 2 deferred sends with no finished_sending notification after 60s\"";
            // the request whose ACK came in time ("ok") has none
            assertThat(f).as(mode.profile() + ": " + f).hasSize(2);
            assertThat(f).anySatisfy(x -> {
                assertThat(x.detector()).isEqualTo("reaped-warning");
                assertThat(x.requestId()).isEqualTo("acked");
                assertThat(x.bugClass()).isZero();
                assertThat(x.message()).startsWith("not a leak").contains(warning).contains("DEFERRAL_EXPIRED_AT_ACK");
            });
            assertThat(f).anySatisfy(x -> {
                assertThat(x.detector()).isEqualTo("reaped-without-ack");
                assertThat(x.requestId()).isEqualTo("lost");
                assertThat(x.bugClass()).isEqualTo(7);
                assertThat(x.message()).contains(warning);
            });
        }
    }
}
