package io.kvledger.ledger.diagnosis;

import io.kvledger.core.model.TransferId;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.ledger.diagnosis.CrossNodeDiagnosisTest.Cluster;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.moriio.RequestIds;
import io.kvledger.core.moriio.ZmqAddress;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The cross-node detectors of classes 37, 20, 16, 14 and 13 over hand-built READ flows (newest
 * preset): each names the request on every node it touched, the event that is missing or wrong,
 * and its class, and replaces the generic finding (stuck, reaped-without-ack) of those requests.
 */
class SpecificDetectorsTest {

    private static final String UUID = "0123456789abcdef0123456789abcdef";
    private static final long S = 1_000_000_000L;

    private final Cluster c = new Cluster();

    private static String rid(String prefillHost, String suffix) {
        return "cmpl-" + RequestIds.proxyRequestId(new ZmqAddress(prefillHost, 6301, 61005),
                new ZmqAddress("10.0.1.1", 6301, 61005), UUID) + "-0-" + suffix;
    }

    private static KvParams without(KvParams p, String... keys) {
        Map<String, Object> m = new LinkedHashMap<>(p.asMap());
        for (String k : keys) {
            m.remove(k);
        }
        return KvParams.of(m);
    }

    private void decode() {
        c.node("D0", NodeConfig.builder(Role.CONSUMER, TransferMode.READ).hostIp("10.0.1.1").build());
    }

    /** The decode leg up to its load: admitted, allocated, scheduled, start_load_kv. */
    private List<Effect> decodeUntilLoad(String drid, KvParams params) {
        c.on("D0", new NodeEvent.RequestAdmitted(5, drid, 32, 32, params));
        c.on("D0", new NodeEvent.MatchedTokensQueried(6, drid, 0));
        c.on("D0", new NodeEvent.BlocksAllocated(7, drid, BlockGroups.single(8, 9), 31));
        c.on("D0", new NodeEvent.StepScheduled(8, 1, List.of()));
        return c.on("D0", new NodeEvent.LoadStarted(9));
    }

    private List<Finding> at61(String... producers) {
        c.on("D0", new NodeEvent.StepScheduled(61 * S, 2, List.of()));
        for (String p : producers) {
            c.on(p, new NodeEvent.ConnectorOutputReceived(61 * S, null, null));
        }
        return HangDetectors.run(c.ledger, Bounds.defaults());
    }

    private static List<Finding> of(List<Finding> f, String detector) {
        return f.stream().filter(x -> x.detector().equals(detector)).toList();
    }

    /**
     * Class 37, newest: {@code _eager_handshake_all_dp_ranks} dials the single remote_host with
     * the global DP rank in the port offset. P0 and P1 are one DP rank each on two pods; P1 serves.
     */
    @Test
    void eager_handshake_dials_the_global_rank_on_the_single_remote_host() {
        c.node("P0", NodeConfig.builder(Role.PRODUCER, TransferMode.READ).hostIp("10.0.0.1").dp(0, 2, 1).build());
        c.node("P1", NodeConfig.builder(Role.PRODUCER, TransferMode.READ).hostIp("10.0.0.2").dp(1, 2, 1).build());
        decode();
        String prid = rid("10.0.0.2", "aaaaaaaa");
        String drid = rid("10.0.0.2", "bbbbbbbb");
        KvParams back = c.prefillLeg("P1", prid, KvParams.of("do_remote_decode", true, "transfer_id", "tx-37"));
        back.put("remote_hosts", List.of("10.0.0.1", "10.0.0.2"));
        List<Effect.StartHandshake> hs = c.only(decodeUntilLoad(drid, back), Effect.StartHandshake.class);
        assertThat(hs).extracting(Effect.StartHandshake::key).containsExactly("10.0.0.2:6301_dp0", "10.0.0.2:6301_dp1");
        assertThat(hs.get(1).host() + ":" + hs.get(1).port()).isEqualTo("10.0.0.2:6302");
        c.on("D0", new NodeEvent.HandshakeCompleted(10, "10.0.0.2:6301_dp0")); // P1 answers rank 0's key

        List<Finding> f = at61("P1");
        List<Finding> wrong = of(f, "eager-handshake-wrong-pod");
        assertThat(wrong).extracting(x -> x.node() + " " + x.requestId()).containsExactly("D0 " + drid, "P1 " + prid);
        assertThat(wrong).allSatisfy(x -> {
            assertThat(x.bugClass()).isEqualTo(37);
            assertThat(x.transferId()).isEqualTo("tx-37");
            assertThat(x.message()).contains("10.0.0.2:6301_dp1").contains("10.0.0.2:6302").contains("global DP rank 1")
                    .contains("local rank 0 on pod 1 at 10.0.0.2").contains("never answered");
        });
        assertThat(wrong.get(1).message()).contains("reap");
        // the generic findings of these two requests are replaced
        assertThat(f).noneSatisfy(x -> assertThat(x.detector()).isIn("handshake-incomplete", "stuck", "reaped-without-ack"));
    }

