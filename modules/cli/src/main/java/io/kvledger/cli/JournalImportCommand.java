package io.kvledger.cli;

import io.kvledger.journal.JournalException;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JsonLines;
import io.kvledger.journal.JsonLinesException;
import io.kvledger.ledger.replay.HeaderOptions;
import io.kvledger.ledger.replay.JournalImport;
import io.kvledger.ledger.replay.JournalImport.Target;
import io.kvledger.ledger.replay.JsonLinesInputs;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
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
 *
 * <p>The checks and the import are the ledger's ({@link JournalImport}, {@link HeaderOptions},
 * {@link JsonLinesInputs#tree}); the command keeps its options, the progress line, what it prints
 * and the exit code.
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
        JournalHeader header;
        try {
            header = headerOptions().header(file);
        } catch (JournalImport.Refused e) {
            throw usage(e.getMessage());
        }
        return importOne(file, dir, derive, header, "journal import", out, err);
    }

    /** Imports one file into one journal directory; every check first, then all or nothing. */
    private int importOne(Path jsonl, Path target, boolean inputsOnly, JournalHeader header, String label, PrintWriter out,
                          PrintWriter err) {
        Target t = target(target, inputsOnly);
        Progress progress = new Progress(err, label);
        JournalImport.Check check = JournalImport.check(jsonl, t, inputsOnly, (fraction, n) -> {
            if (progress.due()) {
                progress.update(fraction, String.format(Locale.ROOT, "checking %,d lines", n));
            }
        });
        if (!check.ok()) {
            progress.done("refused");
            err.println(name() + ": " + check.message(jsonl, inputsOnly));
            return 2;
        }
        try (AutoCloseable ticking = progress.ticking(() -> String.format(Locale.ROOT, "writing %s (%s)", target,
                progress.elapsed()))) {
            JsonLines.CutTail cut;
            if (inputsOnly) {
                JournalImport.Derived d = JournalImport.importDerived(jsonl, target, header);
                out.println(d.summary(jsonl, target));
                cut = d.cut();
            } else {
                JournalImport.Plain p = JournalImport.importPlain(jsonl, target, header);
                out.println(p.summary(jsonl, target));
                cut = p.result().cut();
            }
            out.flush();
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

    private String name() {
        return spec.qualifiedName();
    }

    /** {@link JournalImport#target}, a refusal as a usage error. */
    private Target target(Path target, boolean inputsOnly) {
        try {
            return JournalImport.target(target, inputsOnly, derive, append);
        } catch (JournalImport.Refused e) {
            throw usage(e.getMessage());
        }
    }

    /**
     * Imports the node files of a tree ({@link JsonLinesInputs#tree}) into {@code DIR/<node>}.
     * Every target is checked before anything is written; when one import fails, the journals
     * this run created are removed again.
     */
    private int importTree(PrintWriter out, PrintWriter err) {
        if (headerOptions().any()) {
            throw usage("header options take a single file; " + file + " is a directory of node files");
        }
        JsonLinesInputs.Recordings found;
        try {
            found = JsonLinesInputs.tree(file, derive);
        } catch (IOException e) {
            throw usage("cannot list " + file + ": " + e.getMessage());
        }
        List<JsonLinesInputs.NodeFile> nodes = found.nodes();
        if (nodes.isEmpty()) {
            throw usage(file + " holds no <node>/journal.jsonl (the layout journal export --out writes), no "
                    + "<node>/inputs.jsonl, and no .jsonl file that starts with a journal header (as the vLLM bridge's "
                    + "recorder writes them)");
        }
        if (Files.exists(dir) && !Files.isDirectory(dir)) {
            throw usage(dir + " is a file, not a directory");
        }
        for (JsonLinesInputs.NodeFile n : nodes) {
            target(dir.resolve(n.node()), n.inputsOnly());
        }
        List<Path> created = new ArrayList<>();
        boolean dirExisted = Files.isDirectory(dir);
        for (JsonLinesInputs.NodeFile n : nodes) {
            Path target = dir.resolve(n.node());
            boolean existed = Files.exists(target);
            int code = importOne(n.jsonl(), target, n.inputsOnly(), null, "journal import " + n.node(), out, err);
            if (code != 0) {
                JournalImport.removeCreated(created, dir, dirExisted);
                err.println(name() + ": " + JournalImport.rolledBack(created.size(), n.node()));
                return code;
            }
            if (!existed) {
                created.add(target);
            }
        }
        if (!found.earlierRuns().isEmpty()) {
            err.println(name() + ": note: " + JsonLinesInputs.leftOut(found.earlierRuns())
                    + " (import one on its own: kvledger journal import FILE DIR)");
            err.flush();
        }
        return 0;
    }

    private HeaderOptions headerOptions() {
        return new HeaderOptions(node, role, mode, host, dp, tp, profile, sets, origin);
    }

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }
}
