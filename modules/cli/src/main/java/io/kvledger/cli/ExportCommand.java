package io.kvledger.cli;

import io.kvledger.core.config.NodeConfig;
import io.kvledger.ledger.diagnosis.Bounds;
import io.kvledger.ledger.otlp.JournalTraces;
import io.kvledger.ledger.otlp.OtlpSender;
import io.kvledger.ledger.report.ExportReport;
import io.kvledger.ledger.trace.ChromeTrace;
import io.kvledger.ledger.trace.JournalChromeTrace;
import io.kvledger.journal.json.Json;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code kvledger export --otlp URL DIR...}: every request's lifecycle in the journals, as
 * OpenTelemetry traces sent to an OTLP/HTTP receiver (one trace per request, joined across nodes
 * by transfer id; a span per phase per node; the hang findings as statuses). See
 * {@link io.kvledger.ledger.otlp.LegSpans} for the span layout and ids.
 */
@Command(name = "export", mixinStandardHelpOptions = true, sortOptions = false,
        description = {
            "With --chrome-trace FILE, writes every request instead as Chrome trace-event JSON for Perfetto and "
                    + "chrome://tracing.",
            "Replays node journals and sends each request's lifecycle as an OpenTelemetry trace to an OTLP/HTTP "
                    + "receiver (Jaeger, Tempo, an OpenTelemetry Collector): one trace per request, joined across "
                    + "nodes by its transfer id; per node a leg span (kvledger.prefill or kvledger.decode) with one "
                    + "child span per phase (ADMITTED, WAITING_FOR_REMOTE_KVS, ...); frames, decisions and anomalies "
                    + "as span events; what 'kvledger hangs' finds as the ERROR status.",
            "Ids are derived from the transfer id (or the request id when there is none): exporting again sends "
                    + "the same trace and span ids.",
            "DIR is a node journal, or a directory holding one journal directory per node; JSON lines are read as "
                    + "they are (the vLLM bridge recorder's directory, journal export --out's, or one .jsonl file).",
            "Exit status: 0 the receiver took every span; 1 it refused or could not be reached, or a journal is damaged or "
                + "breaks the order rules verify checks (what was skipped or doubted is on standard error); 2 usage error."})
