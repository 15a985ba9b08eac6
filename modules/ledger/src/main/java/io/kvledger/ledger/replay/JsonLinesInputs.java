package io.kvledger.ledger.replay;

import io.kvledger.journal.JournalException;
import io.kvledger.journal.JsonLines;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * JSON lines as the reading commands ({@code hangs}, {@code inspect}, {@code replay},
 * {@code stats}, {@code verify}) and {@code journal import} take them, in the layouts they come in:
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
 * {@link #read} imports each node into a temporary journal; the temporary journals are removed
 * when the JVM exits. A directory that holds a journal, or node directories with journals, is left
 * to {@link JournalInputs}.
 */
public final class JsonLinesInputs {

    private JsonLinesInputs() {}

    private static final List<Path> TEMPORARY = new ArrayList<>();
    private static boolean hooked;

    /** One node's file: its name, the file and whether it holds inputs only. */
    public record NodeFile(String node, Path jsonl, boolean inputsOnly) {}

    /**
     * The node files of a directory in the recorder's layout ({@link #recordings}), and the
     * recordings of earlier runs beside them, left out.
     */
    public record Recordings(List<NodeFile> nodes, List<Path> earlierRuns) {}

    /**
     * JSON lines read into temporary journals.
     *
     * @param cuts what writes cut short left at the end of the files (left out), with each file
     */
    public record Read(List<NodeJournal> journals, List<Cut> cuts) {}

    /** What a write cut short left at the end of {@code jsonl} (left out). */
    public record Cut(Path jsonl, JsonLines.CutTail tail) {
        /** {@link JsonLines.CutTail#describe}. */
        public String describe() {
            return tail.describe(jsonl);
        }
    }

    /** A recording the recorder kept of an earlier run: {@code NAME.<n>.jsonl}. */
    private static final Pattern EARLIER_RUN = Pattern.compile("(.+)\\.[0-9]+\\.jsonl");

    private static final Recordings NONE = new Recordings(List.of(), List.of());

    /**
     * The node files of {@code arg} (none when it is no JSON lines: a directory with a journal in or
     * under it, or anything else), and the earlier runs left out.
     */
    public static Recordings files(String arg) {
        return nodeFiles(Path.of(arg));
    }

    /**
     * The node files of a tree {@code journal import} takes: {@code TREE/<node>/journal.jsonl}, or
     * {@code inputs.jsonl} (with {@code derive}, or when a node has only that), in name order;
     * without node directories, the files side by side as the recorder writes them
     * ({@link #recordings}, inputs only with {@code derive}). None when the tree holds neither.
     *
     * @throws IOException when {@code tree} cannot be listed
     */
    public static Recordings tree(Path tree, boolean derive) throws IOException {
        List<NodeFile> nodes = new ArrayList<>();
        try (Stream<Path> s = Files.list(tree)) {
            for (Path sub : s.filter(Files::isDirectory).sorted().toList()) {
                Path journal = sub.resolve("journal.jsonl");
                Path inputs = sub.resolve("inputs.jsonl");
                String node = sub.getFileName().toString();
                if (Files.isRegularFile(journal) && !(derive && Files.isRegularFile(inputs))) {
                    nodes.add(new NodeFile(node, journal, derive));
                } else if (Files.isRegularFile(inputs)) {
                    nodes.add(new NodeFile(node, inputs, true));
                }
            }
        }
        return nodes.isEmpty() ? recordings(tree, derive) : new Recordings(nodes, List.of());
    }

    /** A new temporary directory, removed with what it holds when the JVM exits. */
    public static Path temporaryRoot(String forWhat) {
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
    public static JsonLines.CutTail importNode(NodeFile f, Path dir) {
        return f.inputsOnly() ? JournalImport.importDerived(f.jsonl(), dir, null).cut()
                : JsonLines.importFile(f.jsonl(), dir, null).cut();
    }

    /**
     * Imports the node files {@code found} in {@code arg} into temporary journals, one per node,
     * telling {@code reading} each file before it is read.
     *
     * @throws JournalException (a {@code JsonLinesException} for bad lines) when a file cannot be imported
     */
    public static Read read(String arg, Recordings found, Consumer<Path> reading) {
        Path root = temporaryRoot(arg);
        List<NodeJournal> out = new ArrayList<>();
        List<Cut> cuts = new ArrayList<>();
        for (NodeFile f : found.nodes()) {
            reading.accept(f.jsonl());
            Path dir = root.resolve(f.node());
            JsonLines.CutTail cut = importNode(f, dir);
            if (cut != null) {
                cuts.add(new Cut(f.jsonl(), cut));
            }
            out.add(new NodeJournal(dir, f.node(), arg));
        }
        return new Read(out, cuts);
    }

    private static Recordings nodeFiles(Path arg) {
        if (Files.isRegularFile(arg) && arg.getFileName().toString().endsWith(".jsonl")) {
            return new Recordings(List.of(new NodeFile(stem(arg), arg, arg.getFileName().toString().equals("inputs.jsonl"))),
                    List.of());
        }
        if (!Files.isDirectory(arg) || JournalInputs.holdsQueueFiles(arg)) {
            return NONE;
        }
        NodeFile own = fileOf(arg, name(arg));
        if (own != null) {
            return new Recordings(List.of(own), List.of());
        }
        List<NodeFile> out = new ArrayList<>();
        try (Stream<Path> s = Files.list(arg)) {
            for (Path sub : s.filter(Files::isDirectory).sorted(Comparator.comparing(p -> p.getFileName().toString())).toList()) {
                if (JournalInputs.holdsQueueFiles(sub)) {
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
    public static String leftOut(List<Path> earlierRuns) {
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
            Runtime.getRuntime().addShutdownHook(new Thread(JsonLinesInputs::deleteAll, "kvledger-jsonl-cleanup"));
        }
    }

    private static synchronized void deleteAll() {
        for (Path root : TEMPORARY) {
            JournalImport.deleteTree(root);
        }
    }
}
