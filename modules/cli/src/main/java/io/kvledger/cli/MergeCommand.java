package io.kvledger.cli;

import io.kvledger.ledger.replay.JournalInputs;
import io.kvledger.ledger.replay.TimeMerge;
import io.kvledger.ledger.replay.TransferIndex;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import io.kvledger.core.config.Role;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalException;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.JournalWriter;
import io.kvledger.journal.json.Json;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvledger merge DIR... --out DIR}: brings the journals of several nodes (prefill and
 * decode ranks, each recorded where it ran) into one directory that every multi-node command
 * reads as one deployment:
 *
 * <ul>
 *   <li>{@code OUT/<node id>/}: each node's journal, rewritten entry by entry (same header
 *       configuration, same entries in the same order, same seqs unless an entry of a type this
 *       build cannot decode had to be left out), appended in merged event-time order;</li>
 *   <li>{@code OUT/merge-index.jsonl}: the correlation, a summary line then one line per transfer
 *       id in the order it was first seen, with every node that saw it (its request id there, its
 *       entries, first and last seq) and the time span.</li>
 * </ul>
 *
 * The one ordered view is then {@code kvledger dump OUT} (entries of all nodes interleaved by
 * event time, each with its node id), and {@code hangs OUT} / {@code inspect OUT} see both legs of
 * every transfer. Node ids must be unique; the output is built under a temporary name and renamed
 * when complete, so a failed merge leaves nothing behind.
 */
@Command(name = "merge", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Merges the journals of several nodes (prefill and decode ranks) into one directory ordered "
                + "by event time and correlated by transfer id, so that hangs, inspect and dump see both legs of "
                + "every transfer.",
            "OUT gets one journal per node (OUT/<node>/) and OUT/merge-index.jsonl (one line per transfer id with "
                    + "the nodes and request ids that saw it)."})
final class MergeCommand implements Callable<Integer> {