final class ExportCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Parameters(paramLabel = "DIR", arity = "1..*", description = Journals.DIRS_HELP)
    List<String> dirs = new ArrayList<>();

    @Option(names = "--otlp", paramLabel = "URL",
            description = "the OTLP/HTTP receiver, e.g. http://127.0.0.1:4318 (/v1/traces is appended when the URL "
                    + "has no path)")
    String otlp;

    @Option(names = "--chrome-trace", paramLabel = "FILE",
            description = "instead of --otlp: write every request as Chrome trace-event JSON, which Perfetto "
                    + "(ui.perfetto.dev) and chrome://tracing open (a process per node, a thread per side, phases "
                    + "with their durations, a flow arrow per ZMQ frame, each hang finding as an instant marker)")
    String chromeTrace;

    @Option(names = "--max-lines", paramLabel = "N", defaultValue = "500000", hidden = true,
            description = "with --chrome-trace: refuse journals with more lines that name a request than this")
    int maxLines;

    @Option(names = "--header", paramLabel = "NAME=VALUE",
            description = "an HTTP header for the receiver (an API key, a tenant id); repeatable")
    List<String> headers = new ArrayList<>();

    @Option(names = "--stuck-after", converter = DurationOption.class, paramLabel = "SECONDS",
            description = "as in 'kvledger hangs': a request longer than this in a non-terminal phase with no "
                    + "lifecycle event within this of the journals' end is stuck (default: 30)")
    Double stuckAfter;

    @Option(names = "--time-origin", paramLabel = "now|INSTANT",
            description = "shift every time so that the journals' first event is at this instant (ISO-8601, e.g. "
                    + "2026-12-03T09:00:00Z) or now; default: the journals' own times (simulated journals start "
                    + "at 1970-01-01, which a backend's search window does not reach)")
    String timeOrigin;

    @Option(names = "--timeout-s", converter = DurationOption.class, defaultValue = "10", paramLabel = "SECONDS",
            description = "how long the receiver may take to answer one batch (default: ${DEFAULT-VALUE})")
    double timeoutS;

    @Mixin
    ReplayOptions replayOptions;

    @Override
    public Integer call() {
        Bounds bounds = Bounds.defaults();
        if (stuckAfter != null) {
            if (!(stuckAfter > 0) || stuckAfter.isInfinite()) {
                throw usage("--stuck-after must be a positive number of seconds, got " + stuckAfter);
            }
            bounds = new Bounds(NodeConfig.seconds(stuckAfter));
        }
        if ((otlp == null) == (chromeTrace == null)) {
            throw usage("give one of --otlp URL (send OpenTelemetry traces) and --chrome-trace FILE (write Chrome "
                    + "trace-event JSON)");
        }
        if (chromeTrace != null) {
            if (chromeTrace.isBlank()) {
                throw usage("--chrome-trace needs a file name");
            }
            if (timeOrigin != null || !headers.isEmpty()) {
                throw usage("--time-origin and --header go with --otlp, not --chrome-trace");
            }
            return writeChromeTrace(bounds);
        }
        if (!(timeoutS > 0) || Double.isInfinite(timeoutS)) {
            throw usage("--timeout-s must be a positive number of seconds, got " + timeoutS);
        }
        Map<String, String> hs = new LinkedHashMap<>();
        for (String h : headers) {
            int eq = h.indexOf('=');
            if (eq <= 0) {
                throw usage("--header takes NAME=VALUE, got \"" + h + "\"");
            }
            hs.put(h.substring(0, eq).strip(), h.substring(eq + 1).strip());
        }
        Instant origin = origin();
        OtlpSender sender;
        try {
            sender = OtlpSender.to(otlp, Duration.ofMillis((long) (timeoutS * 1000)), hs, false, true);
        } catch (OtlpSender.ExportException e) {
            throw usage(e.getMessage());
        }
        var overrides = replayOptions.overrides(spec);
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        ProgressLine progress = ProgressLine.forTerminal(err, "export");
        JournalTraces.Result res;
        boolean doubted;
        List<io.kvledger.ledger.replay.JournalInputs.NodeJournal> journals = Journals.resolve(spec, dirs);
        long originNs = origin == null ? 0 : origin.getEpochSecond() * 1_000_000_000L + origin.getNano();
        try (sender) {
            try {
                // two passes (the hang detectors, then the legs): the progress line counts both
                res = JournalTraces.export(() -> Journals.openResolved(spec, journals, overrides).progress(progress),
                        bounds, first -> origin == null ? 0 : originNs - first, sender::send);
            } catch (OtlpSender.ExportException e) {
                progress.done();
                err.println("kvledger export: " + e.getMessage());
                err.flush();
                return 1;
            }
            progress.done();
            doubted = Journals.warnings(spec, res.warnings());
            String note = ExportReport.timeNote(res, origin != null);
            if (note != null) {
                err.println("kvledger export: note: " + note);
            }
            ExportReport.print(out, res, sender.endpoint());
            out.flush();
        }
        return doubted ? 1 : 0;
    }

    private Instant origin() {
        if (timeOrigin == null) {
            return null;
        }
        if (timeOrigin.strip().equalsIgnoreCase("now")) {
            return Instant.now();
        }
        try {
            return Instant.parse(timeOrigin.strip());
        } catch (DateTimeParseException e) {
            throw usage("--time-origin takes now or an ISO-8601 instant such as 2026-12-03T09:00:00Z, got \""
                    + timeOrigin + "\"");
        }
    }

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }

    /** {@code --chrome-trace FILE}: every request of the journals as one Chrome trace. */
    private int writeChromeTrace(Bounds bounds) {
        var overrides = replayOptions.overrides(spec);
        PrintWriter err = spec.commandLine().getErr();
        List<io.kvledger.ledger.replay.JournalInputs.NodeJournal> journals = Journals.resolve(spec, dirs);
        ProgressLine progress = ProgressLine.forTerminal(err, "export");
        JournalChromeTrace.Result res;
        try {
            res = JournalChromeTrace.of(() -> Journals.openResolved(spec, journals, overrides).progress(progress),
                    bounds, maxLines);
        } catch (JournalChromeTrace.TooLarge e) {
            err.println("kvledger export: " + e.getMessage());
            err.flush();
            return 1;
        } finally {
            progress.done();
        }
        boolean doubted = Journals.warnings(spec, res.warnings());
        try {
            Files.writeString(Path.of(chromeTrace), Json.write(res.trace().json()), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw usage("cannot write --chrome-trace " + chromeTrace + ": " + e.getMessage());
        }
        PrintWriter out = spec.commandLine().getOut();
        ChromeTrace.Trace t = res.trace();
        out.println("export: wrote " + chromeTrace + ": " + res.requests() + " request leg(s) on " + res.nodes().size()
                + " node(s), " + res.lines() + " line(s) as " + t.events() + " trace event(s), " + t.flows()
                + " frame flow(s), " + t.unreceived() + " frame(s) never received, " + t.findings()
                + " finding(s); open it in ui.perfetto.dev or chrome://tracing");
        out.flush();
        return doubted ? 1 : 0;
    }
}
