package io.kvledger.cli;

import io.kvledger.ledger.replay.Replayer;
import io.kvledger.ledger.report.StatsReport;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code kvledger stats DIR...}: per node, the requests in each phase at the end, anomalies by
 * kind, and latency percentiles (p50/p90/p99/max, HdrHistogram with 3 significant digits) of the
 * time spent in each phase and of each request's admission-to-terminal duration; across nodes,
 * the end-to-end duration of each client request (its legs joined by the uuid of the proxy
 * request id). The replay and its report are the ledger's {@link StatsReport}.
 */
@Command(name = "stats", mixinStandardHelpOptions = true, sortOptions = false,
        description = {
            "Replays node journals and prints per node: requests per phase at the end (* marks phases that are not "
                    + "terminal), anomalies by kind, and latency percentiles (p50, p90, p99, max; milliseconds) of the "
                    + "time requests spent in each phase and of their admission-to-terminal duration; then the "
                    + "end-to-end duration of client requests across nodes (legs joined by the proxy request id's uuid).",
            "Percentiles are HdrHistogram values at 3 significant digits.",
            "Exit status: 0 done; 1 a journal is damaged or breaks the order rules verify checks (what was skipped or doubted is on standard error); 2 usage error."})
final class StatsCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Parameters(paramLabel = "DIR", arity = "1..*", description = Journals.DIRS_HELP)
    List<String> dirs = new ArrayList<>();

    @Mixin
    ReplayOptions replayOptions;

    @Option(names = "--json", description = "print one JSON object (durations in nanoseconds)")
    boolean json;

    @Override
    public Integer call() {
        var overrides = replayOptions.overrides(spec);
        PrintWriter out = spec.commandLine().getOut();
        StatsReport report;
        boolean doubted;
        try (Replayer r = Journals.open(spec, dirs, overrides)) {
            // made after the journals are open: JSON lines read on the way have their own progress line
            ProgressLine progress = ProgressLine.forTerminal(spec.commandLine().getErr(), "stats");
            r.progress(progress);
            report = StatsReport.run(r);
            progress.done();
            doubted = Journals.warnings(spec, r);
        }
        report.print(out, json);
        out.flush();
        return doubted ? 1 : 0;
    }
}
