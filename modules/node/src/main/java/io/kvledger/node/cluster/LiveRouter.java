package io.kvledger.node.cluster;

import io.kvledger.core.config.TransferMode;
import io.kvledger.core.model.KvParams;
import io.kvledger.node.engine.Completion;
import io.kvledger.sim.ToyRouter;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;

/**
 * Sends client requests over live legs the way vLLM's MoRIIO toy proxy does: the simulator's
 * {@link ToyRouter} picks the instances and makes the ids and each leg's
 * {@code kv_transfer_params}; this class only dispatches the legs (WRITE sends both at once, READ
 * sends the decode leg with what the prefill leg returned) and joins their answers. Randomness
 * comes only from the seeded generator.
 */
public final class LiveRouter {

    /** Both legs of one client request. */
    public record Outcome(String xRequestId, String transferId, String prefill, String decode,
                          Completion prefillLeg, Completion decodeLeg, Throwable error) {
        public boolean ok() {
            return error == null && prefillLeg != null && decodeLeg != null && prefillLeg.error() == null
                    && decodeLeg.error() == null;
        }
    }

    private final ToyRouter<Leg> router;
    private final TransferMode mode;
    private final SplittableRandom rng;
    private int next;

    public LiveRouter(List<Leg> prefills, List<Leg> decodes, TransferMode mode, long seed) {
        this.router = new ToyRouter<>(prefills, decodes);
        this.mode = mode;
        this.rng = new SplittableRandom(seed);
    }

    /** Sends one client request through both legs; the future never completes exceptionally. */
    public synchronized CompletableFuture<Outcome> send(int promptTokens, int decodeTokens) {
        ToyRouter.Route<Leg> route = router.route(next++, rng);
        Leg p = route.prefill();
        Leg d = route.decode();
        String xrid = route.xRequestId();
        String tid = route.transferId();
        KvParams prefillParams = ToyRouter.prefillParams(d, tid);
        CompletableFuture<Completion> pf;
        CompletableFuture<Completion> df;
        if (mode == TransferMode.WRITE) {
            pf = p.submit(xrid, promptTokens, 1, prefillParams);
            df = d.submit(xrid, promptTokens, decodeTokens, ToyRouter.decodeParams(p, tid, null));
        } else {
            pf = p.submit(xrid, promptTokens, 1, prefillParams);
            df = pf.thenCompose(c -> c.error() != null
                    ? CompletableFuture.failedFuture(new IllegalStateException("prefill leg failed: " + c.error()))
                    : d.submit(xrid, promptTokens, decodeTokens, ToyRouter.decodeParams(p, tid, c.kvTransferParams())));
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
}
