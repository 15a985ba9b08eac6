package io.kvledger.ledger.diagnosis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.ledger.diagnosis.CrossNodeDiagnosisTest.Cluster;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.RequestPhase;
import io.kvledger.core.moriio.RequestIds;
import io.kvledger.core.moriio.ZmqAddress;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A WRITE decode waits in WAITING_FOR_REMOTE_KVS for as long as its prefill takes: while the
 * prefill leg of its transfer is still scheduled (a long chunked prefill), the decode is making
 * progress and is not stuck, however old its own last event; once the prefill stops moving, it is.
 */
class ProgressAcrossLegsTest {

    private static final long S = 1_000_000_000L;
    private static final String BASE = RequestIds.proxyRequestId(new ZmqAddress("10.0.0.1", 6301, 61005),
            new ZmqAddress("10.0.1.1", 6301, 61005), "0123456789abcdef0123456789abcdef");
    private static final String PRID = "cmpl-" + BASE + "-0-aaaaaaaa";
    private static final String DRID = "cmpl-" + BASE + "-0-bbbbbbbb";

    private final Cluster c = new Cluster();

    /** Both legs admitted at t=0; the prefill's 4,096-token prompt is scheduled one 16-token chunk every 5 s until {@code lastChunkS}. */
    private void run(long lastChunkS, long endS) {
        c.node("P0", NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).hostIp("10.0.0.1").build());
        c.node("D0", NodeConfig.builder(Role.CONSUMER, TransferMode.WRITE).hostIp("10.0.1.1").build());
        c.on("P0", new NodeEvent.RequestAdmitted(0, PRID, 4096, 4096, KvParams.of("do_remote_decode", true, "transfer_id", "tx-long")));
        c.on("P0", new NodeEvent.MatchedTokensQueried(0, PRID, 0));
        c.on("P0", new NodeEvent.BlocksAllocated(0, PRID, BlockGroups.single(1), 0));
        c.on("D0", new NodeEvent.RequestAdmitted(0, DRID, 4096, 4096, KvParams.of("do_remote_prefill", true, "transfer_id", "tx-long")));
        c.on("D0", new NodeEvent.MatchedTokensQueried(0, DRID, 0));
        c.on("D0", new NodeEvent.BlocksAllocated(0, DRID, BlockGroups.single(7), 4096));
        int block = 2;
        for (long t = 5; t <= lastChunkS; t += 5) {
            c.on("P0", new NodeEvent.StepScheduled(t * S, t, List.of(new NodeEvent.CachedRequest(PRID, BlockGroups.single(block++)))));
        }
        c.on("P0", new NodeEvent.Tick(endS * S));
        c.on("D0", new NodeEvent.Tick(endS * S));
    }

    private InFlight decode() {
        return HangDetectors.inFlight(c.ledger, Bounds.defaults()).stream().filter(f -> f.node().equals("D0")).findFirst().orElseThrow();
    }

    @Test
    void a_decode_waiting_on_a_prefill_still_being_scheduled_is_progressing_not_stuck() {
        run(45, 46);
        InFlight d = decode();
        assertThat(d.phase()).isEqualTo(RequestPhase.WAITING_FOR_REMOTE_KVS);
        assertThat(d.status()).isEqualTo(InFlight.Status.PROGRESSING);
        assertThat(d.lastEventNs()).as("the prefill leg's last chunk").isEqualTo(45 * S);
        assertThat(HangDetectors.run(c.ledger, Bounds.defaults())).isEmpty();
    }

    @Test
    void once_the_prefill_stops_moving_the_waiting_decode_is_stuck() {
        run(10, 46);
        assertThat(decode().status()).isEqualTo(InFlight.Status.STUCK);
        assertThat(HangDetectors.run(c.ledger, Bounds.defaults()))
                .anySatisfy(f -> assertThat(f.detector() + " " + f.node() + " " + f.requestId()).isEqualTo("stuck-waiting D0 " + DRID));
    }
}
