package io.kvledger.cli;

import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import io.kvledger.ledger.replay.JsonLinesInputs;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * Lets the reading commands ({@code hangs}, {@code inspect}, {@code replay}, {@code stats}) take
 * JSON lines as they are, in the layouts {@link JsonLinesInputs} finds: each node is read into a
 * temporary journal ({@link JsonLinesInputs#read}), with a progress line on a terminal and, on
 * standard error, a note that says so, the recordings of earlier runs left out and what a write
 * cut short left at a file's end.
 */
final class JsonLinesTrees {

    private JsonLinesTrees() {}

    /**
     * Imports the JSON lines of {@code arg} into temporary journals.
     *
     * @throws io.kvledger.journal.JournalException (a {@code JsonLinesException} for bad lines) when
     *         a file cannot be imported
     */
    static List<NodeJournal> read(String arg, JsonLinesInputs.Recordings found, PrintWriter err, String command) {
        // a recording of millions of lines takes seconds to read: say which file, on a terminal
        Progress progress = new Progress(err, command);
        Path[] reading = {null};
        JsonLinesInputs.Read read;
        try (AutoCloseable ticking = progress.ticking(() -> String.format(Locale.ROOT, "reading %s as JSON lines (%s)",
                reading[0] == null ? "" : reading[0].getFileName(), progress.elapsed()))) {
            read = JsonLinesInputs.read(arg, found, f -> reading[0] = f);
        } catch (RuntimeException e) {
            progress.done("stopped");
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(e); // closing the ticker throws no checked exception
        }
        progress.done(String.format(Locale.ROOT, "read %d JSON-lines file(s) (%s)", found.nodes().size(),
                progress.elapsed()));
        err.println(command + ": note: " + arg + (Files.isDirectory(Path.of(arg)) ? " holds" : " is") + " JSON lines; read "
                + "through temporary journals (keep them with: kvledger journal import " + arg + " DIR)");
        if (!found.earlierRuns().isEmpty()) {
            err.println(command + ": note: " + JsonLinesInputs.leftOut(found.earlierRuns())
                    + " (give one as the argument to read it)");
        }
        read.cuts().forEach(c -> err.println(command + ": warning: " + c.describe()));
        err.flush();
        return read.journals();
    }
}
