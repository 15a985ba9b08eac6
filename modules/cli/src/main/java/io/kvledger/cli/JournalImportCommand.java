package io.kvledger.cli;

import io.kvledger.journal.JournalException;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.JsonLines;
import io.kvledger.journal.JsonLinesException;
import io.kvledger.ledger.replay.JournalImport;
import io.kvledger.ledger.replay.JournalImport.Target;
import io.kvledger.journal.format.EntryKind;
import io.kvledger.journal.json.Json;
import io.kvledger.journal.json.JsonException;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvledger journal import FILE.jsonl DIR}: builds a journal from JSON lines
 * ({@link JsonLines#importFile}): all or nothing, every malformed line reported with its number
 * (exit 2). The header comes from the file's first line; the options replace single header fields
 * (or, for a file without a header line, make one: {@code --node}, {@code --role} and
 * {@code --mode} are then required).
 *
 * <p>The target must be new or empty: a journal already there is refused unless {@code --append},
 * and then the file must continue it (its first seq, when it has seqs, is the journal's next; its
 * first input is not before the journal's last). Inputs whose time goes backwards are refused in
 * any case, naming the line. FILE may also be a directory in the layout {@code journal export
 * --out} writes ({@code TREE/<node>/journal.jsonl}, or {@code inputs.jsonl} as in journal/fixtures,
 * imported with {@code --derive}): each node goes to {@code DIR/<node>}.
 *
 * <p>{@code --derive} is for files that hold only inputs, as a patched engine logs its hook calls:
 * the node reducer is run over the inputs with the header's configuration, and every input is
 * journaled with the effects it produces (exactly what a live node or the simulator journals), so
 * that hangs, inspect and {@code replay --verify} have the decisions to work with.
 */
@Command(name = "import", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Builds a journal in DIR from a JSON-lines file (the journal export format; journal/FORMAT.md "
                + "lists the fields), or DIR/<node> for each node of a tree that journal export --out wrote. Nothing is "
                + "written unless every line is valid and the times of the inputs do not go backwards; bad lines are "
                + "listed with their numbers (exit status 2). DIR must be new or empty unless --append.",
            "Header options replace fields of the file's header line, or make the header of a file that has none."})
final class JournalImportCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Parameters(index = "0", paramLabel = "FILE.jsonl|TREE", description = {"the JSON-lines file, or a directory of them "
            + "as journal export --out writes: TREE/<node>/journal.jsonl (a node with only inputs.jsonl, as in "
            + "journal/fixtures, is imported with --derive)"})
    Path file;

    @Parameters(index = "1", paramLabel = "DIR", description = {"the journal directory to create (new or empty; with "
            + "--append, a journal to add to); for a TREE, DIR/<node> is created for each node"})
    Path dir;

    @Option(names = "--append", description = {"add the file's entries to the journal DIR already holds; the file must "
            + "continue it: its first seq (if it has seqs) is the journal's next, and its times do not go back"})
    boolean append;

    @Option(names = "--node", paramLabel = "ID", description = "node id (header node_id)")
    String node;

    @Option(names = "--role", paramLabel = "ROLE", description = "prefill (kv_producer) or decode (kv_consumer)")
    String role;

    @Option(names = "--mode", paramLabel = "read|write", description = "transfer mode (header transfer_mode)")
    String mode;

    @Option(names = "--host", paramLabel = "IP", description = "advertised IP (header host_ip)")
    String host;

    @Option(names = "--dp", paramLabel = "RANK/SIZE[/LOCAL]", description = "data-parallel rank, size and local size")
    String dp;

    @Option(names = "--tp", paramLabel = "RANK/SIZE", description = "tensor-parallel rank and size")
    String tp;

    @Option(names = "--profile", paramLabel = "vllm-239b5ff30|seed|newest", description = "behaviour profile (its preset switches)")
    String profile;

    @Option(names = "--set", paramLabel = "KEY=VALUE",
            description = {"any other header key (journal/FORMAT.md, Header), VALUE as JSON or a bare string,",
                "e.g. --set defer_timeout_ns=30000000000 --set notify_port=61005; repeatable"})
    List<String> sets;

    @Option(names = "--origin", paramLabel = "TEXT", description = "header origin (default: the file's, or \"import FILE\")")
    String origin;

    @Option(names = "--derive", description = {"the file holds only inputs: recompute the derived entries by running "
            + "the node reducer over them (DIR must not hold a journal yet)"})
    boolean derive;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        if (Files.isDirectory(file)) {
            return importTree(out, err);
        }
        if (!Files.isRegularFile(file)) {
            throw usage(Files.exists(file) ? file + " is not a file" : "no such file: " + file);
        }
        JournalHeader header = headerFromOptions();
        return importOne(file, dir, derive, header, "journal import", out, err);
    }

    /** Imports one file into one journal directory; every check first, then all or nothing. */
    private int importOne(Path jsonl, Path target, boolean inputsOnly, JournalHeader header, String label, PrintWriter out,
                          PrintWriter err) {
        Target t = checkTarget(target, inputsOnly);
        Progress progress = new Progress(err, label);
        JournalImport.Check check = JournalImport.check(jsonl, t, inputsOnly, (fraction, n) -> {
            if (progress.due()) {
                progress.update(fraction, String.format(Locale.ROOT, "checking %,d lines", n));
            }
        });
        if (!check.ok()) {
            progress.done("refused");
            String msg = new JsonLinesException(jsonl.toString(), check.problems(), check.total()).getMessage();
            if (inputsOnly && check.problems().stream().anyMatch(e -> e.reason().startsWith("a derived entry"))) {
                msg = msg.replace("nothing imported", "nothing imported: --derive takes inputs only (drop --derive "
                        + "to import recorded derived entries as they are)");
            }
            err.println(name() + ": " + msg);
            return 2;
        }
        try (AutoCloseable ticking = progress.ticking(() -> String.format(Locale.ROOT, "writing %s (%.1f s)", target,
                progress.elapsedS()))) {
            JsonLines.CutTail cut = inputsOnly ? importDerived(jsonl, target, header, out)
                    : importPlain(jsonl, target, header, out);
            progress.done("done");
            if (cut != null) {
                err.println(name() + ": warning: " + cut.describe(jsonl));
                err.flush();
            }
            return 0;
        } catch (JsonLinesException e) {
            progress.done("refused");
            err.println(name() + ": " + e.getMessage());
            return 2;
        } catch (JournalException e) {
            progress.done("failed");
            err.println(name() + ": " + e.getMessage() + "; nothing imported");
            return 2;
        } catch (RuntimeException e) {
            progress.done("failed");
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(e); // closing the ticker does not throw checked exceptions
        }
    }

    /** Imports as the file says; returns what a write cut short left at its end (left out), or null. */
    private JsonLines.CutTail importPlain(Path jsonl, Path target, JournalHeader header, PrintWriter out) {
        JsonLines.ImportResult r = JsonLines.importFile(jsonl, target, header);
        try (JournalReader reader = JournalReader.open(target)) {
            out.println(String.format(Locale.ROOT, "imported %,d entries from %s into %s (seq %d..%d%s): %s", r.entries(),
                    jsonl.getFileName(), target, r.firstSeq(), r.lastSeq(), r.appended() ? ", appended" : "",
                    reader.header().describe()));
        }
        out.flush();
        return r.cut();
    }

    private String name() {
        return spec.qualifiedName();
    }

    // ------------------------------------------------------------------ the target and the file's order

    /**
     * Refuses a target that is a file, a non-empty directory that holds no journal, or a journal
     * without {@code --append} (or with {@code --derive}); reads where an appended-to journal ends.
     */
    private Target checkTarget(Path target, boolean inputsOnly) {
        if (Files.exists(target) && !Files.isDirectory(target)) {
            throw usage(target + " is a file, not a directory");
        }
        boolean existed = Files.isDirectory(target);
        boolean journal = JournalDirs.isJournal(target);
        if (journal && inputsOnly) {
            throw usage(target + " already holds a journal; " + (derive ? "--derive builds a new one"
                    : "a node's inputs.jsonl is imported with --derive, which builds a new one")
                    + " (import into an empty directory)");
        }
        if (!journal) {
            if (existed && !isEmpty(target)) {
                throw usage(target + " is not empty and holds no journal: import into a new or empty directory");
            }
            return Target.fresh(target, existed);
        }
        if (!append) {
            throw usage(target + " already holds a journal: give --append to add the file's entries after its last one, "
                    + "or import into a new directory");
        }
        try {
            return Target.journal(target);
        } catch (JournalException e) {
            throw usage("cannot read the journal in " + target + " to append to it: " + e.getMessage());
        }
    }

    private static boolean isEmpty(Path dir) {
        try (Stream<Path> s = Files.list(dir)) {
            return s.findAny().isEmpty();
        } catch (IOException e) {
            return false;
        }
    }

    // ------------------------------------------------------------------ a tree of node files

    /**
     * Imports {@code TREE/<node>/journal.jsonl} (or {@code inputs.jsonl} with --derive, or when a
     * node has only that) into {@code DIR/<node>}; a directory of node files side by side, as the
     * vLLM bridge's recorder writes them ({@code NAME.jsonl}, {@link JsonLinesTrees#recordings}),
     * into {@code DIR/NAME}. Every target is checked before anything is written; when one import
     * fails, the journals this run created are removed again.
     */
    private int importTree(PrintWriter out, PrintWriter err) {
        if (anyHeaderOption()) {
            throw usage("header options take a single file; " + file + " is a directory of node files");
        }
        List<JsonLinesTrees.NodeFile> nodes = new ArrayList<>();
        List<Path> earlierRuns = List.of();
        try (Stream<Path> s = Files.list(file)) {
            for (Path sub : s.filter(Files::isDirectory).sorted().toList()) {
                Path journal = sub.resolve("journal.jsonl");
                Path inputs = sub.resolve("inputs.jsonl");
                String node = sub.getFileName().toString();
                if (Files.isRegularFile(journal) && !(derive && Files.isRegularFile(inputs))) {
                    nodes.add(new JsonLinesTrees.NodeFile(node, journal, derive));
                } else if (Files.isRegularFile(inputs)) {
                    nodes.add(new JsonLinesTrees.NodeFile(node, inputs, true));
                }
            }
        } catch (IOException e) {
            throw usage("cannot list " + file + ": " + e.getMessage());
        }
        if (nodes.isEmpty()) {
            JsonLinesTrees.Recordings flat = JsonLinesTrees.recordings(file, derive);
            nodes.addAll(flat.nodes());
            earlierRuns = flat.earlierRuns();
        }
        if (nodes.isEmpty()) {
            throw usage(file + " holds no <node>/journal.jsonl (the layout journal export --out writes), no "
                    + "<node>/inputs.jsonl, and no .jsonl file that starts with a journal header (as the vLLM bridge's "
                    + "recorder writes them)");
        }
        if (Files.exists(dir) && !Files.isDirectory(dir)) {
            throw usage(dir + " is a file, not a directory");
        }
        for (JsonLinesTrees.NodeFile n : nodes) {
            checkTarget(dir.resolve(n.node()), n.inputsOnly());
        }
        List<Path> created = new ArrayList<>();
        boolean dirExisted = Files.isDirectory(dir);
        for (JsonLinesTrees.NodeFile n : nodes) {
            Path target = dir.resolve(n.node());
            boolean existed = Files.exists(target);
            int code = importOne(n.jsonl(), target, n.inputsOnly(), null, "journal import " + n.node(), out, err);
            if (code != 0) {
                for (Path c : created) {
                    deleteTree(c);
                }
                if (!dirExisted && isEmptyOrMissing(dir)) {
                    deleteTree(dir);
                }
                err.println(name() + ": " + (created.isEmpty() ? "nothing imported"
                        : "the " + created.size() + " journal(s) imported before " + n.node() + " were removed again"));
                return code;
            }
            if (!existed) {
                created.add(target);
            }
        }
        if (!earlierRuns.isEmpty()) {
            err.println(name() + ": note: " + JsonLinesTrees.leftOut(earlierRuns)
                    + " (import one on its own: kvledger journal import FILE DIR)");
            err.flush();
        }
        return 0;
    }

    private static boolean isEmptyOrMissing(Path d) {
        return !Files.isDirectory(d) || isEmpty(d);
    }

    // ------------------------------------------------------------------ header options

    private boolean anyHeaderOption() {
        return node != null || role != null || mode != null || host != null || dp != null || tp != null || profile != null
                || (sets != null && !sets.isEmpty()) || origin != null;
    }

    /** The header the options describe, or null to take the file's as it is. */
    private JournalHeader headerFromOptions() {
        if (!anyHeaderOption()) {
            return null;
        }
        JournalHeader base = fileHeader();
        Map<String, Object> m;
        if (base != null) {
            m = base.toMap();
            m.remove("magic");
        } else {
            if (node == null || role == null || mode == null) {
                throw usage(file + " has no header line: give at least --node, --role and --mode");
            }
            m = new LinkedHashMap<>();
        }
        if (node != null) {
            if (node.isBlank()) {
                throw usage("--node must not be empty");
            }
            m.put("node_id", node);
        }
        if (role != null) {
            m.put("kv_role", switch (role.toLowerCase(Locale.ROOT)) {
                case "prefill", "producer", "kv_producer" -> "kv_producer";
                case "decode", "consumer", "kv_consumer" -> "kv_consumer";
                case "both", "kv_both" -> "kv_both";
                default -> throw usage("--role must be prefill (kv_producer), decode (kv_consumer) or kv_both, got '" + role + "'");
            });
        }
        if (mode != null) {
            String mm = mode.toUpperCase(Locale.ROOT);
            if (!mm.equals("READ") && !mm.equals("WRITE")) {
                throw usage("--mode must be read or write, got '" + mode + "'");
            }
            m.put("transfer_mode", mm);
        }
        if (host != null) {
            m.put("host_ip", host);
        }
        if (dp != null) {
            long[] v = ranks("--dp", dp, 2, 3);
            m.put("dp_rank", v[0]);
            m.put("dp_size", v[1]);
            m.put("dp_size_local", v.length > 2 ? v[2] : v[1]);
        }
        if (tp != null) {
            long[] v = ranks("--tp", tp, 2, 2);
            m.put("tp_rank", v[0]);
            m.put("tp_size", v[1]);
        }
        if (profile != null) {
            if (io.kvledger.core.config.Behaviour.preset(profile) == null) {
                throw usage("--profile must be one of " + String.join(", ", io.kvledger.core.config.Behaviour.PRESETS) + ", got '" + profile + "'");
            }
            m.put("profile", profile);
            m.remove("switches"); // the preset's switches
        }
        if (sets != null) {
            for (String s : sets) {
                int eq = s.indexOf('=');
                if (eq <= 0) {
                    throw usage("--set takes KEY=VALUE, got '" + s + "'");
                }
                String key = s.substring(0, eq).strip();
                String text = s.substring(eq + 1);
                Object value;
                try {
                    value = Json.parse(text);
                } catch (JsonException e) {
                    value = text; // a bare string
                }
                m.put(key, value);
            }
        }
        m.put("origin", origin != null ? origin : base != null && !base.origin().isEmpty() ? base.origin()
                : "import " + file.getFileName());
        try {
            return JournalHeader.fromMap(m, true, null);
        } catch (IllegalArgumentException e) {
            throw usage("bad header option: " + e.getMessage());
        }
    }

    private long[] ranks(String option, String text, int min, int max) {
        String[] parts = text.split("/");
        if (parts.length < min || parts.length > max) {
            throw usage(option + " takes " + (max == 2 ? "RANK/SIZE" : "RANK/SIZE[/LOCAL]") + ", got '" + text + "'");
        }
        long[] v = new long[parts.length];
        for (int i = 0; i < parts.length; i++) {
            try {
                v[i] = Long.parseLong(parts[i].strip());
            } catch (NumberFormatException e) {
                throw usage(option + ": '" + parts[i] + "' is not a number");
            }
            if (v[i] < 0) {
                throw usage(option + ": " + v[i] + " is negative");
            }
        }
        if (v[0] >= v[1]) {
            throw usage(option + ": rank " + v[0] + " is not below size " + v[1]);
        }
        return v;
    }

    /** The file's header line, or null when its first non-blank line is not a valid header. */
    private JournalHeader fileHeader() {
        try (JsonLines.LineReader r = new JsonLines.LineReader(file)) {
            String line;
            while ((line = r.next()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                try {
                    JsonLines.Line l = JsonLines.parseLine(line);
                    return l.kind() == EntryKind.HEADER ? (JournalHeader) l.record() : null;
                } catch (RuntimeException e) {
                    return null; // the import reports the bad line with its number
                }
            }
        } catch (IOException e) {
            return null;
        }
        return null;
    }

    // ------------------------------------------------------------------ --derive

    /**
     * Imports a node's inputs with their derived entries recomputed ({@link JournalImport#importDerived});
     * returns what a write cut short left at the file's end (left out), or null.
     */
    static JsonLines.CutTail importDerived(Path file, Path dir, JournalHeader header, PrintWriter out) {
        JournalImport.Derived d = JournalImport.importDerived(file, dir, header);
        out.println(String.format(Locale.ROOT, "imported %,d inputs from %s into %s with %,d derived entries "
                + "recomputed by the node reducer: %s", d.inputs(), file.getFileName(), dir, d.derived(), d.describe()));
        return d.cut();
    }

    private static void deleteTree(Path root) {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> s = Files.walk(root)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException ignored) {
            // best effort: the journals this run created
        }
    }

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }
}
