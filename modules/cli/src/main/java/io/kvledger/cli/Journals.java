package io.kvledger.cli;

import io.kvledger.ledger.replay.ConfigOverrides;
import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import io.kvledger.ledger.replay.JsonLinesInputs;
import io.kvledger.ledger.replay.Replayer;
import io.kvledger.ledger.report.ReportText;
import io.kvledger.journal.JournalException;
import io.kvledger.journal.JournalReader;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;

/** The steps every journal command shares: resolve DIR arguments, open a replay, report warnings. */
final class Journals {

    private Journals() {}

    /** The DIR parameter's help of the commands that read journals through {@link #resolve}. */
    static final String DIRS_HELP = "journal directories, or JSON lines as they are: a directory of node files "
            + "(as the vLLM bridge's recorder or journal export --out writes them), or one .jsonl file; "
            + "or a Kafka topic kvledger ship writes: kafka://HOST:PORT/TOPIC[?since=10m]";

    /**
     * {@link JournalInputs#resolveArgs}, with a bad argument as a usage error (exit 2); a
     * directory of JSON lines (journal/fixtures, {@code journal export --out}) is read through
     * temporary journals ({@link JsonLinesTrees}).
     */
    static List<NodeJournal> resolve(CommandSpec spec, List<String> dirs) {
        try {
            if (dirs.stream().anyMatch(io.kvledger.ledger.kafka.KafkaUri::isKafka)) {
                // a Kafka topic, read into temporary journals, wherever a directory may stand
                List<NodeJournal> out = new ArrayList<>();
                for (String d : dirs) {
                    out.addAll(io.kvledger.ledger.kafka.KafkaUri.isKafka(d)
                            ? KafkaTopics.read(d, spec.commandLine().getErr(), spec.qualifiedName())
                            : resolve(spec, List.of(d)));
                }
                return out;
            }
            List<JsonLinesInputs.Recordings> found = dirs.stream().map(JsonLinesInputs::files).toList();
            if (found.stream().allMatch(f -> f.nodes().isEmpty())) {
                return JournalInputs.resolveArgs(dirs);
            }
            List<NodeJournal> out = new ArrayList<>();
            for (int i = 0; i < dirs.size(); i++) {
                String d = dirs.get(i);
                out.addAll(found.get(i).nodes().isEmpty() ? JournalInputs.resolveArgs(List.of(d))
                        : JsonLinesTrees.read(d, found.get(i), spec.commandLine().getErr(), spec.qualifiedName()));
            }
            return out;
        } catch (JournalInputs.InputException | JournalException e) {
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

    /**
     * Prints what the readers skipped or doubted, on standard error.
     *
     * @return whether they skipped or doubted anything: the command's answer then rests on a
     *         journal that is damaged or breaks the order rules, and it exits 1
     */
    static boolean warnings(CommandSpec spec, Replayer r) {
        return warnings(spec, r.warnings());
    }

    /**
     * Prints warnings a library call collected, on standard error.
     *
     * @return whether there were any (the command then exits 1)
     */
    static boolean warnings(CommandSpec spec, List<String> warnings) {
        PrintWriter err = spec.commandLine().getErr();
        for (String w : warnings) {
            err.println(spec.name() + ": warning: " + w);
        }
        err.flush();
        return !warnings.isEmpty();
    }

    /**
     * Whether the latest pass of {@code r} met damage (regions it skipped, printed with its
     * warnings): the commands that print a journal's entries then exit 1, since their output lacks
     * what the damage held.
     */
    static boolean damaged(JournalReader r) {
        return !r.clean();
    }

    /**
     * Reads every journal once (inputs decoded, derived entries judged undecoded) and prints what
     * the readers skipped or doubted, for a command that answers from the journals later, piece by
     * piece ({@code serve}): it says at the start what its answers lack.
     *
     * @return whether anything was skipped or doubted
     */
    static boolean audit(CommandSpec spec, List<NodeJournal> journals) {
        List<String> warnings = new ArrayList<>();
        for (NodeJournal j : journals) {
            try (JournalReader r = j.open()) {
                for (var it = r.inputIterator(); it.hasNext(); it.next()) {
                    // the pass applies the order rules and finds the damage
                }
                warnings.addAll(r.warnings());
            } catch (JournalInputs.InputException | JournalException e) {
                warnings.add(e.getMessage());
            }
        }
        if (!warnings.isEmpty()) {
            warnings.add("answers from these journals lack what was skipped (kvledger verify lists it)");
        }
        return warnings(spec, warnings);
    }

    /** "P0, D0" ({@link ReportText#names}). */
    static String names(List<Replayer.Node> nodes) {
        return ReportText.names(nodes);
    }
}
