package io.kvledger.ledger.replay;

import io.kvledger.core.config.Role;
import io.kvledger.journal.JournalEntry;
import io.kvledger.journal.JournalException;
import io.kvledger.journal.JournalFormat;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalReader;
import io.kvledger.journal.JournalWriter;
import io.kvledger.journal.json.Json;
import io.kvledger.ledger.replay.JournalInputs.InputException;
import io.kvledger.ledger.replay.JournalInputs.NodeJournal;
import java.io.BufferedWriter;
import java.io.IOException;
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
import java.util.Map;
import java.util.function.LongConsumer;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Brings the journals of several nodes into one directory ({@code kvledger merge}): each node's
 * journal rewritten entry by entry into {@code OUT/<node id>/}, appended in merged event-time
 * order ({@link TimeMerge}), and {@code OUT/merge-index.jsonl}, a summary line then one line per
 * transfer id ({@link TransferIndex}). The output is built under a temporary name beside
 * {@code OUT} and moved there whole, so a failed merge leaves nothing behind.
 *
 * <p>Seqs stay the same unless an entry had to be left out (a type this build cannot decode, a
 * derived entry whose cause is no entry of the copy): from then on a node's derived entries name
 * their causes' new seqs. What was left out is counted per node ({@link Node#skipped()}); callers
 * say so.
 */
public final class JournalMerge {

    /** The correlation file's name inside the merged directory. */
    public static final String INDEX = "merge-index.jsonl";

    private static final Pattern SAFE_NODE = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]*");

    /** What one node's copy holds. */
    public record Node(String node, boolean producer, String mode, long entries, long skipped, long firstAtNs,
                       long lastAtNs) {
        /** True when the copy holds at least one timed entry ({@link #firstAtNs()} is meaningful). */
        public boolean timed() {
            return firstAtNs <= lastAtNs;
        }
    }

    /**
     * A finished merge.
     *
     * @param nodes each node's copy, in the order the journals were given
     * @param index the transfers correlated across the copies
     * @param summary the index file's summary fields and {@code one_side_only}, the transfer ids
     *     seen by one side only (what {@code merge --json} prints)
     * @param read how many entries the readers gave, headers included
     */
    public record Result(List<Node> nodes, TransferIndex index, Map<String, Object> summary, long read) {}

    private JournalMerge() {}

    /**
     * Checks that {@code out} can receive a merge of {@code journals}: it overlaps none of them and
     * is absent or an empty directory.
     *
     * @throws InputException with a message a user can act on
     */
    public static void checkOut(Path out, List<NodeJournal> journals) {
        Path o = out.toAbsolutePath().normalize();
        for (NodeJournal j : journals) {
            Path a = j.dir().toAbsolutePath().normalize();
            if (o.startsWith(a) || a.startsWith(o)) {
                throw new InputException("--out " + out + " overlaps the journal " + j.dir() + ": merge into a new directory");
            }
        }
        if (Files.exists(out)) {
            if (!Files.isDirectory(out)) {
                throw new InputException("--out " + out + " is a file");
            }
            try (Stream<Path> s = Files.list(out)) {
                if (s.findAny().isPresent()) {
                    throw new InputException("--out " + out + " is not empty: merge into a new or empty directory");
                }
            } catch (IOException e) {
                throw new InputException("cannot read --out " + out + ": " + e.getMessage(), e);
            }
        }
    }

    /**
     * Checks that the node ids ({@link TimeMerge#nodeIds}) can name directories and are unique.
     *
     * @throws InputException with a message a user can act on
     */
    public static void checkNodes(List<String> nodes, List<NodeJournal> journals) {
        Map<String, Path> seen = new HashMap<>();
        for (int i = 0; i < nodes.size(); i++) {
            String n = nodes.get(i);
            if (!SAFE_NODE.matcher(n).matches()) {
                throw new InputException("node id '" + n + "' of " + journals.get(i).dir() + " cannot name a directory; re-import it with "
                        + "kvledger journal export " + journals.get(i).dir() + " | ... journal import --node ID");
            }
            Path other = seen.putIfAbsent(n, journals.get(i).dir());
            if (other != null) {
                throw new InputException("node id " + n + " is used by both " + other + " and " + journals.get(i).dir()
                        + ": merged journals need unique node ids (give one a new id: kvledger journal export "
                        + journals.get(i).dir() + " --out F.jsonl, then kvledger journal import F.jsonl DIR --node NEW)");
            }
        }
    }

    /**
     * Merges the journals the readers read into {@code out}.
     *
     * @param readers one open reader per journal, in the order given
     * @param nodes their node ids ({@link TimeMerge#nodeIds}), checked with {@link #checkNodes}
     * @param out the directory to create (checked with {@link #checkOut})
     * @param progress called with the number of entries copied so far, every 65,536 entries
     * @throws IOException when writing the output failed (nothing is left behind)
     * @throws JournalException when a copy refused an entry (nothing is left behind)
     */
    public static Result merge(List<JournalReader> readers, List<String> nodes, Path out, LongConsumer progress)
            throws IOException {
        Path target = out.toAbsolutePath().normalize();
        Path staging = target.resolveSibling("." + target.getFileName() + ".merging");
        deleteTree(staging);
        boolean ok = false;
        List<Copy> copies = new ArrayList<>();
        TransferIndex index = new TransferIndex();
        long total = 0;
        try {
            Files.createDirectories(staging);
            for (int i = 0; i < readers.size(); i++) {
                JournalHeader h = readers.get(i).header();
                String origin = h.origin().isEmpty() ? "merge" : h.origin() + " (merged)";
                copies.add(new Copy(JournalWriter.open(staging.resolve(nodes.get(i)), h.withOrigin(origin).withFormatVersion(JournalFormat.FORMAT_VERSION)),
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
                if ((++total & 0xFFFF) == 0) {
                    progress.accept(total);
                }
            }
            for (Copy c : copies) {
                c.writer.close();
            }
            writeIndex(staging.resolve(INDEX), readers, nodes, copies, index);
            if (Files.isDirectory(target)) {
                Files.delete(target); // checked empty
            }
            Files.move(staging, target, StandardCopyOption.ATOMIC_MOVE);
            ok = true;
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
        List<Node> result = new ArrayList<>();
        for (int i = 0; i < copies.size(); i++) {
            Copy c = copies.get(i);
            result.add(new Node(nodes.get(i), c.producer, readers.get(i).header().mode().name(), c.entries, c.skipped,
                    c.firstAtNs, c.lastAtNs));
        }
        return new Result(List.copyOf(result), index, summary(readers, nodes, copies, index), total);
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
}
