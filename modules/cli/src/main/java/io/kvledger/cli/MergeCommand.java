package io.kvledger.cli;

import io.kvledger.journal.JournalException;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.json.Json;
import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import io.kvledger.ledger.replay.JournalMerge;
import io.kvledger.ledger.replay.TimeMerge;
import io.kvledger.ledger.replay.TransferIndex;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
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
 * {@link JournalMerge}; this command checks its arguments and prints.
 */
@Command(name = "merge", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Merges the journals of several nodes (prefill and decode ranks) into one directory ordered "
                + "by event time and correlated by transfer id, so that hangs, inspect and dump see both legs of "
                + "every transfer.",
            "OUT gets one journal per node (OUT/<node>/) and OUT/merge-index.jsonl (one line per transfer id with "
                    + "the nodes and request ids that saw it)."})
final class MergeCommand implements Callable<Integer> {

    static final String INDEX = JournalMerge.INDEX;
    private static final int LISTED = 10;

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
        if (json) {
            spec.commandLine().getOut().println(Json.write(r.summary()));
        } else {
            printText(readers, r);
        }
        spec.commandLine().getOut().flush();
        return doubted ? 1 : 0;
    }

    private void printText(List<JournalReader> readers, JournalMerge.Result r) {
        PrintWriter o = spec.commandLine().getOut();
        List<JournalMerge.Node> nodes = r.nodes();
        TransferIndex index = r.index();
        o.println("merged " + nodes.size() + (nodes.size() == 1 ? " journal" : " journals") + " into " + out
                + " (one journal per node, ordered by event time; " + INDEX + " correlates them by transfer id)");
        for (int i = 0; i < nodes.size(); i++) {
            JournalMerge.Node c = nodes.get(i);
            JournalHeader h = readers.get(i).header();
            o.printf(Locale.ROOT, "  %-4s %-11s %-5s %,9d entries%s%n", c.node(), c.producer() ? "kv_producer" : "kv_consumer",
                    h.mode(), c.entries(), c.timed()
                            ? "   t " + EntryFormat.time(c.firstAtNs()) + ".." + EntryFormat.time(c.lastAtNs()) + " s" : "");
        }
        List<TransferIndex.Transfer> oneSide = new ArrayList<>();
        for (TransferIndex.Transfer t : index.transfers().values()) {
            if (!t.bothSides()) {
                oneSide.add(t);
            }
        }
        int n = index.transfers().size();
        o.println("transfers: " + n + ", " + (n - oneSide.size()) + " seen by both a prefill and a decode node"
                + (oneSide.isEmpty() ? "" : ", " + oneSide.size() + " by one side only"));
        oneSide.sort(Comparator.comparingLong(t -> t.firstAtNs()));
        for (int i = 0; i < oneSide.size() && i < LISTED; i++) {
            TransferIndex.Transfer t = oneSide.get(i);
            o.println("  " + t.transferId() + "  only on " + String.join(", ", t.legs().keySet()) + "  from t="
                    + EntryFormat.time(t.firstAtNs()) + " s");
        }
        if (oneSide.size() > LISTED) {
            o.println("  ... and " + (oneSide.size() - LISTED) + " more (" + INDEX + " lists them all)");
        }
        o.println("next: kvledger hangs " + out + "   kvledger dump " + out + "   kvledger inspect " + out + " --transfer ID");
    }

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }
}
