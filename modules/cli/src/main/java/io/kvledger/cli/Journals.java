package io.kvledger.cli;

import io.kvledger.cli.replay.ConfigOverrides;
import io.kvledger.cli.replay.JournalInputs;
import io.kvledger.cli.replay.JournalInputs.NodeJournal;
import io.kvledger.cli.replay.Replayer;
import io.kvledger.journal.JournalReader;
import java.io.PrintWriter;
import java.util.List;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;

/** The steps every journal command shares: resolve DIR arguments, open a replay, report warnings. */
final class Journals {

    private Journals() {}

    /** {@link JournalInputs#resolveArgs}, with a bad argument as a usage error (exit 2). */
    static List<NodeJournal> resolve(CommandSpec spec, List<String> dirs) {
        try {
            return JournalInputs.resolveArgs(dirs);
        } catch (JournalInputs.InputException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
    }

    /** Resolves and opens the journals; an unreadable one is a usage error (exit 2). */
    static Replayer open(CommandSpec spec, List<String> dirs, ConfigOverrides overrides) {
        return openResolved(spec, resolve(spec, dirs), overrides);
    }

    /**
     * Opens resolved journals; an unreadable one (no header, a header lost to damage, named by
     * file and byte offset) is a usage error (exit 2) with that one line, never a stack trace.
     */
    static Replayer openResolved(CommandSpec spec, List<NodeJournal> journals, ConfigOverrides overrides) {
        try {
            return Replayer.open(journals, overrides);
        } catch (JournalInputs.InputException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
    }

    /** Prints what the readers skipped or doubted, on standard error. */
    static void warnings(CommandSpec spec, Replayer r) {
        PrintWriter err = spec.commandLine().getErr();
        for (String w : r.warnings()) {
            err.println(spec.name() + ": warning: " + w);
        }
        err.flush();
    }

    /**
     * Whether the latest pass of {@code r} met damage (regions it skipped, printed with its
     * warnings): the commands that print a journal's entries then exit 1, since their output lacks
     * what the damage held.
     */
    static boolean damaged(JournalReader r) {
        JournalReader.Integrity i = r.integrity();
        return i != null && !i.damage().isEmpty();
    }

    /** "P0, D0" */
    static String names(List<Replayer.Node> nodes) {
        StringBuilder b = new StringBuilder();
        for (Replayer.Node n : nodes) {
            b.append(b.isEmpty() ? "" : ", ").append(n.name());
            if (!n.name().equals(n.journal().name())) {
                b.append(" (").append(n.journal().name()).append(')');
            }
        }
        return b.toString();
    }
}
