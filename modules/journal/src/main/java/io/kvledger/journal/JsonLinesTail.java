package io.kvledger.journal;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.format.EntryKind;
import io.kvledger.journal.format.PayloadException;
import io.kvledger.journal.json.JsonException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * Follows a JSON-lines file as it grows (a node's recording, as the vLLM bridge's recorder writes
 * it: a header line, then a line per entry) and hands out each entry as the bytes of the journal
 * entry {@code kvledger journal import} makes of it: the seqs, causes and times
 * {@link JsonLines#importFile} assigns (numbered from 1 after the header, a derived line's cause the
 * input above it or the one its {@code cause_seq} names), encoded as {@link JournalWriter} encodes
 * them ({@link EntryEncoder}). Reading the same file again gives the same bytes, so a copier that
 * restarts from the file's start and drops the seqs it had already copied loses and doubles nothing.
 *
 * <p>Only whole lines are read: a last line without its newline is waited for (the writer is still
 * writing it); {@link #poll(boolean) poll(true)} at the end reads it as the import does (taken when
 * it parses, else left out and said in {@link #warnings()}), as are zero bytes at the end.
 *
 * <p>The checks are the import's: the first line is the header, seqs grow, a {@code cause_seq}
 * names an input above, an entry fits a journal, the inputs' times do not go back. A line that
 * fails one is not skipped: reading stops before it, and {@link #problem()} names the file, the
 * line number and the reason (the import would refuse the file). So does a file that shrinks or is
 * replaced by another of the same name (a recorder that restarted keeps the old recording as
 * {@code NAME.1.jsonl}): its new lines are another run of the node, not more of this one.
 *
 * <p>Threading: one thread at a time.
 */
public final class JsonLinesTail implements AutoCloseable {

    private static final byte[] BOM = {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF};

    private final Path file;
    private final FileChannel ch;
    private final Object fileKey;
    private final JournalHeader header;
    private final CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder()
            .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT);
    private final JsonLines.Parser parser = new JsonLines.Parser();
    private final EntryEncoder encoder = new EntryEncoder();
    private final ByteBuffer chunk = ByteBuffer.allocate(1 << 16);
    private final ArrayDeque<byte[]> ready = new ArrayDeque<>();
    private final List<String> warnings = new ArrayList<>();
    /** Bytes of the file read so far (whole lines plus {@link #carry}). */
    private long pos;
    private byte[] carry = new byte[1024];
    private int carryLen;
    private long lineNo;
    private boolean headerSeen;
    private long nextSeq = 1;
    private long prevFileSeq = -1;
    private long lastInputNew;
    private long lastInputAt;
    private long lastInputAtChecked = Long.MIN_VALUE;
    private long[] olds = new long[64];
    private long[] news = new long[64];
    private long[] ats = new long[64];
    private int indexed;
    private String problem;
    private boolean ended;
    private long idleChecks;

    private JsonLinesTail(Path file, FileChannel ch, Object fileKey) {
        this.file = file;
        this.ch = ch;
        this.fileKey = fileKey;
        try {
            fill(false);
        } catch (RuntimeException e) {
            close();
            throw e;
        }
        if (headerFound == null) {
            close();
            throw new JournalException(problem != null ? problem : file + ": the first line, a journal header, is not written whole yet");
        }
        this.header = headerFound;
    }

    /** The header line's header, once read. */
    private JournalHeader headerFound;

    /**
     * Opens {@code file}, whose first line must be a whole journal header line.
     *
     * @throws JournalException when it cannot be read or does not start with a header line
     */
    public static JsonLinesTail open(Path file) {
        FileChannel ch;
        Object key;
        try {
            ch = FileChannel.open(file);
            key = Files.readAttributes(file, BasicFileAttributes.class).fileKey();
        } catch (IOException e) {
            throw new JournalException("cannot read " + file + ": " + e.getMessage(), e);
        }
        return new JsonLinesTail(file, ch, key);
    }

    public Path file() {
        return file;
    }

    /** The file's header (as the import writes it). */
    public JournalHeader header() {
        return header;
    }

    /**
     * The next entry's bytes, or {@code null} when no whole line is there yet (or reading stopped:
     * {@link #problem()}). With {@code atEnd}, what the file holds is all there is: a last line
     * without its newline is read as the import reads it.
     */
    public byte[] poll(boolean atEnd) {
        if (ready.isEmpty() && problem == null && !ended) {
            fill(atEnd);
        }
        return ready.pollFirst();
    }

    /** Why reading stopped before the end (file, line number, reason), or {@code null}. */
    public String problem() {
        return problem;
    }

    /** What was left out at the file's end, as the import says it. */
    public List<String> warnings() {
        return List.copyOf(warnings);
    }

    /** Lines read whole so far. */
    public long lines() {
        return lineNo;
    }

    private void fill(boolean atEnd) {
        try {
            while (ready.isEmpty() && problem == null) {
                chunk.clear();
                int n = ch.read(chunk, pos);
                if (n <= 0) {
                    if (atEnd) {
                        end();
                    } else if ((++idleChecks & 63) == 0) {
                        checkReplaced();
                    }
                    return;
                }
                if (pos == 0 && n >= 3 && Arrays.equals(Arrays.copyOf(chunk.array(), 3), BOM)) {
                    take(chunk.array(), 3, n);
                } else {
                    take(chunk.array(), 0, n);
                }
                pos += n;
            }
        } catch (IOException e) {
            problem = file + ": cannot read after line " + lineNo + ": " + e.getMessage();
        }
    }

    /** Splits {@code b[from..to)} into lines (the last, without its newline, kept in {@link #carry}). */
    private void take(byte[] b, int from, int to) {
        int start = from;
        for (int i = from; i < to && problem == null; i++) {
            if (b[i] == '\n') {
                int len = i - start;
                if (carryLen > 0) {
                    append(b, start, len);
                    line(carry, 0, carryLen);
                    carryLen = 0;
                } else {
                    line(b, start, len);
                }
                start = i + 1;
            }
        }
        if (problem == null) {
            append(b, start, to - start);
        }
    }

    private void append(byte[] b, int off, int len) {
        if (carryLen + len > carry.length) {
            carry = Arrays.copyOf(carry, Math.max(carryLen + len, carry.length * 2));
        }
        System.arraycopy(b, off, carry, carryLen, len);
        carryLen += len;
    }

    /** The file holds all there is: its last line without a newline, and zero bytes after it, as the import reads them. */
    private void end() {
        ended = true;
        int data = carryLen;
        while (data > 0 && carry[data - 1] == 0) {
            data--;
        }
        int zeros = carryLen - data;
        long cutLine = 0;
        if (data > 0) {
            String text = decodeOrNull(carry, 0, data);
            if (text != null && text.isBlank()) {
                lineNo++; // a blank last line is skipped like any other
            } else if (text != null && text.strip().endsWith("}") && parsesAlone(text)) {
                lineNo++;
                handle(text);
            } else {
                cutLine = data;
            }
        }
        carryLen = 0;
        if (cutLine > 0 || zeros > 0) {
            warnings.add(new JsonLines.CutTail(cutLine > 0 ? lineNo + 1 : 0, cutLine, zeros).describe(file));
        }
    }

    private static boolean parsesAlone(String text) {
        try {
            return text.isBlank() || JsonLines.parsesAlone(text);
        } catch (JsonException | PayloadException | IllegalArgumentException | ArithmeticException e) {
            return false;
        }
    }

    private String decodeOrNull(byte[] b, int off, int len) {
        try {
            return decoder.reset().decode(ByteBuffer.wrap(b, off, len)).toString();
        } catch (CharacterCodingException e) {
            return null;
        }
    }

    private void line(byte[] b, int off, int len) {
        lineNo++;
        String text = decodeOrNull(b, off, len);
        if (text == null) {
            problem = at("not valid UTF-8");
            return;
        }
        handle(text);
    }

    private void handle(String text) {
        if (text.isBlank()) {
            return;
        }
        List<JsonLines.Line> lines;
        try {
            lines = parser.parse(text);
        } catch (JsonException | PayloadException | IllegalArgumentException | ArithmeticException e) {
            problem = at(headerSeen ? e.getMessage() : "no header: the first line is not a journal header (" + e.getMessage() + ")");
            return;
        }
        // every entry of the line is checked and encoded before any is handed out
        List<byte[]> out = new ArrayList<>(lines.size());
        long seq = nextSeq;
        long prev = prevFileSeq;
        long inNew = lastInputNew;
        long inAt = lastInputAt;
        long checkedAt = lastInputAtChecked;
        int indexedBefore = indexed;
        try {
            for (JsonLines.Line line : lines) {
                if (line.kind() == EntryKind.HEADER) {
                    if (headerSeen) {
                        throw new IllegalArgumentException("a header is only allowed on the first line");
                    }
                    if (line.seq() > 0) {
                        throw new IllegalArgumentException("the header's seq must be 0");
                    }
                    headerFound = (JournalHeader) line.record();
                    out.add(EntryEncoder.header(headerFound));
                    prev = 0;
                    continue;
                }
                if (!headerSeen && headerFound == null) {
                    throw new IllegalArgumentException("no header: the first line is not a journal header");
                }
                if (line.seq() >= 0) {
                    if (line.seq() <= prev) {
                        throw new IllegalArgumentException("seq " + line.seq() + " is not greater than the seq before it (" + prev + ")");
                    }
                    prev = line.seq();
                }
                byte[] entry;
                switch (line.kind()) {
                    case INPUT -> {
                        NodeEvent e = (NodeEvent) line.record();
                        if (e.atNs() < checkedAt) {
                            throw new IllegalArgumentException("time " + e.atNs() + " ns goes backwards: the input before it is at "
                                    + checkedAt + " ns");
                        }
                        checkedAt = e.atNs();
                        entry = encoder.input(seq, e);
                        inNew = seq;
                        inAt = e.atNs();
                        if (line.seq() >= 0) {
                            index(line.seq(), seq, inAt);
                        }
                    }
                    case DERIVED -> {
                        long cause = inNew;
                        long at = inAt;
                        if (line.causeSeq() == 0) {
                            cause = 0;
                            at = 0;
                        } else if (line.causeSeq() > 0) {
                            int i = Arrays.binarySearch(olds, 0, indexed, line.causeSeq());
                            if (i < 0) {
                                throw new IllegalArgumentException("cause_seq " + line.causeSeq() + " is not the seq of an input line above it");
                            }
                            cause = news[i];
                            at = ats[i];
                        }
                        if (line.atNs() != Long.MIN_VALUE) {
                            at = line.atNs();
                        }
                        entry = encoder.derived(seq, cause, at, (Effect) line.record());
                    }
                    default -> throw new IllegalArgumentException("a " + line.kind().name().toLowerCase(java.util.Locale.ROOT)
                            + " entry: journal import takes a node's header, inputs and derived entries");
                }
                if (entry.length > JsonLines.MAX_ENTRY_BYTES) {
                    throw new IllegalArgumentException(String.format(java.util.Locale.ROOT, "the entry would be %,d bytes, "
                            + "over the %,d bytes a journal entry may hold", entry.length, JsonLines.MAX_ENTRY_BYTES));
                }
                out.add(entry);
                seq++;
            }
        } catch (IllegalArgumentException | ClassCastException | JournalException e) {
            indexed = indexedBefore;
            problem = at(e.getMessage());
            return;
        }
        headerSeen |= headerFound != null;
        nextSeq = seq;
        prevFileSeq = prev;
        lastInputNew = inNew;
        lastInputAt = inAt;
        lastInputAtChecked = checkedAt;
        ready.addAll(out);
    }

    private void index(long old, long nu, long at) {
        if (indexed == olds.length) {
            olds = Arrays.copyOf(olds, indexed * 2);
            news = Arrays.copyOf(news, indexed * 2);
            ats = Arrays.copyOf(ats, indexed * 2);
        }
        olds[indexed] = old;
        news[indexed] = nu;
        ats[indexed] = at;
        indexed++;
    }

    private String at(String reason) {
        return file + ": line " + lineNo + ": " + reason + " (nothing from this line on is read; journal import would refuse the file)";
    }

    /** Says so, and reads no further, when the file shrank or another file took its name. */
    private void checkReplaced() throws IOException {
        Object key;
        long size;
        try {
            key = Files.readAttributes(file, BasicFileAttributes.class).fileKey();
            size = ch.size();
        } catch (java.nio.file.NoSuchFileException e) {
            key = null;
            size = ch.size();
        }
        if (size < pos || (fileKey != null && !Objects.equals(key, fileKey))) {
            problem = file + ": " + (size < pos ? "shrank to " + size + " bytes after " + pos + " were read"
                    : key == null ? "was moved away" : "is now another file")
                    + " after line " + lineNo + " (a recorder that restarted keeps its earlier recording as NAME.1.jsonl): "
                    + "the lines of the new file are another run of the node, not more of this one; they are not read";
        }
    }

    @Override
    public void close() {
        try {
            ch.close();
        } catch (IOException ignored) {
            // read only
        }
    }
}
