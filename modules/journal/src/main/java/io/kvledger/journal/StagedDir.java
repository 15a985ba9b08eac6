package io.kvledger.journal;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * A journal built beside its destination and moved into place once complete, so that a process
 * killed while building it (an import of a large file) leaves the destination as it was: never a
 * journal holding only its header, which the next import would refuse as "already holds a
 * journal". The work directory is a hidden sibling, {@code .NAME.importing-PID}; one whose process
 * is gone is removed by the next {@link #start} for the same destination.
 *
 * <p>Not for appending: a journal appended to is written in place.
 */
public final class StagedDir {

    private final Path dest;
    private final Path work;

    private StagedDir(Path dest, Path work) {
        this.dest = dest;
        this.work = work;
    }

    /**
     * Starts building the journal that is to end up in {@code dest} (which must not exist, or be an
     * empty directory); removes what killed builds for {@code dest} left behind.
     *
     * @throws JournalException when the work directory cannot be made
     */
    public static StagedDir start(Path dest) {
        Path abs = dest.toAbsolutePath().normalize();
        Path parent = abs.getParent();
        String name = abs.getFileName() == null ? "journal" : abs.getFileName().toString();
        String prefix = "." + name + ".importing-";
        try {
            Files.createDirectories(parent);
            try (DirectoryStream<Path> s = Files.newDirectoryStream(parent, prefix + "*")) {
                for (Path p : s) {
                    String pid = p.getFileName().toString().substring(prefix.length());
                    if (pid.chars().allMatch(Character::isDigit) && !pid.isEmpty()
                            && ProcessHandle.of(Long.parseLong(pid)).map(ProcessHandle::isAlive).orElse(false)) {
                        continue; // another import of the same destination is running
                    }
                    deleteTree(p);
                }
            }
            Path work = parent.resolve(prefix + ProcessHandle.current().pid());
            deleteTree(work);
            return new StagedDir(abs, work);
        } catch (IOException | NumberFormatException e) {
            throw new JournalException("cannot prepare the import into " + dest + ": " + e.getMessage(), e);
        }
    }

    /** Where the journal is built. */
    public Path work() {
        return work;
    }

    /**
     * Moves the complete journal into its destination (an empty directory there is replaced).
     *
     * @throws JournalException when the destination was filled meanwhile, or the move fails
     */
    public void publish() {
        try {
            if (Files.isDirectory(dest)) {
                try (Stream<Path> s = Files.list(dest)) {
                    if (s.findAny().isPresent()) {
                        throw new JournalException(dest + " is no longer empty: the imported journal is left in " + work);
                    }
                }
                Files.delete(dest);
            }
            Files.move(work, dest, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new JournalException("cannot move the imported journal from " + work + " to " + dest + ": "
                    + e.getMessage(), e);
        }
    }

    /** Removes the work directory (a build that failed). */
    public void abandon() {
        try {
            deleteTree(work);
        } catch (IOException e) {
            // best effort: the next start for this destination removes it
        }
    }

    private static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> s = Files.walk(root)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
