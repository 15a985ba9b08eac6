package io.kvledger.bench;

import io.kvledger.rdma.EngineOptions;
import io.kvledger.rdma.MemoryRegion;
import io.kvledger.rdma.OffsetBatch;
import io.kvledger.rdma.PendingTransfer;
import io.kvledger.rdma.RegionDescriptor;
import io.kvledger.rdma.Result;
import io.kvledger.rdma.Session;
import io.kvledger.rdma.TransferEngine;
import io.kvledger.rdma.TransferEvent;
import io.kvledger.rdma.TransferOp;
import io.kvledger.rdma.jvm.InJvmTransferEngine;
import io.kvledger.rdma.ucx.Ucx;
import io.kvledger.rdma.ucx.UcxTransferEngine;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;

/**
 * Question: how close do the transfer engines come to the machine's copy limit?
 *
 * <p>One run measures, for transfers of 4 KiB, 64 KiB, 1 MiB and 64 MiB: single-thread C
 * {@code memcpy} ({@code native/memcpy_bench}), a bare {@link MemorySegment#copy} loop, the
 * in-JVM engine, the UCX engine with two engines in this JVM, the UCX engine between this JVM and
 * a second one it starts, and the plain C loop of UCX put/get ({@code native/ucx_bench}), in both
 * UCX error-handling modes. Every case walks a 64 MiB region transfer by transfer (offset
 * {@code i·size mod region}), with at most {@code window} (16) one-entry batches in flight, in
 * rounds of at least 512 MiB; the first round warms up, the median of the next five is reported
 * in GB/s (1e9 bytes/s). Data is checked after each case (CRC-32C of source and destination).
 *
 * <p>Per-transfer overhead at 4 KiB is the time per 4 KiB transfer minus 4096 bytes at the
 * case's own 64 MiB bandwidth; the one-in-flight latency (post to completion event) is printed too.
 *
 * <pre>
 * java --enable-native-access=ALL-UNNAMED -cp benchmarks/target/benchmarks.jar \
 *      io.kvledger.bench.TransferBandwidthRunner [--rounds 5] [--round-mib 512] [--window 16] [--quick]
 *      [--in-jvm-only]   (C memcpy, MemorySegment.copy and the in-JVM engine only)
 *      [--shm-only]      (no rows with peer error handling)
 *      [--inline-max BYTES] [--pairs N] [--spin-us N]
 * </pre>
 * Run it from the repository root: it builds {@code native/} with {@code native/build.sh} into
 * {@code benchmarks/target/native} (C rows are skipped with a note when gcc or the UCX headers
 * are missing, UCX rows when libucp does not load).
 */
public final class TransferBandwidthRunner {

    static final long[] SIZES = {4096, 64 << 10, 1 << 20, 64 << 20};
    static final long REGION = 64L << 20;
    /** Default spin of {@link #await} before it parks; {@code --spin-us} changes it. */
    static final long SPIN_NS = 20_000;
    static long spinNs = SPIN_NS;
    /** Entries of the batched small-block case. */
    static final int LAYER_ENTRIES = 16;

