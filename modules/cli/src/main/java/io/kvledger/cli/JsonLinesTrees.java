package io.kvledger.cli;

import io.kvledger.journal.replay.JournalInputs.NodeJournal;
import io.kvledger.journal.JournalException;
import io.kvledger.journal.JsonLines;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * Lets the reading commands ({@code hangs}, {@code inspect}, {@code replay}, {@code stats}) take
 * a directory of JSON lines as {@code journal export --out} writes it, and as journal/fixtures
 * holds them ({@code DIR/<node>/journal.jsonl}, or {@code inputs.jsonl} whose derived entries the
 * node reducer recomputes), or a directory holding one node's file: each node is imported into a
 * temporary journal, named after its directory, and the temporary journals are removed when the
 * JVM exits. A directory that holds a journal, or node directories with journals, is left to
 * {@link io.kvledger.journal.replay.JournalInputs}.
 */
final class JsonLinesTrees {

    private JsonLinesTrees() {}

    private static final List<Path> TEMPORARY = new ArrayList<>();
    private static boolean hooked;

    /** One node's file: its name, the file and whether it holds inputs only. */
    private record NodeFile(String node, Path jsonl, boolean inputsOnly) {}

    /** Whether {@code arg} is a directory of JSON lines with no journal in or under it. */
    static boolean isTree(String arg) {
        return !nodeFiles(Path.of(arg)).isEmpty();
    }

    /**
     * Imports the JSON lines of {@code arg} into temporary journals.
     *
     * @throws JournalException (a {@code JsonLinesException} for bad lines) when a file cannot be imported
     */
    static List<NodeJournal> read(String arg, PrintWriter err, String command) {
        List<NodeFile> files = nodeFiles(Path.of(arg));
        Path root;
        try {
            root = Files.createTempDirectory("kvledger-jsonl-");
        } catch (IOException e) {
            throw new JournalException("cannot create a temporary journal for " + arg + ": " + e.getMessage(), e);
        }
        register(root);
        List<NodeJournal> out = new ArrayList<>();
        PrintWriter quiet = new PrintWriter(Writer.nullWriter());
        List<String> cuts = new ArrayList<>();
        for (NodeFile f : files) {
            Path dir = root.resolve(f.node());
            JsonLines.CutTail cut = f.inputsOnly() ? JournalImportCommand.importDerived(f.jsonl(), dir, null, quiet)
                    : JsonLines.importFile(f.jsonl(), dir, null).cut();
            if (cut != null) {
                cuts.add(command + ": warning: " + cut.describe(f.jsonl()));
            }
            out.add(new NodeJournal(dir, f.node(), arg));
        }
        err.println(command + ": note: " + arg + " holds JSON lines; read through temporary journals (keep them with: "
                + "kvledger journal import " + arg + " DIR)");
        cuts.forEach(err::println);
        err.flush();
        return out;
    }

    private static List<NodeFile> nodeFiles(Path arg) {
        if (!Files.isDirectory(arg) || JournalDirs.isJournal(arg)) {
            return List.of();
        }
        NodeFile own = fileOf(arg, name(arg));
        if (own != null) {
            return List.of(own);
        }
        List<NodeFile> out = new ArrayList<>();
        try (Stream<Path> s = Files.list(arg)) {
            for (Path sub : s.filter(Files::isDirectory).sorted(Comparator.comparing(p -> p.getFileName().toString())).toList()) {
                if (JournalDirs.isJournal(sub)) {
                    return List.of(); // journals there: the usual reading
                }
                NodeFile f = fileOf(sub, sub.getFileName().toString());
                if (f != null) {
                    out.add(f);
                }
            }
        } catch (IOException e) {
            return List.of();
        }
        return out;
    }

    private static NodeFile fileOf(Path dir, String node) {
        Path journal = dir.resolve("journal.jsonl");
        if (Files.isRegularFile(journal)) {
            return new NodeFile(node, journal, false);
        }
        Path inputs = dir.resolve("inputs.jsonl");
        return Files.isRegularFile(inputs) ? new NodeFile(node, inputs, true) : null;
    }

    private static String name(Path p) {
        Path abs = p.toAbsolutePath().normalize();
        return abs.getFileName() == null ? "journal" : abs.getFileName().toString();
    }

    private static synchronized void register(Path root) {
        TEMPORARY.add(root);
        if (!hooked) {
            hooked = true;
            Runtime.getRuntime().addShutdownHook(new Thread(JsonLinesTrees::deleteAll, "kvledger-jsonl-cleanup"));
        }
    }

    private static synchronized void deleteAll() {
        for (Path root : TEMPORARY) {
            try (Stream<Path> s = Files.walk(root)) {
                for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
            } catch (IOException ignored) {
                // temporary files under the system temporary directory
            }
        }
    }
}
