package io.kvledger.service;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.rdma.engine.TransferEngines;
import io.kvledger.service.data.KvLayout;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.function.BooleanSupplier;

/** Node set-ups shared by the service tests. */
final class TestNodes {

    private TestNodes() {}

    /** A base port with {@code span} free ports after it. */
    static int freePortBase(int span) {
        return io.kvledger.service.cluster.LoopbackPorts.freeRange(span);
    }

    static NodeConfig config(Role role, TransferMode mode, int handshakePort, int notifyPort) {
        return NodeConfig.builder(role, mode)
                .hostIp("127.0.0.1")
                .handshakePort(handshakePort)
                .notifyPort(notifyPort)
                .deferTimeoutNs(NodeConfig.seconds(20))
                .transferTimeoutNs(NodeConfig.seconds(10))
                .build();
    }

    static NodeOptions options(String id, NodeConfig config, Path journal) {
        return NodeOptions.defaults(id, config, journal)
                .withLayout(new KvLayout(config.layerNames(), 256, 64))
                .withTransferEngine(TransferEngines.Choice.IN_JVM)
                .withHandshakeTimeout(Duration.ofSeconds(3));
    }

    /** Polls {@code cond} every 10 ms up to {@code timeout}; whether it became true. */
    static boolean eventually(Duration timeout, BooleanSupplier cond) {
        long end = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < end) {
            if (cond.getAsBoolean()) {
                return true;
            }
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return cond.getAsBoolean();
    }

    /** Every entry of a journal, one dissected line each (for failure messages). */
    static String dump(Path journal) {
        StringBuilder b = new StringBuilder();
        try (io.kvledger.journal.JournalReader r = io.kvledger.journal.JournalReader.open(journal)) {
            for (io.kvledger.journal.JournalEntry e : r) {
                b.append('\n').append(e.seq()).append(' ').append(e.dissect());
            }
        }
        return b.toString();
    }
}
