package io.kvledger.sim;

import io.kvledger.core.model.FinishStatus;

/**
 * One client request as the toy proxy sees it: its two legs, the ids it made for them, the workload
 * drawn for it, and the abort fault drawn for it (if any). Owned by the simulation thread.
 */
final class Transaction {

    /** Which leg a per-request fault hits. */
    enum Leg { PREFILL, DECODE }

    /** The {@code X-Request-Id} both legs get: {@code ___prefill_addr_..___decode_addr_.._<32 hex>}. */
    final String proxyRequestId;
    final String transferId;
    final SimNode prefill;
    final SimNode decode;
    /** vLLM's wrapped request ids, {@code cmpl-<X-Request-Id>-0-<8 hex>}, one per leg. */
    final String prefillRequestId;
    final String decodeRequestId;
    final int promptTokens;
    final int decodeTokens;
    final FinishStatus decodeFinish;

    Leg abortLeg;
    long abortAfterNs;
    /** The {@code remote_dp_rank} the {@code dp-alias} fault makes the proxy tell the decode leg (-1: the prefill's own). */
    int aliasedDpRank = -1;
    /** Whether the {@code siblings} fault made the prefill leg two n = 2 children sharing its params. */
    boolean siblings;
    /** Whether the proxy has decided about the decode leg (READ: the first child's response decides). */
    boolean decodeDecided;

    Transaction(String proxyRequestId, String transferId, SimNode prefill, SimNode decode,
                String prefillRequestId, String decodeRequestId, int promptTokens, int decodeTokens,
                FinishStatus decodeFinish) {
        this.proxyRequestId = proxyRequestId;
        this.transferId = transferId;
        this.prefill = prefill;
        this.decode = decode;
        this.prefillRequestId = prefillRequestId;
        this.decodeRequestId = decodeRequestId;
        this.promptTokens = promptTokens;
        this.decodeTokens = decodeTokens;
        this.decodeFinish = decodeFinish;
    }
}
