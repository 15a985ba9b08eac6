package io.kvledger.journal;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Damages journal files on purpose for the corruption tests: truncation, zeroed pages, bit flips.
 * It also walks an intact queue file (excerpt header by excerpt header, as journal/FORMAT.md
 * describes it) so a test knows which bytes each entry occupies and can predict exactly what a
 * reader must still read.
 */
final class Damage {

    private Damage() {}

    /** One excerpt of an intact file: where its 4-byte header is, its length, whether it is Chronicle metadata. */
    record Excerpt(long pos, int len, boolean meta) {
        long end() {
            return pos + 4 + len;
        }
    }

    /** The single {@code .cq4} file of a journal directory. */
    static Path queueFile(Path dir) {
        List<Path> files = QueueScanner.listFiles(dir);
        if (files.size() != 1) {
            throw new IllegalStateException("expected one queue file in " + dir + ", found " + files);
        }
        return files.getFirst();
    }

    /** Every excerpt of an intact queue file, in order, up to the end of its data. */
    static List<Excerpt> excerpts(Path file) {
        byte[] d = read(file);
        ByteBuffer b = ByteBuffer.wrap(d).order(ByteOrder.LITTLE_ENDIAN);
        List<Excerpt> out = new ArrayList<>();
        long pos = 0;
        while (pos + 4 <= d.length) {
            int h = b.getInt((int) pos);
            if (h == 0) {
                break;
            }
            int len = h & QueueScanner.LENGTH_MASK;
            out.add(new Excerpt(pos, len, (h & QueueScanner.META_DATA) != 0));
            pos = (pos + 4 + len + 3) & ~3L;
        }
        return out;
    }

    /** The data excerpts (entries) of an intact file: entry i has seq i. */
    static List<Excerpt> entries(Path file) {
        return excerpts(file).stream().filter(e -> !e.meta()).toList();
    }

    /** Copies the journal in {@code from} into a new directory {@code to} (without the writer lock file). */
    static Path copyJournal(Path from, Path to) {
        try {
            Files.createDirectories(to);
            try (var s = Files.list(from)) {
                for (Path p : s.toList()) {
                    if (!p.getFileName().toString().equals(JournalFormat.LOCK_FILE)) {
                        Files.copy(p, to.resolve(p.getFileName()));
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return to;
    }

    static void truncate(Path file, long size) {
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.setLength(size);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static void zero(Path file, long at, int len) {
        write(file, at, new byte[len]);
    }

    /**
     * Flips {@code count} random bits (distinct positions not guaranteed: a bit flipped twice is
     * restored) in {@code [from, to)} of the file.
     *
     * @return the byte offsets and bit numbers flipped, as {@code offset * 8 + bit}
     */
    static long[] flip(Path file, long from, long to, int count, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        long[] flips = new long[count];
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            for (int i = 0; i < count; i++) {
                long at = rnd.nextLong(from, to);
                int bit = rnd.nextInt(8);
                f.seek(at);
                int v = f.read();
                f.seek(at);
                f.write(v ^ (1 << bit));
                flips[i] = at * 8 + bit;
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return flips;
    }

    /**
     * The bits {@code flips} (as {@link #flip} returns them) leave flipped: a bit flipped twice is
     * restored.
     */
    static java.util.TreeSet<Long> netFlips(long[] flips) {
        java.util.TreeSet<Long> bits = new java.util.TreeSet<>();
        for (long f : flips) {
            if (!bits.remove(f)) {
                bits.add(f);
            }
        }
        return bits;
    }

    /**
     * Whether the flipped {@code bits} destroy the entry framed at {@code [pos, end)} (its 4-byte
     * length word first): any bit in it but its length word's metadata bit alone, which a reader
     * sees through.
     */
    static boolean destroys(java.util.TreeSet<Long> bits, long pos, long end) {
        var inside = bits.subSet(pos * 8, end * 8);
        boolean onlyMetaBit = inside.size() == 1 && inside.first() == (pos + 3) * 8 + 6;
        return !inside.isEmpty() && !onlyMetaBit;
    }

    /**
     * The offset of the little-endian long {@code value} in the 64 bytes after the first
     * occurrence of the field or excerpt name {@code name} (case counts) in the file's first MiB,
     * or -1. A test finds a field of Chronicle's metadata by the value it must hold instead of
     * parsing Chronicle's wire format.
     */
    static long longAfter(Path file, String name, long value) {
        byte[] d = readStart(file, (1 << 20) + 128);
        byte[] n = name.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        ByteBuffer b = ByteBuffer.wrap(d).order(ByteOrder.LITTLE_ENDIAN);
        int limit = Math.min(d.length, 1 << 20);
        for (int i = 0; i + n.length < limit; i++) {
            if (java.util.Arrays.equals(d, i, i + n.length, n, 0, n.length)) {
                for (int k = i + n.length; k + 8 <= Math.min(d.length, i + n.length + 64); k++) {
                    if (b.getLong(k) == value) {
                        return k;
                    }
                }
                return -1;
            }
        }
        return -1;
    }

    static void writeLong(Path file, long at, long value) {
        write(file, at, ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(value).array());
    }

    static void write(Path file, long at, byte[] bytes) {
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.seek(at);
            f.write(bytes);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The file's first {@code max} bytes (all of it when shorter). */
    static byte[] readStart(Path file, int max) {
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "r")) {
            byte[] d = new byte[(int) Math.min(max, f.length())];
            f.readFully(d);
            return d;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static byte[] read(Path file) {
        try {
            return Files.readAllBytes(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
