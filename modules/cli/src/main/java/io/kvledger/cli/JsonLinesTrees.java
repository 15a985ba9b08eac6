package io.kvledger.cli;

import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
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
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Lets the reading commands ({@code hangs}, {@code inspect}, {@code replay}, {@code stats}) take
 * JSON lines as they are, in the layouts they come in:
 * <ul>
 *   <li>a directory as {@code journal export --out} writes it and journal/fixtures holds them,
 *       {@code DIR/<node>/journal.jsonl} (or {@code inputs.jsonl}, whose derived entries the node
 *       reducer recomputes), or a directory holding one node's file;</li>
 *   <li>a directory of node files side by side, as the vLLM bridge's recorder writes them
 *       ({@code prefill-scheduler-dp0-tp0.jsonl}, {@code prefill-worker-dp0-tp1.jsonl}, ...): every
 *       {@code .jsonl} file whose first line is a journal header, named after the file; the
 *       recordings the recorder kept of earlier runs ({@code NAME.1.jsonl} beside {@code NAME.jsonl})
 *       are left out, and said;</li>
 *   <li>one such file.</li>
 * </ul>
 * Each node is imported into a temporary journal, and the temporary journals are removed when the
 * JVM exits. A directory that holds a journal, or node directories with journals, is left to
 * {@link io.kvledger.ledger.replay.JournalInputs}.
 */
final class JsonLinesTrees {

    private JsonLinesTrees() {}

    private static final List<Path> TEMPORARY = new ArrayList<>();
    private static boolean hooked;

    /** One node's file: its name, the file and whether it holds inputs only. */
    record NodeFile(String node, Path jsonl, boolean inputsOnly) {}

    /**
     * The node files of a directory in the recorder's layout ({@link #recordings}), and the
     * recordings of earlier runs beside them, left out.
     */
    record Recordings(List<NodeFile> nodes, List<Path> earlierRuns) {}

    /** A recording the recorder kept of an earlier run: {@code NAME.<n>.jsonl}. */
    private static final Pattern EARLIER_RUN = Pattern.compile("(.+)\\.[0-9]+\\.jsonl");

    /**
     * The node files of {@code arg} (none when it is no JSON lines: a directory with a journal in or
     * under it, or anything else), and the earlier runs left out.
     */
    static Recordings files(String arg) {
        return nodeFiles(Path.of(arg));
    }

    /** A new temporary directory, removed with what it holds when the JVM exits. */
    static Path temporaryRoot(String forWhat) {
        try {
            Path root = Files.createTempDirectory("kvledger-jsonl-");
            register(root);
            return root;
        } catch (IOException e) {
            throw new JournalException("cannot create a temporary journal for " + forWhat + ": " + e.getMessage(), e);
        }
    }

    /**
     * Imports one node file into {@code dir}: its derived entries recomputed when it holds inputs
     * only. Returns what a write cut short left at its end, or null.
     *
     * @throws JournalException (a {@code JsonLinesException} for bad lines) when it cannot be imported
     */
    static JsonLines.CutTail importNode(NodeFile f, Path dir) {
        return f.inputsOnly() ? JournalImportCommand.importDerived(f.jsonl(), dir, null, new PrintWriter(Writer.nullWriter()))
                : JsonLines.importFile(f.jsonl(), dir, null).cut();
    }

