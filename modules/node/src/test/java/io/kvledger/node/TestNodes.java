package io.kvledger.node;

import io.kvledger.node.loop.NodeLoop;
import io.kvledger.node.loop.Inbox;
import io.kvledger.node.loop.EffectRouter;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.model.BlockGroups;
import io.kvledger.core.moriio.RequestIds;
import io.kvledger.core.moriio.ZmqAddress;
import io.kvledger.journal.ServiceClock;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalWriter;
import io.kvledger.rdma.engine.TransferEngines;
import io.kvledger.core.model.ToyProxyParams;
import io.kvledger.node.data.KvLayout;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

/** Node set-ups shared by the service tests. */
public final class TestNodes {

    private TestNodes() {}

    /** A base port with {@code span} free ports after it. */
    public static int freePortBase(int span) {
        return io.kvledger.node.cluster.LoopbackPorts.freeRange(span);
    }

    public static NodeConfig config(Role role, TransferMode mode, int handshakePort, int notifyPort) {
        return NodeConfig.builder(role, mode)
                .hostIp("127.0.0.1")
                .handshakePort(handshakePort)
                .notifyPort(notifyPort)
                .deferTimeoutNs(NodeConfig.seconds(20))
                .transferTimeoutNs(NodeConfig.seconds(10))
                .build();
    }

    public static NodeOptions options(String id, NodeConfig config, Path journal) {
        return NodeOptions.defaults(id, config, journal)
                .withLayout(new KvLayout(config.layerNames(), 256, 64))
                .withTransferEngine(TransferEngines.Choice.IN_JVM)
                .withHandshakeTimeout(Duration.ofSeconds(30));
    }

    /** Polls {@code cond} every 10 ms up to {@code timeout}; whether it became true. */
    public static boolean eventually(Duration timeout, BooleanSupplier cond) {
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
    public static String dump(Path journal) {
        StringBuilder b = new StringBuilder();
        try (io.kvledger.journal.JournalReader r = io.kvledger.journal.JournalReader.open(journal)) {
            for (io.kvledger.journal.JournalEntry e : r) {
                b.append('\n').append(e.seq()).append(' ').append(e.dissect());
            }
        }
        return b.toString();
    }

    /** A new journal in {@code dir} for a node named D0 with {@code config}, as the node writes it. */
    public static JournalWriter decodeJournal(Path dir, NodeConfig config) {
        return JournalWriter.open(dir, JournalHeader.of("D0", config, "kvledger node"));
    }

    /**
     * {@code n} requests of three inputs each, as a WRITE decode gets them (admission with the toy
     * proxy's params, match, allocation), from time {@code t0} on; request ids name the decode at
     * 21000/21002 and the prefill at 22000/22002.
     */
    public static List<NodeEvent> decodeRequests(int n, long t0) {
        List<NodeEvent> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            String rid = RequestIds.proxyRequestId(new ZmqAddress("127.0.0.1", 22000, 22002),
                    new ZmqAddress("127.0.0.1", 21000, 21002), String.format("%032x", i + 1));
            String tid = String.format("tx-00000000-0000-4000-8000-%012d", i + 1);
            long at = t0 + i * 10_000L;
            out.add(new NodeEvent.RequestAdmitted(at, rid, 64, 64, ToyProxyParams.decode(1, 1, tid, null)));
            out.add(new NodeEvent.MatchedTokensQueried(at + 1_000, rid, 0));
            out.add(new NodeEvent.BlocksAllocated(at + 2_000, rid, BlockGroups.single(4 * i, 4 * i + 1, 4 * i + 2,
                    4 * i + 3), 64));
        }
        return out;
    }

    /**
     * A started node loop named D0 on a fresh state of {@code cfg}, with the system clock, routing
     * to {@code router}, its journaller ring of {@code ring} inputs.
     */
    public static NodeLoop startLoop(NodeConfig cfg, JournalWriter journal, Inbox inbox, EffectRouter router, int ring) {
        NodeLoop loop = new NodeLoop("D0", io.kvledger.core.node.NodeState.initial(cfg), journal, router,
                ServiceClock.system(), inbox, 0, ring);
        loop.start();
        return loop;
    }
}
