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
            return null;
        } catch (IOException e) {
            return "cannot read " + METADATA_FILE + ": " + e.getMessage();
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
