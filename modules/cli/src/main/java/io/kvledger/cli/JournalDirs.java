package io.kvledger.cli;

import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import io.kvledger.journal.JournalReader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The journal-file helpers of dump, tail, verify, merge and journal export, on top of
 * {@link JournalInputs} (which resolves DIR arguments the same way for every command: a journal,
 * or a directory of node journals such as {@code simulate --out} and {@code merge --out} write).
 */
final class JournalDirs {

    private JournalDirs() {}

    /** Whether {@code dir} itself holds a journal's queue files ({@code *.cq4}). */
    static boolean isJournal(Path dir) {
        return JournalInputs.holdsQueueFiles(dir);
    }

    /**
     * Every node journal the arguments name, in argument order, each once.
     *
     * @throws JournalInputs.InputException naming the argument that is missing, not a directory,
     *                                      or holds no journal
     */
    static List<NodeJournal> resolve(List<Path> args) {
        return JournalInputs.resolve(args);
    }

    /**
     * Opens a reader on each journal; when one fails, the ones already open are closed.
     *
     * @throws JournalInputs.InputException from the journal that could not be read
     */
    static List<JournalReader> open(List<NodeJournal> journals) {
        List<JournalReader> out = new ArrayList<>();
        try {
            for (NodeJournal j : journals) {
                out.add(j.open());
            }
            return out;
        } catch (RuntimeException e) {
            closeAll(out);
            throw e;
        }
    }

    /** Closes every reader, ignoring failures (they hold read-only mappings). */
    static void closeAll(List<JournalReader> readers) {
        for (JournalReader r : readers) {
            try {
                r.close();
            } catch (RuntimeException ignored) {
                // read-only: nothing to lose
            }
        }
    }
}
