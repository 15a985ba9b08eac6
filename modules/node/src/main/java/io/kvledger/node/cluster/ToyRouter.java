package io.kvledger.node.cluster;

import io.kvledger.core.config.TransferMode;
import io.kvledger.core.model.FinishStatus;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.moriio.RequestIds;
import io.kvledger.core.model.ToyProxyParams;
import io.kvledger.node.engine.Completion;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;

/**
 * The request routing of vLLM's MoRIIO toy proxy (protocol section 4.2): round-robin prefill
 * and decode instances, the {@code X-Request-Id} with both peers' {@code zmq_address}es
 * embedded, a {@code tx-<uuid4>} transfer id, each leg's {@code kv_transfer_params}
 * ({@link ToyProxyParams}, as the simulator's toy proxy and {@code kvledger proxy} compose them); WRITE sends
 * both legs at once, READ sends the decode leg with what the prefill leg returned. Randomness
 * comes only from the seeded generator. With DP > 1 each DP rank is one leg: given in the toy
 * proxy's flat interleaved order (rank 0 of every instance, then rank 1, ...), the round robin is
 * its {@code flat_interleaved_dp_route}.
 */
public final class ToyRouter {

    /** Both legs of one client request. */
    public record Outcome(String xRequestId, String transferId, String prefill, String decode,
                          Completion prefillLeg, Completion decodeLeg, Throwable error) {
        public boolean ok() {
            return error == null && prefillLeg != null && decodeLeg != null && prefillLeg.error() == null
                    && decodeLeg.error() == null;
        }
    }

    private final List<Leg> prefills;
    private final List<Leg> decodes;
    private final TransferMode mode;
    private final SplittableRandom rng;
    private int next;

    public ToyRouter(List<Leg> prefills, List<Leg> decodes, TransferMode mode, long seed) {
        if (prefills.isEmpty() || decodes.isEmpty()) {
            throw new IllegalArgumentException("a router needs at least one prefill and one decode instance");
        }
        this.prefills = List.copyOf(prefills);
        this.decodes = List.copyOf(decodes);
        this.mode = mode;
        this.rng = new SplittableRandom(seed);
    }

    /** Sends one client request through both legs; the future never completes exceptionally. */
    public synchronized CompletableFuture<Outcome> send(int promptTokens, int decodeTokens) {
        Leg p = prefills.get(next % prefills.size());
        Leg d = decodes.get(next % decodes.size());
        next++;
        String xrid = RequestIds.proxyRequestId(p.zmqAddress(), d.zmqAddress(), uuid4().toString().replace("-", ""));
        String tid = "tx-" + uuid4();
        KvParams prefillParams = ToyProxyParams.prefill(d.dpSize(), d.tpSize(), tid);
        CompletableFuture<Completion> pf;
        CompletableFuture<Completion> df;
        if (mode == TransferMode.WRITE) {
            pf = p.submit(xrid, promptTokens, 1, prefillParams);
            df = d.submit(xrid, promptTokens, decodeTokens, decodeParams(p, tid, null));
        } else {
            pf = p.submit(xrid, promptTokens, 1, prefillParams);
            df = pf.thenCompose(c -> c.error() != null
                    ? CompletableFuture.failedFuture(new IllegalStateException("prefill leg failed: " + c.error()))
                    : d.submit(xrid, promptTokens, decodeTokens, decodeParams(p, tid, c.kvTransferParams())));
        }
        return pf.handle((c, e) -> c).thenCombine(df.handle((c, e) -> new Object[] {c, e}), (pc, dr) -> {
            Completion dc = (Completion) dr[0];
            Throwable err = (Throwable) dr[1];
            if (err == null && pc == null) {
                err = new IllegalStateException("prefill leg got no answer");
            }
            return new Outcome(xrid, tid, p.name(), d.name(), pc, dc, err);
        });
    }

    /**
     * The decode leg's params; in READ, the prefill's returned engine id, blocks and transfer id;
     * with a prefill of DP > 1, the selected prefill rank as {@code remote_dp_rank} (the toy proxy's
     * "if a rank was selected"), so a WRITE decode notifies that rank's ports.
     */
    static KvParams decodeParams(Leg p, String tid, Map<String, Object> prefillReturned) {
        KvParams params = ToyProxyParams.decode(p.dpSize(), p.tpSize(), tid, prefillReturned);
        if (p.dpSize() > 1) {
            params.put("remote_dp_rank", (long) p.dpRank());
        }
        return params;
    }

    private UUID uuid4() {
        long msb = (rng.nextLong() & ~0xF000L) | 0x4000L;
        long lsb = (rng.nextLong() & 0x3FFF_FFFF_FFFF_FFFFL) | 0x8000_0000_0000_0000L;
        return new UUID(msb, lsb);
    }

    /** Whether a leg's finish status is one a client gets text for. */
    static boolean finishedNormally(Completion c) {
        return c != null && (c.finishStatus() == FinishStatus.FINISHED_LENGTH_CAPPED
                || c.finishStatus() == FinishStatus.FINISHED_STOPPED);
    }
}
