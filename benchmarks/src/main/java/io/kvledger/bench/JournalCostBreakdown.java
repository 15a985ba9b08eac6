package io.kvledger.bench;

import io.kvledger.bench.LifecycleScript.NodeStream;
import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.node.NodeReducer;
import io.kvledger.core.node.NodeState;
import io.kvledger.journal.FastPayloads;
import io.kvledger.journal.JournalHeader;
import io.kvledger.journal.JournalWriter;
import io.kvledger.journal.format.EntryType;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;
import java.util.zip.CRC32C;
import net.openhft.chronicle.bytes.Bytes;
import net.openhft.chronicle.queue.ExcerptAppender;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueue;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueueBuilder;
import net.openhft.chronicle.wire.DocumentContext;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

/**
 * Where a journaled input's time goes: the parts of {@link JournalWriter#appendApplied} measured
 * one by one, in CPU time of the runner's thread per input, on the node-loop benchmark's workload
 * ({@link LoopWorkload}: every input of a WRITE producer and a READ consumer, with the effects the
 * reducer derives from each, computed before any timing).
 *
 * <p>Parts, run one after the other in every round (the order rotates):
 * <ul>
 *   <li>{@code ENCODE}: the msgpack payloads of the input and its derived entries, into a heap
 *       buffer (no envelope, no Chronicle), with the generic schema encoder;</li>
 *   <li>{@code ENCODE_FAST}: the same with {@link FastPayloads} first (what the writer does);</li>
 *   <li>{@code CRC}: CRC32C over as many bytes as an input journals;</li>
 *   <li>{@code EXCERPTS}: pre-encoded bytes of each entry's size class written to a fresh Chronicle
 *       queue, one excerpt per entry as the journal does (so: Chronicle's per-excerpt work, and
 *       the first write to each fresh page of the mapped file);</li>
 *   <li>{@code TINY_EXCERPTS}: the same number of excerpts of 16 bytes each (Chronicle's fixed
 *       cost per excerpt, almost no page faults);</li>
 *   <li>{@code BATCHED}: the same bytes as {@code EXCERPTS}, 64 inputs per excerpt (what group
 *       commit would leave: the bytes and their page faults);</li>
 *   <li>{@code APPEND}: {@link JournalWriter#appendApplied} itself, into a fresh journal;</li>
 *   <li>{@code APPEND_PRETOUCHED}: the same with {@link JournalWriter#pretouch} (the pretoucher's
 *       thread touches the fresh pages; its CPU time is not counted here).</li>
 * </ul>
 *
 * <p>Usage: {@code JournalCostBreakdown [--requests N] [--rounds R] [--warmup W] [--dir DIR]}
 * (defaults: 2048 requests per mode, 7 rounds, 2 warm-up rounds, the system's temporary
 * directory). Put {@code --dir} on a tmpfs to take the disk's file system out of the page faults.
 */
public final class JournalCostBreakdown {

    enum Part { ENCODE, ENCODE_FAST, CRC, EXCERPTS, TINY_EXCERPTS, BATCHED, APPEND, APPEND_PRETOUCHED, APPEND_GROUPED }

    private static final int BATCH = 64;

    private final List<NodeStream> streams;
    private final NodeEvent[] inputs;
    private final Effect[][] derived;
    private final List<List<Effect>> derivedLists = new ArrayList<>();
    private final int[][] entrySizes;
    private final long bytesPerInputTotal;
    private final Path parent;
    private final ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    private long sinkHole;

