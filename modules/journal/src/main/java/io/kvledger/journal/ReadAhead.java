package io.kvledger.journal;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Reads one queue file ahead of a {@link QueueScanner} walking it from start to end, on a thread
 * of its own: consecutive chunks of {@value #CHUNK} bytes, at most {@value #DEPTH} ahead, each
 * read (plain positional reads through a channel of its own, never a mapping) into a buffer that
 * leaves {@value #SLACK} bytes free in front, where the scanner copies the tail of an entry that
 * started in the chunk before. Over a large journal the kernel's copy of the file's pages (about
 * a seventh of a {@code replay}'s main-thread time) then runs beside the decoding and the reducers
 * instead of before them.
 *
 * <p>Nothing it reads is trusted: the scanner checks every entry as before. It gives up quietly
 * (an I/O error, a file that shrank, a scanner that stopped taking chunks for {@value #IDLE_S}
 * s): {@link #take} then returns {@code null} and the scanner reads for itself.
 *
 * <p>Threading: one consumer thread calls {@link #take}, {@link #recycle} and {@link #close}.
 */
final class ReadAhead implements AutoCloseable {

    /** Bytes per chunk. */
    static final int CHUNK = 1 << 20;
    /** Room in front of each chunk for the tail of the entry before it. */
    static final int SLACK = 64 << 10;
    /** Chunks read ahead of the one the scanner holds. */
    static final int DEPTH = 2;
    /** A reader whose chunks are not taken for this long stops (a pass abandoned unclosed). */
    static final int IDLE_S = 10;

    /** A chunk: file bytes {@code [start, start + len)} at {@code buf[SLACK, SLACK + len)}. */
    record Chunk(long start, byte[] buf, int len) {}

    private static final Chunk FAILED = new Chunk(-1, new byte[0], 0);

    private final Path file;
    private final long size;
    private final ArrayBlockingQueue<Chunk> filled = new ArrayBlockingQueue<>(DEPTH + 1);
    private final ArrayBlockingQueue<byte[]> free = new ArrayBlockingQueue<>(DEPTH + 3);
    private final Thread thread;
    private volatile boolean closed;
    /** The position the next chunk taken starts at. */
    private long next;

    private ReadAhead(Path file, long from, long size) {
        this.file = file;
        this.size = size;
        this.next = from;
        this.thread = new Thread(() -> run(from), "kvledger-read-ahead");
        thread.setDaemon(true);
    }

    /** Starts reading {@code file} from {@code from} up to {@code size}. */
    static ReadAhead start(Path file, long from, long size) {
        ReadAhead r = new ReadAhead(file, from, size);
        r.thread.start();
        return r;
    }

    /** Where the next chunk {@link #take} returns starts. */
    long next() {
        return next;
    }

    /**
     * The next chunk (waiting for it), or {@code null} when the reader gave up or reached the
     * end: the caller reads for itself from {@link #next()} on.
     */
    Chunk take() {
        try {
            while (true) {
                Chunk c = filled.poll(20, TimeUnit.MILLISECONDS);
                if (c == null) {
                    if (!thread.isAlive() && filled.isEmpty()) {
                        return null;
                    }
                    continue;
                }
                if (c == FAILED || c.len <= 0) {
                    return null;
                }
                next = c.start + c.len;
                return c;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    /** Gives back the buffer of a chunk taken before, once nothing refers to its bytes. */
    void recycle(byte[] buf) {
        if (buf.length == SLACK + CHUNK) {
            free.offer(buf);
        }
    }

    @Override
    public void close() {
        closed = true;
        thread.interrupt(); // (its own channel: the scanner's is not touched)
    }

    private void run(long from) {
        int made = 0;
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            long p = from;
            while (!closed && p < size) {
                byte[] b = free.poll();
                if (b == null) {
                    if (made < DEPTH + 3) {
                        b = new byte[SLACK + CHUNK];
                        made++;
                    } else if ((b = free.poll(IDLE_S, TimeUnit.SECONDS)) == null) {
                        break;
                    }
                }
                int want = (int) Math.min(CHUNK, size - p);
                ByteBuffer bb = ByteBuffer.wrap(b, SLACK, want);
                while (bb.hasRemaining()) {
                    if (ch.read(bb, p + bb.position() - SLACK) < 0) {
                        break;
                    }
                }
                int got = bb.position() - SLACK;
                if (!filled.offer(new Chunk(p, b, got), IDLE_S, TimeUnit.SECONDS) || got < want) {
                    break; // abandoned, or the file shrank: the scanner finds out by itself
                }
                p += got;
            }
        } catch (IOException | InterruptedException | RuntimeException e) {
            filled.offer(FAILED);
        }
    }
}
