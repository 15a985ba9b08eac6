package io.kvledger.ledger.replay;

import io.kvledger.journal.JournalReader;
import io.kvledger.journal.JsonLines;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.function.UnaryOperator;
import java.util.regex.Pattern;

/**
 * {@code kvledger journal export}'s files: a journal written as JSON lines ({@link JsonLines#export})
 * to a file that appears only when complete ({@link #toFile}), and where each node of a directory
 * of journals goes ({@link #nodeFile}: the layout of journal/fixtures).
 */
public final class JournalExport {

    private JournalExport() {}

    private static final Pattern SAFE_NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]*");

    /**
     * {@code out/<node>/journal.jsonl}; a node name that is not a plain file name
     * ({@code [A-Za-z0-9][A-Za-z0-9._-]*}) becomes {@code journal-<hash>}.
     */
    public static Path nodeFile(Path out, String node) {
        return out.resolve(SAFE_NAME.matcher(node).matches() ? node : "journal-" + Math.abs(node.hashCode()))
                .resolve("journal.jsonl");
    }

    /**
     * Writes {@code r}'s entries to {@code file} as JSON lines: under a temporary name beside it
     * ({@code .NAME.partial}), moved over {@code file} when complete, so a failed export leaves no
     * half-written file. The directories on the way are created.
     *
     * @param wrap wraps the file's writer (a caller counting lines for a progress line), or returns it
     * @return the number of entries written
     * @throws IOException when the file cannot be written (the partial file is removed)
     */
    public static long toFile(JournalReader r, Path file, UnaryOperator<Writer> wrap) throws IOException {
        Path parent = file.toAbsolutePath().getParent();
        Files.createDirectories(parent);
        Path partial = parent.resolve("." + file.getFileName() + ".partial");
        long n;
        try (Writer w = wrap.apply(new BufferedWriter(Files.newBufferedWriter(partial, StandardCharsets.UTF_8), 1 << 16))) {
            n = JsonLines.export(r, w);
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(partial);
            throw e;
        }
        Files.move(partial, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        return n;
    }
}