    JournalCostBreakdown(List<NodeStream> streams, Path parent) throws IOException {
        this.streams = streams;
        this.parent = parent;
        List<NodeEvent> in = new ArrayList<>();
        List<Effect[]> out = new ArrayList<>();
        for (NodeStream s : streams) {
            NodeState st = s.freshState();
            List<Effect> sink = new ArrayList<>();
            for (NodeEvent e : s.events()) {
                sink.clear();
                NodeReducer.applyInto(st, e, sink);
                in.add(e);
                out.add(sink.toArray(new Effect[0]));
            }
        }
        inputs = in.toArray(new NodeEvent[0]);
        derived = out.toArray(new Effect[0][]);
        for (Effect[] d : derived) {
            derivedLists.add(List.of(d));
        }
        entrySizes = new int[inputs.length][];
        long total = 0;
        MessageBufferPacker p = MessagePack.newDefaultBufferPacker();
        for (int i = 0; i < inputs.length; i++) {
            entrySizes[i] = new int[1 + derived[i].length];
            for (int k = 0; k < entrySizes[i].length; k++) {
                p.clear();
                Object rec = k == 0 ? inputs[i] : derived[i][k - 1];
                EntryType t = k == 0 ? EntryType.of(inputs[i]) : EntryType.of(derived[i][k - 1]);
                t.write(p, rec);
                p.flush();
                // the layout-2 envelope is 32 bytes
                entrySizes[i][k] = p.getBufferSize() + 32;
                total += entrySizes[i][k];
            }
        }
        bytesPerInputTotal = total;
    }