    @Test
    void a_single_pod_peer_is_no_eager_handshake_finding() {
        c.node("P1", NodeConfig.builder(Role.PRODUCER, TransferMode.READ).hostIp("10.0.0.1").dp(1, 2, 2).build());
        decode();
        String prid = rid("10.0.0.1", "aaaaaaaa");
        KvParams back = c.prefillLeg("P1", prid, KvParams.of("do_remote_decode", true, "transfer_id", "tx-1pod"));
        decodeUntilLoad(rid("10.0.0.1", "bbbbbbbb"), back);
        assertThat(of(at61("P1"), "eager-handshake-wrong-pod")).isEmpty();
    }

    /**
     * Class 20, newest: the read session and the release port come from {@code remote_dp_rank}
     * (default 0). P1 (DP rank 1 of 2, same host) served, but the router did not pin the rank.
     */
    @Test
    void read_session_of_dp_rank_0_while_dp_rank_1_served_is_named_on_both_legs() {
        c.node("P0", NodeConfig.builder(Role.PRODUCER, TransferMode.READ).hostIp("10.0.0.1").dp(0, 2, 2).build());
        c.node("P1", NodeConfig.builder(Role.PRODUCER, TransferMode.READ).hostIp("10.0.0.1").dp(1, 2, 2).build());
        decode();
        String prid = rid("10.0.0.1", "aaaaaaaa");
        String drid = rid("10.0.0.1", "bbbbbbbb");
        KvParams back = without(c.prefillLeg("P1", prid, KvParams.of("do_remote_decode", true, "transfer_id", "tx-20")),
                "remote_dp_rank", "remote_dp_rank_override");
        Effect.SendRelease release = c.decodeLegToRelease("D0", drid, back);
        assertThat(release.port()).isEqualTo(61005); // rank 0's notify port
        c.on("P0", new NodeEvent.ReleaseReceived(13, "tx-20", 1));
        c.on("P0", new NodeEvent.FinishedPolled(14));
        c.on("D0", new NodeEvent.RequestFinished(15, drid, FinishStatus.FINISHED_STOPPED, BlockGroups.single(8, 9)));

        List<Finding> f = at61("P1", "P0");
        List<Finding> wrong = of(f, "read-wrong-dp-rank");
        assertThat(wrong).extracting(x -> x.node() + " " + x.requestId()).containsExactly("D0 " + drid, "P1 " + prid);
        assertThat(wrong).allSatisfy(x -> {
            assertThat(x.bugClass()).isEqualTo(20);
            assertThat(x.message()).contains("10.0.0.1:6301_dp0").contains("DP rank 0 (P0)").contains("P1 (global DP rank 1 of 2)");
        });
        assertThat(wrong.get(0).message()).contains("remote_dp_rank in its params: absent (default 0)");
        assertThat(wrong.get(1).message()).contains("reap at t+61.000000 s");
        assertThat(f).noneSatisfy(x -> assertThat(x.detector() + " " + x.node()).isEqualTo("reaped-without-ack P1"));
    }

