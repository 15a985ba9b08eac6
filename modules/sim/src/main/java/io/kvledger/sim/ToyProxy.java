package io.kvledger.sim;

import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.moriio.RequestIds;
import io.kvledger.core.model.ToyProxyParams;
import java.util.List;
import java.util.SplittableRandom;
import java.util.UUID;

/**
 * The routing and parameter logic of vLLM's MoRIIO toy proxy (protocol spec section 4.2, P-new):
 * flat interleaved instance selection, the request id with both peers' {@code zmq_address}es
 * embedded, the {@code tx-<uuid4>} transfer id and the {@code kv_transfer_params} of each leg.
 * Every instance here has DP size 1, so no {@code X-data-parallel-rank} and no
 * {@code remote_dp_rank} are sent. Randomness comes only from the generator passed in.
 */
final class ToyProxy {

    private final List<SimNode> prefills;
    private final List<SimNode> decodes;

    ToyProxy(List<SimNode> prefills, List<SimNode> decodes) {
        this.prefills = prefills;
        this.decodes = decodes;
    }

    /**
     * A new client request, number {@code index} from 0: picks the instances, makes the ids and
     * draws the workload (prompt length, decode length and how decode ends).
     */
    Transaction accept(int index, SplittableRandom rng, SimOptions o) {
        // flat_interleaved_dp_route with dp_size 1: slot = (req_no - 1) mod n, instance = slot.
        SimNode p = prefills.get(index % prefills.size());
        SimNode d = decodes.get(index % decodes.size());
        String uuidHex = uuid4(rng).toString().replace("-", "");
        String xRequestId = RequestIds.proxyRequestId(p.zmqAddress(), d.zmqAddress(), uuidHex);
        String transferId = "tx-" + uuid4(rng);
        String pSuffix = hex8(rng);
        String dSuffix = hex8(rng);
        while (dSuffix.equals(pSuffix)) {
            dSuffix = hex8(rng);
        }
        int prompt = o.promptMinTokens() + rng.nextInt(o.promptMaxTokens() - o.promptMinTokens() + 1);
        int decodeTokens = o.decodeMinTokens() + rng.nextInt(o.decodeMaxTokens() - o.decodeMinTokens() + 1);
        FinishStatus finish = rng.nextInt(4) == 0 ? FinishStatus.FINISHED_STOPPED : FinishStatus.FINISHED_LENGTH_CAPPED;
        return new Transaction(xRequestId, transferId, p, d, vllmRequestId(xRequestId, pSuffix),
                vllmRequestId(xRequestId, dSuffix), prompt, decodeTokens, finish);
    }

    /** The prefill leg's {@code kv_transfer_params}, keys in the proxy's order. */
    KvParams prefillParams(Transaction tx) {
        return ToyProxyParams.prefill(tx.decode.config().dpSize(), tx.decode.config().tpSize(), tx.transferId);
    }

    /**
     * The decode leg's {@code kv_transfer_params}. In READ, {@code prefillResponse} is what the
     * prefill leg returned: its {@code remote_engine_id}, {@code remote_block_ids} and
     * {@code transfer_id} are copied in (the other echoed fields are not); in WRITE it is
     * {@code null} (both legs are dispatched at once).
     */
    KvParams decodeParams(Transaction tx, KvParams prefillResponse) {
        return ToyProxyParams.decode(tx.prefill.config().dpSize(), tx.prefill.config().tpSize(), tx.transferId,
                prefillResponse == null ? null : prefillResponse.asMap());
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

    static String hex8(SplittableRandom rng) {
        String s = Integer.toHexString(rng.nextInt());
        return "0".repeat(8 - s.length()) + s;
    }
}