    public static void main(String[] args) throws Exception {
        int requests = 2048;
        int rounds = 7;
        int warmup = 2;
        Path dir = Path.of(System.getProperty("java.io.tmpdir"));
        List<Part> parts = List.of(Part.values());
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--requests" -> requests = Integer.parseInt(args[++i]);
                case "--rounds" -> rounds = Integer.parseInt(args[++i]);
                case "--warmup" -> warmup = Integer.parseInt(args[++i]);
                case "--dir" -> dir = Path.of(args[++i]).toAbsolutePath();
                case "--parts" -> {
                    parts = new ArrayList<>();
                    for (String name : args[++i].split(",")) {
                        parts.add(Part.valueOf(name.trim().toUpperCase(Locale.ROOT)));
                    }
                }
                default -> {
                    System.err.println("usage: JournalCostBreakdown [--requests N] [--rounds R] [--warmup W] [--dir DIR]"
                            + " [--parts encode,append_grouped,...]");
                    System.exit(2);
                }
            }
        }
        JournalCostBreakdown b = new JournalCostBreakdown(LoopWorkload.streams(requests), dir);
        b.run(rounds, warmup, parts.toArray(new Part[0]));
    }

    void run(int rounds, int warmup, Part[] parts) throws IOException {
        int n = inputs.length;
        long entries = 0;
        for (int[] s : entrySizes) {
            entries += s.length;
        }
        System.out.printf(Locale.ROOT, "%d inputs, %d entries (%.2f per input), %.0f journaled bytes per input%n",
                n, entries, entries / (double) n, bytesPerInputTotal / (double) n);
        Map<Part, double[]> measured = new EnumMap<>(Part.class);
        for (Part p : parts) {
            measured.put(p, new double[rounds]);
        }
        for (int r = 0; r < warmup + rounds; r++) {
            StringBuilder line = new StringBuilder(r < warmup ? "warm-up " + (r + 1) : "round " + (r - warmup + 1));
            for (int k = 0; k < parts.length; k++) {
                Part p = parts[(k + r) % parts.length];
                double ns = measure(p) / (double) n;
                if (r >= warmup) {
                    measured.get(p)[r - warmup] = ns;
                }
                line.append(String.format(Locale.ROOT, "  %s %.0f", p.name().toLowerCase(Locale.ROOT), ns));
            }
            System.out.println(line.append("  (CPU ns/input)"));
        }
        System.out.println("medians (CPU ns per input):");
        for (Part p : parts) {
            System.out.printf(Locale.ROOT, "  %-14s %6.0f%n", p.name().toLowerCase(Locale.ROOT), NodeLoopRunner.median(measured.get(p)));
        }
        if (sinkHole == 42) {
            System.out.println();
        }
    }

    /** CPU ns of this thread for one pass of {@code part} over every input. */
    private long measure(Part part) throws IOException {
        return switch (part) {
            case ENCODE -> encode(false);
            case ENCODE_FAST -> encode(true);
            case CRC -> crc();
            case EXCERPTS -> chronicle(false, false);
            case TINY_EXCERPTS -> chronicle(true, false);
            case BATCHED -> chronicle(false, true);
            case APPEND -> append(false, false);
            case APPEND_PRETOUCHED -> append(true, false);
            case APPEND_GROUPED -> append(true, true);
        };
    }

    private long encode(boolean fast) throws IOException {
        MessageBufferPacker p = MessagePack.newDefaultBufferPacker();
        long t0 = mx.getCurrentThreadCpuTime();
        for (int i = 0; i < inputs.length; i++) {
            p.clear();
            EntryType t = EntryType.of(inputs[i]);
            if (!fast || !FastPayloads.write(p, inputs[i])) {
                t.write(p, inputs[i]);
            }
            for (Effect e : derived[i]) {
                EntryType te = EntryType.of(e);
                if (!fast || !FastPayloads.write(p, e)) {
                    te.write(p, e);
                }
            }
            p.flush();
        }
        long cpu = mx.getCurrentThreadCpuTime() - t0;
        sinkHole += p.getBufferSize();
        return cpu;
    }

    private long crc() {
        byte[] buf = new byte[4096];
        CRC32C c = new CRC32C();
        long t0 = mx.getCurrentThreadCpuTime();
        for (int[] sizes : entrySizes) {
            for (int s : sizes) {
                c.reset();
                c.update(buf, 0, Math.min(s, buf.length));
            }
        }
        long cpu = mx.getCurrentThreadCpuTime() - t0;
        sinkHole += c.getValue();
        return cpu;
    }

    private long chronicle(boolean tiny, boolean batched) throws IOException {
        byte[] buf = new byte[4096];
        Path d = Files.createTempDirectory(parent, "journal-cost-");
        try (SingleChronicleQueue q = SingleChronicleQueueBuilder.single(d.toFile())
                .rollCycle(io.kvledger.journal.JournalFormat.ROLL_CYCLE).build();
             ExcerptAppender a = q.createAppender()) {
            long t0 = mx.getCurrentThreadCpuTime();
            if (batched) {
                for (int i = 0; i < entrySizes.length; i += BATCH) {
                    try (DocumentContext dc = a.writingDocument()) {
                        Bytes<?> b = dc.wire().bytes();
                        for (int x = i; x < Math.min(entrySizes.length, i + BATCH); x++) {
                            for (int s : entrySizes[x]) {
                                b.writeInt(s);
                                b.write(buf, 0, Math.min(s, buf.length));
                            }
                        }
                    }
                }
            } else {
                for (int[] sizes : entrySizes) {
                    for (int s : sizes) {
                        try (DocumentContext dc = a.writingDocument()) {
                            dc.wire().bytes().write(buf, 0, tiny ? 16 : Math.min(s, buf.length));
                        }
                    }
                }
            }
            return mx.getCurrentThreadCpuTime() - t0;
        } finally {
            delete(d);
        }
    }

    /**
     * {@code appendApplied} per input, or (grouped) the journaller's way: inputs and their derived
     * entries in group excerpts of {@value #BATCH} inputs, pretouched.
     */
    private long append(boolean pretouch, boolean grouped) throws IOException {
        Path d = Files.createTempDirectory(parent, "journal-cost-");
        try (JournalWriter w = JournalWriter.open(d, JournalHeader.of("WRITE_PRODUCER", streams.getFirst().config(),
                "JournalCostBreakdown"))) {
            if (pretouch) {
                w.pretouch();
            }
            long t0 = mx.getCurrentThreadCpuTime();
            if (grouped) {
                for (int i = 0; i < inputs.length; i += BATCH) {
                    w.beginGroup();
                    for (int x = i; x < Math.min(inputs.length, i + BATCH); x++) {
                        w.appendApplied(inputs[x], derivedLists.get(x));
                    }
                    w.endGroup();
                }
            } else {
                for (int i = 0; i < inputs.length; i++) {
                    w.appendApplied(inputs[i], derivedLists.get(i));
                }
            }
            return mx.getCurrentThreadCpuTime() - t0;
        } finally {
            delete(d);
        }
    }

    private static void delete(Path d) throws IOException {
        try (Stream<Path> s = Files.walk(d)) {
            for (Path p : (Iterable<Path>) s.sorted(Comparator.reverseOrder())::iterator) {
                Files.deleteIfExists(p);
            }
        }
    }
}
