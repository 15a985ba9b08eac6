package io.kvledger.cli;

import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.tap.TapReport;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code kvledger tap-report DIR}: the cross-node view of a tap's journals alone ({@link TapReport}):
 * per transfer id, which notify frames crossed to which rank and which expected one never did.
 */
@Command(name = "tap-report", mixinStandardHelpOptions = true, sortOptions = false,
        description = {
            "Joins the per-rank journals kvledger tap wrote (no engine journal needed) and prints, per transfer id, "
                    + "which of remote_blocks, write_done and release crossed to which rank, and which expected frame "
                    + "never crossed; then the frames that did not decode (forwarded all the same) and those that "
                    + "could not be forwarded.",
            "Ranks are named P+k / D+k: the offset of their notify port from the lowest one tapped for that role and host.",
            "Exit status: 0 nothing missing; 1 a frame never crossed, could not be forwarded, or would kill a Python "
                    + "listener; 2 usage error."})
final class TapReportCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Parameters(paramLabel = "DIR", arity = "1..*", description = "the tap's --journal directory (or single rank journals)")
    List<String> dirs = new ArrayList<>();

    @Option(names = "--all", description = "Also list the transfers whose frames all crossed.")
    boolean all;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        TapReport report;
        try {
            report = TapReport.read(JournalInputs.resolveArgs(dirs));
        } catch (JournalInputs.InputException e) {
            err.println(spec.qualifiedName() + ": " + e.getMessage());
            return 2;
        }
        for (String line : report.render(all)) {
            out.println(line);
        }
        out.flush();
        return report.hasFindings() ? 1 : 0;
    }
}
