package io.kvledger.cli;

import io.kvledger.core.config.Behaviour;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalWriter;
import io.kvledger.zmq.InboundFrame;
import io.kvledger.zmq.NotifyListenerAdapter;
import io.kvledger.zmq.NotifyListenerConfig;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvledger listen}: a standalone notify listener that journals every frame it receives,
 * decoded or rejected, until it is stopped (SIGINT/SIGTERM, or {@code --max-frames}), flushing
 * the journal on the way out. The first piece of a tap in front of real vLLM MoRIIO ranks: point
 * their decode schedulers or workers at it, then {@code kvledger dump DIR} shows one line per frame.
 *
 * <p>Threads: the listener's socket thread hands frames to a bounded queue; this command's thread
 * is the journal's single writer.
 */
@Command(name = "listen", mixinStandardHelpOptions = true,
        description = "Bind a MoRIIO notify ROUTER and journal every frame it receives until stopped.")
final class ListenCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Option(names = "--bind", required = true, paramLabel = "tcp://HOST:PORT",
            description = "Where to bind the ROUTER, e.g. tcp://0.0.0.0:61005 (a rank listens on notify_port + dp + tp).")
    String bind;

    @Option(names = "--journal", required = true, paramLabel = "DIR", description = "The journal to write (created, or appended to).")
    Path journal;

    @Option(names = "--node", defaultValue = "tap", description = "Node id written to the journal header (default: ${DEFAULT-VALUE}).")
    String node;

    @Option(names = "--role", defaultValue = "producer", description = "Role of the rank being tapped: producer or consumer (default: ${DEFAULT-VALUE}).")
    String role;

    @Option(names = "--mode", defaultValue = "write", description = "Transfer mode: read or write (default: ${DEFAULT-VALUE}).")
    String mode;

    @Option(names = "--max-frames", defaultValue = "0", description = "Stop after this many frames (0: run until stopped).")
    long maxFrames;

    @Option(names = "--duration-s", defaultValue = "0", description = "Stop after this many seconds (0: run until stopped).")
    double durationS;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        if (!bind.startsWith("tcp://") || bind.lastIndexOf(':') <= "tcp://".length()) {
            throw new ParameterException(spec.commandLine(), "--bind takes tcp://HOST:PORT, got " + bind);
        }
        Role r = switch (role.toLowerCase(java.util.Locale.ROOT)) {
            case "producer", "prefill", "p" -> Role.PRODUCER;
            case "consumer", "decode", "d" -> Role.CONSUMER;
            default -> throw new ParameterException(spec.commandLine(), "--role takes producer or consumer, got " + role);
        };
        TransferMode m = switch (mode.toLowerCase(java.util.Locale.ROOT)) {
            case "read" -> TransferMode.READ;
            case "write" -> TransferMode.WRITE;
            default -> throw new ParameterException(spec.commandLine(), "--mode takes read or write, got " + mode);
        };
        String host = bind.substring("tcp://".length(), bind.lastIndexOf(':'));
        NodeConfig config = NodeConfig.builder(r, m).hostIp(host.equals("*") || host.equals("0.0.0.0") ? "127.0.0.1" : host)
                .behaviour(Behaviour.newest()).build();
        ArrayBlockingQueue<InboundFrame> queue = new ArrayBlockingQueue<>(65_536);
        CountDownLatch done = new CountDownLatch(1);
        Thread hook = new Thread(() -> {
            stopping = true;
            try {
                done.await(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "kvledger-listen-shutdown");
        long frames = 0;
        long rejected = 0;
        try (JournalWriter writer = JournalWriter.open(journal, JournalHeader.of(node, config, "kvledger listen --bind " + bind));
             NotifyListenerAdapter listener = openListener(queue)) {
            Runtime.getRuntime().addShutdownHook(hook);
            err.println("listen: bound " + listener.endpoint() + "; journaling every frame to " + journal
                    + (maxFrames > 0 ? " (stopping after " + maxFrames + " frames)" : "; stop with Ctrl-C"));
            err.flush();
            long deadline = durationS > 0 ? System.nanoTime() + (long) (durationS * 1e9) : Long.MAX_VALUE;
            while (!stopping && (maxFrames == 0 || frames < maxFrames) && System.nanoTime() < deadline) {
                InboundFrame f = queue.poll(100, TimeUnit.MILLISECONDS);
                if (f == null) {
                    continue;
                }
                writer.appendInput(f.event());
                frames++;
                if (f.event() instanceof NodeEvent.FrameRejected) {
                    rejected++;
                }
            }
            // drain what the listener already handed over
            InboundFrame f;
            while ((maxFrames == 0 || frames < maxFrames) && (f = queue.poll()) != null) {
                writer.appendInput(f.event());
                frames++;
                if (f.event() instanceof NodeEvent.FrameRejected) {
                    rejected++;
                }
            }
            writer.flush();
            out.println("listen: " + frames + " frame(s) journaled (" + rejected + " rejected) to " + journal);
            out.flush();
        } finally {
            done.countDown();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // the JVM is already stopping: the hook is running and waits for `done`
            }
        }
        return 0;
    }

    private volatile boolean stopping;

    private NotifyListenerAdapter openListener(ArrayBlockingQueue<InboundFrame> queue) {
        try {
            return NotifyListenerAdapter.open(NotifyListenerConfig.forEndpoint(bind), queue::offer);
        } catch (IllegalStateException e) {
            throw new ParameterException(spec.commandLine(), "cannot bind " + bind + ": " + e.getMessage());
        }
    }
}
