package io.kvledger.journal;

import java.io.File;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.locks.LockSupport;

/**
 * Touches the pages of the journal's queue file ahead of the writer, on a thread of its own, so
 * that the writer's first write to a fresh page of the mapped file does not pay for allocating and
 * zeroing it (29 % of a journaling loop's samples before). Chronicle's own pretoucher is an
 * enterprise feature. This one, where Linux offers it ({@code madvise(MADV_POPULATE_WRITE)}, Linux
 * 5.14), populates the page tables of the writer's own mapping ahead of it, so the writer takes no
 * page fault at all; the call never changes a byte, and a range no longer mapped just fails.
 * Elsewhere it maps the file itself and, page by page, compare-and-sets an int from 0 to 0: a page
 * the writer already wrote is left alone (the compare fails), a fresh one gets allocated with the
 * zeros it had (the writer's mapping still faults once per page, more cheaply). Nothing a reader
 * sees changes, and the file never grows here: only pages inside its current length (Chronicle
 * extends it chunk by chunk) are touched.
 *
 * <p>The writer {@link #advance tells} where it writes at most every {@value #NOTIFY_BYTES} bytes;
 * this thread keeps {@value #AHEAD_BYTES} bytes ahead of that.
 */
final class Pretoucher implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger("io.kvledger.journal");

    static final long NOTIFY_BYTES = 256 << 10;
    static final long AHEAD_BYTES = 8 << 20;
    private static final long PAGE = 4096;
    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();

    private final Thread thread;
    private volatile File file;
    private volatile long position;
    /** The writer's mapping: the address of {@link #position} and the end of the mapped chunk (0: unknown). */
    private volatile long address;
    private volatile long mappedEnd;
    /** {@code madvise} with MADV_POPULATE_WRITE, or null where it is not available (or failed once). */
    private static final java.lang.invoke.MethodHandle MADVISE = madvise();
    private static final int MADV_POPULATE_WRITE = 23;
    private volatile boolean madviseWorks = MADVISE != null;
    /** This thread's: the file and mapped chunk it populated, and up to which file offset. */
    private File populatedFile;
    private long populatedEnd;
    private long populatedTo;
    private volatile boolean closed;
    /** Writer side: the position after which it tells again. */
    private long notifyAt;
    /** Pages touched (for tests and the log). */
    private volatile long touchedPages;
    private volatile long populateCalls;

    Pretoucher(String name) {
        this.thread = new Thread(this::run, "kvledger-pretouch-" + name);
        this.thread.setDaemon(true);
        this.thread.start();
    }

    /** Writer thread, after each entry: where it writes now, in {@code f}. Cheap unless a boundary is crossed. */
    void advance(File f, long pos) {
        advance(f, pos, 0, 0);
    }

    /**
     * Writer thread, after each write: where it writes now, in {@code f}, and where that is in its
     * own mapping ({@code addr}, up to {@code end}; 0 when unknown). Cheap unless a boundary is
     * crossed.
     */
    void advance(File f, long pos, long addr, long end) {
        if (pos < notifyAt && f == file) {
            return;
        }
        notifyAt = pos + NOTIFY_BYTES;
        file = f;
        address = addr;
        mappedEnd = end;
        position = pos;
        LockSupport.unpark(thread);
    }

    private static java.lang.invoke.MethodHandle madvise() {
        if (!System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).contains("linux")) {
            return null;
        }
        try {
            java.lang.foreign.Linker linker = java.lang.foreign.Linker.nativeLinker();
            return linker.defaultLookup().find("madvise").map(a -> linker.downcallHandle(a,
                    java.lang.foreign.FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG,
                            ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT))).orElse(null);
        } catch (RuntimeException | LinkageError e) {
            return null; // no native access: the mapping of its own does the work
        }
    }

    /**
     * Populates the writer's mapping from {@code pos} up to {@code want} (file offsets) within the
     * file's length and the mapped chunk; returns the file offset populated to, or -1 when
     * {@code madvise} cannot do it here.
     */
    private long populate(File f, long pos, long want, long addr, long end) {
        if (!madviseWorks || addr == 0) {
            return -1;
        }
        if (f != populatedFile || end != populatedEnd) {
            // another file, or another mapped chunk of it: its page tables start empty
            populatedFile = f;
            populatedEnd = end;
            populatedTo = 0;
        }
        // only what is not populated yet: asking again for populated pages costs a page-table
        // walk per page (a fifth of a core at 8 MB per 256 KB written)
        long start = Math.max(pos, populatedTo);
        long from = (addr + (start - pos) + PAGE - 1) / PAGE * PAGE;
        long limit = Math.min(end, addr + (Math.min(want, sizeOf(f)) - pos)) / PAGE * PAGE;
        if (limit <= from) {
            return pos;
        }
        try {
            int rc = (int) MADVISE.invokeExact(from, limit - from, MADV_POPULATE_WRITE);
            if (rc != 0) {
                // EINVAL on a kernel without it; ENOMEM when the writer moved to another chunk meanwhile
                return -1;
            }
        } catch (Throwable t) {
            madviseWorks = false;
            return -1;
        }
        touchedPages += (limit - from) / PAGE;
        populateCalls++;
        populatedTo = pos + (limit - addr);
        return populatedTo;
    }

    long touchedPages() {
        return touchedPages;
    }

    /** Successful {@code madvise} calls on the writer's mapping (0 where it is not available). */
    long populateCalls() {
        return populateCalls;
    }

    /** Whether this JVM can call {@code madvise} (Linux, native access enabled). */
    static boolean canPopulate() {
        return MADVISE != null;
    }

    private void run() {
        File mappedFile = null;
        Arena arena = null;
        MemorySegment seg = null;
        long touched = 0;
        try {
            while (!closed) {
                File f = file;
                long pos = position;
                if (f == null) {
                    LockSupport.parkNanos(this, 10_000_000);
                    continue;
                }
                long want = pos + AHEAD_BYTES;
                if (populate(f, pos, want, address, mappedEnd) >= 0) {
                    LockSupport.parkNanos(this, 10_000_000);
                    continue;
                }
                if (f != mappedFile || seg == null || (seg.byteSize() < want && sizeOf(f) > seg.byteSize())) {
                    if (arena != null) {
                        arena.close();
                        arena = null;
                        seg = null;
                    }
                    if (f != mappedFile) {
                        touched = 0;
                    }
                    mappedFile = f;
                    long size = sizeOf(f);
                    if (size > 0) {
                        arena = Arena.ofConfined();
                        try (FileChannel ch = FileChannel.open(f.toPath(), StandardOpenOption.READ,
                                StandardOpenOption.WRITE)) {
                            seg = ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
                        }
                    }
                }
                if (seg != null) {
                    // page-aligned: [from, to) where from is the first page not touched yet
                    long from = Math.max(touched, (pos + PAGE - 1) / PAGE * PAGE);
                    long to = Math.min(want, seg.byteSize()) / PAGE * PAGE;
                    long n = 0;
                    long p = from;
                    for (; p < to && !closed; p += PAGE) {
                        INT.compareAndSet(seg, p, 0, 0);
                        n++;
                    }
                    touched = Math.max(touched, p);
                    touchedPages += n;
                }
                LockSupport.parkNanos(this, 10_000_000);
            }
        } catch (IOException | RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "journal pretouch stopped: " + e);
        } finally {
            if (arena != null) {
                arena.close();
            }
        }
    }

    private static long sizeOf(File f) {
        return f.length();
    }

    @Override
    public void close() {
        closed = true;
        LockSupport.unpark(thread);
        try {
            thread.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
