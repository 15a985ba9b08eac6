package io.kvledger.zmq;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.zeromq.SocketType;
import org.zeromq.ZMQ;

/**
 * The engine bridge's JeroMQ threads run under {@code SCHED_BATCH} on Linux (waking its I/O
 * thread must not preempt the node loop between JeroMQ's signal write and its count); other
 * contexts keep the default policy.
 */
class ZmqRuntimeTest {

    private static final int SCHED_OTHER = 0;
    private static final int SCHED_BATCH = 3;

    @Test
    void aBatchContextsThreadsRunUnderSchedBatchAndOthersDoNot() throws IOException {
        Assumptions.assumeTrue(System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("linux"),
                "scheduling policies are Linux's");
        ZMQ.Context batch = ZmqRuntime.context("tb", true);
        ZMQ.Context plain = ZmqRuntime.context("tp", false);
        try {
            // the I/O threads start with the first socket
            ZMQ.Socket b = batch.socket(SocketType.ROUTER);
            ZMQ.Socket p = plain.socket(SocketType.ROUTER);
            b.bind("tcp://127.0.0.1:*");
            p.bind("tcp://127.0.0.1:*");
            // a thread sets its policy as it starts: wait until both threads have started and
            // the batch one has run that far (bounded only so that a broken build ends)
            long deadline = System.nanoTime() + 60_000_000_000L;
            List<Integer> bp = policies("kvledger-zmq-tb");
            while ((bp.isEmpty() || !bp.contains(SCHED_BATCH)) && System.nanoTime() < deadline) {
                LockSupport.parkNanos(10_000_000L);
                bp = policies("kvledger-zmq-tb");
            }
            assertThat(bp).isNotEmpty().contains(SCHED_BATCH);
            assertThat(policies("kvledger-zmq-tp")).isNotEmpty().containsOnly(SCHED_OTHER);
            ZmqRuntime.closeQuietly(b);
            ZmqRuntime.closeQuietly(p);
        } finally {
            batch.term();
            plain.term();
        }
    }

    /** The scheduling policy (field 41 of {@code /proc/self/task/T/stat}) of each thread whose name starts so. */
    private static List<Integer> policies(String namePrefix) throws IOException {
        String comm = namePrefix.length() > 15 ? namePrefix.substring(0, 15) : namePrefix;
        List<Integer> out = new ArrayList<>();
        try (var tasks = Files.list(Path.of("/proc/self/task"))) {
            for (Path t : tasks.toList()) {
                try {
                    if (!Files.readString(t.resolve("comm")).strip().startsWith(comm)) {
                        continue;
                    }
                    String stat = Files.readString(t.resolve("stat"));
                    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                    out.add(Integer.parseInt(f[41 - 3]));
                } catch (IOException gone) {
                    // the thread ended meanwhile
                }
            }
        }
        return out;
    }
}
