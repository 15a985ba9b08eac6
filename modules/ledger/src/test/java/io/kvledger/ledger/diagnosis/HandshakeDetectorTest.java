package io.kvledger.ledger.diagnosis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.moriio.RequestIds;
import io.kvledger.core.moriio.ZmqAddress;
import io.kvledger.ledger.diagnosis.CrossNodeDiagnosisTest.Cluster;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The handshake-incomplete detector (class 21): a READ decode whose handshake is never answered, or fails. */
class HandshakeDetectorTest {

    private static final String UUID = "0123456789abcdef0123456789abcdef";
    private static final long S = 1_000_000_000L;

    private final Cluster c = new Cluster();
    private String prid;
    private String drid;

    /** P0 finishes its leg; D0 admits the decode, schedules it and starts its load: one StartHandshake. */
    private Effect.StartHandshake decodeWaitsOnHandshake() {
        c.node("P0", NodeConfig.builder(Role.PRODUCER, TransferMode.READ).hostIp("10.0.0.1").build());
        c.node("D0", NodeConfig.builder(Role.CONSUMER, TransferMode.READ).hostIp("10.0.1.1").build());
        String base = RequestIds.proxyRequestId(new ZmqAddress("10.0.0.1", 6301, 61005),
                new ZmqAddress("10.0.1.1", 6301, 61005), UUID);
        prid = "cmpl-" + base + "-0-aaaaaaaa";
        drid = "cmpl-" + base + "-0-bbbbbbbb";
        KvParams returned = c.prefillLeg("P0", prid, KvParams.of("do_remote_decode", true,
                "do_remote_prefill", false, "transfer_id", "tx-hs"));
        c.on("D0", new NodeEvent.RequestAdmitted(5, drid, 32, 32, returned));
        c.on("D0", new NodeEvent.MatchedTokensQueried(6, drid, 0));
        c.on("D0", new NodeEvent.BlocksAllocated(7, drid, BlockGroups.single(8, 9), 31));
        c.on("D0", new NodeEvent.StepScheduled(8, 1, List.of()));
        List<Effect.StartHandshake> hs = c.only(c.on("D0", new NodeEvent.LoadStarted(9)), Effect.StartHandshake.class);
        assertThat(hs).hasSize(1);
        return hs.get(0);
    }

    @Test
    void a_handshake_never_answered_names_the_waiting_read_the_peer_and_the_wait() {
        Effect.StartHandshake h = decodeWaitsOnHandshake();
        c.on("D0", new NodeEvent.StepScheduled(61 * S, 2, List.of()));
        c.on("P0", new NodeEvent.ConnectorOutputReceived(61 * S, null, null));

        List<Finding> f = HangDetectors.run(c.ledger, Bounds.defaults());
        assertThat(f).anySatisfy(x -> {
            assertThat(x.detector()).isEqualTo("handshake-incomplete");
            assertThat(x.node()).isEqualTo("D0");
            assertThat(x.requestId()).isEqualTo(drid);
            assertThat(x.bugClass()).isEqualTo(21);
            assertThat(x.message()).contains(h.key()).contains(h.host() + ":" + h.port()).contains("never answered")
                    .contains("for 60.999999 s");
        });
        // the generic stuck finding is replaced, not added
        assertThat(f).noneSatisfy(x -> assertThat(x.detector()).isEqualTo("stuck"));
        assertThat(f).anySatisfy(x -> {
            assertThat(x.detector()).isEqualTo("reaped-without-ack");
            assertThat(x.requestId()).isEqualTo(prid);
            assertThat(x.message()).contains("handshake " + h.key()).contains("never answered");
        });
    }

    @Test
    void a_failed_handshake_names_the_reason_and_how_long_it_took() {
        Effect.StartHandshake h = decodeWaitsOnHandshake();
        c.on("D0", new NodeEvent.HandshakeFailed(2 * S + 9, h.key(), "connection refused"));
        c.on("D0", new NodeEvent.StepScheduled(61 * S, 2, List.of()));

        List<Finding> f = HangDetectors.run(c.ledger, Bounds.defaults());
        assertThat(f).anySatisfy(x -> {
            assertThat(x.detector()).isEqualTo("handshake-incomplete");
            assertThat(x.node()).isEqualTo("D0");
            assertThat(x.requestId()).isEqualTo(drid);
            assertThat(x.bugClass()).isEqualTo(21);
            assertThat(x.message()).contains("waits for " + h.key()).contains("handshake " + h.key() + " with ").contains(h.host() + ":" + h.port())
                    .contains("connection refused").contains("after 2.000000 s");
        });
        assertThat(f).noneSatisfy(x -> assertThat(x.detector() + " " + x.node()).isEqualTo("stuck D0"));
    }

    @Test
    void a_handshake_still_young_or_answered_late_is_no_finding() {
        Effect.StartHandshake h = decodeWaitsOnHandshake();
        c.on("D0", new NodeEvent.StepScheduled(10 * S, 2, List.of()));
        assertThat(HangDetectors.run(c.ledger, Bounds.defaults()))
                .noneSatisfy(x -> assertThat(x.detector()).isEqualTo("handshake-incomplete"));
        c.on("D0", new NodeEvent.HandshakeCompleted(20 * S, h.key()));
        c.on("D0", new NodeEvent.StepScheduled(61 * S, 3, List.of()));
        assertThat(HangDetectors.run(c.ledger, Bounds.defaults()))
                .noneSatisfy(x -> assertThat(x.detector()).isEqualTo("handshake-incomplete"));
    }
}
