package io.kvledger.cli;

import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.tap.FrameJournal;
import io.kvledger.tap.Listener;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvledger listen}: a standalone notify listener that journals every frame it receives,
 * decoded or rejected, until it is stopped (SIGINT/SIGTERM, or {@code --max-frames}), flushing
 * the journal on the way out and exiting 0. The first piece of a tap in front of real vLLM MoRIIO
 * ranks: point their decode schedulers or workers at it, then {@code kvledger dump DIR} shows one
 * line per frame. The listener is the tap module's {@link Listener}; the command keeps its
 * options, the signal handling, what it prints and the exit code.
 *
 * <p>A failed start is one line naming the command and exit status 2, and leaves nothing behind.
 * A frame the journal cannot take as received is journaled as a {@code FrameRejected} saying so,
 * and the listener goes on. This command's thread is the journal's single writer.
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

    @Option(names = "--duration-s", converter = DurationOption.class, defaultValue = "0", description = "Stop after this many seconds (0: run until stopped).")
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
        TransferMode m = ModeOption.parse(spec, mode);
        Listener listener;
        try {
            listener = Listener.start(bind, journal, node, Listener.config(bind, r, m));
        } catch (Listener.StartFailed e) {
            err.println(spec.qualifiedName() + ": " + e.getMessage());
            return 2;
        }
        // closed last: a signal's hook waits until the journal is flushed and closed
        try (StopOnSignal stop = new StopOnSignal("kvledger-listen-shutdown"); listener) {
            err.println("listen: bound " + listener.endpoint() + "; journaling every frame to " + journal
                    + (maxFrames > 0 ? " (stopping after " + maxFrames + " frames)" : "; stop with Ctrl-C"));
            err.flush();
            long deadline = durationS > 0 ? System.nanoTime() + (long) (durationS * 1e9) : Long.MAX_VALUE;
            FrameJournal.Tally tally = listener.run(maxFrames, deadline, stop::stopping, err);
            out.println("listen: " + tally.frames + " frame(s) journaled (" + tally.rejected + " rejected"
                    + (tally.substituted > 0 ? ", " + tally.substituted + " too large to journal as received: journaled as rejections" : "")
                    + ")" + (tally.lost > 0 ? ", " + tally.lost + " lost: the journal refused them" : "") + " to " + journal);
            out.flush();
        }
        return 0;
    }
}
