package io.kvledger.rdma.ucx;

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
 * Hand-written Panama bindings to the parts of libucp/libucs the engine uses (no jextract):
 * about 25 downcalls, each a static method that takes and returns what the C function does.
 *
 * <p><b>Load order matters.</b> libucs installs its own SIGSEGV/SIGBUS handlers when it loads
 * (controlled by {@code UCX_ERROR_SIGNALS}); the JVM relies on SIGSEGV for implicit null
 * checks, so with UCX's handler in place the first null check in compiled code kills the JVM.
 * {@link #load()} therefore calls libc {@code setenv("UCX_ERROR_SIGNALS", "", 1)} through FFM
 * <em>before</em> it opens libucp (which pulls in libucs). Every path to UCX goes through
 * {@link #load()}: the handles live in a holder class that is initialised only from there.
 *
 * <p>Threading: the functions are as thread-safe as UCX makes them; the engine calls all
 * worker, endpoint and request functions from its progress thread only.
 */
@SuppressWarnings("restricted") // this class is the FFM binding; the JVM runs with --enable-native-access
public final class Ucx {

    /** The shared object opened; override with {@code -Dkvledger.ucx.library=...}. */
    public static final String LIBRARY = System.getProperty("kvledger.ucx.library", "libucp.so.0");
    private static final String UCS_LIBRARY = System.getProperty("kvledger.ucs.library", "libucs.so.0");
    private static final Linker LINKER = Linker.nativeLinker();

    /**
     * Whether UCX could be loaded, and why not.
     *
     * @param loaded  true when every symbol bound
     * @param detail  the library version when loaded, else the reason it is not
     */
    public record Availability(boolean loaded, String detail, int major, int minor, int release) {}

    private static Availability availability;

    private Ucx() {}

    /**
     * Clears {@code UCX_ERROR_SIGNALS}, then opens libucp and libucs and binds every function.
     * Idempotent; never throws.
     */
    public static synchronized Availability load() {
        if (availability != null) {
            return availability;
        }
        try {
            if (Libc.setenv("UCX_ERROR_SIGNALS", "", true) != 0) {
                return availability = new Availability(false, "libc setenv(UCX_ERROR_SIGNALS) failed", 0, 0, 0);
            }
        } catch (Throwable t) {
            return availability = new Availability(false, "cannot call libc setenv: " + t, 0, 0, 0);
        }
        try {
            int[] v = version();
            if (v[0] != UcxAbi.API_MAJOR || v[1] < 10) {
                return availability = new Availability(false, "libucp " + v[0] + "." + v[1] + "." + v[2]
                        + " is older than the 1.10 API these bindings need", v[0], v[1], v[2]);
            }
            return availability = new Availability(true, "libucp " + v[0] + "." + v[1] + "." + v[2], v[0], v[1], v[2]);
        } catch (Throwable t) {
            Throwable cause = t instanceof ExceptionInInitializerError e && e.getCause() != null ? e.getCause() : t;
            return availability = new Availability(false, LIBRARY + " not loadable: " + cause.getMessage(), 0, 0, 0);
        }
    }

    /** True once {@link #load()} succeeded. */
    static synchronized boolean isLoaded() {
        return availability != null && availability.loaded();
    }

    private static int[] version() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment maj = a.allocate(JAVA_INT);
            MemorySegment min = a.allocate(JAVA_INT);
            MemorySegment rel = a.allocate(JAVA_INT);
            try {
                H.GET_VERSION.invokeExact(maj, min, rel);
            } catch (Throwable t) {
                throw rethrow(t);
            }
            return new int[] {maj.get(JAVA_INT, 0), min.get(JAVA_INT, 0), rel.get(JAVA_INT, 0)};
        }
    }

    /** libc functions, bound from the process's default lookup (libc is always loaded). */
    public static final class Libc {
        private static final MethodHandle SETENV = LINKER.downcallHandle(
                LINKER.defaultLookup().find("setenv").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
        private static final MethodHandle GETENV = LINKER.downcallHandle(
                LINKER.defaultLookup().find("getenv").orElseThrow(),
                FunctionDescriptor.of(ADDRESS, ADDRESS));
        private static final MethodHandle POLL = LINKER.downcallHandle(
                LINKER.defaultLookup().find("poll").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));

        private Libc() {}

        /** libc {@code setenv}; changes the C environment that native libraries read. */
        static int setenv(String name, String value, boolean overwrite) {
            try (Arena a = Arena.ofConfined()) {
                return (int) SETENV.invokeExact(a.allocateFrom(name), a.allocateFrom(value), overwrite ? 1 : 0);
            } catch (Throwable t) {
                throw rethrow(t);
            }
        }

        /** libc {@code poll(fds, nfds, timeoutMs)}: blocks the calling thread in the kernel. */
        static int poll(MemorySegment fds, long nfds, int timeoutMs) {
            try {
                return (int) POLL.invokeExact(fds, nfds, timeoutMs);
            } catch (Throwable t) {
                throw rethrow(t);
            }
        }

        /** libc {@code getenv}, or {@code null} when unset (unlike {@link System#getenv}, sees setenv). */
        public static String getenv(String name) {
            try (Arena a = Arena.ofConfined()) {
                MemorySegment p = (MemorySegment) GETENV.invokeExact(a.allocateFrom(name));
                return p.address() == 0 ? null : p.reinterpret(Long.MAX_VALUE).getString(0);
            } catch (Throwable t) {
                throw rethrow(t);
            }
        }
    }

    /** The handles; initialised on first use, which only {@link #load()} may trigger. */
    private static final class H {
        static final SymbolLookup UCP = SymbolLookup.libraryLookup(LIBRARY, Arena.global());
        static final SymbolLookup UCS = SymbolLookup.libraryLookup(UCS_LIBRARY, Arena.global());

        static final MethodHandle GET_VERSION = ucp("ucp_get_version", FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, ADDRESS));
        static final MethodHandle CONFIG_READ = ucp("ucp_config_read", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        static final MethodHandle CONFIG_MODIFY = ucp("ucp_config_modify", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        static final MethodHandle CONFIG_RELEASE = ucp("ucp_config_release", FunctionDescriptor.ofVoid(ADDRESS));
        static final MethodHandle INIT_VERSION = ucp("ucp_init_version",
                FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        static final MethodHandle CLEANUP = ucp("ucp_cleanup", FunctionDescriptor.ofVoid(ADDRESS));
        static final MethodHandle WORKER_CREATE = ucp("ucp_worker_create", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        static final MethodHandle WORKER_DESTROY = ucp("ucp_worker_destroy", FunctionDescriptor.ofVoid(ADDRESS));
        static final MethodHandle WORKER_GET_ADDRESS = ucp("ucp_worker_get_address",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        static final MethodHandle WORKER_RELEASE_ADDRESS = ucp("ucp_worker_release_address",
                FunctionDescriptor.ofVoid(ADDRESS, ADDRESS));
        static final MethodHandle WORKER_PROGRESS = ucp("ucp_worker_progress", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        static final MethodHandle WORKER_GET_EFD = ucp("ucp_worker_get_efd", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        static final MethodHandle WORKER_ARM = ucp("ucp_worker_arm", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        static final MethodHandle WORKER_SIGNAL = ucp("ucp_worker_signal", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        static final MethodHandle WORKER_FLUSH_NBX = ucp("ucp_worker_flush_nbx", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
        static final MethodHandle EP_CREATE = ucp("ucp_ep_create", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        static final MethodHandle EP_CLOSE_NBX = ucp("ucp_ep_close_nbx", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
        static final MethodHandle EP_FLUSH_NBX = ucp("ucp_ep_flush_nbx", FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS));
        static final MethodHandle MEM_MAP = ucp("ucp_mem_map", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        static final MethodHandle MEM_QUERY = ucp("ucp_mem_query", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        static final MethodHandle MEM_UNMAP = ucp("ucp_mem_unmap", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        static final MethodHandle RKEY_PACK = ucp("ucp_rkey_pack", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS));
        static final MethodHandle RKEY_BUFFER_RELEASE = ucp("ucp_rkey_buffer_release", FunctionDescriptor.ofVoid(ADDRESS));
        static final MethodHandle EP_RKEY_UNPACK = ucp("ucp_ep_rkey_unpack", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        static final MethodHandle RKEY_DESTROY = ucp("ucp_rkey_destroy", FunctionDescriptor.ofVoid(ADDRESS));
        static final MethodHandle RKEY_PTR = ucp("ucp_rkey_ptr", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS));
        static final MethodHandle PUT_NBX = ucp("ucp_put_nbx",
                FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS));
        static final MethodHandle GET_NBX = ucp("ucp_get_nbx",
                FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS, ADDRESS));
        static final MethodHandle REQUEST_CHECK_STATUS = ucp("ucp_request_check_status",
                FunctionDescriptor.of(JAVA_INT, ADDRESS), Linker.Option.critical(false));
        static final MethodHandle REQUEST_FREE = ucp("ucp_request_free", FunctionDescriptor.ofVoid(ADDRESS),
                Linker.Option.critical(false));
        static final MethodHandle STATUS_STRING = LINKER.downcallHandle(UCS.find("ucs_status_string").orElseThrow(),
                FunctionDescriptor.of(ADDRESS, JAVA_INT), Linker.Option.critical(false));

        private static MethodHandle ucp(String name, FunctionDescriptor d, Linker.Option... options) {
            MemorySegment sym = UCP.find(name).orElseThrow(() -> new UnsatisfiedLinkError(name + " not in " + LIBRARY));
            return LINKER.downcallHandle(sym, d, options);
        }
    }

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException(t);
    }

    private static void requireLoaded() {
        if (!isLoaded()) {
            throw new IllegalStateException("UCX used before Ucx.load() succeeded");
        }
    }

    // ------------------------------------------------------------------ status pointers

    /** {@code UCS_PTR_IS_ERR}: a status pointer in the error range. */
    static boolean isErr(MemorySegment ptr) {
        return Long.compareUnsigned(ptr.address(), (long) UcxAbi.UCS_ERR_LAST) >= 0;
    }

    /** {@code UCS_PTR_IS_PTR}: a request to wait for. */
    static boolean isRequest(MemorySegment ptr) {
        return ptr.address() != 0 && !isErr(ptr);
    }

    /** {@code UCS_PTR_STATUS}. */
    static int status(MemorySegment ptr) {
        return isRequest(ptr) ? UcxAbi.UCS_INPROGRESS : (int) ptr.address();
    }

    /** {@code ucs_status_string}, with the numeric code. */
    static String statusString(int status) {
        try {
            MemorySegment p = (MemorySegment) H.STATUS_STRING.invokeExact(status);
            String s = p.address() == 0 ? "?" : p.reinterpret(256).getString(0);
            return s + " (" + status + ")";
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ------------------------------------------------------------------ config and context

    static int configRead(MemorySegment configOut) {
        requireLoaded();
        try {
            return (int) H.CONFIG_READ.invokeExact(MemorySegment.NULL, MemorySegment.NULL, configOut);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int configModify(MemorySegment config, MemorySegment name, MemorySegment value) {
        try {
            return (int) H.CONFIG_MODIFY.invokeExact(config, name, value);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void configRelease(MemorySegment config) {
        try {
            H.CONFIG_RELEASE.invokeExact(config);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int initVersion(int major, int minor, MemorySegment params, MemorySegment config,
                                  MemorySegment contextOut) {
        try {
            return (int) H.INIT_VERSION.invokeExact(major, minor, params, config, contextOut);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void cleanup(MemorySegment context) {
        try {
            H.CLEANUP.invokeExact(context);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ------------------------------------------------------------------ worker

    static int workerCreate(MemorySegment context, MemorySegment params, MemorySegment workerOut) {
        try {
            return (int) H.WORKER_CREATE.invokeExact(context, params, workerOut);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void workerDestroy(MemorySegment worker) {
        try {
            H.WORKER_DESTROY.invokeExact(worker);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int workerGetAddress(MemorySegment worker, MemorySegment addressOut, MemorySegment lengthOut) {
        try {
            return (int) H.WORKER_GET_ADDRESS.invokeExact(worker, addressOut, lengthOut);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void workerReleaseAddress(MemorySegment worker, MemorySegment address) {
        try {
            H.WORKER_RELEASE_ADDRESS.invokeExact(worker, address);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code ucp_worker_progress}: the number of events handled (may run error-handler upcalls). */
    static int workerProgress(MemorySegment worker) {
        try {
            return (int) H.WORKER_PROGRESS.invokeExact(worker);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int workerGetEfd(MemorySegment worker, MemorySegment fdOut) {
        try {
            return (int) H.WORKER_GET_EFD.invokeExact(worker, fdOut);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code ucp_worker_arm}: UCS_OK when it is safe to wait on the event descriptor, UCS_ERR_BUSY to progress more. */
    static int workerArm(MemorySegment worker) {
        try {
            return (int) H.WORKER_ARM.invokeExact(worker);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code ucp_worker_signal}: wakes a wait on the event descriptor; safe from any thread. */
    static int workerSignal(MemorySegment worker) {
        try {
            return (int) H.WORKER_SIGNAL.invokeExact(worker);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment workerFlushNbx(MemorySegment worker, MemorySegment param) {
        try {
            return (MemorySegment) H.WORKER_FLUSH_NBX.invokeExact(worker, param);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ------------------------------------------------------------------ endpoints

    static int epCreate(MemorySegment worker, MemorySegment params, MemorySegment epOut) {
        try {
            return (int) H.EP_CREATE.invokeExact(worker, params, epOut);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment epCloseNbx(MemorySegment ep, MemorySegment param) {
        try {
            return (MemorySegment) H.EP_CLOSE_NBX.invokeExact(ep, param);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment epFlushNbx(MemorySegment ep, MemorySegment param) {
        try {
            return (MemorySegment) H.EP_FLUSH_NBX.invokeExact(ep, param);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ------------------------------------------------------------------ memory and keys

    static int memMap(MemorySegment context, MemorySegment params, MemorySegment memhOut) {
        try {
            return (int) H.MEM_MAP.invokeExact(context, params, memhOut);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int memQuery(MemorySegment memh, MemorySegment attr) {
        try {
            return (int) H.MEM_QUERY.invokeExact(memh, attr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int memUnmap(MemorySegment context, MemorySegment memh) {
        try {
            return (int) H.MEM_UNMAP.invokeExact(context, memh);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int rkeyPack(MemorySegment context, MemorySegment memh, MemorySegment bufferOut,
                               MemorySegment sizeOut) {
        try {
            return (int) H.RKEY_PACK.invokeExact(context, memh, bufferOut, sizeOut);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void rkeyBufferRelease(MemorySegment buffer) {
        try {
            H.RKEY_BUFFER_RELEASE.invokeExact(buffer);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int epRkeyUnpack(MemorySegment ep, MemorySegment buffer, MemorySegment rkeyOut) {
        try {
            return (int) H.EP_RKEY_UNPACK.invokeExact(ep, buffer, rkeyOut);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code ucp_rkey_ptr}: a local address for {@code remoteAddress} when the remote memory is
     * mapped into this process (shared-memory transports); {@code UCS_ERR_UNREACHABLE} otherwise.
     */
    static int rkeyPtr(MemorySegment rkey, long remoteAddress, MemorySegment addressOut) {
        try {
            return (int) H.RKEY_PTR.invokeExact(rkey, remoteAddress, addressOut);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void rkeyDestroy(MemorySegment rkey) {
        try {
            H.RKEY_DESTROY.invokeExact(rkey);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ------------------------------------------------------------------ RMA and requests

    static MemorySegment putNbx(MemorySegment ep, MemorySegment buffer, long count, long remoteAddress,
                                       MemorySegment rkey, MemorySegment param) {
        try {
            return (MemorySegment) H.PUT_NBX.invokeExact(ep, buffer, count, remoteAddress, rkey, param);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static MemorySegment getNbx(MemorySegment ep, MemorySegment buffer, long count, long remoteAddress,
                                       MemorySegment rkey, MemorySegment param) {
        try {
            return (MemorySegment) H.GET_NBX.invokeExact(ep, buffer, count, remoteAddress, rkey, param);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static int requestCheckStatus(MemorySegment request) {
        try {
            return (int) H.REQUEST_CHECK_STATUS.invokeExact(request);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static void requestFree(MemorySegment request) {
        try {
            H.REQUEST_FREE.invokeExact(request);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
}
