package io.kvledger.cli;

import io.kvledger.ledger.replay.Hangs;
import io.kvledger.ledger.replay.Replayer;
import io.kvledger.core.config.NodeConfig;
import io.kvledger.ledger.diagnosis.Bounds;
import io.kvledger.ledger.report.HangsReport;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code kvledger hangs DIR...}: replays the journals of a deployment through the transfer ledger
 * and prints every hung or anomalous request the hang detectors find, one line each, grouped by
 * detector. Exit 1 when there is a finding or a journal was not read whole (damaged, cut short,
 * against the order rules), 0 when clean.
 */
@Command(name = "hangs", mixinStandardHelpOptions = true, sortOptions = false,
        description = {
            "Replays node journals (all nodes of one deployment: prefill and decode ranks) through the transfer "
                    + "ledger and prints every request stuck in a non-terminal phase or ended in an anomalous one, "
                    + "one line each: node, request, phase, detector, bug class (moriio-protocol.md section 7) and a "
                    + "diagnosis naming the missing or wrong event.",
            "DIR is a node journal, or a directory holding one journal directory per node; JSON lines are read as "
                    + "they are (the vLLM bridge recorder's directory, journal export --out's, or one .jsonl file).",
            "It always says how many requests are still in a non-terminal phase when the journals end, and why each "
                    + "is or is not stuck: younger than --stuck-after in its phase, or still making progress; and which "
                    + "journals of live processes (kvledger node, the vLLM bridge's recorder) end without a shutdown "
                    + "(killed, or still running: what happened after is not in them).",
            "Exit status: 0 no findings; 1 findings, or a journal is damaged or breaks the order rules verify checks (what was skipped or doubted is on standard error); 2 usage error."})
final class HangsCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Parameters(paramLabel = "DIR", arity = "1..*", description = Journals.DIRS_HELP)
    List<String> dirs = new ArrayList<>();

    @Option(names = "--stuck-after", converter = DurationOption.class, paramLabel = "SECONDS",
            description = "a request that stayed longer than this in a non-terminal phase at the end of the "
                    + "journals, with no lifecycle event (scheduled, transfer posted or completed, frame received, "
                    + "phase change) within this of the end, is stuck (default: 30)")
    Double stuckAfter;

    @Option(names = "--in-flight", description = "also list every request still in flight that is not stuck, one line each")
    boolean listInFlight;

    @Mixin
    ReplayOptions replayOptions;

    @Option(names = "--json", description = "print one JSON object")
    boolean json;

    @Option(names = "--full-ids", description = "print proxy request ids whole instead of cmpl-..._<uuid>-...")
    boolean fullIds;

    @Override
    public Integer call() {
        Bounds bounds = Bounds.defaults();
        if (stuckAfter != null) {
            if (!(stuckAfter > 0) || stuckAfter.isInfinite()) {
                throw new ParameterException(spec.commandLine(), "--stuck-after must be a positive number of seconds, got "
                        + stuckAfter);
            }
            bounds = new Bounds(NodeConfig.seconds(stuckAfter));
        }
        var overrides = replayOptions.overrides(spec);
        PrintWriter out = spec.commandLine().getOut();
        Hangs.Result res;
        boolean doubted;
        try (Replayer r = Journals.open(spec, dirs, overrides)) {
            // made after the journals are open: JSON lines read on the way have their own progress line
            ProgressLine progress = ProgressLine.forTerminal(spec.commandLine().getErr(), "hangs");
            r.progress(progress).recorded(false);
            res = Hangs.analyse(r, bounds);
            progress.done();
            doubted = Journals.warnings(spec, r);
        }
        if (json) {
            HangsReport.printJson(out, res);
        } else {
            HangsReport.print(out, res, fullIds, listInFlight);
        }
        out.flush();
        return res.clean() && !doubted ? 0 : 1;
    }
}
