package io.kvledger.cli;

import io.kvledger.journal.JournalReader;
import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.ledger.report.DumpReport;
import io.kvledger.ledger.report.TypeFilter;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvledger dump DIR...}: every entry of one or more journals, one line each (the journal's
 * own dissectors; times since the first entry, or absolute with {@code --absolute}), or JSON lines
 * with {@code --json}. Several journals (a {@code simulate} or
 * {@code merge} output, or several DIR arguments) are interleaved by event time with the node id
 * in front of each line. Journal warnings (skipped entries of unknown types, damaged regions) go to
 * standard error; a damaged journal is printed as far as it is intact and the exit status is 1.
 * The listing is the ledger's {@link DumpReport}; this command checks its options, opens and
 * selects the journals, and tells what the readers skipped.
 */
@Command(name = "dump", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Prints the entries of journals, one line per entry: seq, event time (t+SECONDS s from the "
                + "first entry of the journals, or absolute with --absolute), kind (derived<-N: caused by input N) and "
                + "the entry's fields.",
            "DIR is a journal, or a directory of node journals (simulate --out, merge --out): several journals are "
                    + "interleaved by event time, each line starting with its node id."})
final class DumpCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Parameters(paramLabel = "DIR", arity = "1..*", description = "journal directories")
    List<Path> dirs;

    @Option(names = "--from", paramLabel = "SEQ", defaultValue = "0",
            description = "start at this sequence number (per journal; default: ${DEFAULT-VALUE}, the header)")
    long from;

    @Option(names = "--to", paramLabel = "SEQ", description = "stop after this sequence number (per journal)")
    Long to;

    @Option(names = "--type", paramLabel = "T", split = ",",
            description = {"only entries of these types: names such as remote_blocks_received, or type ids (14);",
                "repeat or separate with commas"})
    List<String> types;

    @Option(names = "--node", paramLabel = "ID", split = ",", description = "only the journals of these node ids")
    List<String> nodes;

    @Option(names = "--json", description = "one JSON object per entry (the journal export format, plus \"node\" with several journals)")
    boolean json;

    @Option(names = "--absolute", description = "print each entry's absolute journal time (seconds with nanosecond digits) "
            + "instead of its time since the first entry")
    boolean absolute;

    @Override
    public Integer call() {
        if (from < 0) {
            throw usage("--from must not be negative, got " + from);
        }
        if (to != null && to < from) {
            throw usage("--to " + to + " is before --from " + from);
        }
        TypeFilter filter;
        try {
            filter = TypeFilter.parse(types);
        } catch (IllegalArgumentException e) {
            throw usage(e.getMessage());
        }
        List<JournalReader> readers = openSelected();
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        try {
            DumpReport.print(out, readers, from, to, filter, json, absolute);
            boolean damaged = false;
            for (JournalReader r : readers) {
                r.warnings().forEach(err::println);
                damaged |= Journals.damaged(r);
            }
            err.flush();
            return damaged ? 1 : 0;
        } finally {
            JournalDirs.closeAll(readers);
        }
    }

    private List<JournalReader> openSelected() {
        List<JournalReader> readers;
        try {
            readers = JournalDirs.open(JournalDirs.resolve(dirs));
        } catch (JournalInputs.InputException e) {
            throw usage(e.getMessage());
        }
        if (nodes == null || nodes.isEmpty()) {
            return readers;
        }
        Set<String> wanted = new LinkedHashSet<>(nodes);
        List<JournalReader> kept = new ArrayList<>();
        List<String> known = new ArrayList<>();
        for (JournalReader r : readers) {
            known.add(r.header().nodeId());
            if (wanted.remove(r.header().nodeId())) {
                kept.add(r);
            }
        }
        if (!wanted.isEmpty()) {
            JournalDirs.closeAll(readers);
            throw usage("no journal of node " + String.join(", ", wanted) + " here (nodes: " + String.join(", ", known) + ")");
        }
        for (JournalReader r : readers) {
            if (!kept.contains(r)) {
                r.close();
            }
        }
        return kept;
    }

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }
}
