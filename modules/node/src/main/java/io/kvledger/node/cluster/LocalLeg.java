package io.kvledger.node.cluster;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.model.KvParams;
import io.kvledger.core.moriio.ZmqAddress;
import io.kvledger.node.NodeService;
import io.kvledger.node.engine.Completion;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;

/** A leg served by a node of this JVM (its simulated engine). */
public record LocalLeg(NodeService node) implements Leg {

    @Override
    public String name() {
        return node.options().nodeId();
    }

    @Override
    public ZmqAddress zmqAddress() {
        NodeConfig c = node.options().config();
        return new ZmqAddress(c.hostIp(), c.handshakePortBase(), c.notifyPortBase());
    }

    @Override
    public int dpSize() {
        return node.options().config().dpSize();
    }

    @Override
    public int tpSize() {
        return node.options().config().tpSize();
    }

    @Override
    public CompletableFuture<Completion> submit(String xRequestId, int promptTokens, int maxTokens, KvParams params) {
        String rid = "cmpl-" + xRequestId + "-0-" + String.format("%08x", ThreadLocalRandom.current().nextInt());
        return node.engine().submit(rid, promptTokens, maxTokens, params);
    }
}
