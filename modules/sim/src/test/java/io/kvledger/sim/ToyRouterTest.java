package io.kvledger.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvledger.core.config.TransferMode;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.moriio.RequestIds;
import io.kvledger.core.moriio.ZmqAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The ids and kv_transfer_params the simulated proxy gives each leg (protocol 2.3, 4.2). */
class ToyRouterTest {

    private static final long SEED = 7;

    /** The RequestAdmitted events a short fault-free run feeds each node. */
    private static List<NodeEvent.RequestAdmitted> admitted(TransferMode mode, String node) {
        List<NodeEvent.RequestAdmitted> out = new ArrayList<>();
        Simulation.run(SimOptions.builder(SEED, mode).requests(5).keepLog(false).build(), (n, seq, e, effects) -> {
            if (n.equals(node) && e instanceof NodeEvent.RequestAdmitted a) {
                out.add(a);
            }
        });
        return out;
    }

    @Test
    void request_ids_embed_both_addresses_and_each_leg_has_its_own_suffix() {
        List<NodeEvent.RequestAdmitted> p = admitted(TransferMode.WRITE, "P0");
        List<NodeEvent.RequestAdmitted> d = admitted(TransferMode.WRITE, "D0");
        assertThat(p).as("seed %d", SEED).hasSize(5);
        assertThat(d).as("seed %d", SEED).hasSize(5);
        String pAddr = "host:10.0.0.1,handshake:6301,notify:61005";
        String dAddr = "host:10.0.1.1,handshake:6301,notify:61005";
        for (NodeEvent.RequestAdmitted pa : p) {
            String pid = pa.requestId();
            assertThat(pid).as("seed %d", SEED)
                    .matches("cmpl-___prefill_addr_\\Q" + pAddr + "\\E___decode_addr_\\Q" + dAddr
                            + "\\E_[0-9a-f]{32}-0-[0-9a-f]{8}");
            String base = pid.substring(0, pid.length() - 8);
            NodeEvent.RequestAdmitted da = d.stream().filter(x -> x.requestId().startsWith(base)).findFirst()
                    .orElseThrow(() -> new AssertionError("seed " + SEED + ": no decode leg for " + pid));
            assertThat(da.requestId()).as("seed %d", SEED).isNotEqualTo(pid);
            assertThat(RequestIds.peerZmqFromRequestId(pid, true)).contains(dAddr);
            assertThat(RequestIds.peerZmqFromRequestId(da.requestId(), false)).contains(pAddr);
            assertThat(ZmqAddress.parse(dAddr).value()).isEqualTo(new ZmqAddress("10.0.1.1", 6301, 61005));
            assertThat(pa.params().string("transfer_id")).as("seed %d", SEED)
                    .matches("tx-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
                    .isEqualTo(da.params().string("transfer_id"));
        }
    }

    @Test
    void prefill_leg_params_have_exactly_the_proxy_keys() {
        KvParams params = admitted(TransferMode.WRITE, "P0").get(0).params();
        assertThat(params.asMap().keySet()).containsExactly("remote_dp_size", "remote_tp_size", "transfer_id",
                "do_remote_decode", "do_remote_prefill", "remote_engine_id", "remote_block_ids");
        assertThat(params.get("remote_dp_size")).isEqualTo(1L);
        assertThat(params.get("remote_tp_size")).isEqualTo(1L);
        assertThat(params.get("do_remote_decode")).isEqualTo(true);
        assertThat(params.get("do_remote_prefill")).isEqualTo(false);
        assertThat(params.get("remote_engine_id")).isNull();
        assertThat(params.get("remote_block_ids")).isNull();
    }

    @Test
    void write_decode_leg_params_carry_no_prefill_response() {
        KvParams params = admitted(TransferMode.WRITE, "D0").get(0).params();
        assertThat(params.asMap().keySet()).containsExactly("do_remote_decode", "do_remote_prefill",
                "remote_engine_id", "remote_block_ids", "transfer_id", "remote_dp_size", "remote_tp_size");
        assertThat(params.get("do_remote_prefill")).isEqualTo(true);
        assertThat(params.get("remote_engine_id")).isNull();
        assertThat(params.get("remote_block_ids")).isNull();
    }

    @Test
    void read_decode_leg_copies_engine_id_and_block_ids_from_the_prefill_response() {
        KvParams params = admitted(TransferMode.READ, "D0").get(0).params();
        assertThat(params.asMap().keySet()).containsExactly("do_remote_decode", "do_remote_prefill",
                "remote_engine_id", "remote_block_ids", "transfer_id", "remote_dp_size", "remote_tp_size");
        assertThat(params.get("remote_engine_id")).isEqualTo("10.0.0.1:6301");
        assertThat(params.get("remote_block_ids")).as("seed %d", SEED).isInstanceOf(List.class);
        assertThat((List<?>) params.get("remote_block_ids")).isNotEmpty();
    }

    @Test
    void uuid4_has_version_and_variant_bits() {
        SplittableRandom rng = new SplittableRandom(SEED);
        for (int i = 0; i < 100; i++) {
            var u = ToyRouter.uuid4(rng);
            assertThat(u.version()).isEqualTo(4);
            assertThat(u.variant()).isEqualTo(2);
            assertThat(ToyRouter.hex8(rng)).matches("[0-9a-f]{8}");
        }
    }
}