    /**
     * Class 16, newest (and seed: the same code): no transfer_id in either leg's params, so each
     * scheduler maps {@code sidecar-<its own request id>}; the decode's release names its own.
     */
    @Test
    void synthesized_sidecar_ids_of_the_two_legs_are_named_on_both() {
        c.node("P0", NodeConfig.builder(Role.PRODUCER, TransferMode.READ).hostIp("10.0.0.1").build());
        decode();
        String prid = rid("10.0.0.1", "aaaaaaaa");
        String drid = rid("10.0.0.1", "bbbbbbbb");
        KvParams back = without(c.prefillLeg("P0", prid, KvParams.of("do_remote_decode", true)), "transfer_id");
        Effect.SendRelease release = c.decodeLegToRelease("D0", drid, back);
        assertThat(release.transferId()).isEqualTo(TransferId.of("sidecar-" + drid));
        c.on("P0", new NodeEvent.ReleaseReceived(13, "sidecar-" + drid, 1));
        c.on("P0", new NodeEvent.FinishedPolled(14));

        List<Finding> f = at61("P0");
        List<Finding> un = of(f, "transfer-id-uncorrelated");
        assertThat(un).extracting(x -> x.node() + " " + x.requestId() + " " + x.transferId())
                .containsExactly("D0 " + drid + " sidecar-" + drid, "P0 " + prid + " sidecar-" + prid);
        assertThat(un).allSatisfy(x -> assertThat(x.bugClass()).isEqualTo(16));
        assertThat(un.get(0).message()).contains("P0 " + prid + " synthesized sidecar-" + prid);
        assertThat(un.get(1).message()).contains("D0 " + drid + " synthesized sidecar-" + drid)
                .contains("only the reap frees it");
        assertThat(f).noneSatisfy(x -> assertThat(x.detector() + " " + x.node()).isEqualTo("reaped-without-ack P0"));
    }

    @Test
    void a_synthesized_id_the_decode_receives_from_the_prefill_correlates_and_is_no_finding() {
        c.node("P0", NodeConfig.builder(Role.PRODUCER, TransferMode.READ).hostIp("10.0.0.1").build());
        decode();
        String prid = rid("10.0.0.1", "aaaaaaaa");
        String drid = rid("10.0.0.1", "bbbbbbbb");
        KvParams back = c.prefillLeg("P0", prid, KvParams.of("do_remote_decode", true)); // echoes sidecar-<prid>
        Effect.SendRelease release = c.decodeLegToRelease("D0", drid, back);
        assertThat(release.transferId()).isEqualTo(TransferId.of("sidecar-" + prid));
        c.on("P0", new NodeEvent.ReleaseReceived(13, "sidecar-" + prid, 1));
        c.on("P0", new NodeEvent.FinishedPolled(14));
        c.on("P0", new NodeEvent.ConnectorOutputReceived(15, List.of(prid), null));
        assertThat(of(at61("P0"), "transfer-id-uncorrelated")).isEmpty();
    }

    /**
     * Class 14, newest: a READ consumer whose params lost {@code remote_block_ids} stages no
     * receive (upstream warns "invalid KVTransferParams"); nothing reads, nothing releases.
     */
    @Test
    void decode_without_remote_block_ids_leaves_the_prefill_to_its_reap() {
        c.node("P0", NodeConfig.builder(Role.PRODUCER, TransferMode.READ).hostIp("10.0.0.1").build());
        decode();
        String prid = rid("10.0.0.1", "aaaaaaaa");
        String drid = rid("10.0.0.1", "bbbbbbbb");
        KvParams back = c.prefillLeg("P0", prid, KvParams.of("do_remote_decode", true, "transfer_id", "tx-14"));
        back.put("remote_block_ids", List.of());
        List<Effect> load = decodeUntilLoad(drid, back);
        assertThat(c.only(load, Effect.PostRead.class)).isEmpty();
        c.on("D0", new NodeEvent.RequestFinished(20, drid, FinishStatus.FINISHED_STOPPED, BlockGroups.single(8, 9)));

        List<Finding> f = at61("P0");
        List<Finding> m = of(f, "missing-remote-block-ids");
        assertThat(m).extracting(x -> x.node() + " " + x.requestId()).containsExactly("D0 " + drid, "P0 " + prid);
        assertThat(m).allSatisfy(x -> assertThat(x.bugClass()).isEqualTo(14));
        assertThat(m.get(0).message()).contains("remote_block_ids []").contains("P0 " + prid + " waits for its reap");
        assertThat(m.get(1).message()).contains("reap at t+61.000000 s");
        assertThat(f).noneSatisfy(x -> assertThat(x.detector()).isEqualTo("reaped-without-ack"));
    }

