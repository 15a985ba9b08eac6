package io.kvledger.cli;

import io.kvledger.core.node.Invariants;
import io.kvledger.core.node.NodeState;
import io.kvledger.ledger.replay.ConfigOverrides;
import io.kvledger.ledger.replay.Replayer;
import io.kvledger.ledger.report.ReplayReport;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.function.Function;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code kvledger replay DIR...}: re-runs each node's reducer over the inputs of its journal
 * (merged by event time across nodes) and prints, per node, what the replay saw: inputs and
 * effects, the requests in each phase at the end, anomalies by kind. {@code --effects} prints
 * every recomputed effect; {@code --verify} compares them with the derived entries the journal
 * recorded and reports the first divergence of each node, and checks the replayed state against
 * the reducer's invariants after every input (exit 1 when either fails). The replay and its report
 * are the ledger's {@link ReplayReport}.
 */
@Command(name = "replay", mixinStandardHelpOptions = true, sortOptions = false,
        description = {
            "Re-runs the reducer over the input events of node journals and prints a summary per node: inputs, "
                    + "effects, requests per phase at the end (* marks phases that are not terminal) and anomalies "
                    + "by kind.",
            "Each node replays with the profile, switches and timeouts its journal header recorded, unless "
                    + "--profile or --set say otherwise; the summary says what was in effect.",
            "DIR is a node journal, or a directory holding one journal directory per node; JSON lines are read as "
                    + "they are (the vLLM bridge recorder's directory, journal export --out's, or one .jsonl file). "
                    + "Several nodes are merged by event time.",
            "Exit status: 0 done; 1 --verify found a divergence or a broken invariant, or a journal is damaged or breaks the order rules verify checks (what was skipped or doubted is on standard error); 2 usage error."})
final class ReplayCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Parameters(paramLabel = "DIR", arity = "1..*", description = Journals.DIRS_HELP)
    List<String> dirs = new ArrayList<>();

    @Option(names = "--until", paramLabel = "SEQ",
            description = "stop each journal after its entry SEQ (inputs with a higher seq are not applied)")
    Long until;

    @Option(names = "--effects", description = "print one line per recomputed effect (the journal's dissectors)")
    boolean effects;

    @Option(names = "--verify",
            description = "compare the recomputed effects with the derived entries the journal recorded; report the "
                    + "first divergence of each node; exit 1 when there is one. A vllm-bridge recording compares the "
                    + "real connector's hook replies only (its metadata field by field); a vllm-bridge worker stream "
                    + "is not compared (said so). With --json each node also gives by_input (inputs compared and diverging, per "
                    + "input type) and divergences (every one, up to 1000). Also checks each node's replayed state "
                    + "against the reducer's invariants after every input: a broken state fails the node, named with "
                    + "the input's seq")
    boolean verify;

    @Mixin
    ReplayOptions replayOptions;

    @Option(names = "--json", description = "print JSON: one object per effect line (with --effects), then the summary object")
    boolean json;

    @Option(names = "--full-ids", description = "print proxy request ids whole instead of cmpl-..._<uuid>-...")
    boolean fullIds;

    /** What {@code --verify} checks each replayed state with (a stand-in in tests of a broken state). */
    Function<NodeState, List<Invariants.Violation>> invariantCheck = ReplayReport.INVARIANTS;

    @Override
    public Integer call() {
        if (until != null && until < 0) {
            throw new ParameterException(spec.commandLine(), "--until must not be negative, got " + until);
        }
        ConfigOverrides overrides = replayOptions.overrides(spec);
        PrintWriter out = spec.commandLine().getOut();
        try (Replayer r = Journals.open(spec, dirs, overrides)) {
            // made after the journals are open: JSON lines read on the way have their own progress line
            ProgressLine progress = ProgressLine.forTerminal(spec.commandLine().getErr(), "replay");
            r.progress(progress);
            ReplayReport report = ReplayReport.run(r,
                    new ReplayReport.Options(until, effects, verify, json, fullIds, invariantCheck), out);
            progress.done();
            boolean doubted = Journals.warnings(spec, r);
            boolean diverged = report.summary(out);
            out.flush();
            return (verify && diverged) || doubted ? 1 : 0;
        }
    }
}
