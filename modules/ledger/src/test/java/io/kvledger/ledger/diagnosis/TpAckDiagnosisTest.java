package io.kvledger.ledger.diagnosis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.moriio.RequestIds;
import io.kvledger.core.moriio.ZmqAddress;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A READ transfer between a prefill and a decode of TP 2, one node per rank (as {@code kvledger
 * cluster --tp 2} runs them): decode rank 1's release to prefill rank 1 is lost. vLLM frees the
 * prefill's blocks only once both workers reported the request, so both prefill ranks reap, and
 * each finding says what it is missing.
 */
class TpAckDiagnosisTest {

    private static final String UUID = "0123456789abcdef0123456789abcdef";
    private static final long S = 1_000_000_000L;

    @Test
    void a_lost_release_of_one_tp_rank_is_named_on_both_prefill_ranks() {
        CrossNodeDiagnosisTest.Cluster c = new CrossNodeDiagnosisTest.Cluster();
        for (int t = 0; t < 2; t++) {
            c.node("P0-tp" + t, NodeConfig.builder(Role.PRODUCER, TransferMode.READ).hostIp("10.0.0.1").tp(t, 2).build());
            c.node("D0-tp" + t, NodeConfig.builder(Role.CONSUMER, TransferMode.READ).hostIp("10.0.1.1").tp(t, 2).build());
        }
        String base = RequestIds.proxyRequestId(new ZmqAddress("10.0.0.1", 6301, 61005),
                new ZmqAddress("10.0.1.1", 6301, 61005), UUID);
        String prid = "cmpl-" + base + "-0-aaaaaaaa";
        String drid = "cmpl-" + base + "-0-bbbbbbbb";
        KvParams returned = null;
        for (int t = 0; t < 2; t++) {
            // the one scheduler's calls reach both ranks' nodes; each rank's worker gets its metadata
            returned = c.prefillLeg("P0-tp" + t, prid, KvParams.of("remote_tp_size", 2L, "do_remote_decode", true,
                    "do_remote_prefill", false, "transfer_id", "tx-tp"));
            c.on("P0-tp" + t, new NodeEvent.LoadStarted(5));
        }
        returned.put("remote_tp_size", 2L);
        Effect.SendRelease r0 = c.decodeLegToRelease("D0-tp0", drid, returned.copy());
        Effect.SendRelease r1 = c.decodeLegToRelease("D0-tp1", drid, returned.copy());
        assertThat(r0.port()).isEqualTo(61005);
        assertThat(r1.port()).isEqualTo(61006);
        // rank 0's release arrives and its worker counts it; rank 1's is lost on the way
        c.on("P0-tp0", new NodeEvent.ReleaseReceived(13 * S / 10, "tx-tp", 2));
        List<Effect> polled = c.on("P0-tp0", new NodeEvent.FinishedPolled(14 * S / 10));
        assertThat(c.only(polled, Effect.FinishedReported.class).get(0).doneSending()).containsExactly(prid);
        c.on("P0-tp1", new NodeEvent.FinishedPolled(14 * S / 10));
        // the aggregated finished_sending never names it: both scheduler sides reap at defer_timeout
        for (int t = 0; t < 2; t++) {
            c.on("P0-tp" + t, new NodeEvent.ConnectorOutputReceived(61 * S, null, null));
        }

        List<Finding> f = HangDetectors.run(c.ledger, Bounds.defaults());
        assertThat(f).anySatisfy(x -> {
            assertThat(x.detector()).isEqualTo("reaped-without-ack");
            assertThat(x.node()).isEqualTo("P0-tp1");
            assertThat(x.requestId()).isEqualTo(prid);
            assertThat(x.message()).contains("D0-tp1 sent release to this rank (10.0.0.1:61006)")
                    .contains("never arrived");
        });
        assertThat(f).anySatisfy(x -> {
            assertThat(x.detector()).isEqualTo("reaped-without-ack");
            assertThat(x.node()).isEqualTo("P0-tp0");
            assertThat(x.message()).contains("reported it finished sending")
                    .contains("only once every TP rank's worker reported it, and P0-tp1 never did");
        });
    }
    /**
     * WRITE with TP 2: prefill rank 1's write_done to decode rank 1 is lost. Decode rank 0 had its
     * write_done, but vLLM hands the request back to the scheduler only once both workers reported
     * it, so it waits on both ranks; each finding says what it is missing.
     */
    @Test
    void a_lost_write_done_of_one_tp_rank_is_named_on_both_decode_ranks() {
        CrossNodeDiagnosisTest.Cluster c = new CrossNodeDiagnosisTest.Cluster();
        for (int t = 0; t < 2; t++) {
            c.node("P0-tp" + t, NodeConfig.builder(Role.PRODUCER, TransferMode.WRITE).hostIp("10.0.0.1").tp(t, 2).build());
            c.node("D0-tp" + t, NodeConfig.builder(Role.CONSUMER, TransferMode.WRITE).hostIp("10.0.1.1").tp(t, 2).build());
        }
        // decode rank 1's scheduler side replays rank 0's: its remote_blocks were rank 0's to send
        c.ledger.schedulerReplica("D0-tp1");
        String base = RequestIds.proxyRequestId(new ZmqAddress("10.0.0.1", 6301, 61005),
                new ZmqAddress("10.0.1.1", 6301, 61005), UUID);
        String drid = "cmpl-" + base + "-0-bbbbbbbb";
        KvParams params = KvParams.of("do_remote_decode", false, "do_remote_prefill", true, "remote_engine_id", null,
                "remote_block_ids", null, "transfer_id", "tx-w", "remote_dp_size", 1L, "remote_tp_size", 2L);
        for (int t = 0; t < 2; t++) {
            String d = "D0-tp" + t;
            c.on(d, new NodeEvent.RequestAdmitted(S, drid, 32, 32, params.copy()));
            c.on(d, new NodeEvent.MatchedTokensQueried(S, drid, 0));
            c.on(d, new NodeEvent.BlocksAllocated(S, drid, BlockGroups.single(8, 9), 32));
            c.on(d, new NodeEvent.StepScheduled(S, 1, List.of()));
            c.on(d, new NodeEvent.LoadStarted(S));
        }
        // each prefill rank writes its decode rank and sends it write_done (base + dp + its own tp rank)
        for (int t = 0; t < 2; t++) {
            c.ledger.observe("P0-tp" + t, new NodeEvent.SaveWaited(2 * S),
                    List.of(new Effect.SendWriteDone("10.0.1.1", 61005 + t, "tx-w")));
        }
        c.on("D0-tp0", new NodeEvent.WriteDoneReceived(2 * S, "tx-w"));
        List<Effect> polled = c.on("D0-tp0", new NodeEvent.FinishedPolled(2 * S));
        assertThat(c.only(polled, Effect.FinishedReported.class).get(0).doneRecving()).containsExactly(drid);
        c.on("D0-tp1", new NodeEvent.FinishedPolled(2 * S));
        for (int t = 0; t < 2; t++) {
            c.on("D0-tp" + t, new NodeEvent.ConnectorOutputReceived(40 * S, null, null));
        }

        List<Finding> f = HangDetectors.run(c.ledger, Bounds.defaults());
        assertThat(f).anySatisfy(x -> {
            assertThat(x.node()).isEqualTo("D0-tp1");
            assertThat(x.requestId()).isEqualTo(drid);
            assertThat(x.message()).contains("P0-tp1 sent write_done to this rank (10.0.1.1:61006)").contains("never arrived");
        });
        assertThat(f).anySatisfy(x -> {
            assertThat(x.node()).isEqualTo("D0-tp0");
            assertThat(x.message()).contains("its worker got its write_done and reported it received")
                    .contains("and D0-tp1 never did");
        });
        // the replica's journaled remote_blocks are not counted as sent: one per prefill rank, from rank 0
        assertThat(c.ledger.transfers.get("tx-w").sends.stream().filter(x -> x.kind().equals("remote_blocks"))
                .map(Ledger.Send::fromNode).toList()).containsExactly("D0-tp0", "D0-tp0");
    }
}
