package io.kvledger.node.cluster;

import io.kvledger.core.model.KvParams;
import io.kvledger.core.moriio.ZmqAddress;
import io.kvledger.node.engine.Completion;
import java.util.concurrent.CompletableFuture;

/** One engine instance a router can send a request leg to. */
public interface Leg {

    /** The name of the node behind it ({@code P0}, {@code D1}, ...). */
    String name();

    /** The {@code zmq_address} the instance registered ({@code host:handshake_port:notify_port}). */
    ZmqAddress zmqAddress();

    int dpSize();

    int tpSize();

    /**
     * The DP rank of the instance this leg reaches (sent as {@code X-data-parallel-rank} and, for a
     * prefill, to the decode as {@code remote_dp_rank} when {@link #dpSize()} is above 1).
     */
    default int dpRank() {
        return 0;
    }

    /**
     * Sends one leg: the engine runs it under a request id derived from {@code xRequestId} as
     * vLLM's OpenAI server does.
     */
    CompletableFuture<Completion> submit(String xRequestId, int promptTokens, int maxTokens, KvParams params);
}
