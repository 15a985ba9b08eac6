package io.kvledger.journal;

import io.kvledger.journal.format.EntryKind;
import io.kvledger.journal.format.EntryType;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * Reads the entries of a journal's Chronicle queue files with plain positional file reads, never
 * through a memory mapping, so that no file content (a truncated file, zeroed pages, flipped bits)
 * can fault the JVM; every excerpt is bounds-checked against the file's size before it is read.
 *
 * <p>A queue file is a sequence of excerpts, each a 4-byte little-endian header (bits 0-29:
 * length; bit 30: Chronicle's metadata; bit 31: not complete) followed by its bytes and padded
 * to 4 bytes; a header of 0 ends the data (the rest of the file is zeros), and a rolled file ends
 * with Chronicle's end marker. Metadata excerpts (Chronicle's file header and index) are
 * skipped; each data excerpt is a kvledger entry, whose checksum (layout 2 and later) is checked
 * before the entry is handed out, or a group of entries ({@link JournalFormat#GROUP_LAYOUT}), whose
 * checksum covers its members, handed out one by one. A member is framed like an excerpt (a length
 * word, the entry, padding to 4 bytes), so the search after a damaged group finds its intact
 * members by their own checksums.
 *
 * <p>Damage is anything else: a checksum mismatch, an excerpt running past the end of its file,
 * an entry of layout 0 or 1 in a journal whose header is checksummed, a file that ends without a
 * terminating header, zeros (or any unreadable bytes) followed by readable entries, or fewer
 * excerpts than Chronicle's own file header records. After damage the scanner searches the rest
 * of the file, 4 bytes at a time, for the next entry whose checksum matches and whose seq is
 * above the last good one, and resumes there; each damaged region becomes a
 * {@link JournalDamage} with the number of entries lost (the seq gap). Journals of format version
 * 0 and 1 have no checksums: there a resumed entry only has to look like one (a known type of the
 * right kind, a seq above the last good one).
 *
 * <p>In follow mode ({@link JournalTailer}) the end of the last file is not searched past: a live
 * writer appends there, and {@link #next} simply returns false until it has. Outside follow mode
 * a pass over a file a live writer appends to ends at the first end it meets past what Chronicle's
 * header recorded as written when the pass opened the file: however fast the writer goes on, the
 * pass does not chase it.
 *
 * <p>A follow poll that finds nothing new reads the 4-byte word at the end of the data and
 * Chronicle's header (its first 4 KB, for the write position), and looks at the directory's time
 * rather than listing it (listed again when that moved, or {@value #RELIST_MS} ms after): an idle
 * {@code tail -f} or {@code /v1/events} client reads about 4 KB a poll, not two 1 MB windows.
 *
 * <p>Outside follow mode, a file of {@value #READ_AHEAD_FROM_CHUNKS} read-ahead chunks or more is
 * read ahead on a thread of its own ({@link ReadAhead}) while the walk goes straight on; the
 * scanner reads for itself wherever it does not (the file's header, the search after damage).
 *
 * <p>Threading: one thread (plus the read-ahead's own, which only reads the file).
 */
final class QueueScanner implements AutoCloseable {

    static final int LENGTH_MASK = 0x3FFF_FFFF;
    static final int META_DATA = 0x4000_0000;
    static final int NOT_COMPLETE = 0x8000_0000;
    /** Chronicle's marker at the end of a file the writer rolled away from. */
    static final int END_OF_DATA = NOT_COMPLETE | META_DATA;
    /** Chronicle creates and extends its files in multiples of this. */
    static final long FILE_GRAIN = 4096;
    /** No kvledger entry comes near this (the listener caps a frame far below it). */
    static final int MAX_ENTRY = 64 << 20;

    private static final int WINDOW = 1 << 20;
    /** Zeros to compare the window with ({@link #zeroRun}). */
    private static final byte[] ZEROS = new byte[WINDOW];
    private static final byte[] WRITE_POSITION = "writePosition".getBytes(StandardCharsets.US_ASCII);
    /** The file header's field holding where Chronicle's index2index array is. */
    private static final byte[] INDEX2INDEX_FIELD = "index2Index".getBytes(StandardCharsets.US_ASCII);
    /** The name of the metadata excerpt holding the index2index array. */
    private static final byte[] INDEX2INDEX_NAME = "index2index".getBytes(StandardCharsets.US_ASCII);
    /** How many of the index2index array's entries are checked (each names an index array of 4 M excerpts). */
    private static final int INDEX_ARRAYS_CHECKED = 64;
    /** Metadata excerpts remembered per file: Chronicle writes a handful; past this the index is not checked. */
    private static final int METADATA_REMEMBERED = 1 << 12;
    private static final long[] NO_LONGS = new long[0];

    private final Path dir;
    private final boolean follow;
    private final boolean readAhead;
    private long chunksReadAhead;
    /** Bytes this scanner read from its files itself (not the read-ahead's). */
    private long bytesRead;
    /** Times the directory was listed after the start. */
    private long listings;
    /**
     * How many bytes the next window read takes (at least what it needs): the whole window, except
     * in follow mode after a poll found nothing new, where it starts small and doubles with each
     * read, so that an entry arriving at an idle journal does not cost a window of zeros.
     */
    private int readSize = WINDOW;
    /** Follow mode: the directory's modification time when it was listed last, and when that was. */
    private java.nio.file.attribute.FileTime listedDirTime;
    private long listedAtNs;
    /** A small buffer for the 4-byte peek at the end of the data (follow mode), apart from the window. */
    private final ByteBuffer peek = ByteBuffer.allocate(4).order(java.nio.ByteOrder.LITTLE_ENDIAN);
    private List<Path> files;
    private int fileIndex = -1;
    private FileChannel ch;
    private String fileName;
    private long size;
    private long pos;
    private byte[] win = new byte[WINDOW];
    private long winStart;
    private int winLen;
    /**
     * Where the window's bytes start being the file's (never before {@link #winStart}): winStart,
     * except in a chunk of the read-ahead, whose front holds only the tail of the entry before it
     * (copied there).
     */
    private long winValidFrom;
    /** The scanner's own window buffer (for its own reads); {@link #win} may be a read-ahead chunk's. */
    private byte[] own = win;
    /** Reads the current file ahead (outside follow mode, over large files); null when not running. */
    private ReadAhead ahead;

    private long lastGoodSeq = -1;
    private boolean strict;
    private boolean headerSeen;
    private long checked;
    private long unchecked;
    private long groups;
    private Pending pending;
    /** The group being handed out: its excerpt's position, its next member, its end (-1: none). */
    private long groupPos = -1;
    private long memberAt;
    private long groupEnd;
    private final List<JournalDamage> damage = new ArrayList<>();
    private boolean finished;

    // per file: Chronicle's header says how many excerpts it wrote (-1: unknown)
    private long expectedInFile;
    /** Where Chronicle's header of the current file says its last excerpt starts (-1: unknown). */
    private long expectedLastPos;
    /** Whether the walk of the current file met an excerpt starting at {@link #expectedLastPos}. */
    private boolean expectedLastPosMet;
    /**
     * Outside follow mode: where the last excerpt the pass holds the current file to starts, as
     * Chronicle's header recorded it when the file was opened (-1: unknown).
     */
    private long heldLastPos;
    /** Whether {@link #heldLastPos} was read again at an end after the header could not be read at the open. */
    private boolean heldReread;
    /** Where the last excerpt the walk met in the current file starts (-1: none yet). */
    private long lastExcerptPos;
    /** Where Chronicle's header of the current file says its index2index array is (-1: unknown). */
    private long index2IndexPos;
    /** Where that array says the file's index arrays are (its first entries). */
    private long[] indexArrayPos = NO_LONGS;
    /** Where the metadata excerpts of the current file start, as the walk met them. */
    private long[] metadataPos = new long[8];
    private int metadataCount;
    /** Whether the current file holds group excerpts: excerpts and entries are then not one to one. */
    private boolean groupsInFile;
    /** Excerpts read in the current file (a group counts once). */
    private long goodInFile;
    private long lostKnownInFile;
    private int damageBeforeFile;

    /** A damaged region whose cost is known once the next good entry (or the end) is found. */
    private record Pending(String file, long offset, long lastGoodSeq, String what, long goodInFileBefore) {}

    QueueScanner(Path dir, boolean follow) {
        this(dir, follow, !follow);
    }

    /**
     * @param readAhead whether large files are read ahead on a thread of their own
     *                  ({@link ReadAhead}; never in follow mode)
     */
    QueueScanner(Path dir, boolean follow, boolean readAhead) {
        this.dir = dir;
        this.follow = follow;
        this.readAhead = readAhead && !follow;
        this.files = listFiles(dir);
    }

    /** Chunks taken from the read-ahead so far. */
    long chunksReadAhead() {
        return chunksReadAhead;
    }

    /** Bytes read from the files so far by the scanner itself (the read-ahead's not counted). */
    long bytesRead() {
        return bytesRead;
    }

    /** Times the directory was listed again after the scanner started (in follow mode, to see a roll). */
    long listings() {
        return listings;
    }

    /** The {@code .cq4} files of {@code dir}, by name (the roll cycle's order). */
    static List<Path> listFiles(Path dir) {
        try (Stream<Path> s = Files.list(dir)) {
            List<Path> out = new ArrayList<>();
            for (Path p : (Iterable<Path>) s::iterator) {
                if (p.getFileName().toString().endsWith(".cq4") && Files.isRegularFile(p)) {
                    out.add(p);
                }
            }
            out.sort(null);
            return out;
        } catch (IOException e) {
            throw new JournalException("cannot list " + dir + ": " + e.getMessage(), e);
        }
    }

    /** The name of the queue file the entry handed out last was read from (null before the first). */
    String fileName() {
        return fileName;
    }

    /** Entries handed out whose checksum was checked. */
    long checked() {
        return checked;
    }

    /** Group excerpts read. */
    long groups() {
        return groups;
    }

    /** Entries handed out that carry no checksum (layouts 0 and 1). */
    long unchecked() {
        return unchecked;
    }

    /** The damage found so far (complete once {@link #next} has returned false outside follow mode). */
    List<JournalDamage> damage() {
        return damage;
    }

    /**
     * Reads the next good entry into {@code buf}.
     *
     * @return false at the end of the journal (in follow mode: of what has been written so far)
     * @throws JournalException when a file cannot be read (an I/O error)
     */
    boolean next(Queues.Buffer buf) {
        try {
            return advance(buf);
        } catch (IOException e) {
            throw new JournalException("cannot read " + dir.resolve(fileName == null ? "" : fileName) + ": "
                    + why(e), e);
        }
    }

    /**
     * What an I/O error says: an interrupt of the reading thread (a pass its caller cancelled)
     * closes the pass's own channel and has no message of its own.
     */
    private static String why(IOException e) {
        if (e instanceof java.nio.channels.ClosedByInterruptException) {
            return "the reading thread was interrupted (the pass was cancelled)";
        }
        return e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
    }

    private boolean advance(Queues.Buffer buf) throws IOException {
        while (true) {
            if (groupPos >= 0 && nextMember(buf)) {
                return true;
            }
            if (finished) {
                return false;
            }
            if (ch == null && !openNextFile()) {
                finish();
                return false;
            }
            if (pos + 4 > size) {
                if (follow && isLastFile() && refreshSize()) {
                    continue;
                }
                if (follow && isLastFile()) {
                    return false;
                }
                // a healthy file always has room after its data: it was cut
                startDamage(pos, "the file ends at byte " + fmt(size) + " without an end of data (it was truncated)");
                endFile();
                continue;
            }
            int h = follow && !windowHolds(pos, 4) ? peekInt(pos) : readInt(pos);
            if (h == END_OF_DATA) {
                endFile();
                continue;
            }
            if (h == 0 || (h & NOT_COMPLETE) != 0) {
                // the apparent end: a writer appends here next (or died while appending)
                if (follow && isLastFile() && !writtenPast(pos)) {
                    invalidate();
                    readSize = SMALL_READ;
                    return false;
                }
                if (!writtenAt(pos)) {
                    // after the last excerpt Chronicle recorded: a writer died appending here (its
                    // header is still 0 or not complete), so this is the end, not damage, even if a
                    // group in flight left whole members behind it
                    endFile();
                    continue;
                }
                if (!searchAfterEnd(h)) {
                    endFile();
                }
                continue;
            }
            if (pos == expectedLastPos) {
                expectedLastPosMet = true;
            }
            lastExcerptPos = pos;
            int len = h & LENGTH_MASK;
            if (pos + 4 + len > size) {
                if (follow && isLastFile() && refreshSize()) {
                    continue;
                }
                startDamage(pos, "an excerpt of " + fmt(len) + " bytes runs past the end of the file at byte "
                        + fmt(size) + " (the file was truncated or the excerpt's header is damaged)");
                resync(pos + 4);
                continue;
            }
            if ((h & META_DATA) != 0) {
                if (pos == 0 || len == 0 || chronicleMetadata(pos + 4)) {
                    metadataMet(len);
                    pos = align(pos + 4 + len);
                    continue;
                }
                // not Chronicle's: a data excerpt whose header lost a bit, or garbage
                if (len >= JournalFormat.FIXED_PREFIX && check(pos + 4, len, false) == null) {
                    startDamage(pos, "an entry's excerpt header is marked as Chronicle metadata (a flipped bit); "
                            + "the entry itself is intact and was read");
                    if (take(buf, len)) {
                        return true;
                    }
                    continue;
                }
                startDamage(pos, "an excerpt marked as metadata holds neither Chronicle metadata nor an entry");
                resync(pos + 4);
                continue;
            }
            String bad = check(pos + 4, len, true);
            if (bad != null) {
                // (a damaged excerpt does not tell whether it was a group: its layout byte may be
                // the damage; only an intact group makes the file one of groups)
                startDamage(pos, bad);
                resync(pos + 4);
                continue;
            }
            if (take(buf, len)) {
                return true;
            }
        }
    }

    /**
     * Takes the good excerpt of {@code len} bytes at {@link #pos}: hands out its entry, or opens
     * its group and hands out the first member; moves {@link #pos} past it.
     *
     * @return whether an entry was handed out (false: a group without a readable member)
     */
    private boolean take(Queues.Buffer buf, int len) throws IOException {
        long at = pos + 4;
        ensure(at, len);
        goodInFile++;
        if ((win[(int) (at - winStart)] & 0xff) == JournalFormat.GROUP_LAYOUT) {
            groupsInFile = true;
            groups++;
            groupPos = pos;
            memberAt = at + JournalFormat.ENVELOPE_V2;
            groupEnd = at + len;
            pos = align(at + len);
            return nextMember(buf);
        }
        handOut(buf, at, len, pos);
        pos = align(at + len);
        return true;
    }

    /**
     * Hands out the next member of the open group; false (and the group closed) when it has no
     * more. Its checksum covered the members, so they are not checked again; a member framed
     * wrongly (which that checksum makes a writer's fault) ends the group as damage.
     */
    private boolean nextMember(Queues.Buffer buf) throws IOException {
        if (memberAt + JournalFormat.MEMBER_HEADER > groupEnd) {
            groupPos = -1;
            return false;
        }
        if (!ensure(groupPos, (int) (groupEnd - groupPos))) {
            groupPos = -1;
            return false;
        }
        int len = intAt((int) (memberAt - winStart));
        long at = memberAt + JournalFormat.MEMBER_HEADER;
        if (len < JournalFormat.ENVELOPE_V2 || len > groupEnd - at
                || (win[(int) (at - winStart)] & 0xff) != JournalFormat.FIRST_CHECKSUMMED_VERSION) {
            startDamage(memberAt, "a group's member at byte " + fmt(memberAt) + " is framed wrongly (length "
                    + fmt(len & 0xFFFF_FFFFL) + ", " + fmt(groupEnd - at) + " bytes left in the group)");
            groupPos = -1;
            return false;
        }
        handOut(buf, at, len, groupPos);
        memberAt = align(at + len);
        return true;
    }

    /**
     * Hands out the entry of {@code len} bytes at {@code at}, whose excerpt starts at
     * {@code excerptAt} (where a damaged region before it ends).
     */
    private void handOut(Queues.Buffer buf, long at, int len, long excerptAt) throws IOException {
        ensure(at, len);
        int off = (int) (at - winStart);
        if (buf.inPlace) {
            buf.bytes = win;
            buf.offset = off;
        } else {
            if (len > buf.bytes.length) {
                buf.bytes = new byte[Math.max(len, buf.bytes.length * 2)];
            }
            System.arraycopy(win, off, buf.bytes, 0, len);
            buf.offset = 0;
        }
        buf.length = len;
        long seq = len >= JournalFormat.FIXED_PREFIX ? EntryCodec.seq(win, off) : lastGoodSeq;
        int layout = win[off] & 0xff;
        if (!headerSeen && len >= JournalFormat.FIXED_PREFIX && EntryCodec.kindCode(win, off) == EntryKind.HEADER.code()) {
            headerSeen = true;
            strict = layout >= JournalFormat.FIRST_CHECKSUMMED_VERSION;
        }
        if (layout >= JournalFormat.FIRST_CHECKSUMMED_VERSION) {
            checked++;
        } else {
            unchecked++;
        }
        if (pending != null) {
            long lost = Math.max(0, seq - pending.lastGoodSeq - 1);
            if (pending.file.equals(fileName)) {
                lostKnownInFile += lost;
            }
            damage.add(new JournalDamage(pending.file, pending.offset,
                    pending.file.equals(fileName) ? excerptAt - pending.offset : -1, pending.lastGoodSeq, seq, lost,
                    pending.what));
            pending = null;
        }
        lastGoodSeq = Math.max(lastGoodSeq, seq);
    }

    /**
     * Why the data excerpt at {@code at} (its bytes, after the excerpt header) is not a good entry,
     * or null when it is.
     *
     * @param inPlace true when the walk reached it (any seq goes: verify reports seq problems);
     *                false when a search after damage found it (its seq must be above the last good one)
     */
    private String check(long at, int len, boolean inPlace) throws IOException {
        if (len < JournalFormat.FIXED_PREFIX) {
            return "an excerpt of " + len + " bytes is too short to be an entry";
        }
        if (!inPlace) {
            // a search's candidate (often a word of an entry's bytes that reads as a long excerpt's
            // header): its seq is judged from the envelope alone, before its bytes are read and summed
            if (!ensure(at, JournalFormat.FIXED_PREFIX)) {
                return "past the end of the file";
            }
            long seq = EntryCodec.seq(win, (int) (at - winStart));
            if (seq <= lastGoodSeq || (lastGoodSeq >= 0 && seq - lastGoodSeq > (1L << 40))) {
                return "an old entry";
            }
        }
        ensure(at, len);
        int off = (int) (at - winStart);
        int layout = win[off] & 0xff;
        if (layout >= JournalFormat.FIRST_CHECKSUMMED_VERSION) {
            if (len < JournalFormat.ENVELOPE_V2) {
                return "an entry of layout " + layout + " is " + len + " bytes, shorter than its envelope";
            }
            if (EntryCodec.storedCrc(win, off) != EntryCodec.crc(win, off, len)) {
                return "checksum mismatch (CRC32C)";
            }
        } else if (strict || (!headerSeen && checked > 0)) {
            // a checksummed journal (or, its header lost, one whose entries so far had checksums)
            return "an entry of layout " + layout + " (without checksum) in a checksummed journal";
        } else if (!inPlace && (!headerSeen || !plausibleUnchecked(off, len))) {
            // without checksums, only a journal known to be unchecked resumes at a look-alike
            return "not an entry";
        }
        return null;
    }

    /**
     * A layout-0/1 entry found by searching: it must name a known input or derived type of its
     * kind, and its payload must start as a msgpack array.
     */
    private boolean plausibleUnchecked(int off, int len) {
        int layout = win[off] & 0xff;
        if (layout > 1) {
            return false;
        }
        EntryKind kind = EntryKind.byCode(win[off + 1] & 0xff);
        if (kind == null || kind == EntryKind.HEADER) {
            return false;
        }
        EntryType type = EntryType.byId((win[off + 2] & 0xff) | (win[off + 3] & 0xff) << 8);
        int payloadAt = layout == 0 ? JournalFormat.ENVELOPE_V0 : JournalFormat.ENVELOPE_V1;
        if (type == null || type.kind() != kind || len <= payloadAt) {
            return false;
        }
        int first = win[off + payloadAt] & 0xff;
        return (first >= 0x90 && first <= 0x9f) || first == 0xdc || first == 0xdd;
    }

    /**
     * Whether a metadata excerpt's content starts as Chronicle writes its own (a field name: the
     * file header, the index) or is padding.
     */
    private boolean chronicleMetadata(long at) throws IOException {
        if (!ensure(at, 1)) {
            return false;
        }
        int b = win[(int) (at - winStart)] & 0xff;
        return b == 0xB9 || b == 0x8F || b == 0x8E;
    }

    private void startDamage(long at, String what) {
        if (pending == null) {
            pending = new Pending(fileName, at, lastGoodSeq, what, goodInFile);
        }
    }

    /** After damage: continues at the next good entry in this file, or ends the file. */
    private void resync(long from) throws IOException {
        long q = search(align(from));
        if (q < 0) {
            endFile();
        } else {
            pos = q;
        }
    }

    /**
     * At the apparent end (header {@code h}, zero or not complete): anything readable after it is
     * damage. Returns true when the walk continues (at a found entry, or because a live writer
     * moved the end), false when the file ends here.
     */
    private boolean searchAfterEnd(int h) throws IOException {
        long q = search(align(pos + 4));
        if (q < 0) {
            return false;
        }
        // a live writer may have appended meanwhile: then the end has simply moved
        invalidate();
        if (readInt(pos) != h) {
            return true;
        }
        startDamage(pos, h == 0
                ? "the data ends here (zeros), but entries follow at byte " + fmt(q)
                : "an excerpt left incomplete, but entries follow at byte " + fmt(q));
        pos = q;
        return true;
    }

    /** The first position at or after {@code from} in this file that holds a good entry, or -1. */
    private long search(long from) throws IOException {
        for (long q = from; q + 4 <= size; q += 4) {
            if ((q < winValidFrom || q + 4 > winStart + winLen) && !ensure(q, 4)) {
                return -1;
            }
            int h = intAt((int) (q - winStart));
            if (h == 0) {
                // the zeros after the data (most of a file's tail): skip them at once, not 4 bytes a time
                q += zeroRun((int) (q - winStart)) - 4;
                continue;
            }
            // an entry whose header lost only its metadata bit is still found (the walk reads it)
            if ((h & NOT_COMPLETE) != 0) {
                continue;
            }
            int len = h & LENGTH_MASK;
            if (len < JournalFormat.FIXED_PREFIX || len > MAX_ENTRY || q + 4 + len > size) {
                continue;
            }
            if (check(q + 4, len, false) == null) {
                return q;
            }
        }
        return -1;
    }

    /** Follow mode: how long an unchanged directory goes without being listed again. */
    static final long RELIST_MS = 1_000;

    private boolean openNextFile() throws IOException {
        closeFile();
        if (fileIndex + 1 >= files.size()) {
            if (follow) {
                listedDirTime = Files.getLastModifiedTime(dir);
                listedAtNs = System.nanoTime();
                files = listFiles(dir);
                listings++;
            }
            if (fileIndex + 1 >= files.size()) {
                return false;
            }
        }
        fileIndex++;
        Path p = files.get(fileIndex);
        fileName = p.getFileName().toString();
        ch = FileChannel.open(p, StandardOpenOption.READ);
        size = ch.size();
        pos = 0;
        invalidate();
        goodInFile = 0;
        lostKnownInFile = 0;
        groupsInFile = false;
        groupPos = -1;
        long[] wp = chronicleWritePosition();
        expectedLastPos = wp == null ? -1 : wp[0];
        expectedLastPosMet = false;
        heldLastPos = expectedLastPos;
        heldReread = false;
        lastExcerptPos = -1;
        index2IndexPos = chronicleIndex2Index();
        indexArrayPos = NO_LONGS;
        metadataCount = 0;
        expectedInFile = chronicleExcerpts(wp);
        damageBeforeFile = damage.size();
        return true;
    }

    /**
     * Whether the current file is the last one. In follow mode the directory is listed again only
     * when its modification time moved since it was listed last, or {@value #RELIST_MS} ms after
     * (a file system whose times are coarse or not kept): a poll of an idle journal costs one stat,
     * not a listing. (A writer that rolls ends the old file with its end marker, which the walk
     * meets; this is for a file left without one.)
     */
    private boolean isLastFile() throws IOException {
        if (fileIndex < files.size() - 1) {
            return false;
        }
        if (follow) {
            java.nio.file.attribute.FileTime t = Files.getLastModifiedTime(dir);
            long now = System.nanoTime();
            if (t.equals(listedDirTime) && now - listedAtNs < RELIST_MS * 1_000_000L) {
                return true;
            }
            listedDirTime = t;
            listedAtNs = now;
        }
        listings++;
        return listFiles(dir).size() <= files.size();
    }

    private boolean refreshSize() throws IOException {
        long s = ch.size();
        if (s != size) {
            size = s;
            invalidate();
            return true;
        }
        return false;
    }

    /** The end of the current file: settles what it lost and moves to the next. */
    private void endFile() throws IOException {
        groupPos = -1;
        if (groupsInFile) {
            // excerpts and entries are not one to one: what the end lost is known by position only
            if (pending != null && pending.file.equals(fileName)) {
                damage.add(new JournalDamage(pending.file, pending.offset, -1, pending.lastGoodSeq, -1, -1, pending.what));
                pending = null;
            } else if (expectedLastPos >= 0 && pos <= expectedLastPos && pending == null) {
                damage.add(new JournalDamage(fileName, pos, -1, lastGoodSeq, -1, -1,
                        "Chronicle's file header records an excerpt at byte " + fmt(expectedLastPos)
                                + " but the data ends at byte " + fmt(pos) + " (the end of the file was zeroed or cut)"));
            }
        } else if (expectedInFile >= 0) {
            long missing = expectedInFile - goodInFile - lostKnownInFile;
            if (pending != null && pending.file.equals(fileName)) {
                long lost = Math.max(0, expectedInFile - pending.goodInFileBefore - lostKnownInFile);
                damage.add(new JournalDamage(pending.file, pending.offset, -1, pending.lastGoodSeq, -1, lost, pending.what));
                pending = null;
            } else if (missing > 0 && pending == null) {
                damage.add(new JournalDamage(fileName, pos, -1, lastGoodSeq, -1, missing,
                        "Chronicle's file header records " + fmt(expectedInFile) + " excerpts but the data ends after "
                                + fmt(goodInFile + lostKnownInFile) + " (the end of the file was zeroed or cut)"));
            }
        }
        JournalDamage forWriters = follow || damage.size() != damageBeforeFile || pending != null ? null : forWriters();
        if (forWriters != null) {
            damage.add(forWriters);
        }
        if (!follow && size % FILE_GRAIN != 0 && damage.size() == damageBeforeFile && pending == null) {
            damage.add(new JournalDamage(fileName, size, -1, lastGoodSeq, -1, 0, "the file's size, " + fmt(size)
                    + " bytes, is not a multiple of " + FILE_GRAIN + " as Chronicle writes it: it was truncated"));
        }
        closeFile();
    }

    private void finish() {
        if (pending != null) {
            damage.add(new JournalDamage(pending.file, pending.offset, -1, pending.lastGoodSeq, -1, -1, pending.what));
            pending = null;
        }
        finished = !follow;
    }

    /**
     * How many excerpts Chronicle's header of the current file says it holds, or -1 when the
     * header cannot be read.
     */
    private static long chronicleExcerpts(long[] wp) {
        if (wp == null) {
            return -1;
        }
        long seqInCycle = JournalFormat.ROLL_CYCLE.toSequenceNumber(wp[1]);
        return seqInCycle >= 0 ? seqInCycle + 1 : -1;
    }

    /**
     * Whether Chronicle's header of the current file (read afresh) records an excerpt after
     * {@code at}: then the zeros at {@code at} are damage, not the place a live writer appends next.
     */
    private boolean writtenPast(long at) throws IOException {
        invalidate();
        long[] wp = chronicleWritePosition();
        invalidate();
        return wp != null && wp[0] > at;
    }

    /**
     * Whether Chronicle's header of the current file records the excerpt at {@code at} or one after
     * it as written (true when the header cannot be read: then it is not known to be in flight).
     *
     * <p>Outside follow mode this is the header as read when the file was opened, so that a pass
     * ends at the first end it meets past what was written by then. Read afresh, the header of a
     * file a live writer goes on appending to records ever more: each end the walk met (the zeros
     * after what its window had read) looked like damage, the rest of the file was searched, the
     * walk went on after the new entries, and the pass ended only once the writer paused (a node
     * stepping while a request waited kept its own {@code /v1/hangs} pass going for over 30 s).
     * A header that could not be read at the open is read once more at the first end (a file a
     * writer had just created, its header not yet written): if it can be read now, it holds the
     * file from then on; if not (a damaged header), every end is searched past as before.
     */
    private boolean writtenAt(long at) throws IOException {
        if (!follow) {
            if (heldLastPos < 0 && !heldReread) {
                heldReread = true;
                invalidate();
                long[] wp = chronicleWritePosition();
                invalidate();
                heldLastPos = wp == null ? -1 : wp[0];
            }
            return heldLastPos < 0 || heldLastPos >= at;
        }
        invalidate();
        long[] wp = chronicleWritePosition();
        invalidate();
        return wp == null || wp[0] >= at;
    }

    /**
     * The walk met a Chronicle metadata excerpt of {@code len} bytes at {@link #pos}: remembers
     * where it starts, and reads the index2index array when it is that one.
     */
    private void metadataMet(int len) throws IOException {
        if (follow || metadataCount > METADATA_REMEMBERED) {
            return;
        }
        if (metadataCount == metadataPos.length) {
            metadataPos = java.util.Arrays.copyOf(metadataPos, metadataCount * 2);
        }
        metadataPos[metadataCount++] = pos;
        if (pos == index2IndexPos) {
            indexArrayPos = chronicleIndexArrays(pos + 4, len);
        }
    }

    /**
     * What in Chronicle's metadata of the current file, walked to {@link #pos} without damage, would
     * break a writer reopening the journal though no entry is lost, or null. Positions past the
     * walk's end are not judged: a live writer may be writing there.
     * <ul>
     *   <li>The header's write position inside an excerpt: Chronicle's appender resumes there, reads
     *       an entry's bytes as an excerpt header and appends far from the data, behind a hole of
     *       zeros. (At an earlier excerpt's start it walks on to the end: not damage.)</li>
     *   <li>The header's index2index position, or an index array position that array records, where
     *       no metadata excerpt starts: the appender follows them to write the index entry of every
     *       128th excerpt and fails there. (The readers here do not use the index.)</li>
     * </ul>
     */
    private JournalDamage forWriters() {
        if (expectedLastPos >= 0 && expectedLastPos < pos && !expectedLastPosMet) {
            return new JournalDamage(fileName, 0, -1, lastGoodSeq, -1, 0,
                    "Chronicle's file header records its last excerpt at byte " + fmt(expectedLastPos)
                            + ", where no excerpt starts (the last one starts at byte " + fmt(lastExcerptPos)
                            + "): the entries are intact, but a writer reopening this journal would append in"
                            + " the wrong place");
        }
        if (metadataCount > METADATA_REMEMBERED) {
            return null;
        }
        if (index2IndexPos > 0 && index2IndexPos < pos && !metadataAt(index2IndexPos)) {
            return indexDamage(0, "Chronicle's file header records its index2index array at byte "
                    + fmt(index2IndexPos));
        }
        for (long at : indexArrayPos) {
            if (at > 0 && at < pos && !metadataAt(at)) {
                return indexDamage(index2IndexPos, "Chronicle's index2index array records an index array at byte "
                        + fmt(at));
            }
        }
        return null;
    }

    private JournalDamage indexDamage(long offset, String what) {
        return new JournalDamage(fileName, offset, -1, lastGoodSeq, -1, 0, what + ", where no metadata excerpt starts:"
                + " the entries are intact, but a writer reopening this journal fails when it next indexes an entry");
    }

    private boolean metadataAt(long at) {
        for (int i = 0; i < metadataCount; i++) {
            if (metadataPos[i] == at) {
                return true;
            }
        }
        return false;
    }

    /**
     * Chronicle's {@code index2Index} from the file header: where the index2index array's excerpt
     * is; 0 when there is none yet, -1 when it cannot be read.
     */
    private long chronicleIndex2Index() throws IOException {
        int end = headerEnd();
        int at = end < 0 ? -1 : indexOf(INDEX2INDEX_FIELD, 4, end);
        if (at < 0) {
            return -1;
        }
        int p = at + INDEX2INDEX_FIELD.length;
        while (p < end && (win[p] & 0xff) == 0x8F) {
            p++; // one byte of padding
        }
        return p + 9 <= end && (win[p] & 0xff) == 0xA7 ? longAt(p + 1) : -1; // an int64
    }

    /** The first index array positions of the index2index excerpt whose bytes start at {@code at}. */
    private long[] chronicleIndexArrays(long at, int len) throws IOException {
        int n = Math.min(len, 64 + 17 + 8 * INDEX_ARRAYS_CHECKED);
        if (!ensure(at, n)) {
            return NO_LONGS;
        }
        int from = (int) (at - winStart);
        int end = from + n;
        int name = indexOf(INDEX2INDEX_NAME, from, Math.min(end, from + 16));
        int p = name < 0 ? -1 : int64Array(name + INDEX2INDEX_NAME.length, end);
        if (p < 0) {
            return NO_LONGS;
        }
        long used = Math.min(longAt(p + 9), Math.min(INDEX_ARRAYS_CHECKED, (end - p - 17) / 8));
        long[] out = new long[(int) Math.max(0, used)];
        for (int i = 0; i < out.length; i++) {
            out[i] = longAt(p + 17 + 8 * i);
        }
        return out;
    }

    /**
     * Where the bytes of Chronicle's file header (the first excerpt, metadata) end in the window
     * (from 4), or -1 when it cannot be read.
     */
    private int headerEnd() throws IOException {
        if (size < 8) {
            return -1;
        }
        int n = (int) Math.min(size, HEADER_READ);
        if (!follow) {
            if (!ensure(0, n)) {
                return -1;
            }
        } else if (!windowHolds(0, n)) {
            // a follower reads the header alone at every poll that finds nothing new
            int was = readSize;
            readSize = n;
            boolean got = ensure(0, n);
            readSize = was;
            if (!got) {
                return -1;
            }
        }
        int h = intAt(0);
        if ((h & (META_DATA | NOT_COMPLETE)) != META_DATA) {
            return -1;
        }
        return 4 + Math.min(h & LENGTH_MASK, winLen - 4);
    }

    /**
     * The window offset of the int64 array (its 0x8D marker, then capacity, used and the values)
     * that follows a field name ending at {@code p}, after its padding; -1 when none is there.
     */
    private int int64Array(int p, int end) {
        while (p < end && (win[p] & 0xff) == 0x8F) {
            p++; // one byte of padding
        }
        if (p + 5 <= end && (win[p] & 0xff) == 0x8E) {
            p += 5 + intAt(p + 1); // padding of a given length
        }
        return p < 0 || p + 17 > end || (win[p] & 0xff) != 0x8D ? -1 : p;
    }

    /**
     * Chronicle's {@code writePosition} from the file header (the first excerpt, metadata): the
     * position of the last excerpt written and its sequence value; null when it cannot be read.
     */
    private long[] chronicleWritePosition() throws IOException {
        int end = headerEnd();
        int at = end < 0 ? -1 : indexOf(WRITE_POSITION, 4, end);
        int p = at < 0 ? -1 : int64Array(at + WRITE_POSITION.length, end);
        if (p < 0 || p + 1 + 32 > end) {
            return null; // not an array of int64
        }
        long used = longAt(p + 9);
        if (used < 2) {
            return null;
        }
        long position = longAt(p + 17);
        long sequence = longAt(p + 25);
        if (position <= 0 || (position & 3) != 0) {
            return null;
        }
        return new long[] {position, sequence};
    }

    private int indexOf(byte[] needle, int from, int to) {
        outer:
        for (int i = from; i + needle.length <= to; i++) {
            for (int k = 0; k < needle.length; k++) {
                if (win[i + k] != needle[k]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    private void closeFile() {
        if (ahead != null) {
            ahead.close();
            ahead = null;
        }
        if (win != own) {
            win = own;
            invalidate();
        }
        if (ch != null) {
            try {
                ch.close();
            } catch (IOException ignored) {
                // read-only
            }
            ch = null;
        }
    }

    @Override
    public void close() {
        closeFile();
        finished = true;
    }

    // ---- the read window ------------------------------------------------------------------

    private void invalidate() {
        winLen = 0;
        winStart = 0;
        winValidFrom = 0;
    }

    static final int READ_AHEAD_FROM_CHUNKS = 4;
    /** Files at least this large are read ahead (a chunk or two ahead of the walk). */
    private static final long READ_AHEAD_FROM = (long) READ_AHEAD_FROM_CHUNKS * ReadAhead.CHUNK;

    /** Chronicle's file header (the first excerpt) is read from this many first bytes of a file. */
    private static final int HEADER_READ = 4096;
    /** The first window read after a follow poll found nothing new. */
    private static final int SMALL_READ = 16 << 10;

    private boolean windowHolds(long at, int n) {
        return at >= winValidFrom && at + n <= winStart + winLen;
    }

    /**
     * The 4-byte word at {@code at}, read on its own (the window untouched); 0 when the file ends
     * before it.
     */
    private int peekInt(long at) throws IOException {
        peek.clear();
        while (peek.hasRemaining()) {
            int r = ch.read(peek, at + peek.position());
            if (r < 0) {
                return 0;
            }
        }
        bytesRead += 4;
        return peek.getInt(0);
    }

    /** Makes the window cover {@code [at, at + n)}; false when the file ends before. */
    private boolean ensure(long at, int n) throws IOException {
        if (windowHolds(at, n)) {
            return true;
        }
        if (at + n > size) {
            return false;
        }
        if (nextChunk(at, n)) {
            return true;
        }
        if (win != own) {
            if (ahead != null) {
                ahead.recycle(win);
            }
            win = own;
        }
        if (n > win.length) {
            win = own = new byte[Math.max(n, win.length * 2)];
        }
        ByteBuffer bb = ByteBuffer.wrap(win);
        int want = (int) Math.min(readSize >= WINDOW ? win.length : Math.max(n, readSize), size - at);
        if (readSize < WINDOW && n <= readSize) {
            readSize *= 2;
        }
        bb.limit(want);
        long p = at;
        while (bb.hasRemaining()) {
            int r = ch.read(bb, p);
            if (r < 0) {
                break;
            }
            p += r;
        }
        bytesRead += bb.position();
        winStart = at;
        winValidFrom = at;
        winLen = bb.position();
        if (winLen < n) {
            // the file shrank under us: treat it as ending here
            size = at + winLen;
            return false;
        }
        return true;
    }

    /**
     * Moves the window on to the read-ahead's next chunk when the walk goes on past its end
     * (within {@link ReadAhead#SLACK} bytes of it, for {@code n} bytes that the chunk completes):
     * the tail of the window from {@code at} is copied in front of the chunk. Starts the
     * read-ahead where it is not running from the window's end. False when it does not apply (the
     * caller reads for itself).
     */
    private boolean nextChunk(long at, int n) {
        long winEnd = winStart + winLen;
        if (!readAhead || winLen == 0 || at < winValidFrom || at > winEnd || winEnd - at > ReadAhead.SLACK
                || winEnd >= size || size < READ_AHEAD_FROM || at + n - winEnd > ReadAhead.CHUNK) {
            return false;
        }
        if (ahead != null && ahead.next() != winEnd) {
            ahead.close();
            ahead = null;
        }
        if (ahead == null) {
            ahead = ReadAhead.start(files.get(fileIndex), winEnd, size);
        }
        ReadAhead.Chunk c = ahead.take();
        if (c == null) {
            ahead.close();
            ahead = null;
            return false;
        }
        chunksReadAhead++;
        int tail = (int) (winEnd - at);
        System.arraycopy(win, (int) (at - winStart), c.buf(), ReadAhead.SLACK - tail, tail);
        if (win != own) {
            ahead.recycle(win);
        }
        win = c.buf();
        winStart = winEnd - ReadAhead.SLACK;
        winLen = ReadAhead.SLACK + c.len();
        winValidFrom = at;
        return at + n <= winStart + winLen;
    }

    /**
     * The length of the run of zero bytes at {@code off} in the window, rounded down to whole
     * 4-byte words (at least 4: the word at {@code off} is zero).
     */
    private int zeroRun(int off) {
        int n = Math.min(winLen - off, ZEROS.length);
        int i = java.util.Arrays.mismatch(win, off, off + n, ZEROS, 0, n);
        int run = i < 0 ? n : i;
        return Math.max(4, run & ~3);
    }

    private int readInt(long at) throws IOException {
        if (!ensure(at, 4)) {
            return 0;
        }
        return intAt((int) (at - winStart));
    }

    private int intAt(int off) {
        return (win[off] & 0xff) | (win[off + 1] & 0xff) << 8 | (win[off + 2] & 0xff) << 16 | (win[off + 3] & 0xff) << 24;
    }

    private long longAt(int off) {
        return (intAt(off) & 0xFFFF_FFFFL) | ((long) intAt(off + 4)) << 32;
    }

    private static long align(long p) {
        return (p + 3) & ~3L;
    }

    static String fmt(long v) {
        return String.format(java.util.Locale.ROOT, "%,d", v);
    }
}
