package io.kvledger.journal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueue;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueueBuilder;

/** Chronicle Queue plumbing shared by the writer, reader and tailer. */
final class Queues {

    private Queues() {}

    /** Whether {@code dir} holds queue files (a journal, possibly empty). */
    static boolean hasQueueFiles(Path dir) {
        if (!Files.isDirectory(dir)) {
            return false;
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.anyMatch(p -> p.getFileName().toString().endsWith(".cq4"));
        } catch (IOException e) {
            throw new JournalException("cannot list " + dir + ": " + e.getMessage(), e);
        }
    }

    /**
     * The entries of {@code dir} named {@code *.cq4} that are no regular file (a FIFO, a
     * directory, a dangling symbolic link), by name, each with what it is: readers cannot read
     * them (a FIFO would block a read), so they are damage, never "no queue files".
     */
    static java.util.SortedMap<String, String> oddQueueFiles(Path dir) {
        java.util.SortedMap<String, String> out = new java.util.TreeMap<>();
        try (Stream<Path> s = Files.list(dir)) {
            for (Path p : (Iterable<Path>) s::iterator) {
                String name = p.getFileName().toString();
                if (name.endsWith(".cq4") && !Files.isRegularFile(p)) {
                    out.put(name, what(p));
                }
            }
        } catch (IOException e) {
            throw new JournalException("cannot list " + dir + ": " + e.getMessage(), e);
        }
        return out;
    }

    /** What a file system entry that is no regular file is, in words. */
    private static String what(Path p) {
        String link = "";
        if (Files.isSymbolicLink(p)) {
            try {
                link = "a symbolic link to " + Files.readSymbolicLink(p);
            } catch (IOException e) {
                link = "a symbolic link";
            }
            if (!Files.exists(p)) {
                return link + ", which does not exist";
            }
            link += ", ";
        }
        if (Files.isDirectory(p)) {
            return link + "a directory";
        }
        try {
            int type = ((Integer) Files.getAttribute(p, "unix:mode")) & 0170000;
            return link + switch (type) {
                case 0010000 -> "a FIFO (a named pipe)";
                case 0140000 -> "a socket";
                case 0020000 -> "a character device";
                case 0060000 -> "a block device";
                default -> "not a regular file";
            };
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException | ClassCastException e) {
            return link + "not a regular file";
        }
    }

    /**
     * The {@code .cq4} files of {@code dir} that are empty (0 bytes), sorted. Chronicle creates
     * its files at full size, so an empty one is a file a crash or a copy left behind; opening it
     * makes Chronicle wait about 12 s for a header that never comes.
     */
    static List<Path> emptyQueueFiles(Path dir) {
        try (Stream<Path> s = Files.list(dir)) {
            List<Path> out = new ArrayList<>();
            for (Path p : (Iterable<Path>) s::iterator) {
                if (p.getFileName().toString().endsWith(".cq4") && Files.isRegularFile(p) && Files.size(p) == 0) {
                    out.add(p);
                }
            }
            out.sort(null);
            return out;
        } catch (IOException e) {
            throw new JournalException("cannot list " + dir + ": " + e.getMessage(), e);
        }
    }

    static SingleChronicleQueue open(Path dir, boolean readOnly) {
        try {
            return SingleChronicleQueueBuilder.single(dir.toFile())
                    .rollCycle(JournalFormat.ROLL_CYCLE)
                    .readOnly(readOnly)
                    .build();
        } catch (RuntimeException e) {
            throw new JournalException("cannot open the journal in " + dir + ": " + e.getMessage(), e);
        }
    }

    /** Chronicle's table store in a journal directory. */
    static final String METADATA_FILE = "metadata.cq4t";

    /**
     * What is wrong with {@code metadata.cq4t}, or null when it looks as Chronicle writes it (or
     * is missing: a writer recreates it; readers do not use it).
     */
    static String metadataProblem(Path dir) {
        Path m = dir.resolve(METADATA_FILE);
        if (!Files.exists(m)) {
            return null;
        }
        try {
            long size = Files.size(m);
            if (size == 0 || size % QueueScanner.FILE_GRAIN != 0) {
                return METADATA_FILE + " is " + size + " bytes, not a multiple of " + QueueScanner.FILE_GRAIN
                        + " as Chronicle writes it: it was truncated";
            }
            return metadataExcerptProblem(m, size);
        } catch (IOException e) {
            return "cannot read " + METADATA_FILE + ": " + e.getMessage();
        }
    }

