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
 * <p>It also checks the entries' checksums ahead of the scanner, so that the CRC32C of every entry
 * (5-8 % of a {@code replay}'s main-thread time over BigJournal) is computed beside it too: from the excerpt
 * the scanner stands at when it starts the read-ahead, it follows the excerpt headers from one
 * to the next and, for each excerpt of layout 2 or later whose bytes lie wholly in one chunk and
 * whose checksum matches, records in the chunk's {@link Checked} the excerpt's position. The
 * scanner skips its own checksum only for an excerpt whose header it reads at exactly that
 * position out of that very buffer (so with the same length): the record is a fact about those
 * bytes, true whichever way either of them got there. The walk stops at the first thing it does
 * not read plainly (the end of the data, an excerpt not complete, a checksum that does not match,
 * a length past the end of the file); the scanner then checks everything after it itself, and
 * finds the damage as before.
 *
 * <p>Nothing it reads is trusted otherwise: the scanner checks everything else as before. It gives up quietly
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

    /**
     * A chunk: file bytes {@code [start, start + len)} at {@code buf[SLACK, SLACK + len)}, and the
     * excerpts of it whose checksums the read-ahead checked.
     */
    record Chunk(long start, byte[] buf, int len, Checked checked) {}

    /**
     * The excerpts of one chunk buffer whose entry checksums matched: a bit per 4-byte position of
     * the chunk, set where such an excerpt's header starts (its header, its entry and their bytes
     * all in the chunk). Travels with its buffer: recycled and refilled with it.
     */
    static final class Checked {
        final long[] bits = new long[CHUNK / 4 / 64];

        void clear() {
            java.util.Arrays.fill(bits, 0L);
        }

        /** Records the excerpt whose header is at {@code chunkOffset} (ignored unless 4-aligned). */
        void add(int chunkOffset) {
            if ((chunkOffset & 3) != 0) {
                return;
            }
            int i = chunkOffset >>> 2;
            bits[i >>> 6] |= 1L << i;
        }

        /** Whether the excerpt whose header is at {@code chunkOffset} (4-aligned, in the chunk) was checked. */
        boolean has(int chunkOffset) {
            if ((chunkOffset & 3) != 0) {
                return false;
            }
            int i = chunkOffset >>> 2;
            return (bits[i >>> 6] & (1L << i)) != 0;
        }
    }

    private static final Chunk FAILED = new Chunk(-1, new byte[0], 0, new Checked());

    private final Path file;
    private final long size;
    private final ArrayBlockingQueue<Chunk> filled = new ArrayBlockingQueue<>(DEPTH + 1);
    private final ArrayBlockingQueue<byte[]> free = new ArrayBlockingQueue<>(DEPTH + 3);
    /** The checksum records of each buffer this read-ahead made, by identity (its thread's only). */
    private final java.util.IdentityHashMap<byte[], Checked> checkedOf = new java.util.IdentityHashMap<>();
    private final Thread thread;
    private volatile boolean closed;
    /** The position the next chunk taken starts at. */
    private long next;
    /** The read-ahead thread's walk: the excerpt header it reads next (-1: it stopped walking). */
    private long walk;

    private ReadAhead(Path file, long from, long size, long walkFrom) {
        this.file = file;
        this.size = size;
        this.next = from;
        this.walk = walkFrom;
        this.thread = new Thread(() -> run(from), "kvledger-read-ahead");
        thread.setDaemon(true);
    }

    /**
     * Starts reading {@code file} from {@code from} up to {@code size}, checking checksums from
     * the excerpt at {@code walkFrom} on (at or before {@code from}; -1: none).
     */
    static ReadAhead start(Path file, long from, long size, long walkFrom) {
        ReadAhead r = new ReadAhead(file, from, size, walkFrom);
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
                Checked checked = checkedOf.computeIfAbsent(b, k -> new Checked()); // (or one of an earlier read-ahead's)
                int want = (int) Math.min(CHUNK, size - p);
                ByteBuffer bb = ByteBuffer.wrap(b, SLACK, want);
                while (bb.hasRemaining()) {
                    if (ch.read(bb, p + bb.position() - SLACK) < 0) {
                        break;
                    }
                }
                int got = bb.position() - SLACK;
                checked.clear();
                if (walk >= 0) {
                    walk = walk(ch, b, p, got, checked);
                }
                if (!filled.offer(new Chunk(p, b, got, checked), IDLE_S, TimeUnit.SECONDS) || got < want) {
                    break; // abandoned, or the file shrank: the scanner finds out by itself
                }
                p += got;
            }
        } catch (IOException | InterruptedException | RuntimeException e) {
            filled.offer(FAILED);
        }
    }

    /**
     * Follows the excerpt headers from {@link #walk} through the chunk of {@code len} bytes at file
     * position {@code start} (in {@code b} from {@link #SLACK}), recording each excerpt that lies
     * wholly in the chunk (header and entry), is of layout 2 or later and has a matching checksum. A header
     * before the chunk (the walk's first, or one the chunk boundary cut) is read from the file.
     *
     * @return where the walk goes on in the next chunk, or -1 where it stopped
     */
    private long walk(FileChannel ch, byte[] b, long start, int len, Checked checked) throws IOException {
        long end = start + len;
        long q = walk;
        ByteBuffer word = null;
        while (q + 4 <= end) {
            int h;
            if (q >= start) {
                h = intAt(b, SLACK + (int) (q - start));
            } else {
                if (word == null) {
                    word = ByteBuffer.allocate(4).order(java.nio.ByteOrder.LITTLE_ENDIAN);
                }
                word.clear();
                while (word.hasRemaining()) {
                    if (ch.read(word, q + word.position()) < 0) {
                        return -1;
                    }
                }
                h = word.getInt(0);
            }
            if (h == 0 || (h & QueueScanner.NOT_COMPLETE) != 0) {
                return -1; // the end of the data (or Chronicle's end marker), or damage
            }
            int n = h & QueueScanner.LENGTH_MASK;
            long body = q + 4;
            if (n > QueueScanner.MAX_ENTRY || body + n > size) {
                return -1;
            }
            if ((h & QueueScanner.META_DATA) == 0 && q >= start && body + n <= end && n >= JournalFormat.ENVELOPE_V2) {
                int off = SLACK + (int) (body - start);
                if ((b[off] & 0xff) >= JournalFormat.FIRST_CHECKSUMMED_VERSION) {
                    if (EntryCodec.storedCrc(b, off) != EntryCodec.crc(b, off, n)) {
                        return -1;
                    }
                    checked.add((int) (q - start));
                }
            }
            q = (body + n + 3) & ~3L;
        }
        return q;
    }

    private static int intAt(byte[] b, int off) {
        return (b[off] & 0xff) | (b[off + 1] & 0xff) << 8 | (b[off + 2] & 0xff) << 16 | (b[off + 3] & 0xff) << 24;
    }
}
