package io.kvledger.core.model;

import java.util.Map;

/**
 * The {@code kv_transfer_params} of each leg as vLLM's MoRIIO toy proxy composes them (protocol
 * section 4.2), in its key order. One definition for every router that plays the toy proxy: the
 * simulator's, the {@code cluster} command's and {@code kvledger proxy}.
 */
public final class ToyProxyParams {

    private ToyProxyParams() {}

    /** The prefill leg's params: the decode instance's DP and TP sizes and the minted transfer id. */
    public static KvParams prefill(int decodeDpSize, int decodeTpSize, String transferId) {
        return KvParams.of(
                "remote_dp_size", decodeDpSize,
                "remote_tp_size", decodeTpSize,
                "transfer_id", transferId,
                "do_remote_decode", true,
                "do_remote_prefill", false,
                "remote_engine_id", null,
                "remote_block_ids", null);
    }

    /**
     * The decode leg's params: the prefill instance's DP and TP sizes; with {@code prefillReturned}
     * (READ: what the prefill leg returned), its {@code remote_engine_id}, {@code remote_block_ids}
     * and {@code transfer_id} copied in (the other echoed fields are not); in WRITE it is
     * {@code null} (both legs are dispatched at once).
     */
    public static KvParams decode(int prefillDpSize, int prefillTpSize, String transferId,
                                  Map<String, Object> prefillReturned) {
        KvParams params = KvParams.of(
                "do_remote_decode", false,
                "do_remote_prefill", true,
                "remote_engine_id", null,
                "remote_block_ids", null,
                "transfer_id", transferId,
                "remote_dp_size", prefillDpSize,
                "remote_tp_size", prefillTpSize);
        if (prefillReturned != null) {
            // read as the connector reads params (a missing key is None), copied as they came
            KvTransferParams returned = KvTransferParams.of(KvParams.of(prefillReturned));
            params.put("remote_engine_id", returned.remoteEngineId());
            params.put("remote_block_ids", returned.remoteBlockIds());
            params.put("transfer_id", returned.transferIdValue());
        }
        return params;
    }
}