    /**
     * How Chronicle's table store header starts, in its binary wire: the field {@code header}, the
     * type {@code STStore}, a marshallable whose 4-byte length follows.
     */
    private static final byte[] STORE_HEADER = {(byte) 0xB9, 6, 'h', 'e', 'a', 'd', 'e', 'r', (byte) 0xB6, 7,
        'S', 'T', 'S', 't', 'o', 'r', 'e', (byte) 0x82};

    /** The table store's bytes read (it holds a handful of short excerpts). */
    private static final int METADATA_READ = 1 << 16;

    /**
     * Walks the excerpts of {@code metadata.cq4t} (Chronicle frames them as a queue file's: its
     * header, metadata, then one per value): each is complete and inside the file, up to the first
     * zero word. An excerpt left
     * incomplete (a writer died writing it) makes the next writer wait for it and give up after
     * about 10 s with "Unable to claim exclusive lock".
     */
    private static String metadataExcerptProblem(Path m, long size) throws IOException {
        byte[] b;
        try (var in = Files.newInputStream(m)) {
            b = in.readNBytes((int) Math.min(size, METADATA_READ));
        }
        java.nio.ByteBuffer bb = java.nio.ByteBuffer.wrap(b).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        int first = b.length >= 4 ? bb.getInt(0) : 0;
        if (first != 0 && (first & QueueScanner.NOT_COMPLETE) == 0) {
            // the header names its type, STStore, whose fields fill the rest of the excerpt: Chronicle
            // cannot read another and waits about 10 s for a lock before it says so
            int end = 4 + (first & QueueScanner.LENGTH_MASK);
            boolean typed = b.length >= STORE_HEADER.length + 4 + 4
                    && java.util.Arrays.equals(b, 4, 4 + STORE_HEADER.length, STORE_HEADER, 0, STORE_HEADER.length);
            int fieldsAt = 4 + STORE_HEADER.length + 4;
            int fields = typed ? bb.getInt(4 + STORE_HEADER.length) : -1;
            if (fields < 0 || fields > end - fieldsAt) {
                return METADATA_FILE + "'s header (its first excerpt) is damaged: it does not start as Chronicle's table "
                        + "store header does, or its fields run past it";
            }
        }
        if (first == 0) {
            return null; // never written (or zeroed): a writer writes it afresh
        }
        int pos = 0;
        while (pos + 4 <= b.length) {
            int h = bb.getInt(pos);
            if (h == 0) {
                int after = java.util.Arrays.mismatch(b, pos, b.length, new byte[b.length - pos], 0, b.length - pos);
                return after < 0 ? null : METADATA_FILE + " holds bytes at byte " + (pos + after) + " after the end of "
                        + "its data at byte " + pos + " (an excerpt's length is damaged): a writer cannot read the table store";
            }
            if ((h & QueueScanner.NOT_COMPLETE) != 0) {
                return METADATA_FILE + "'s excerpt at byte " + pos + " is marked incomplete (a writer died writing it, "
                        + "or a bit flipped): a writer waits for it and gives up (\"Unable to claim exclusive lock\")";
            }
            int len = h & QueueScanner.LENGTH_MASK;
            if ((pos == 0 && (h & QueueScanner.META_DATA) == 0) || len == 0 || pos + 4L + len > size) {
                return METADATA_FILE + "'s excerpt at byte " + pos + " is damaged (its header word is 0x"
                        + Integer.toHexString(h) + "): a writer cannot read the table store";
            }
            if (pos > 0 && APPEND_LOCK.equals(valueName(b, pos + 4, pos + 4 + len))) {
                long v = valueAfterName(b, bb, pos + 4, pos + 4 + len);
                if (v != Long.MIN_VALUE && (v <= 0 || v > Integer.MAX_VALUE)) {
                    return METADATA_FILE + "'s " + APPEND_LOCK + " holds " + v + ", neither free nor a process id: a writer "
                            + "opens the journal, then finds it locked at its first append";
                }
            }
            pos = (pos + 4 + len + 3) & ~3;
        }
        return null;
    }

    /** The table store value a writer takes for each append: free is Long.MIN_VALUE, held a process id. */
    private static final String APPEND_LOCK = "chronicle.append.lock";

    /** The name of the table store value whose excerpt's bytes are {@code b[from, to)}, or null. */
    private static String valueName(byte[] b, int from, int to) {
        if (from + 2 > to || (b[from] & 0xff) != 0xB9 || from + 2 + (b[from + 1] & 0xff) > to) {
            return null; // a field name of up to 255 bytes: 0xB9, its length, its bytes
        }
        return new String(b, from + 2, b[from + 1] & 0xff, java.nio.charset.StandardCharsets.US_ASCII);
    }

