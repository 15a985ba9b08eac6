package io.kvledger.cli;

import io.kvledger.core.config.Role;
import io.kvledger.core.config.TransferMode;
import io.kvledger.journal.JournalException;
import io.kvledger.tap.Listener;
import io.kvledger.tap.Tap;
import io.kvledger.tap.TapTarget;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvledger tap}: a transparent interposer on the MoRIIO notify path ({@link Tap}). For each
 * rank named by {@code --prefill} or {@code --decode HOST:PORT} (its real notify port), it listens
 * on {@code PORT + --shift}, forwards every frame unchanged to the real port and journals it,
 * decoded or rejected, in {@code --journal DIR/P-HOST-PORT} (or {@code D-...}). The proxy must
 * embed the shifted ports in the request ids it composes. {@code kvledger tap-report DIR} then
 * tells which transfer's frames never crossed.
 *
 * <p>A failed start (a port in use, a journal another process writes) is one line and exit 2,
 * and leaves no socket bound.
 */
@Command(name = "tap", mixinStandardHelpOptions = true, sortOptions = false,
        description = {
            "Stand in front of the notify ports of MoRIIO ranks: listen on each rank's notify port + --shift, "
                    + "forward every frame unchanged (even one that does not decode) to the real port, and journal it.",
            "The proxy must compose request ids whose peer addresses carry the notify ports + the same shift: the "
                    + "engines' port arithmetic adds each rank's offset, so every notify lands on a tap port. Covers "
                    + "connectors that resolve peers from the request id first (newest); older ones that prefer the "
                    + "explicit remote_notify_port bypass the tap. Handshakes, registrations, HTTP and RDMA are not seen.",
            "Then: kvledger tap-report DIR.",
            "Example: kvledger tap --shift 1000 --prefill 10.0.0.1:61005 --prefill 10.0.0.1:61006 "
                    + "--decode 10.0.0.2:61005 --journal tapj"})
final class TapCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Option(names = "--shift", required = true, paramLabel = "N",
            description = "The offset added to every notify port (the tap listens on PORT + N); the proxy embeds the same.")
    int shift;

    @Option(names = "--prefill", paramLabel = "HOST:PORT",
            description = "A prefill rank's real notify port (receives remote_blocks, release). Repeat per rank.")
    List<String> prefill = new ArrayList<>();

    @Option(names = "--decode", paramLabel = "HOST:PORT",
            description = "A decode rank's real notify port (receives write_done). Repeat per rank.")
    List<String> decode = new ArrayList<>();

    @Option(names = "--bind-host", defaultValue = "0.0.0.0", paramLabel = "HOST",
            description = "Where the tap ports bind (default: ${DEFAULT-VALUE}); the tap runs beside the ranks it taps.")
    String bindHost;

    @Option(names = "--journal", required = true, paramLabel = "DIR",
            description = "Directory of the per-rank journals (created, or appended to).")
    Path journal;

    @Option(names = "--mode", defaultValue = "write", description = "Transfer mode written to the journal headers: read or write (default: ${DEFAULT-VALUE}).")
    String mode;

    @Option(names = "--metrics", paramLabel = "HOST:PORT",
            description = "Serve the tap's Prometheus metrics (GET /metrics: frames journaled, rejected, forwarded, per rank) here.")
    String metrics;

    @Option(names = "--max-frames", defaultValue = "0", description = "Stop after this many frames in all (0: run until stopped).")
    long maxFrames;

    @Option(names = "--duration-s", converter = DurationOption.class, defaultValue = "0", description = "Stop after this many seconds (0: run until stopped).")
    double durationS;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        TransferMode m = ModeOption.parse(spec, mode);
        if (prefill.isEmpty() && decode.isEmpty()) {
            throw new ParameterException(spec.commandLine(), "give at least one --prefill or --decode HOST:PORT (a rank's notify port)");
        }
        List<TapTarget> targets = new ArrayList<>();
        Tap.Config config;
        try {
            for (String p : prefill) {
                targets.add(TapTarget.parse(Role.PRODUCER, p, shift));
            }
            for (String d : decode) {
                targets.add(TapTarget.parse(Role.CONSUMER, d, shift));
            }
            config = new Tap.Config(targets, bindHost, journal, m, "kvledger tap --shift " + shift, System::nanoTime);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        HostPort metricsAt;
        try {
            metricsAt = metrics == null ? null : HostPort.parse("--metrics", metrics);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        String name = spec.qualifiedName();
        Tap opened;
        try {
            opened = Tap.open(config, err);
        } catch (IllegalStateException e) {
            err.println(name + ": " + e.getMessage());
            return 2;
        } catch (JournalException e) {
            err.println(name + ": " + Listener.journalFailure(journal, e));
            return 2;
        }
        io.kvledger.tap.TapMetrics served;
        try {
            served = metricsAt == null ? null : io.kvledger.tap.TapMetrics.serve(opened, metricsAt.host(), metricsAt.port());
        } catch (java.io.UncheckedIOException e) {
            opened.close();
            err.println(name + ": " + e.getMessage());
            return 2;
        }
        // closed last: a signal's hook waits until the journals are flushed and closed
        try (StopOnSignal stop = new StopOnSignal("kvledger-tap-shutdown"); Tap tap = opened;
             AutoCloseable metricsServer = served) {
            if (served != null) {
                err.println("tap: metrics on http://" + metricsAt.urlHost() + ":" + served.port() + "/metrics");
            }
            for (int i = 0; i < targets.size(); i++) {
                err.println("tap: " + targets.get(i).label() + " <- " + tap.endpoints().get(i) + " (journal "
                        + journal.resolve(targets.get(i).journalName()) + ")");
            }
            err.println("tap: forwarding and journaling every notify frame" + (maxFrames > 0 ? " (stopping after " + maxFrames
                    + " frames)" : "; stop with Ctrl-C"));
            err.flush();
            long deadline = durationS > 0 ? System.nanoTime() + (long) (durationS * 1e9) : Long.MAX_VALUE;
            while (!stop.stopping() && (maxFrames == 0 || tap.framesJournaled() < maxFrames) && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            tap.close();
            long frames = 0;
            long rejected = 0;
            long failed = 0;
            long lost = 0;
            for (Tap.TargetTally t : tap.tallies()) {
                frames += t.frames;
                rejected += t.rejected;
                failed += t.forwardFailed;
                lost += t.lost;
            }
            out.println("tap: " + frames + " frame(s) journaled (" + rejected + " rejected), " + tap.forwarded() + " forwarded"
                    + (failed > 0 ? ", " + failed + " could not be forwarded" : "")
                    + (lost > 0 ? ", " + lost + " lost: the journal refused them" : "") + " to " + journal);
            out.flush();
        }
        return 0;
    }
}
