package io.kvledger.rdma.testing;

import io.kvledger.rdma.EngineOptions;
import io.kvledger.rdma.ucx.Ucx;
import io.kvledger.rdma.ucx.UcxTransferEngine;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

/**
 * Child JVM of the signal-trap test: loads UCX one way, then takes implicit null checks in
 * C2-compiled code (each is a SIGSEGV the JVM turns into a NullPointerException) and prints
 * {@code SURVIVED} if the JVM lived through them.
 *
 * <pre>
 * args: engine   load through Ucx.load() and open an engine (UCX_ERROR_SIGNALS cleared first)
 *       raw      open libucp directly, leaving UCX's signal handlers in place (must crash)
 * </pre>
 */
public final class NullCheckChild {

    static final class Box {
        int value;
    }

    private NullCheckChild() {}

    static int read(Box b) {
        return b.value;
    }

    @SuppressWarnings("restricted")
    public static void main(String[] args) throws Throwable {
        if (args[0].equals("engine")) {
            Ucx.Availability a = Ucx.load();
            if (!a.loaded()) {
                System.out.println("NO-UCX " + a.detail());
                return;
            }
            try (UcxTransferEngine e = UcxTransferEngine.open(EngineOptions.defaults().withName("nullcheck")).orElseThrow()) {
                System.out.println("UCX_ERROR_SIGNALS='" + Ucx.Libc.getenv("UCX_ERROR_SIGNALS") + "' " + e.describe());
                System.out.println(takeNullChecks());
            }
        } else {
            // what the engine must never do: UCX loaded and initialised with its handlers in place
            SymbolLookup ucp = SymbolLookup.libraryLookup(Ucx.LIBRARY, Arena.global());
            Linker linker = Linker.nativeLinker();
            MethodHandle read = linker.downcallHandle(ucp.find("ucp_config_read").orElseThrow(),
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
            MethodHandle init = linker.downcallHandle(ucp.find("ucp_init_version").orElseThrow(),
                    FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
            try (Arena a = Arena.ofConfined()) {
                MemorySegment cfg = a.allocate(ADDRESS);
                int st = (int) read.invokeExact(MemorySegment.NULL, MemorySegment.NULL, cfg);
                MemorySegment params = a.allocate(80);
                params.set(JAVA_LONG, 0, 1L);  // field_mask = FEATURES
                params.set(JAVA_LONG, 8, 2L);  // features = RMA
                MemorySegment ctx = a.allocate(ADDRESS);
                int st2 = (int) init.invokeExact(1, 13, params, cfg.get(ADDRESS, 0), ctx);
                System.out.println("raw ucp_config_read " + st + " ucp_init " + st2);
            }
            System.out.println(takeNullChecks());
        }
    }

    static String takeNullChecks() {
        Box box = new Box();
        box.value = 1;
        long sum = 0;
        for (int i = 0; i < 3_000_000; i++) {
            sum += read(box);
        }
        int npes = 0;
        for (int i = 0; i < 10_000; i++) {
            try {
                sum += read(i % 100 == 0 ? null : box);
            } catch (NullPointerException e) {
                npes++;
            }
        }
        return "SURVIVED " + npes + " null checks, sum " + sum;
    }
}
