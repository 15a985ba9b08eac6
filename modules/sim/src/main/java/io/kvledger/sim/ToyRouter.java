package io.kvledger.sim;

import io.kvledger.core.model.KvParams;
import io.kvledger.core.model.ToyProxyParams;
import io.kvledger.core.moriio.RequestIds;
import io.kvledger.core.moriio.ZmqAddress;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.UUID;

/**
 * The routing and parameter logic of vLLM's MoRIIO toy proxy (protocol spec section 4.2), written
 * once for the simulator and the live cluster: round-robin prefill and decode instances (given in
 * the toy proxy's flat interleaved order, one entry per DP rank, this is its
 * {@code flat_interleaved_dp_route}), the {@code X-Request-Id} with both peers' {@code zmq_address}es
 * embedded, the {@code tx-<uuid4>} transfer id and each leg's {@code kv_transfer_params}
 * ({@link ToyProxyParams}). Randomness comes only from the generator passed in.
 *
 * @param <I> what an instance is to the caller (a simulated engine, a live node's leg)
 */
public final class ToyRouter<I extends ToyRouter.Instance> {

    /** One engine instance (one DP rank of it) the router can pick. */
    public interface Instance {

        /** The {@code zmq_address} the instance registered ({@code host:handshake_port:notify_port}). */
        ZmqAddress zmqAddress();

        int dpSize();

        int tpSize();

        /**
         * The DP rank this entry reaches (sent, for a prefill, to the decode as
         * {@code remote_dp_rank} when {@link #dpSize()} is above 1).
         */
        default int dpRank() {
            return 0;
        }
    }

    /** Where one client request goes and the ids the proxy made for it. */
    public record Route<I>(I prefill, I decode, String xRequestId, String transferId) {}

    private final List<I> prefills;
    private final List<I> decodes;

    public ToyRouter(List<I> prefills, List<I> decodes) {
        if (prefills.isEmpty() || decodes.isEmpty()) {
            throw new IllegalArgumentException("a router needs at least one prefill and one decode instance");
        }
        this.prefills = List.copyOf(prefills);
        this.decodes = List.copyOf(decodes);
    }

    /**
     * Client request number {@code index} (from 0): the instances the round robin picks, the
     * {@code X-Request-Id} and the transfer id (two UUIDs drawn from {@code rng}, in that order).
     */
    public Route<I> route(int index, SplittableRandom rng) {
        I p = prefills.get(index % prefills.size());
        I d = decodes.get(index % decodes.size());
        String xRequestId = RequestIds.proxyRequestId(p.zmqAddress(), d.zmqAddress(),
                uuid4(rng).toString().replace("-", ""));
        String transferId = "tx-" + uuid4(rng);
        return new Route<>(p, d, xRequestId, transferId);
    }

    /** The prefill leg's {@code kv_transfer_params}, keys in the proxy's order. */
    public static KvParams prefillParams(Instance decode, String transferId) {
        return ToyProxyParams.prefill(decode.dpSize(), decode.tpSize(), transferId);
    }

    /**
     * The decode leg's {@code kv_transfer_params}. In READ, {@code prefillReturned} is what the
     * prefill leg returned: its {@code remote_engine_id}, {@code remote_block_ids} and
     * {@code transfer_id} are copied in; in WRITE it is {@code null} (both legs are dispatched at
     * once). With a prefill of DP above 1, the selected prefill rank goes in as
     * {@code remote_dp_rank} (the toy proxy's "if a rank was selected"), so a WRITE decode notifies
     * that rank's ports.
     */
    public static KvParams decodeParams(Instance prefill, String transferId, Map<String, Object> prefillReturned) {
        KvParams params = ToyProxyParams.decode(prefill.dpSize(), prefill.tpSize(), transferId, prefillReturned);
        if (prefill.dpSize() > 1) {
            params.put("remote_dp_rank", (long) prefill.dpRank());
        }
        return params;
    }

    /** How vLLM's OpenAI server wraps {@code X-Request-Id}: {@code cmpl-<id>-0-<8 hex>}. */
    static String vllmRequestId(String xRequestId, String hex8) {
        return "cmpl-" + xRequestId + "-0-" + hex8;
    }

    /** A version-4 UUID from the seeded generator (Python {@code uuid.uuid4()}). */
    static UUID uuid4(SplittableRandom rng) {
        long msb = (rng.nextLong() & ~0xF000L) | 0x4000L;
        long lsb = (rng.nextLong() & 0x3FFF_FFFF_FFFF_FFFFL) | 0x8000_0000_0000_0000L;
        return new UUID(msb, lsb);
    }

    /** Eight hex digits from the seeded generator (vLLM's request-id suffix). */
    static String hex8(SplittableRandom rng) {
        String s = Integer.toHexString(rng.nextInt());
        return "0".repeat(8 - s.length()) + s;
    }
}