    /**
     * n > 1 siblings share a transfer id (class 29's setting): a finding about their transfer
     * names each sibling on the prefill, not only the one that claimed the id last.
     */
    @Test
    void sibling_prefill_requests_sharing_a_transfer_id_each_get_their_finding() {
        c.node("P0", NodeConfig.builder(Role.PRODUCER, TransferMode.READ).hostIp("10.0.0.1").build());
        decode();
        String first = rid("10.0.0.1", "aaaaaaaa");
        String second = rid("10.0.0.1", "cccccccc");
        KvParams back = c.prefillLeg("P0", first, KvParams.of("do_remote_decode", true, "transfer_id", "tx-n2"));
        c.prefillLeg("P0", second, KvParams.of("do_remote_decode", true, "transfer_id", "tx-n2"));
        back.put("remote_block_ids", List.of());
        String drid = rid("10.0.0.1", "bbbbbbbb");
        decodeUntilLoad(drid, back);
        c.on("D0", new NodeEvent.RequestFinished(20, drid, FinishStatus.FINISHED_STOPPED, BlockGroups.single(8, 9)));
        List<Finding> m = of(at61("P0"), "missing-remote-block-ids");
        assertThat(m).extracting(x -> x.node() + " " + x.requestId())
                .containsExactly("D0 " + drid, "P0 " + first, "P0 " + second);
        assertThat(m.get(0).message()).contains("P0 " + first + ", P0 " + second + " waits for its reap");
    }

    /**
     * Classes 13 and 1, newest and seed alike: the prefill finishes under {@code <admitted>-<8 hex>};
     * the deferral is keyed by it while the worker maps the transfer to the admitted id.
     */
    @Test
    void a_prefill_finishing_under_a_suffixed_id_is_reaped_although_its_ack_came() {
        c.node("P0", NodeConfig.builder(Role.PRODUCER, TransferMode.READ).hostIp("10.0.0.1").build());
        decode();
        String admitted = "cmpl-" + RequestIds.proxyRequestId(new ZmqAddress("10.0.0.1", 6301, 61005),
                new ZmqAddress("10.0.1.1", 6301, 61005), UUID) + "-0";
        String finished = admitted + "-956053a4";
        KvParams params = KvParams.of("do_remote_decode", true, "transfer_id", "tx-13");
        c.on("P0", new NodeEvent.RequestAdmitted(0, admitted, 32, 32, params));
        c.on("P0", new NodeEvent.MatchedTokensQueried(1, admitted, 0));
        c.on("P0", new NodeEvent.BlocksAllocated(2, admitted, BlockGroups.single(4, 5), 0));
        c.on("P0", new NodeEvent.StepScheduled(3, 1, List.of()));
        c.on("P0", new NodeEvent.LoadStarted(3));
        List<Effect> fin = c.on("P0", new NodeEvent.RequestFinished(4, finished, FinishStatus.FINISHED_LENGTH_CAPPED,
                BlockGroups.single(4, 5), admitted));
        KvParams back = c.only(fin, Effect.FinishDecision.class).get(0).params().copy();
        String drid = rid("10.0.0.1", "bbbbbbbb");
        c.decodeLegToRelease("D0", drid, back);
        c.on("P0", new NodeEvent.ReleaseReceived(13, "tx-13", 1));
        c.on("P0", new NodeEvent.FinishedPolled(14));
        c.on("P0", new NodeEvent.ConnectorOutputReceived(15, List.of(admitted), null));

        List<Finding> f = at61("P0");
        List<Finding> r = of(f, "renamed-at-finish");
        assertThat(r).extracting(x -> x.node() + " " + x.requestId()).containsExactly("D0 " + drid, "P0 " + finished);
        assertThat(r.get(0).message()).contains("release of tx-13 was for P0 " + finished).contains("reap at t+61.000000 s");
        r = r.subList(1, 2);
        assertThat(r.get(0).node()).isEqualTo("P0");
        assertThat(r.get(0).requestId()).isEqualTo(finished);
        assertThat(r.get(0).bugClass()).isEqualTo(13);
        assertThat(r.get(0).message()).contains("admitted as " + admitted).contains("surfaced " + admitted)
                .contains("parked").contains("reaped at t+61.000000 s").contains("D0 " + drid);
        assertThat(f).noneSatisfy(x -> assertThat(x.detector()).isIn("ack-before-finish", "reaped-without-ack", "anomaly"));
    }
}
