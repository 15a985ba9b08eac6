package io.kvledger.ledger.replay;

import io.kvledger.journal.JournalException;
import io.kvledger.journal.JsonLines;
import io.kvledger.journal.JournalReader;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * Turns the {@code DIR...} arguments of a command into node journals, the same way for every
 * command that reads journals ({@code replay}, {@code inspect}, {@code hangs}, {@code stats},
 * {@code dump}, {@code verify}, {@code merge}):
 * <ul>
 *   <li>a directory that holds {@code .cq4} queue files is one node's journal;</li>
 *   <li>otherwise each of its direct subdirectories that holds {@code .cq4} files is a node
 *       journal, in the order of their names ({@code DIR/D0}, {@code DIR/P0}, ...; deeper
 *       directories are not searched);</li>
 *   <li>a directory with neither, or an argument that is not a directory, is a usage error
 *       ({@link InputException}) naming the argument.</li>
 * </ul>
 * Journals come back in argument order, then name order within an argument; a journal named by
 * two arguments is listed once.
 *
 * <p>Each journal also gets a {@link NodeJournal#name() display name} that is relative to the
 * argument it was found through ({@code P0} for {@code DIR/P0}; the directory's own name when the
 * argument is the journal), so that output never shows the absolute or temporary paths a caller
 * passed. This class only looks at directory listings; {@link NodeJournal#open()} opens a reader.
 */
public final class JournalInputs {

    private JournalInputs() {}

    /**
     * One node's journal.
     *
     * @param dir      the journal directory (as resolved from the argument, not made absolute)
     * @param name     its display name, relative to the argument (never an absolute path)
     * @param argument the argument it was found through, as given
     */
    public record NodeJournal(Path dir, String name, String argument) {

        /**
         * Opens a reader on this journal.
         *
         * @throws InputException when the directory is not a readable kvledger journal (an empty
         *                        queue, a queue some other program wrote, an I/O error)
         */
        public JournalReader open() {
            try {
                return JournalReader.open(dir);
            } catch (JournalException e) {
                throw new InputException("cannot read the journal " + name + " (from " + argument + "): "
                        + e.getMessage(), e);
            }
        }
    }

    /** An argument that names no journal, or a journal that cannot be read: a usage error (exit 2). */
    public static final class InputException extends RuntimeException {
        public InputException(String message) {
            super(message);
        }

        public InputException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** {@link #resolve(List)} for arguments given as strings. */
    public static List<NodeJournal> resolveArgs(List<String> args) {
        List<Path> paths = new ArrayList<>();
        for (String a : args) {
            paths.add(Path.of(a));
        }
        return resolve(paths);
    }

    /**
     * The node journals the arguments name (see the class comment).
     *
     * @throws InputException when there is no argument, or an argument is not a directory or
     *                        holds no journal
     */
    public static List<NodeJournal> resolve(List<Path> args) {
        if (args.isEmpty()) {
            throw new InputException("no journal directory given");
        }
        List<NodeJournal> out = new ArrayList<>();
        List<Path> seen = new ArrayList<>();
        for (Path arg : args) {
            for (NodeJournal j : resolveOne(arg)) {
                Path key = j.dir().toAbsolutePath().normalize();
                if (!seen.contains(key)) {
                    seen.add(key);
                    out.add(j);
                }
            }
        }
        return out;
    }

    private static List<NodeJournal> resolveOne(Path arg) {
        String given = arg.toString();
        if (!Files.exists(arg)) {
            throw new InputException(given + ": no such directory");
        }
        if (!Files.isDirectory(arg)) {
            throw new InputException(given + ": not a directory (give the journal directory, or the directory "
                    + "holding one journal directory per node)");
        }
        if (holdsQueueFiles(arg)) {
            return List.of(new NodeJournal(arg, ownName(arg), given));
        }
        List<Path> subdirs;
        try (Stream<Path> s = Files.list(arg)) {
            subdirs = s.filter(Files::isDirectory)
                    .sorted(Comparator.comparing(p -> p.getFileName().toString()))
                    .toList();
        } catch (IOException e) {
            throw new InputException(given + ": cannot list it: " + e.getMessage(), e);
        }
        List<NodeJournal> out = new ArrayList<>();
        for (Path sub : subdirs) {
            if (holdsQueueFiles(sub)) {
                out.add(new NodeJournal(sub, sub.getFileName().toString(), given));
            }
        }
        if (out.isEmpty()) {
            throw new InputException(given + ": no journal there: it holds no .cq4 files, and none of its "
                    + subdirs.size() + " subdirector" + (subdirs.size() == 1 ? "y does" : "ies do")
                    + jsonLinesHint(arg, subdirs));
        }
        return out;
    }

    /**
     * For a directory that holds JSON lines instead (an export, or journal/fixtures' layout): says
     * which file, and that the reading commands take it as it is while the others need it imported.
     * Empty otherwise.
     */
    private static String jsonLinesHint(Path arg, List<Path> subdirs) {
        List<Path> places = new ArrayList<>();
        places.add(arg);
        places.addAll(subdirs);
        Path other = null;
        for (Path dir : places) {
            try (Stream<Path> s = Files.list(dir)) {
                for (Path jsonl : s.filter(p -> p.getFileName().toString().endsWith(".jsonl") && Files.isRegularFile(p))
                        .sorted().toList()) {
                    String n = jsonl.getFileName().toString();
                    boolean nodeFile = n.equals("journal.jsonl") || n.equals("inputs.jsonl")
                            || dir.equals(arg) && JsonLines.startsWithHeader(jsonl);
                    if (nodeFile) {
                        return "; it holds JSON lines (" + jsonl + "): hangs, inspect, replay and stats read them as "
                                + "they are, other commands after: kvledger journal import " + arg + " DIR";
                    }
                    other = other == null ? jsonl : other;
                }
            } catch (IOException e) {
                // unreadable: no hint
            }
        }
        return other == null ? "" : "; it holds JSON lines (" + other + "), but none in a journal's layout (a file whose "
                + "first line is a journal header, or <node>/journal.jsonl: journal/FORMAT.md, \"JSON lines\")";
    }

    /** The name a journal given directly is shown with: its directory name ("." parts resolved). */
    private static String ownName(Path arg) {
        Path n = arg.normalize().getFileName();
        if (n == null || n.toString().isEmpty()) {
            n = arg.toAbsolutePath().normalize().getFileName();
        }
        return n == null ? "." : n.toString();
    }

    /**
     * Whether {@code dir} directly holds Chronicle Queue files: entries named {@code *.cq4} (one that
     * is no regular file, a FIFO, a dangling link, makes it a journal too, whose reader says what is
     * wrong, rather than a directory without one).
     */
    public static boolean holdsQueueFiles(Path dir) {
        if (!Files.isDirectory(dir)) {
            return false;
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.anyMatch(p -> p.getFileName().toString().endsWith(".cq4"));
        } catch (IOException e) {
            return false;
        }
    }
}