    static final String INDEX = "merge-index.jsonl";
    private static final Pattern SAFE_NODE = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]*");
    private static final int LISTED = 10;

    @Spec
    CommandSpec spec;

    @Parameters(paramLabel = "DIR", arity = "1..*", description = "journals, or directories of node journals")
    List<Path> dirs;

    @Option(names = "--out", paramLabel = "DIR", required = true, description = "the directory to create")
    Path out;

    @Option(names = "--json", description = "print the summary as one JSON object")
    boolean json;

    @Override
    public Integer call() {
        List<NodeJournal> journals;
        List<JournalReader> readers;
        try {
            journals = JournalDirs.resolve(dirs);
            checkOut(journals);
            readers = JournalDirs.open(journals);
        } catch (JournalInputs.InputException e) {
            throw usage(e.getMessage());
        }
        try {
            List<String> nodes = TimeMerge.nodeIds(readers);
            checkNodes(nodes, journals);
            return merge(readers, nodes, journals);
        } finally {
            JournalDirs.closeAll(readers);
        }
    }

    private void checkOut(List<NodeJournal> journals) {
        Path o = out.toAbsolutePath().normalize();
        for (NodeJournal j : journals) {
            Path a = j.dir().toAbsolutePath().normalize();
            if (o.startsWith(a) || a.startsWith(o)) {
                throw usage("--out " + out + " overlaps the journal " + j.dir() + ": merge into a new directory");
            }
        }
        if (Files.exists(out)) {
            if (!Files.isDirectory(out)) {
                throw usage("--out " + out + " is a file");
            }
            try (Stream<Path> s = Files.list(out)) {
                if (s.findAny().isPresent()) {
                    throw usage("--out " + out + " is not empty: merge into a new or empty directory");
                }
            } catch (IOException e) {
                throw usage("cannot read --out " + out + ": " + e.getMessage());
            }
        }
    }

    private void checkNodes(List<String> nodes, List<NodeJournal> journals) {
        Map<String, Path> seen = new HashMap<>();
        for (int i = 0; i < nodes.size(); i++) {
            String n = nodes.get(i);
            if (!SAFE_NODE.matcher(n).matches()) {
                throw usage("node id '" + n + "' of " + journals.get(i).dir() + " cannot name a directory; re-import it with "
                        + "kvledger journal export " + journals.get(i).dir() + " | ... journal import --node ID");
            }
            Path other = seen.putIfAbsent(n, journals.get(i).dir());
            if (other != null) {
                throw usage("node id " + n + " is used by both " + other + " and " + journals.get(i).dir()
                        + ": merged journals need unique node ids (give one a new id: kvledger journal export "
                        + journals.get(i).dir() + " --out F.jsonl, then kvledger journal import F.jsonl DIR --node NEW)");
            }
        }
    }

    /** Per node: how its old seqs map to the copy's (identity until an entry had to be left out). */
    private static final class Copy {
        final JournalWriter writer;
        final boolean producer;
        boolean identity = true;
        final HashMap<Long, Long> inputSeqs = new HashMap<>();
        long lastInputNew;
        long entries = 1; // the header
        long skipped;
        long firstAtNs = Long.MAX_VALUE;
        long lastAtNs = Long.MIN_VALUE;

        Copy(JournalWriter writer, boolean producer) {
            this.writer = writer;
            this.producer = producer;
        }

        long cause(long old) {
            if (old == 0 || identity) {
                return old;
            }
            Long n = inputSeqs.get(old);
            return n != null ? n : lastInputNew;
        }
    }

    private int merge(List<JournalReader> readers, List<String> nodes, List<NodeJournal> sources) {
        PrintWriter err = spec.commandLine().getErr();
        Path target = out.toAbsolutePath().normalize();
        Path staging = target.resolveSibling("." + target.getFileName() + ".merging");
        deleteTree(staging);
        boolean ok = false;
        List<Copy> copies = new ArrayList<>();
        TransferIndex index = new TransferIndex();
        Progress progress = new Progress(err, "merge");
        long total = 0;
        try {
            Files.createDirectories(staging);
            for (int i = 0; i < readers.size(); i++) {
                JournalHeader h = readers.get(i).header();
                String origin = h.origin().isEmpty() ? "merge" : h.origin() + " (merged)";
                copies.add(new Copy(JournalWriter.open(staging.resolve(nodes.get(i)), h.withOrigin(origin).withFormatVersion(io.kvledger.journal.JournalFormat.FORMAT_VERSION)),
                        h.role() == Role.PRODUCER));
                index.node(nodes.get(i), h.role() == Role.PRODUCER);
            }
            TimeMerge merged = new TimeMerge(readers, nodes);
            while (merged.hasNext()) {
                TimeMerge.Item item = merged.next();
                Copy c = copies.get(item.source());
                JournalEntry copied = copy(c, item.entry());
                if (copied != null) {
                    index.add(item.node(), copied);
                }
                if ((++total & 0xFFFF) == 0 && progress.due()) {
                    progress.update(-1, String.format(Locale.ROOT, "%,d entries", total));
                }
            }
            for (Copy c : copies) {
                c.writer.close();
            }
            writeIndex(staging.resolve(INDEX), readers, nodes, copies, index);
            if (Files.isDirectory(target)) {
                Files.delete(target); // checked empty above
            }
            Files.move(staging, target, StandardCopyOption.ATOMIC_MOVE);
            ok = true;
        } catch (IOException e) {
            err.println("merge: writing " + out + " failed: " + e.getMessage() + "; nothing written");
            return 1;
        } catch (JournalException | UncheckedIOException e) {
            err.println("merge: " + e.getMessage() + "; nothing written");
            return 1;
        } finally {
            if (!ok) {
                for (Copy c : copies) {
                    try {
                        c.writer.close();
                    } catch (RuntimeException ignored) {
                        // already failing
                    }
                }
                deleteTree(staging);
            }
        }
        progress.done(String.format(Locale.ROOT, "%,d entries", total));
        boolean doubted = false;
        for (int i = 0; i < readers.size(); i++) {
            readers.get(i).warnings().forEach(err::println);
            // the merged copy lacks what a reader skipped: said above, and the exit status says it too
            doubted |= !readers.get(i).clean() || copies.get(i).skipped > 0;
            if (copies.get(i).skipped > 0) {
                err.println(sources.get(i).name() + ": " + copies.get(i).skipped
                        + " entries this build cannot decode, or whose cause is no entry of the copy, were left out of the"
                        + " merged copy");
            }
        }
        if (json) {
            spec.commandLine().getOut().println(Json.write(summary(readers, nodes, copies, index)));
        } else {
            printText(nodes, readers, copies, index);
        }
        spec.commandLine().getOut().flush();
        return doubted ? 1 : 0;
    }

    /** Appends one entry to the node's copy; returns it with its new seq, or null when left out. */
    private static JournalEntry copy(Copy c, JournalEntry e) {
        if (c.identity && !(e instanceof JournalEntry.Header) && e.seq() != c.writer.nextSeq()) {
            // the reader skipped entries (damage, a duplicate, another journal's file): seqs move
            c.identity = false;
        }
        switch (e) {
            case JournalEntry.Header h -> {
                return null; // the writer wrote the copy's header
            }
            case JournalEntry.Input in -> {
                long seq = c.writer.appendInput(in.event());
                if (!c.identity) {
                    c.inputSeqs.put(in.seq(), seq);
                }
                c.lastInputNew = seq;
                c.entries++;
                c.firstAtNs = Math.min(c.firstAtNs, in.atNs());
                c.lastAtNs = Math.max(c.lastAtNs, in.atNs());
                return new JournalEntry.Input(seq, in.atNs(), in.event());
            }
            case JournalEntry.Derived d -> {
                long cause = c.cause(d.causeSeq());
                long seq;
                try {
                    seq = c.writer.appendDerived(cause, d.atNs(), d.effect());
                } catch (IllegalArgumentException notACause) {
                    // its cause is no entry of the copy (the reader doubted it): left out, and counted
                    c.identity = false;
                    c.skipped++;
                    return null;
                }
                c.entries++;
                return new JournalEntry.Derived(seq, cause, d.atNs(), d.effect());
            }
            case JournalEntry.Proxy px -> {
                long seq = c.writer.appendProxy(px.event());
                c.entries++;
                c.firstAtNs = Math.min(c.firstAtNs, px.atNs());
                c.lastAtNs = Math.max(c.lastAtNs, px.atNs());
                return new JournalEntry.Proxy(seq, px.atNs(), px.event());
            }
            case JournalEntry.Unknown u -> {
                c.identity = false;
                c.skipped++;
                return null;
            }
        }
    }

    private static void writeIndex(Path file, List<JournalReader> readers, List<String> nodes, List<Copy> copies,
                                   TransferIndex index) throws IOException {
        try (Writer w = new BufferedWriter(Files.newBufferedWriter(file, StandardCharsets.UTF_8), 1 << 16)) {
            Map<String, Object> head = summary(readers, nodes, copies, index);
            head.remove("one_side_only");
            LinkedHashMap<String, Object> first = new LinkedHashMap<>();
            first.put("kind", "merge");
            first.putAll(head);
            w.write(Json.write(first));
            w.write('\n');
            for (TransferIndex.Transfer t : index.transfers().values()) {
                w.write(Json.write(transferJson(t)));
                w.write('\n');
            }
        }
    }

    private static Map<String, Object> transferJson(TransferIndex.Transfer t) {
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        m.put("kind", "transfer");
        m.put("transfer_id", t.transferId());
        m.put("first_at_ns", t.firstAtNs());
        m.put("last_at_ns", t.lastAtNs());
        m.put("both_sides", t.bothSides());
        List<Object> legs = new ArrayList<>();
        for (TransferIndex.Leg l : t.legs().values()) {
            LinkedHashMap<String, Object> lm = new LinkedHashMap<>();
            lm.put("node", l.node());
            lm.put("kv_role", l.producer() ? "kv_producer" : "kv_consumer");
            lm.put("request_id", l.requestId());
            lm.put("entries", l.entries());
            lm.put("first_seq", l.firstSeq());
            lm.put("last_seq", l.lastSeq());
            legs.add(lm);
        }
        m.put("legs", legs);
        return m;
    }

    private static Map<String, Object> summary(List<JournalReader> readers, List<String> nodes, List<Copy> copies,
                                               TransferIndex index) {
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        m.put("order", "event time (at_ns), then the order the journals were given");
        List<Object> ns = new ArrayList<>();
        for (int i = 0; i < readers.size(); i++) {
            JournalHeader h = readers.get(i).header();
            Copy c = copies.get(i);
            LinkedHashMap<String, Object> nm = new LinkedHashMap<>();
            nm.put("node", nodes.get(i));
            nm.put("dir", nodes.get(i));
            nm.put("kv_role", c.producer ? "kv_producer" : "kv_consumer");
            nm.put("transfer_mode", h.mode().name());
            nm.put("describe", h.describe());
            nm.put("entries", c.entries);
            nm.put("skipped", c.skipped);
            nm.put("first_at_ns", c.firstAtNs <= c.lastAtNs ? c.firstAtNs : null);
            nm.put("last_at_ns", c.firstAtNs <= c.lastAtNs ? c.lastAtNs : null);
            ns.add(nm);
        }
        m.put("nodes", ns);
        long both = 0;
        List<Object> oneSide = new ArrayList<>();
        for (TransferIndex.Transfer t : index.transfers().values()) {
            if (t.bothSides()) {
                both++;
            } else {
                oneSide.add(t.transferId());
            }
        }
        m.put("transfers", (long) index.transfers().size());
        m.put("both_sides", both);
        m.put("one_side", (long) oneSide.size());
        m.put("one_side_only", oneSide);
        return m;
    }

    private void printText(List<String> nodes, List<JournalReader> readers, List<Copy> copies, TransferIndex index) {
        PrintWriter o = spec.commandLine().getOut();
        o.println("merged " + nodes.size() + (nodes.size() == 1 ? " journal" : " journals") + " into " + out
                + " (one journal per node, ordered by event time; " + INDEX + " correlates them by transfer id)");
        for (int i = 0; i < nodes.size(); i++) {
            Copy c = copies.get(i);
            JournalHeader h = readers.get(i).header();
            o.printf(Locale.ROOT, "  %-4s %-11s %-5s %,9d entries%s%n", nodes.get(i), c.producer ? "kv_producer" : "kv_consumer",
                    h.mode(), c.entries, c.firstAtNs <= c.lastAtNs
                            ? "   t " + EntryFormat.time(c.firstAtNs) + ".." + EntryFormat.time(c.lastAtNs) + " s" : "");
        }
        List<TransferIndex.Transfer> oneSide = new ArrayList<>();
        for (TransferIndex.Transfer t : index.transfers().values()) {
            if (!t.bothSides()) {
                oneSide.add(t);
            }
        }
        int n = index.transfers().size();
        o.println("transfers: " + n + ", " + (n - oneSide.size()) + " seen by both a prefill and a decode node"
                + (oneSide.isEmpty() ? "" : ", " + oneSide.size() + " by one side only"));
        oneSide.sort(Comparator.comparingLong(t -> t.firstAtNs()));
        for (int i = 0; i < oneSide.size() && i < LISTED; i++) {
            TransferIndex.Transfer t = oneSide.get(i);
            o.println("  " + t.transferId() + "  only on " + String.join(", ", t.legs().keySet()) + "  from t="
                    + EntryFormat.time(t.firstAtNs()) + " s");
        }
        if (oneSide.size() > LISTED) {
            o.println("  ... and " + (oneSide.size() - LISTED) + " more (" + INDEX + " lists them all)");
        }
        o.println("next: kvledger hangs " + out + "   kvledger dump " + out + "   kvledger inspect " + out + " --transfer ID");
    }

    private static void deleteTree(Path root) {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> s = Files.walk(root)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot remove " + root + ": " + e.getMessage(), e);
        }
    }

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }
}
