package io.kvledger.ledger.diagnosis;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.KvParams;
import io.kvledger.ledger.diagnosis.CrossNodeDiagnosisTest.Cluster;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Class 29 (#43541): n > 1 siblings ({@code <index>_<parent id>}) sharing one transfer id on the
 * prefill, over READ and WRITE, both profiles, n of 2 and 3, with healthy requests around; a
 * collision of unrelated ids stays class 13, and siblings with their own transfer ids give nothing.
 */
class SiblingsShareTransferIdTest {

    private static final long S = 1_000_000_000L;

    private static KvParams params(String tid) {
        return KvParams.of("do_remote_decode", true, "do_remote_prefill", false, "transfer_id", tid,
                "remote_host", "10.0.1.1", "remote_handshake_port", 6301L, "remote_notify_port", 61005L);
    }

    /** Prefill legs of {@code rids} with {@code tids}, healthy ones acked; the journal ends at 70 s. */
    private static List<Finding> run(TransferMode mode, Behaviour b, List<String> rids, List<String> tids, int healthy) {
        Cluster c = new Cluster();
        c.node("P0", NodeConfig.builder(Role.PRODUCER, mode).hostIp("10.0.0.1").behaviour(b).build());
        List<String> acks = new ArrayList<>();
        for (int h = 0; h < healthy; h++) {
            c.prefillLeg("P0", "cmpl-ok-" + h, params("tx-ok-" + h));
            acks.add("cmpl-ok-" + h);
        }
        for (int i = 0; i < rids.size(); i++) {
            c.prefillLeg("P0", rids.get(i), params(tids.get(i)));
        }
        c.on("P0", new NodeEvent.ConnectorOutputReceived(S, acks, List.of()));
        c.on("P0", new NodeEvent.ConnectorOutputReceived(70 * S, List.of(), List.of()));
        // only classes 13 and 29 are this test's (so the healthy requests must not show either); the minimal params lack what the seed's READ staging or a WRITE save needs (remote_block_ids):
        // those findings are right, and not this test's
        return HangDetectors.run(c.ledger, Bounds.defaults()).stream()
                .filter(x -> x.bugClass() == 13 || x.bugClass() == 29).toList();
    }

    @Test
    void siblings_claiming_one_transfer_id_are_class_29_and_unrelated_ids_stay_13() {
        for (TransferMode mode : TransferMode.values()) {
            for (Behaviour b : List.of(Behaviour.newest(), Behaviour.seed())) {
                for (int n : new int[] {2, 3}) {
                    for (int healthy : new int[] {0, 3}) {
                        List<String> rids = new ArrayList<>();
                        List<String> tids = new ArrayList<>();
                        for (int i = 0; i < n; i++) {
                            rids.add(i + "_cmpl-parent-0");
                            tids.add("tx-shared");
                        }
                        String what = mode + " " + b.profile() + " n=" + n + " healthy " + healthy;
                        List<Finding> f = run(mode, b, rids, tids, healthy);
                        assertThat(f).as(what + ": " + f).isNotEmpty().allSatisfy(x -> {
                            assertThat(x.detector()).isEqualTo("siblings-share-transfer-id");
                            assertThat(x.bugClass()).isEqualTo(29);
                            assertThat(x.transferId()).isEqualTo("tx-shared");
                            assertThat(x.requestId()).isIn(rids);
                            assertThat(x.message()).containsAnyOf("_cmpl-parent-0 are samples of one parent request",
                                    "its n > 1 sibling");
                        });
                        // the collision is named on the sibling that took the mapping, the consequence on the reaped one
                        assertThat(f).as(what).anySatisfy(x -> assertThat(x.message()).contains("are samples of one parent"));

                        List<Finding> unrelated = run(mode, b, List.of("cmpl-a-0", "cmpl-b-0"), List.of("tx-shared", "tx-shared"),
                                healthy);
                        assertThat(unrelated).as(what + " unrelated: " + unrelated).isNotEmpty()
                                .allSatisfy(x -> assertThat(x.bugClass()).isEqualTo(13));
                    }
                }
            }
        }
    }

    @Test
    void clean_family_siblings_with_their_own_transfer_ids_give_no_class_13_or_29() {
        for (TransferMode mode : TransferMode.values()) {
            List<Finding> f = run(mode, Behaviour.newest(), List.of("0_cmpl-p-0", "1_cmpl-p-0", "2_cmpl-p-0"),
                    List.of("tx-0", "tx-1", "tx-2"), 2);
            assertThat(f).as(mode + ": " + f).isEmpty();
        }
    }
}