    int rounds = 5;
    int pairs = 21;
    long perRound = 256L << 20;
    int window = 16;
    boolean inJvmOnly;
    boolean shmOnly;
    long inlineMax = EngineOptions.DEFAULT_INLINE_COPY_MAX_BYTES;
    final Map<String, double[]> rows = new LinkedHashMap<>();
    final Map<String, Double> latencyUs = new LinkedHashMap<>();
    final Map<String, Double> chainedUs = new LinkedHashMap<>();
    final List<String> notes = new ArrayList<>();
    /** Paired-round ratios per case: {write, read} per row of {@link #pairedLabels()}. */
    final Map<String, double[][]> paired = new LinkedHashMap<>();
    private long nextId = 1;

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("--peer")) {
            peer(args);
            return;
        }
        TransferBandwidthRunner r = new TransferBandwidthRunner();
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--rounds" -> r.rounds = Integer.parseInt(args[++i]);
                case "--round-mib" -> r.perRound = Long.parseLong(args[++i]) << 20;
                case "--window" -> r.window = Integer.parseInt(args[++i]);
                case "--in-jvm-only" -> r.inJvmOnly = true;
                case "--shm-only" -> r.shmOnly = true;
                case "--pairs" -> r.pairs = Integer.parseInt(args[++i]);
                case "--spin-us" -> spinNs = Long.parseLong(args[++i]) * 1000;
                case "--inline-max" -> r.inlineMax = Long.parseLong(args[++i]);
                case "--quick" -> {
                    r.rounds = 3;
                    r.perRound = 128L << 20;
                }
                default -> {
                    System.err.println("usage: TransferBandwidthRunner [--rounds N] [--round-mib N] [--window N] [--quick] [--in-jvm-only] [--shm-only] [--inline-max BYTES] [--pairs N] [--spin-us N]");
                    System.exit(2);
                }
            }
        }
        if (r.rounds < 1 || r.pairs < 1 || r.perRound < REGION || r.window < 1) {
            System.err.println("rounds, pairs and window must be positive, --round-mib at least 64");
            System.exit(2);
        }
        r.run();
    }

    static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).strip();
        } catch (IOException | RuntimeException e) {
            return "unknown";
        }
    }

    void run() throws Exception {
        System.out.printf("# transfer bandwidth, %s, %d cores, %s; window %d, rounds of %d MiB, median of %d; "
                        + "load average %s%n", LocalDate.now(), Runtime.getRuntime().availableProcessors(),
                System.getProperty("java.vm.version"), window, perRound >> 20, rounds, loadAverage());
        Path nativeBin = buildNative();
        if (nativeBin != null && Files.isExecutable(nativeBin.resolve("memcpy_bench"))) {
            cRow("C memcpy (1 thread)", nativeBin.resolve("memcpy_bench").toString(), List.of(), "memcpy");
        }
        segmentCopy();
        try (TransferEngine a = InJvmTransferEngine.open(opts("a", EngineOptions.ErrorHandling.PEER)
                .withInlineCopyMaxBytes(inlineMax));
             TransferEngine b = InJvmTransferEngine.open(opts("b", EngineOptions.ErrorHandling.PEER)
                .withInlineCopyMaxBytes(inlineMax))) {
            inProcess("in-JVM engine", a, b);
        }
        Ucx.Availability ucx = Ucx.load();
        if (inJvmOnly) {
            notes.add("UCX rows skipped: --in-jvm-only");
        } else if (!ucx.loaded()) {
            notes.add("UCX rows skipped: " + ucx.detail());
        } else {
            // AUTO, the default, is NONE between processes of one host: the two explicit modes cover it
            List<EngineOptions.ErrorHandling> modes = shmOnly ? List.of(EngineOptions.ErrorHandling.NONE)
                    : List.of(EngineOptions.ErrorHandling.PEER, EngineOptions.ErrorHandling.NONE);
            for (EngineOptions.ErrorHandling mode : modes) {
                String m = mode == EngineOptions.ErrorHandling.NONE ? "shm (err-mode none = auto)"
                        : "posix shm (err-mode peer)";
                // the C loop keeps UCX's defaults: with peer error handling that is tcp on lo
                String cm = mode == EngineOptions.ErrorHandling.NONE ? m : "tcp lo (err-mode peer)";
                try (TransferEngine a = UcxTransferEngine.open(opts("a", mode)).orElseThrow();
                     TransferEngine b = UcxTransferEngine.open(opts("b", mode)).orElseThrow()) {
                    inProcess("UCX engine, 1 process, " + m, a, b);
                }
                twoProcess("UCX engine, 2 processes, " + m, mode);
                if (nativeBin != null && Files.isExecutable(nativeBin.resolve("ucx_bench"))) {
                    String em = mode.name().toLowerCase(Locale.ROOT);
                    cRow("C UCX loop, 1 process, " + cm, nativeBin.resolve("ucx_bench").toString(),
                            List.of("--procs", "1", "--err-mode", em, "--window", Integer.toString(window)), "ucx-");
                    cRow("C UCX loop, 2 processes, " + cm, nativeBin.resolve("ucx_bench").toString(),
                            List.of("--procs", "2", "--err-mode", em, "--window", Integer.toString(window)), "ucx-");
                }
            }
        }
        print();
    }

    EngineOptions opts(String name, EngineOptions.ErrorHandling mode) {
        return EngineOptions.defaults().withName(name).withErrorHandling(mode).withTransferTimeout(Duration.ofSeconds(60));
    }

    // ------------------------------------------------------------------ C baselines

    Path buildNative() throws IOException, InterruptedException {
        Path script = Path.of("native", "build.sh");
        if (!Files.exists(script)) {
            notes.add("C rows skipped: run from the repository root (native/build.sh not found)");
            return null;
        }
        Path out = Path.of("benchmarks", "target", "native");
        Process p = new ProcessBuilder("bash", script.toString(), out.toString()).redirectErrorStream(true).start();
        String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        p.waitFor();
        System.out.println("# " + log.replace("\n", "\n# "));
        if (log.contains("skipped")) {
            notes.add(log);
        }
        return p.exitValue() == 0 ? out : null;
    }

    /** Runs a C baseline and files its lines ("<label> <size> <median> <min> <max>") as rows. */
    void cRow(String name, String binary, List<String> flags, String labelPrefix) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(binary);
        cmd.addAll(flags);
        cmd.add(Long.toString(REGION));
        cmd.add(Long.toString(perRound));
        cmd.add(Integer.toString(rounds));
        for (long s : SIZES) {
            cmd.add(Long.toString(s));
        }
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        List<String> out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).lines().toList();
        if (!p.waitFor(600, TimeUnit.SECONDS) || p.exitValue() != 0) {
            notes.add(name + " failed: " + String.join(" | ", out));
            return;
        }
        Map<String, double[]> byLabel = new LinkedHashMap<>();
        for (String line : out) {
            String[] w = line.trim().split("\\s+");
            if (w.length < 3 || !w[0].startsWith(labelPrefix)) {
                continue;
            }
            int idx = Arrays.binarySearch(SIZES, Long.parseLong(w[1]));
            if (idx >= 0) {
                byLabel.computeIfAbsent(w[0], k -> new double[SIZES.length])[idx] = Double.parseDouble(w[2]);
            }
        }
        for (var e : byLabel.entrySet()) {
            String op = e.getKey().contains("-get-") ? "get" : e.getKey().contains("-put-") ? "put" : null;
            rows.put(op == null ? name : name + " " + op, e.getValue());
        }
    }

    // ------------------------------------------------------------------ Java cases

    static void pattern(MemorySegment s) {
        for (long i = 0; i < s.byteSize(); i += 8) {
            s.set(ValueLayout.JAVA_LONG_UNALIGNED, i, i * 0x9E3779B97F4A7C15L);
        }
    }

    static long crc(MemorySegment s) {
        CRC32C c = new CRC32C();
        c.update(s.asByteBuffer());
        return c.getValue();
    }

    void segmentCopy() {
        double[] med = new double[SIZES.length];
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment src = arena.allocate(REGION, 4096);
            MemorySegment dst = arena.allocate(REGION, 4096);
            pattern(src);
            for (int si = 0; si < SIZES.length; si++) {
                double[] r = new double[rounds];
                for (int round = -1; round < rounds; round++) {
                    double gbs = copyRound(src, dst, SIZES[si], 1);
                    if (round >= 0) {
                        r[round] = gbs;
                    }
                }
                check(dst.mismatch(src) == -1, "MemorySegment.copy " + SIZES[si]);
                med[si] = median(r);
            }
        }
        rows.put("MemorySegment.copy (1 thread)", med);
    }

    /**
     * One round of the bare loop: {@code perRound} bytes as copies of {@code size} bytes walking
     * the region, in groups of {@code entries} (the shape of an engine batch); GB/s.
     */
    double copyRound(MemorySegment src, MemorySegment dst, long size, int entries) {
        long blocks = REGION / size;
        long n = Math.max(entries, perRound / size) / entries * entries;
        long t0 = System.nanoTime();
        for (long i = 0; i < n; i++) {
            long off = (i % blocks) * size;
            MemorySegment.copy(src, off, dst, off, size);
        }
        return (double) n * size / (System.nanoTime() - t0);
    }

    void inProcess(String name, TransferEngine a, TransferEngine b) throws InterruptedException {
        MemoryRegion ra = a.register("bench-a", REGION).orElseThrow();
        MemoryRegion rb = b.register("bench-b", REGION).orElseThrow();
        Session s = a.openSession(ra, rb.descriptor()).orElseThrow();
        pattern(ra.segment());
        double[] w = sweep(s, TransferOp.WRITE);
        check(rb.segment().mismatch(ra.segment()) == -1, name + " write: destination differs");
        rows.put(name + " write", w);
        rb.segment().fill((byte) 0);
        pattern(rb.segment());
        ra.segment().fill((byte) 0);
        double[] r = sweep(s, TransferOp.READ);
        check(rb.segment().mismatch(ra.segment()) == -1, name + " read: destination differs");
        rows.put(name + " read", r);
        if (a instanceof InJvmTransferEngine) {
            paired(name, s, ra.segment(), rb.segment());
            check(rb.segment().mismatch(ra.segment()) == -1, name + " paired rounds: regions differ");
        }
        latencyUs.put(name, latency(s));
        chainedUs.put(name, chained(a, s));
        s.close();
    }

    void twoProcess(String name, EngineOptions.ErrorHandling mode) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), TransferBandwidthRunner.class.getName(),
                "--peer", mode.name(), Long.toString(REGION)));
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        PrintStream in = new PrintStream(p.getOutputStream(), true, StandardCharsets.UTF_8);
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        try (TransferEngine a = UcxTransferEngine.open(opts("a", mode)).orElseThrow()) {
            String d = out.readLine();
            check(d != null && d.startsWith("DESC "), "peer did not start: " + d);
            RegionDescriptor remote = RegionDescriptor.parse(d.substring(5)).orElseThrow();
            MemoryRegion ra = a.register("bench-a", REGION).orElseThrow();
            Session s = a.openSession(ra, remote).orElseThrow();
            pattern(ra.segment());
            double[] w = sweep(s, TransferOp.WRITE);
            in.println("CRC");
            check(Long.parseLong(out.readLine()) == crc(ra.segment()), name + " write: peer region differs");
            rows.put(name + " write", w);
            in.println("FILL");
            check("OK".equals(out.readLine()), "peer fill");
            ra.segment().fill((byte) 0);
            double[] r = sweep(s, TransferOp.READ);
            in.println("CRC");
            check(Long.parseLong(out.readLine()) == crc(ra.segment()), name + " read: local region differs");
            if (mode == EngineOptions.ErrorHandling.NONE) {
                try (Arena scratchArena = Arena.ofConfined()) {
                    // the bare loop copies between the local region and a scratch segment holding the same bytes
                    MemorySegment scratch = scratchArena.allocate(REGION, 4096);
                    pattern(scratch);
                    paired(name, s, ra.segment(), scratch);
                }
                in.println("CRC");
                check(Long.parseLong(out.readLine()) == crc(ra.segment()), name + " paired rounds: regions differ");
            }
            rows.put(name + " read", r);
            latencyUs.put(name, latency(s));
            chainedUs.put(name, chained(a, s));
            s.close();
        } finally {
            in.println("EXIT");
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
            }
        }
    }

    double[] sweep(Session s, TransferOp op) {
        double[] med = new double[SIZES.length];
        for (int si = 0; si < SIZES.length; si++) {
            med[si] = median(rounds(s, op, SIZES[si], window));
        }
        return med;
    }

    double[] rounds(Session s, TransferOp op, long size, int w) {
        double[] r = new double[rounds];
        for (int round = -1; round < rounds; round++) {
            double gbs = engineRound(s, op, size, 1, w);
            if (round >= 0) {
                r[round] = gbs;
            }
        }
        return r;
    }

    /**
     * One round through an engine: {@code perRound} bytes in batches of {@code entries} entries of
     * {@code size} bytes walking the region, at most {@code w} batches in flight; GB/s.
     */
    double engineRound(Session s, TransferOp op, long size, int entries, int w) {
        long blocks = REGION / size;
        long n = Math.max(entries, perRound / size) / entries;
        @SuppressWarnings("unchecked")
        CompletableFuture<TransferEvent>[] ring = new CompletableFuture[w];
        long[] l = new long[entries];
        long[] sz = new long[entries];
        Arrays.fill(sz, size);
        long block = 0;
        long t0 = System.nanoTime();
        for (long i = 0; i < n; i++) {
            int slot = (int) (i % w);
            if (ring[slot] != null) {
                await(ring[slot]);
            }
            OffsetBatch batch;
            if (entries == 1) {
                long off = (block++ % blocks) * size;
                batch = OffsetBatch.single(off, off, size);
            } else {
                for (int k = 0; k < entries; k++) {
                    l[k] = (block++ % blocks) * size;
                }
                batch = OffsetBatch.of(l, l, sz);
            }
            ring[slot] = s.post(nextId++, op, batch).orElseThrow().future();
        }
        for (int k = 0; k < w; k++) {
            if (ring[k] != null) {
                await(ring[k]);
            }
        }
        return (double) n * entries * size / (System.nanoTime() - t0);
    }

    /**
     * An engine against a bare {@link MemorySegment#copy} loop on this thread, round by round,
     * so that both see the same moment of a noisy shared machine: the median of the per-round
     * ratios, for one-entry batches of each size and for batches of {@link #LAYER_ENTRIES} 4 KiB
     * entries (a layer's blocks, as MoRIIO posts them). The bare loop copies {@code local} to
     * {@code other} for writes and back for reads; both hold the same bytes.
     *
     * <p>Each round also runs the control {@link CopyLoop}: this runner's own post/await loop
     * around the same bare copy, without an engine. Rounds go engine, bare, control, then control,
     * bare, engine. Three rows per engine: engine / bare, control / bare (what the runner's loop
     * alone costs against the tight loop) and engine / control (the engine's own cost).
     */
    void paired(String name, Session s, MemorySegment local, MemorySegment other) {
        double[][] engineBare = new double[SIZES.length + 1][];
        double[][] loopBare = new double[SIZES.length + 1][];
        double[][] engineLoop = new double[SIZES.length + 1][];
        CopyLoop loop = new CopyLoop(local, other);
        for (int si = 0; si <= SIZES.length; si++) {
            long size = si < SIZES.length ? SIZES[si] : 4096;
            int entries = si < SIZES.length ? 1 : LAYER_ENTRIES;
            double[][] wr = new double[3][pairs];
            double[][] rd = new double[3][pairs];
            for (int round = -1; round < pairs; round++) {
                double[] w = triple(round, () -> engineRound(s, TransferOp.WRITE, size, entries, window),
                        () -> copyRound(local, other, size, entries),
                        () -> loopRound(loop, TransferOp.WRITE, size, entries, window));
                double[] r = triple(round, () -> engineRound(s, TransferOp.READ, size, entries, window),
                        () -> copyRound(other, local, size, entries),
                        () -> loopRound(loop, TransferOp.READ, size, entries, window));
                if (round >= 0) {
                    for (int k = 0; k < 3; k++) {
                        wr[k][round] = w[k];
                        rd[k][round] = r[k];
                    }
                }
            }
            engineBare[si] = new double[] {median(wr[0]), median(rd[0])};
            loopBare[si] = new double[] {median(wr[1]), median(rd[1])};
            engineLoop[si] = new double[] {median(wr[2]), median(rd[2])};
        }
        paired.put(name, engineBare);
        paired.put(name + ": control, the runner's post/await loop around a bare copy, no engine", loopBare);
        paired.put(name + " / that control", engineLoop);
    }

    /**
     * One round each of engine, bare loop and control, in the order engine, bare, control on even
     * rounds and control, bare, engine on odd ones: {engine / bare, control / bare, engine / control}.
     */
    static double[] triple(int round, java.util.function.DoubleSupplier engine, java.util.function.DoubleSupplier bare,
                           java.util.function.DoubleSupplier control) {
        double e;
        double b;
        double c;
        if ((round & 1) == 0) {
            e = engine.getAsDouble();
            b = bare.getAsDouble();
            c = control.getAsDouble();
        } else {
            c = control.getAsDouble();
            b = bare.getAsDouble();
            e = engine.getAsDouble();
        }
        return new double[] {e / b, c / b, e / c};
    }

    /**
     * The control of the paired rounds: what {@link #engineRound} does around each batch (an
     * {@link OffsetBatch} per batch, a handle with a future, the window of futures, the await)
     * with a bare {@link MemorySegment#copy} on the posting thread in place of an engine: no id
     * check, no clock read, no event on a flux. Its handle's event carries no timestamps.
     */
    static final class CopyLoop {
        private final MemorySegment local;
        private final MemorySegment other;

        CopyLoop(MemorySegment local, MemorySegment other) {
            this.local = local;
            this.other = other;
        }

        Result<PendingTransfer> post(long id, TransferOp op, OffsetBatch b) {
            for (int i = 0; i < b.size(); i++) {
                if (op == TransferOp.WRITE) {
                    MemorySegment.copy(local, b.localOffset(i), other, b.remoteOffset(i), b.sizeBytes(i));
                } else {
                    MemorySegment.copy(other, b.remoteOffset(i), local, b.localOffset(i), b.sizeBytes(i));
                }
            }
            TransferEvent e = new TransferEvent.Succeeded(id, 0, op, b.size(), b.totalBytes(), 0);
            return Result.ok(new PendingTransfer(id, op, CompletableFuture.completedFuture(e)));
        }
    }

    /**
     * {@link #engineRound} with the {@link CopyLoop} control in place of a session: the same body,
     * its own call site, so that the engine rows' call site sees only engine sessions.
     */
    double loopRound(CopyLoop c, TransferOp op, long size, int entries, int w) {
        long blocks = REGION / size;
        long n = Math.max(entries, perRound / size) / entries;
        @SuppressWarnings("unchecked")
        CompletableFuture<TransferEvent>[] ring = new CompletableFuture[w];
        long[] l = new long[entries];
        long[] sz = new long[entries];
        Arrays.fill(sz, size);
        long block = 0;
        long t0 = System.nanoTime();
        for (long i = 0; i < n; i++) {
            int slot = (int) (i % w);
            if (ring[slot] != null) {
                await(ring[slot]);
            }
            OffsetBatch batch;
            if (entries == 1) {
                long off = (block++ % blocks) * size;
                batch = OffsetBatch.single(off, off, size);
            } else {
                for (int k = 0; k < entries; k++) {
                    l[k] = (block++ % blocks) * size;
                }
                batch = OffsetBatch.of(l, l, sz);
            }
            ring[slot] = c.post(nextId++, op, batch).orElseThrow().future();
        }
        for (int k = 0; k < w; k++) {
            if (ring[k] != null) {
                await(ring[k]);
            }
        }
        return (double) n * entries * size / (System.nanoTime() - t0);
    }

    /** Row labels of the paired table: the sizes, then the batched case. */
    static String[] pairedLabels() {
        String[] labels = new String[SIZES.length + 1];
        for (int i = 0; i < SIZES.length; i++) {
            labels[i] = sizeLabel(SIZES[i]);
        }
        labels[SIZES.length] = LAYER_ENTRIES + " x 4 KiB";
        return labels;
    }

    static String sizeLabel(long s) {
        return s >= 1 << 20 ? (s >> 20) + " MiB" : (s >> 10) + " KiB";
    }

    /**
     * Microseconds per 4 KiB transfer when each completion posts the next one from the engine's
     * own thread (a {@code completions()} subscriber), {@code window} in flight: the engine's cost
     * without a second thread in the loop. Median of the rounds.
     */
    double chained(TransferEngine engine, Session s) throws InterruptedException {
        long size = 4096;
        long n = Math.max(4 * window, perRound / size / 4);
        double[] us = new double[rounds];
        for (int round = -1; round < rounds; round++) {
            long base = nextId;
            nextId += n + window;
            java.util.concurrent.atomic.AtomicLong next = new java.util.concurrent.atomic.AtomicLong();
            java.util.concurrent.atomic.AtomicLong done = new java.util.concurrent.atomic.AtomicLong();
            java.util.concurrent.atomic.AtomicReference<TransferEvent> failure = new java.util.concurrent.atomic.AtomicReference<>();
            java.util.concurrent.CountDownLatch finished = new java.util.concurrent.CountDownLatch(1);
            long blocks = REGION / size;
            var sub = engine.completions().filter(e -> e.transferId() >= base && e.transferId() < base + n).subscribe(e -> {
                if (!e.succeeded()) {
                    failure.set(e);
                }
                long i = next.getAndIncrement();
                if (i < n) {
                    s.post(base + i, TransferOp.WRITE, OffsetBatch.single((i % blocks) * size, (i % blocks) * size, size));
                }
                if (done.incrementAndGet() == n) {
                    finished.countDown();
                }
            });
            long t0 = System.nanoTime();
            for (int k = 0; k < window; k++) {
                long i = next.getAndIncrement();
                s.post(base + i, TransferOp.WRITE, OffsetBatch.single((i % blocks) * size, (i % blocks) * size, size));
            }
            check(finished.await(120, TimeUnit.SECONDS), "chained transfers finished");
            long dt = System.nanoTime() - t0;
            sub.dispose();
            check(failure.get() == null, "chained transfer failed: " + failure.get());
            if (round >= 0) {
                us[round] = dt / 1e3 / n;
            }
        }
        return median(us);
    }

    /** Median microseconds from post to completion with one 4 KiB batch in flight. */
    double latency(Session s) {
        int n = 20_000;
        double[] us = new double[n];
        for (int i = -2000; i < n; i++) {
            long t0 = System.nanoTime();
            CompletableFuture<TransferEvent> f = s.post(nextId++, TransferOp.WRITE, OffsetBatch.single(0, 0, 4096))
                    .orElseThrow().future();
            await(f);
            if (i >= 0) {
                us[i] = (System.nanoTime() - t0) / 1e3;
            }
        }
        return median(us);
    }

    /**
     * Waits for a completion as a node's event loop would: a short spin (up to {@link #SPIN_NS},
     * enough for a 4 KiB transfer, so a quick completion is not paid with a thread wake-up),
     * then it parks and the engine thread wakes it. A longer spin would take a core from the
     * engine threads on a small machine.
     */
    static void await(CompletableFuture<TransferEvent> f) {
        if (!f.isDone()) {
            long until = System.nanoTime() + spinNs;
            while (!f.isDone() && System.nanoTime() - until < 0) {
                Thread.onSpinWait();
            }
        }
        TransferEvent e = f.join();
        if (!e.succeeded()) {
            throw new IllegalStateException("transfer failed: " + e);
        }
    }

    static double median(double[] v) {
        double[] c = v.clone();
        Arrays.sort(c);
        return c[c.length / 2];
    }

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException("check failed: " + what);
        }
    }

    // ------------------------------------------------------------------ report

    void print() {
        StringBuilder sb = new StringBuilder();
        sb.append("\n| case (GB/s, median) |");
        for (long s : SIZES) {
            sb.append(' ').append(sizeLabel(s)).append(" |");
        }
        sb.append("\n|---|");
        sb.append("---:|".repeat(SIZES.length)).append('\n');
        for (var e : rows.entrySet()) {
            sb.append("| ").append(e.getKey()).append(" |");
            for (double v : e.getValue()) {
                sb.append(String.format(Locale.ROOT, " %.2f |", v));
            }
            sb.append('\n');
        }
        System.out.print(sb);
        double[] memcpy = rows.get("C memcpy (1 thread)");
        double[] seg = rows.get("MemorySegment.copy (1 thread)");
        System.out.println("\nratios and per-transfer cost:");
        for (var e : rows.entrySet()) {
            String k = e.getKey();
            double[] v = e.getValue();
            if (k.startsWith("UCX engine, 2 processes") && memcpy != null) {
                System.out.printf(Locale.ROOT, "  %s: %.0f%% of C memcpy at 1 MiB, %.0f%% at 64 MiB (target >= 70%%)%n",
                        k, 100 * v[2] / memcpy[2], 100 * v[3] / memcpy[3]);
            }
            if (k.startsWith("in-JVM engine") && seg != null) {
                System.out.printf(Locale.ROOT, "  %s: %.0f%% / %.0f%% / %.0f%% / %.0f%% of MemorySegment.copy at 4K/64K/1M/64M "
                        + "(target >= 90%%)%n", k, 100 * v[0] / seg[0], 100 * v[1] / seg[1], 100 * v[2] / seg[2],
                        100 * v[3] / seg[3]);
            }
            if (k.contains("engine")) {
                double perTransferNs = 4096 / v[0];
                double overheadNs = perTransferNs - 4096 / v[3];
                System.out.printf(Locale.ROOT, "  %s: %.2f us per 4 KiB transfer, overhead %.2f us (target < 5 us)%n",
                        k, perTransferNs / 1e3, overheadNs / 1e3);
            }
        }
        for (var e : chainedUs.entrySet()) {
            System.out.printf(Locale.ROOT, "  %s: %.2f us per 4 KiB write when completions post the next one "
                    + "(engine thread, %d in flight)%n", e.getKey(), e.getValue(), window);
        }
        for (var e : latencyUs.entrySet()) {
            System.out.printf(Locale.ROOT, "  %s: one 4 KiB write in flight, post to completion %.1f us (median)%n",
                    e.getKey(), e.getValue());
        }
        if (!paired.isEmpty()) {
            String[] labels = pairedLabels();
            System.out.println("\nengine / MemorySegment.copy in paired rounds (median of " + pairs
                    + " per-round ratios; targets: in-JVM >= 90 %, UCX between processes >= 70 % at >= 1 MiB),"
                    + " with the control loop (see paired()) against both:");
            StringBuilder t = new StringBuilder("| case, write / read |");
            for (String l : labels) {
                t.append(' ').append(l).append(" |");
            }
            t.append("\n|---|").append("---:|".repeat(labels.length)).append('\n');
            for (var e : paired.entrySet()) {
                t.append("| ").append(e.getKey()).append(" |");
                for (double[] wr : e.getValue()) {
                    t.append(String.format(Locale.ROOT, " %.0f %% / %.0f %% |", 100 * wr[0], 100 * wr[1]));
                }
                t.append('\n');
            }
            System.out.print(t);
        }
        for (String n : notes) {
            System.out.println("  note: " + n);
        }
        System.out.println("# load average at the end: " + loadAverage());
    }

    // ------------------------------------------------------------------ the second process

    /** {@code --peer MODE BYTES}: registers one region, prints its descriptor, answers CRC/FILL/EXIT. */
    static void peer(String[] args) throws Exception {
        EngineOptions.ErrorHandling mode = EngineOptions.ErrorHandling.valueOf(args[1]);
        long bytes = Long.parseLong(args[2]);
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        try (TransferEngine e = UcxTransferEngine.open(EngineOptions.defaults().withName("peer").withErrorHandling(mode)
                .withTransferTimeout(Duration.ofSeconds(60))).orElseThrow();
             BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            MemoryRegion r = e.register("bench-peer", bytes).orElseThrow();
            out.println("DESC " + r.descriptor().toText());
            for (String line; (line = in.readLine()) != null; ) {
                switch (line.trim()) {
                    case "CRC" -> out.println(crc(r.segment()));
                    case "FILL" -> {
                        pattern(r.segment());
                        out.println("OK");
                    }
                    case "EXIT" -> {
                        return;
                    }
                    default -> out.println("ERROR " + line);
                }
            }
        }
    }
}
