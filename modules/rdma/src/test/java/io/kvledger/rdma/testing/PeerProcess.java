package io.kvledger.rdma.testing;

import io.kvledger.rdma.EngineOptions;
import io.kvledger.rdma.FailureCode;
import io.kvledger.rdma.MemoryRegion;
import io.kvledger.rdma.OffsetBatch;
import io.kvledger.rdma.RegionDescriptor;
import io.kvledger.rdma.Result;
import io.kvledger.rdma.Session;
import io.kvledger.rdma.TransferEvent;
import io.kvledger.rdma.TransferOp;
import io.kvledger.rdma.ucx.UcxTransferEngine;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The second process of the two-process tests: a UCX engine driven by one-line commands on
 * stdin, answering one line each on stdout (logs go to stderr). It exits when stdin closes.
 *
 * <pre>
 * args: peer|none transferTimeoutMs
 * REGISTER name bytes                         -> DESC kvrd1:...
 * FILLKV region layer layerOffset kvStride blockLen blockStride ids   -> OK
 *        (K at layerOffset + id*blockStride, V at layerOffset + kvStride + id*blockStride; ids "0,1,2")
 * VERIFYKV region layer layerOffset kvStride blockLen blockStride numBlocks dstIds srcIds -> OK | BAD why
 *        (block dstIds[i] holds srcIds[i]'s pattern; every other block of the layer is zero)
 * ZERO region                                 -> OK
 * ISZERO region                               -> OK | BAD why
 * POST op region descText transferId l:r:s,l:r:s...  -> DONE ok | DONE fail code message
 * FLOOD region descText count bytes           -> POSTED (count writes of bytes from offset 0 to 0,
 *                                                not waited for: the parent kills this process mid-way)
 * STATS                                       -> STATS regions sessions endpoints inFlight
 * EXIT                                        -> BYE
 * </pre>
 */
public final class PeerProcess {

    private PeerProcess() {}

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        EngineOptions.ErrorHandling mode = EngineOptions.ErrorHandling.valueOf(args[0].toUpperCase());
        Duration timeout = Duration.ofMillis(Long.parseLong(args[1]));
        Result<UcxTransferEngine> opened = UcxTransferEngine.open(EngineOptions.defaults().withErrorHandling(mode)
                .withTransferTimeout(timeout).withName("peer"));
        if (opened.errorOrNull() != null) {
            out.println("FAILED " + opened.errorOrNull());
            return;
        }
        Map<String, MemoryRegion> regions = new HashMap<>();
        try (UcxTransferEngine engine = opened.valueOrNull();
             BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            out.println("READY " + ProcessHandle.current().pid());
            for (String line; (line = in.readLine()) != null; ) {
                String[] w = line.trim().split(" ");
                try {
                    switch (w[0]) {
                        case "REGISTER" -> {
                            MemoryRegion r = engine.register(w[1], Long.parseLong(w[2])).orElseThrow();
                            regions.put(w[1], r);
                            out.println("DESC " + r.descriptor().toText());
                        }
                        case "FILLKV" -> {
                            MemoryRegion r = regions.get(w[1]);
                            int layer = Integer.parseInt(w[2]);
                            long off = Long.parseLong(w[3]);
                            long kv = Long.parseLong(w[4]);
                            long len = Long.parseLong(w[5]);
                            long stride = Long.parseLong(w[6]);
                            for (int id : ids(w[7])) {
                                KvPattern.fill(r.segment(), off + id * stride, len, layer, id, 0);
                                KvPattern.fill(r.segment(), off + kv + id * stride, len, layer, id, 1);
                            }
                            out.println("OK");
                        }
                        case "VERIFYKV" -> out.println(verify(regions.get(w[1]), w));
                        case "ZERO" -> {
                            regions.get(w[1]).segment().fill((byte) 0);
                            out.println("OK");
                        }
                        case "ISZERO" -> {
                            MemoryRegion r = regions.get(w[1]);
                            long at = KvPattern.firstNonZero(r.segment(), 0, r.length());
                            out.println(at < 0 ? "OK" : "BAD non-zero byte at " + at);
                        }
                        case "POST" -> out.println(post(engine, regions.get(w[2]), w));
                        case "FLOOD" -> {
                            Session s = engine.openSession(regions.get(w[1]), RegionDescriptor.parse(w[2]).orElseThrow())
                                    .orElseThrow();
                            long bytes = Long.parseLong(w[4]);
                            for (int i = 0; i < Integer.parseInt(w[3]); i++) {
                                s.write(1_000_000 + i, OffsetBatch.single(0, 0, bytes)).orElseThrow();
                            }
                            out.println("POSTED");
                        }
                        case "STATS" -> {
                            var s = engine.stats();
                            out.println("STATS " + s.regions() + " " + s.sessions() + " " + s.endpoints() + " "
                                    + s.inFlight());
                        }
                        case "EXIT" -> {
                            out.println("BYE");
                            return;
                        }
                        default -> out.println("ERROR unknown command " + w[0]);
                    }
                } catch (RuntimeException e) {
                    out.println("ERROR " + e);
                }
            }
        }
    }

    static int[] ids(String csv) {
        return csv.isEmpty() ? new int[0] : Arrays.stream(csv.split(",")).mapToInt(Integer::parseInt).toArray();
    }

    private static String verify(MemoryRegion r, String[] w) {
        int layer = Integer.parseInt(w[2]);
        long off = Long.parseLong(w[3]);
        long kv = Long.parseLong(w[4]);
        long len = Long.parseLong(w[5]);
        long stride = Long.parseLong(w[6]);
        int numBlocks = Integer.parseInt(w[7]);
        int[] dst = ids(w[8]);
        int[] src = ids(w[9]);
        Map<Integer, Integer> expected = new HashMap<>();
        for (int i = 0; i < dst.length; i++) {
            expected.put(dst[i], src[i]);
        }
        for (int block = 0; block < numBlocks; block++) {
            for (int plane = 0; plane < 2; plane++) {
                long at = off + (plane == 1 ? kv : 0) + block * stride;
                Integer from = expected.get(block);
                long bad = from == null ? KvPattern.firstNonZero(r.segment(), at, len)
                        : KvPattern.firstMismatch(r.segment(), at, len, layer, from, plane);
                if (bad >= 0) {
                    return "BAD layer " + layer + " block " + block + " plane " + plane + " byte " + bad
                            + (from == null ? " should be untouched" : " should hold block " + from);
                }
            }
        }
        return "OK";
    }

    private static String post(UcxTransferEngine engine, MemoryRegion local, String[] w) {
        TransferOp op = TransferOp.valueOf(w[1]);
        RegionDescriptor d = RegionDescriptor.parse(w[3]).orElseThrow();
        long id = Long.parseLong(w[4]);
        String[] entries = w.length > 5 ? w[5].split(",") : new String[0];
        long[] l = new long[entries.length];
        long[] r = new long[entries.length];
        long[] s = new long[entries.length];
        for (int i = 0; i < entries.length; i++) {
            String[] e = entries[i].split(":");
            l[i] = Long.parseLong(e[0]);
            r[i] = Long.parseLong(e[1]);
            s[i] = Long.parseLong(e[2]);
        }
        Session session = engine.openSession(local, d).orElseThrow();
        try {
            Result<io.kvledger.rdma.PendingTransfer> p = session.post(id, op, OffsetBatch.of(l, r, s));
            if (p.errorOrNull() != null) {
                return "DONE refused " + p.errorOrNull().code().code() + " " + p.errorOrNull().message();
            }
            TransferEvent e = p.valueOrNull().future().get(engine.options().transferTimeout().toMillis() * 2,
                    TimeUnit.MILLISECONDS);
            return e.succeeded() ? "DONE ok" : "DONE fail " + e.code() + " " + FailureCode.ofCode(e.code()) + " "
                    + e.message();
        } catch (Exception e) {
            return "DONE fail -1 " + e;
        } finally {
            session.close();
        }
    }
}
