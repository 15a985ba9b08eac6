package io.kvledger.cli;

import io.kvledger.journal.JournalException;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalReader;
import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import io.kvledger.ledger.replay.JournalMerge;
import io.kvledger.ledger.replay.TimeMerge;
import io.kvledger.ledger.report.MergeReport;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvledger merge DIR... --out DIR}: brings the journals of several nodes (prefill and
 * decode ranks, each recorded where it ran) into one directory that every multi-node command
 * reads as one deployment:
 *
 * <ul>
 *   <li>{@code OUT/<node id>/}: each node's journal, rewritten entry by entry (same header
 *       configuration, same entries in the same order, same seqs unless an entry of a type this
 *       build cannot decode had to be left out), appended in merged event-time order;</li>
 *   <li>{@code OUT/merge-index.jsonl}: the correlation, a summary line then one line per transfer
 *       id in the order it was first seen, with every node that saw it (its request id there, its
 *       entries, first and last seq) and the time span.</li>
 * </ul>
 *
 * The one ordered view is then {@code kvledger dump OUT} (entries of all nodes interleaved by
 * event time, each with its node id), and {@code hangs OUT} / {@code inspect OUT} see both legs of
 * every transfer. Node ids must be unique; the output is built under a temporary name and renamed
 * when complete, so a failed merge leaves nothing behind. The merge itself is the ledger's
 * {@link JournalMerge}, what it prints the ledger's {@link MergeReport}; this command checks its
 * arguments, opens the journals, shows progress and tells what the readers skipped.
 */
@Command(name = "merge", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Merges the journals of several nodes (prefill and decode ranks) into one directory ordered "
                + "by event time and correlated by transfer id, so that hangs, inspect and dump see both legs of "
                + "every transfer.",
            "OUT gets one journal per node (OUT/<node>/) and OUT/merge-index.jsonl (one line per transfer id with "
                    + "the nodes and request ids that saw it)."})
final class MergeCommand implements Callable<Integer> {

    static final String INDEX = JournalMerge.INDEX;

    @Spec
    CommandSpec spec;

    @Parameters(paramLabel = "DIR", arity = "1..*", description = "journals, or directories of node journals")
    List<Path> dirs;

    @Option(names = "--out", paramLabel = "DIR", required = true, description = "the directory to create")
    Path out;

    @Option(names = "--json", description = "print the summary as one JSON object")
    boolean json;

    @Override
    public Integer call() {
        List<NodeJournal> journals;
        List<JournalReader> readers;
        try {
            journals = JournalDirs.resolve(dirs);
            JournalMerge.checkOut(out, journals);
            readers = JournalDirs.open(journals);
        } catch (JournalInputs.InputException e) {
            throw usage(e.getMessage());
        }
        try {
            List<String> nodes = TimeMerge.nodeIds(readers);
            try {
                JournalMerge.checkNodes(nodes, journals);
            } catch (JournalInputs.InputException e) {
                throw usage(e.getMessage());
            }
            return merge(readers, nodes, journals);
        } finally {
            JournalDirs.closeAll(readers);
        }
    }

    private int merge(List<JournalReader> readers, List<String> nodes, List<NodeJournal> sources) {
        PrintWriter err = spec.commandLine().getErr();
        Progress progress = new Progress(err, "merge");
        JournalMerge.Result r;
        try {
            r = JournalMerge.merge(readers, nodes, out, total -> {
                if (progress.due()) {
                    progress.update(-1, String.format(Locale.ROOT, "%,d entries", total));
                }
            });
        } catch (IOException e) {
            err.println("merge: writing " + out + " failed: " + e.getMessage() + "; nothing written");
            return 1;
        } catch (JournalException | UncheckedIOException e) {
            err.println("merge: " + e.getMessage() + "; nothing written");
            return 1;
        }
        progress.done(String.format(Locale.ROOT, "%,d entries", r.read()));
        boolean doubted = false;
        for (int i = 0; i < readers.size(); i++) {
            readers.get(i).warnings().forEach(err::println);
            long skipped = r.nodes().get(i).skipped();
            // the merged copy lacks what a reader skipped: said above, and the exit status says it too
            doubted |= !readers.get(i).clean() || skipped > 0;
            if (skipped > 0) {
                err.println(sources.get(i).name() + ": " + skipped
                        + " entries this build cannot decode, or whose cause is no entry of the copy, were left out of the"
                        + " merged copy");
            }
        }
        List<JournalHeader> headers = readers.stream().map(JournalReader::header).toList();
        MergeReport.print(spec.commandLine().getOut(), out, headers, r, json, DemoCommand.launcher());
        spec.commandLine().getOut().flush();
        return doubted ? 1 : 0;
    }

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }
}