    /**
     * Imports the JSON lines of {@code arg} into temporary journals.
     *
     * @throws JournalException (a {@code JsonLinesException} for bad lines) when a file cannot be imported
     */
    static List<NodeJournal> read(String arg, Recordings found, PrintWriter err, String command) {
        List<NodeFile> files = found.nodes();
        Path root = temporaryRoot(arg);
        List<NodeJournal> out = new ArrayList<>();
        List<String> cuts = new ArrayList<>();
        // a recording of millions of lines takes seconds to read: say which file, on a terminal
        Progress progress = new Progress(err, command);
        Path[] reading = {null};
        try (AutoCloseable ticking = progress.ticking(() -> String.format(Locale.ROOT, "reading %s as JSON lines (%.1f s)",
                reading[0] == null ? "" : reading[0].getFileName(), progress.elapsedS()))) {
            for (NodeFile f : files) {
                reading[0] = f.jsonl();
                Path dir = root.resolve(f.node());
                JsonLines.CutTail cut = importNode(f, dir);
                if (cut != null) {
                    cuts.add(command + ": warning: " + cut.describe(f.jsonl()));
                }
                out.add(new NodeJournal(dir, f.node(), arg));
            }
        } catch (RuntimeException e) {
            progress.done("stopped");
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(e); // closing the ticker throws no checked exception
        }
        progress.done(String.format(Locale.ROOT, "read %d JSON-lines file(s) (%.1f s)", files.size(), progress.elapsedS()));
        err.println(command + ": note: " + arg + (Files.isDirectory(Path.of(arg)) ? " holds" : " is") + " JSON lines; read "
                + "through temporary journals (keep them with: kvledger journal import " + arg + " DIR)");
        if (!found.earlierRuns().isEmpty()) {
            err.println(command + ": note: " + leftOut(found.earlierRuns()) + " (give one as the argument to read it)");
        }
        cuts.forEach(err::println);
        err.flush();
        return out;
    }

    private static final Recordings NONE = new Recordings(List.of(), List.of());

    private static Recordings nodeFiles(Path arg) {
        if (Files.isRegularFile(arg) && arg.getFileName().toString().endsWith(".jsonl")) {
            return new Recordings(List.of(new NodeFile(stem(arg), arg, arg.getFileName().toString().equals("inputs.jsonl"))),
                    List.of());
        }
        if (!Files.isDirectory(arg) || JournalDirs.isJournal(arg)) {
            return NONE;
        }
        NodeFile own = fileOf(arg, name(arg));
        if (own != null) {
            return new Recordings(List.of(own), List.of());
        }
        List<NodeFile> out = new ArrayList<>();
        try (Stream<Path> s = Files.list(arg)) {
            for (Path sub : s.filter(Files::isDirectory).sorted(Comparator.comparing(p -> p.getFileName().toString())).toList()) {
                if (JournalDirs.isJournal(sub)) {
                    return NONE; // journals there: the usual reading
                }
                NodeFile f = fileOf(sub, sub.getFileName().toString());
                if (f != null) {
                    out.add(f);
                }
            }
        } catch (IOException e) {
            return NONE;
        }
        return out.isEmpty() ? recordings(arg, false) : new Recordings(out, List.of());
    }

    /**
     * The node files directly in {@code dir}, as the vLLM bridge's recorder writes them: every
     * {@code .jsonl} file whose first line is a journal header ({@link JsonLines#startsWithHeader}),
     * named after the file without {@code .jsonl}, in name order; other files are not looked at.
     * A recording of an earlier run ({@code NAME.<n>.jsonl} where {@code NAME.jsonl} is there too)
     * is listed apart. Files hold whole journals, or inputs only when {@code inputsOnly}.
     */
    static Recordings recordings(Path dir, boolean inputsOnly) {
        List<NodeFile> nodes = new ArrayList<>();
        List<Path> earlier = new ArrayList<>();
        try (Stream<Path> s = Files.list(dir)) {
            for (Path f : s.filter(p -> p.getFileName().toString().endsWith(".jsonl") && Files.isRegularFile(p))
                    .sorted(Comparator.comparing(p -> p.getFileName().toString())).toList()) {
                if (!JsonLines.startsWithHeader(f)) {
                    continue;
                }
                Matcher m = EARLIER_RUN.matcher(f.getFileName().toString());
                if (m.matches() && Files.isRegularFile(dir.resolve(m.group(1) + ".jsonl"))) {
                    earlier.add(f);
                } else {
                    nodes.add(new NodeFile(stem(f), f, inputsOnly));
                }
            }
        } catch (IOException e) {
            return NONE;
        }
        return new Recordings(nodes, earlier);
    }

    /** "left out the recordings of earlier runs: " and their file names. */
    static String leftOut(List<Path> earlierRuns) {
        return "left out the recordings of earlier runs: "
                + String.join(", ", earlierRuns.stream().map(p -> p.getFileName().toString()).toList());
    }

    /** A file's name without {@code .jsonl}. */
    private static String stem(Path file) {
        String n = file.getFileName().toString();
        return n.substring(0, n.length() - ".jsonl".length());
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