    /** The int64 after the name (and its padding) in a value excerpt; 0 when it is not one. */
    private static long valueAfterName(byte[] b, java.nio.ByteBuffer bb, int from, int to) {
        int p = from + 2 + (b[from + 1] & 0xff);
        while (p < to && (b[p] & 0xff) == 0x8F) {
            p++; // one byte of padding
        }
        if (p + 5 <= to && (b[p] & 0xff) == 0x8E) {
            p += 5 + bb.getInt(p + 1); // padding of a given length
        }
        return p >= 0 && p + 9 <= to && (b[p] & 0xff) == 0xA7 ? bb.getLong(p + 1) : 0;
    }

    /**
     * What keeps a writer from opening the journal in {@code dir} because of its
     * {@code metadata.cq4t}, or null: {@link #metadataProblem}, then a trial, since only
     * Chronicle knows every field it needs (its header's types, the roll cycle's length and file
     * name format, the listing): a copy of the file, alone in a scratch directory, is opened as a
     * writer opens a journal; its refusal is the problem, quoted. The journal's files are not
     * touched.
     */
    static String metadataWriterProblem(Path dir) {
        String p = metadataProblem(dir);
        Path m = dir.resolve(METADATA_FILE);
        if (p != null || !Files.isRegularFile(m)) {
            return p;
        }
        Path scratch;
        try {
            scratch = Files.createTempDirectory("kvledger-metadata-check");
        } catch (IOException e) {
            return null; // no trial possible: say nothing rather than guess
        }
        try {
            Files.copy(m, scratch.resolve(METADATA_FILE));
            try (SingleChronicleQueue q = SingleChronicleQueueBuilder.single(scratch.toFile())
                    .rollCycle(JournalFormat.ROLL_CYCLE).timeoutMS(1_000).build();
                 net.openhft.chronicle.queue.ExcerptAppender a = q.createAppender()) {
                // the roll cycle it records must name the journal's files (Chronicle parses every name)
                String format = q.rollCycle().format();
                for (Path f : QueueScanner.listFiles(dir)) {
                    String name = f.getFileName().toString();
                    String cycle = name.substring(0, name.length() - ".cq4".length());
                    try {
                        java.time.format.DateTimeFormatter.ofPattern(format).parse(cycle);
                    } catch (RuntimeException e) {
                        return METADATA_FILE + " is damaged: its roll cycle's file name format " + format
                                + " does not name the journal's file " + name + " (a writer fails to parse it)";
                    }
                }
                return null;
            }
        } catch (IOException e) {
            return null;
        } catch (RuntimeException e) {
            String why = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
            return METADATA_FILE + " is damaged: a writer cannot open it (Chronicle says: "
                    + why.replace(scratch.toString(), "").strip() + ")";
        } finally {
            deleteTree(scratch);
        }
    }

    private static void deleteTree(Path dir) {
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            // a scratch directory left behind in the temporary directory
        }
    }

    /**
     * Refuses a damaged {@code metadata.cq4t} before Chronicle maps it (mapping a file cut short
     * faults the JVM when a page past its end is touched).
     */
    static void checkMetadata(Path dir) {
        String p = metadataProblem(dir);
        if (p != null) {
            throw new JournalException("the journal in " + dir + " is damaged: " + p + "; move " + METADATA_FILE
                    + " away and Chronicle recreates it (the entries are in the .cq4 files)");
        }
    }

    /**
     * A reusable buffer for reading entries: the entry is {@code bytes[offset, offset + length)}.
     * By default the scanner copies each entry into {@link #bytes} (offset 0). A buffer made
     * {@link #inPlace()} is handed the scanner's own read window instead, without a copy: its
     * bytes are valid only until the next read of the scanner.
     */
    static final class Buffer {
        byte[] bytes;
        int offset;
        int length;
        final boolean inPlace;

        Buffer() {
            this.bytes = new byte[1024];
            this.inPlace = false;
        }

        private Buffer(boolean inPlace) {
            this.bytes = inPlace ? new byte[0] : new byte[1024];
            this.inPlace = inPlace;
        }

        /** A buffer that borrows the scanner's window (no copy; valid until the next read). */
        static Buffer inPlace() {
            return new Buffer(true);
        }
    }
}
