package io.kvledger.node.cluster;

import io.kvledger.core.model.KvParams;
import io.kvledger.node.engine.Completion;
import io.kvledger.sim.ToyRouter;
import java.util.concurrent.CompletableFuture;

/**
 * One engine instance (one DP rank of it) a {@link LiveRouter} can send a request leg to; what the
 * toy router reads of it ({@code zmq_address}, DP and TP size, DP rank) is
 * {@link ToyRouter.Instance}'s.
 */
public interface Leg extends ToyRouter.Instance {

    /** The name of the node behind it ({@code P0}, {@code D1}, ...). */
    String name();

    /**
     * Sends one leg: the engine runs it under a request id derived from {@code xRequestId} as
     * vLLM's OpenAI server does.
     */
    CompletableFuture<Completion> submit(String xRequestId, int promptTokens, int maxTokens, KvParams params);
}
