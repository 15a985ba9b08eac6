package io.kvledger.cli;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalException;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.JournalWriter;
import io.kvledger.journal.JsonLines;
import io.kvledger.journal.JsonLinesException;
import io.kvledger.journal.format.EntryKind;
import io.kvledger.journal.json.Json;
import io.kvledger.journal.json.JsonException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
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
 * <p>{@code --derive} is for files that hold only inputs, as a patched engine logs its hook calls:
 * the node reducer is run over the inputs with the header's configuration, and every input is
 * journaled with the effects it produces (exactly what a live node or the simulator journals), so
 * that hangs, inspect and {@code replay --verify} have the decisions to work with.
 */
@Command(name = "import", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Builds a journal in DIR from a JSON-lines file (the journal export format; journal/FORMAT.md "
                + "lists the fields). Nothing is written unless every line is valid; bad lines are listed with their "
                + "numbers (exit status 2).",
            "Header options replace fields of the file's header line, or make the header of a file that has none."})
final class JournalImportCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Parameters(index = "0", paramLabel = "FILE.jsonl", description = "the JSON-lines file")
    Path file;

    @Parameters(index = "1", paramLabel = "DIR", description = "the journal directory to create (or append to)")
    Path dir;

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

    @Option(names = "--profile", paramLabel = "seed|newest", description = "behaviour profile (its preset switches)")
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
        if (!Files.isRegularFile(file)) {
            throw usage(Files.exists(file) ? file + " is not a file" : "no such file: " + file);
        }
        if (Files.exists(dir) && !Files.isDirectory(dir)) {
            throw usage(dir + " is a file, not a directory");
        }
        if (derive && JournalDirs.isJournal(dir)) {
            throw usage(dir + " already holds a journal; --derive builds a new one (import into an empty directory)");
        }
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        JournalHeader header = headerFromOptions();
        try {
            if (derive) {
                List<JsonLinesException.LineError> derived = derivedLines();
                if (!derived.isEmpty()) {
                    err.println(new JsonLinesException(file.toString(), derived.subList(0,
                            Math.min(derived.size(), JsonLinesException.MAX_LISTED)), derived.size()).getMessage()
                            .replace("nothing imported", "nothing imported: --derive takes inputs only (drop --derive "
                                    + "to import recorded derived entries as they are)"));
                    return 2;
                }
                return importDerived(header, out);
            }
            JsonLines.ImportResult r = JsonLines.importFile(file, dir, header);
            try (JournalReader reader = JournalReader.open(dir)) {
                out.println(String.format(Locale.ROOT, "imported %,d entries from %s into %s (seq %d..%d%s): %s", r.entries(),
                        file.getFileName(), dir, r.firstSeq(), r.lastSeq(), r.appended() ? ", appended" : "",
                        reader.header().describe()));
            }
            return 0;
        } catch (JsonLinesException e) {
            err.println(e.getMessage());
            return 2;
        } catch (JournalException e) {
            err.println("journal import: " + e.getMessage() + "; nothing imported");
            return 2;
        }
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
                default -> throw usage("--role must be prefill (kv_producer) or decode (kv_consumer), got '" + role + "'");
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
            if (!profile.equals("seed") && !profile.equals("newest")) {
                throw usage("--profile must be seed or newest, got '" + profile + "'");
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
        try (BufferedReader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            String line;
            while ((line = r.readLine()) != null) {
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

    /** The numbers of the lines that hold derived entries (lines that do not parse are left to the import). */
    private List<JsonLinesException.LineError> derivedLines() {
        List<JsonLinesException.LineError> out = new ArrayList<>();
        try (BufferedReader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            String line;
            long n = 0;
            while ((line = r.readLine()) != null) {
                n++;
                if (line.isBlank()) {
                    continue;
                }
                try {
                    if (JsonLines.parseLine(line).kind() == EntryKind.DERIVED) {
                        out.add(new JsonLinesException.LineError(n, "a derived entry; --derive takes inputs only"));
                    }
                } catch (RuntimeException ignored) {
                    // reported by the import with its reason
                }
            }
        } catch (IOException e) {
            // not UTF-8 or unreadable: the import reports it line by line
        }
        return out;
    }

    /** Validates and imports into a scratch journal, then replays it through the reducer into DIR. */
    private int importDerived(JournalHeader header, PrintWriter out) {
        Path scratch;
        try {
            scratch = Files.createTempDirectory("kvledger-import-");
        } catch (IOException e) {
            throw new JournalException("cannot create a scratch directory: " + e.getMessage(), e);
        }
        boolean dirExisted = Files.isDirectory(dir);
        boolean ok = false;
        try {
            JsonLines.importFile(file, scratch.resolve("j"), header);
            long inputs = 0;
            long derivedCount = 0;
            try (JournalReader in = JournalReader.open(scratch.resolve("j"));
                 JournalWriter w = JournalWriter.open(dir, in.header())) {
                NodeState state = NodeState.initial(in.header().config());
                for (Effect e : NodeReducer.startupChecks(in.header().config())) {
                    w.appendDerived(0, e);
                    derivedCount++;
                }
                for (JournalEntry e : in) {
                    if (e instanceof JournalEntry.Input input) {
                        List<Effect> fx = NodeReducer.apply(state, input.event()).effects();
                        w.appendApplied(input.event(), fx);
                        inputs++;
                        derivedCount += fx.size();
                    }
                }
                out.println(String.format(Locale.ROOT, "imported %,d inputs from %s into %s with %,d derived entries "
                        + "recomputed by the node reducer: %s", inputs, file.getFileName(), dir, derivedCount,
                        in.header().describe()));
            }
            ok = true;
            return 0;
        } finally {
            deleteTree(scratch);
            if (!ok) {
                deleteJournalFiles(dir, dirExisted);
            }
        }
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
            // a scratch directory under the system temp dir
        }
    }

    /** Removes what a failed --derive import created (DIR held no journal before). */
    private static void deleteJournalFiles(Path dir, boolean dirExisted) {
        if (!Files.isDirectory(dir)) {
            return;
        }
        try (Stream<Path> s = Files.list(dir)) {
            for (Path p : s.toList()) {
                String n = p.getFileName().toString();
                if (n.endsWith(".cq4") || n.endsWith(".cq4t") || n.equals("kvledger-writer.lock")) {
                    Files.deleteIfExists(p);
                }
            }
            if (!dirExisted) {
                try (Stream<Path> rest = Files.list(dir)) {
                    if (rest.findAny().isEmpty()) {
                        Files.deleteIfExists(dir);
                    }
                }
            }
        } catch (IOException ignored) {
            // best effort: the import already failed with its own message
        }
    }

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }
}
