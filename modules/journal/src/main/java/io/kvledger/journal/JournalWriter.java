package io.kvledger.journal;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.format.EntryKind;
import io.kvledger.journal.format.EntryType;
import io.kvledger.wire.MsgpackWriter;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32C;
import net.openhft.chronicle.bytes.Bytes;
import net.openhft.chronicle.bytes.MappedBytes;
import net.openhft.chronicle.bytes.MappedBytesStore;
import net.openhft.chronicle.queue.ExcerptAppender;
import net.openhft.chronicle.queue.impl.single.SingleChronicleQueue;
import net.openhft.chronicle.wire.DocumentContext;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessagePacker;

/**
 * Appends to one node's journal.
 *
 * <p>{@link #open} creates the journal (writing the header as entry 0) or, when the directory
 * already holds one, checks that the given header describes the same node with the same
 * configuration, keeps the existing header and continues the sequence after the last complete
 * entry. A writer killed mid-append (even with {@code kill -9}) leaves its last entry incomplete;
 * readers never see it and the next writer appends after the last complete one.
 *
 * <p>Threading: one writer thread. The methods are not safe to call concurrently; the thread that
 * first appends after {@code open} owns the writer. One writer process per journal: a file lock
 * ({@value JournalFormat#LOCK_FILE}) that the OS releases when the process dies keeps a second
 * writer out.
 *
 * <p>Durability: an entry is in the memory-mapped queue file when an append returns, so readers in
 * other processes see it and it survives the death of this process. It reaches the disk when the
 * OS writes the page back; {@link #flush} forces that. Inside a group ({@link #beginGroup}) that
 * holds from {@link #endGroup} on, for the whole group at once.
 *
 * <p>Encoding: every entry is encoded into a reused heap buffer (the frequent types by
 * {@link FastPayloads} through the writer's own msgpack packer, the others by their schema through
 * msgpack-java), checksummed there, and copied into one Chronicle excerpt: its own, or its group's.
 */
public final class JournalWriter implements AutoCloseable {

    private final Path dir;
    private final SingleChronicleQueue queue;
    private final ExcerptAppender appender;
    private final FileChannel lockChannel;
    private final FileLock lock;
    private final JournalHeader header;
    private final boolean appended;
    private final byte[] envelope = new byte[JournalFormat.ENVELOPE_V2];
    private final BytesSink sink = new BytesSink();
    private final MessagePacker packer = MessagePack.newDefaultPacker(sink);
    private Pretoucher pretoucher;
    /** Whether a group is open ({@link #beginGroup} to {@link #endGroup}): entries go to {@link #groupBuffer}. */
    private boolean inGroup;
    private final GroupBuffer groupBuffer = new GroupBuffer();
    /** Encodes the frequent entry types straight into {@link #groupBuffer}. */
    private final MsgpackWriter fast = new MsgpackWriter(groupBuffer, false);
    private final CRC32C crc = new CRC32C();
    private int groupMembers;
    private long groupFirstSeq;
    private long groupFirstAtNs;
    private long groupSavedInputSeq;
    private long groupSavedInputAtNs;
    private long nextSeq;
    private long lastInputSeq;
    private long lastInputAtNs;
    private boolean closed;

    /**
     * Why this journal would refuse {@code event} for its values (a params value that is not a
     * Python value, nested too deep, an integer wider than msgpack's 64 bits), or {@code null}:
     * checked without encoding, so the node loop can refuse an input before it applies it. Only
     * {@code RequestAdmitted} carries free-form values; every other input is typed.
     */
    public static String refusal(NodeEvent event) {
        return event instanceof NodeEvent.RequestAdmitted a && a.params() != null
                ? refusal(io.kvledger.wire.PyValues.refusal(a.params())) : null;
    }

    private static String refusal(String why) {
        return why == null ? null : "cannot journal RequestAdmitted.kv_transfer_params: " + why;
    }

    private static EntryType typeOf(NodeEvent e) {
        EntryType t = EntryType.ofClass(e.getClass());
        return t != null ? t : EntryType.of(e);
    }

    private static EntryType typeOf(Effect e) {
        EntryType t = EntryType.ofClass(e.getClass());
        return t != null ? t : EntryType.of(e);
    }

    /** What an existing journal ends with, read before Chronicle maps it. */
    private record Existing(JournalHeader header, long nextSeq, long lastInputSeq, long lastInputAtNs) {}

    private JournalWriter(Path dir, SingleChronicleQueue queue, FileChannel lockChannel, FileLock lock,
                          JournalHeader given, Existing found) {
        this.dir = dir;
        this.queue = queue;
        this.lockChannel = lockChannel;
        this.lock = lock;
        this.appender = queue.createAppender();
        JournalHeader existing = found == null ? null : found.header();
        if (found != null) {
            nextSeq = found.nextSeq();
            lastInputSeq = found.lastInputSeq();
            lastInputAtNs = found.lastInputAtNs();
        }
        if (existing == null) {
            this.header = given.withFormatVersion(JournalFormat.FORMAT_VERSION);
            this.appended = false;
            writeHeader();
        } else {
            List<String> diff = existing.differences(given);
            if (!diff.isEmpty()) {
                throw new JournalException("the journal in " + dir + " belongs to another node or configuration ("
                        + existing.describe() + "); differences (journal vs given): " + String.join("; ", diff));
            }
            this.header = existing;
            this.appended = true;
        }
        // The thread that appends next owns the appender (it may not be the one that opened it).
        appender.singleThreadedCheckReset();
    }

    /**
     * Opens the journal in {@code dir} for appending, creating the directory and the journal when
     * needed.
     *
     * @throws JournalException when another writer holds the journal, when the existing journal
     *                          belongs to another node or configuration, or when it cannot be read
     */
    public static JournalWriter open(Path dir, JournalHeader header) {
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new JournalException("cannot create " + dir + ": " + e.getMessage(), e);
        }
        FileChannel ch;
        FileLock lock;
        try {
            ch = FileChannel.open(dir.resolve(JournalFormat.LOCK_FILE), StandardOpenOption.CREATE,
                    StandardOpenOption.WRITE);
        } catch (IOException e) {
            throw new JournalException("cannot create the writer lock in " + dir + ": " + e.getMessage(), e);
        }
        try {
            lock = ch.tryLock();
        } catch (OverlappingFileLockException e) {
            closeQuietly(ch);
            throw new JournalException("the journal in " + dir + " is already open for writing in this process");
        } catch (IOException e) {
            closeQuietly(ch);
            throw new JournalException("cannot lock " + dir + ": " + e.getMessage(), e);
        }
        if (lock == null) {
            closeQuietly(ch);
            throw new JournalException("the journal in " + dir + " is being written by another process");
        }
        SingleChronicleQueue q = null;
        try {
            // read (and check) what is there with plain file reads before Chronicle maps the files
            Existing found = Queues.hasQueueFiles(dir) ? readExisting(dir) : null;
            Queues.checkMetadata(dir);
            try {
                q = Queues.open(dir, false);
                return new JournalWriter(dir, q, ch, lock, header, found);
            } catch (RuntimeException e) {
                // Chronicle's own words rarely name the file at fault: name it when it is its table store
                String meta = Queues.metadataWriterProblem(dir);
                if (meta != null) {
                    throw new JournalException("the journal in " + dir + " is damaged: " + meta + "; move "
                            + Queues.METADATA_FILE + " away and Chronicle recreates it (the entries are in the .cq4 files)", e);
                }
                throw e;
            }
        } catch (RuntimeException e) {
            if (q != null) {
                q.close();
            }
            releaseQuietly(lock, ch);
            throw e instanceof JournalException je ? je : new JournalException(
                    "cannot open the journal in " + dir + " for writing: " + e.getMessage(), e);
        }
    }

    /**
     * Reads the existing header and last entry, or returns {@code null} for an empty queue.
     *
     * @throws JournalException when the journal is damaged (a writer never appends after damage:
     *                          the entries after it would be unreachable for Chronicle's index)
     */
    private static Existing readExisting(Path dir) {
        if (!Queues.emptyQueueFiles(dir).isEmpty()) {
            throw new JournalException("the journal in " + dir + " has an empty queue file (0 bytes): "
                    + Queues.emptyQueueFiles(dir).getFirst().getFileName() + "; move it away first");
        }
        Queues.Buffer buf = new Queues.Buffer();
        Warnings w = new Warnings(dir.toString());
        JournalHeader existing = null;
        long last = -1;
        long lastInputSeq = 0;
        long lastInputAtNs = 0;
        try (QueueScanner s = new QueueScanner(dir, false)) {
            boolean first = true;
            while (s.next(buf)) {
                if (first) {
                    first = false;
                    JournalEntry e = new EntryCodec.Decoder(w).decode(buf.bytes, buf.length);
                    if (!(e instanceof JournalEntry.Header h)) {
                        throw new JournalException(s.damage().isEmpty()
                                ? "the queue in " + dir + " is not a kvledger journal: its first entry is " + e.dissect()
                                : "the journal in " + dir + " is damaged: its header cannot be read: "
                                        + s.damage().getFirst().describe());
                    }
                    existing = h.header();
                }
                if (buf.length < JournalFormat.FIXED_PREFIX) {
                    continue;
                }
                last = Math.max(last, EntryCodec.seq(buf.bytes));
                int kind = EntryCodec.kindCode(buf.bytes);
                if (kind == EntryKind.INPUT.code() && buf.length >= JournalFormat.ENVELOPE_V0) {
                    lastInputSeq = EntryCodec.seq(buf.bytes);
                    lastInputAtNs = EntryCodec.atNs(buf.bytes);
                }
            }
            if (!s.damage().isEmpty()) {
                throw new JournalException("the journal in " + dir + " is damaged (" + s.damage().size()
                        + (s.damage().size() == 1 ? " region" : " regions") + ", the first: "
                        + s.damage().getFirst().describe() + "); nothing is appended to a damaged journal: "
                        + "run kvledger verify on it, and export what it holds (kvledger journal export)");
            }
        }
        if (existing == null) {
            return null;
        }
        if (existing.formatVersion() > JournalFormat.FORMAT_VERSION) {
            throw new JournalException("the journal in " + dir + " was created by format version "
                    + existing.formatVersion() + "; this version writes " + JournalFormat.FORMAT_VERSION
                    + " and cannot append to it");
        }
        return new Existing(existing, last + 1, lastInputSeq, lastInputAtNs);
    }

    private void writeHeader() {
        byte[] payload = EntryCodec.headerPayload(header);
        EntryCodec.envelope(envelope, EntryKind.HEADER, EntryType.HEADER.id(), 0, 0, JournalFormat.NO_CAUSE);
        EntryCodec.seal(envelope, EntryCodec.crc(envelope, payload, payload.length));
        try (DocumentContext dc = appender.writingDocument()) {
            Bytes<?> b = dc.wire().bytes();
            b.write(envelope, 0, envelope.length);
            b.write(payload, 0, payload.length);
        }
        nextSeq = 1;
        lastInputSeq = 0;
        lastInputAtNs = 0;
    }

    /** The journal's header: the existing one when this writer appends to a journal. */
    JournalHeader header() {
        return header;
    }

    public Path dir() {
        return dir;
    }

    /** Whether {@link #open} found an existing journal and appends to it. */
    public boolean appending() {
        return appended;
    }

    /** The seq the next entry gets. */
    public long nextSeq() {
        return nextSeq;
    }

    /** The seq of the last input appended (0 when none: the header). */
    public long lastInputSeq() {
        return lastInputSeq;
    }

    /**
     * Appends an input event.
     *
     * @return its seq
     * @throws IllegalArgumentException when a value in the event cannot be journaled (nothing is
     *                                  written then)
     */
    public long appendInput(NodeEvent event) {
        EntryType type = typeOf(event);
        long seq = append(EntryKind.INPUT, type, event.atNs(), JournalFormat.NO_CAUSE, event);
        lastInputSeq = seq;
        lastInputAtNs = event.atNs();
        return seq;
    }

    /**
     * Appends an effect derived from an input, with the input's time.
     *
     * @param causeSeq the seq of the input that produced it: the latest input, or 0 (the header)
     *                 for start-up checks
     * @return its seq
     */
    public long appendDerived(long causeSeq, Effect effect) {
        if (causeSeq != lastInputSeq && causeSeq != 0) {
            throw new IllegalArgumentException("cause seq " + causeSeq + " is not the latest input ("
                    + lastInputSeq + "); pass its time with appendDerived(causeSeq, atNs, effect)");
        }
        return appendDerived(causeSeq, lastInputAtNs, effect);
    }

    /**
     * Appends an effect derived from an earlier entry with an explicit time (JSON import, merges).
     *
     * @param causeSeq a seq already written (0 for the header)
     */
    public long appendDerived(long causeSeq, long atNs, Effect effect) {
        if (causeSeq < 0 || causeSeq >= nextSeq) {
            throw new IllegalArgumentException("cause seq " + causeSeq + " is not an entry of this journal (next seq "
                    + nextSeq + ")");
        }
        return append(EntryKind.DERIVED, typeOf(effect), atNs, causeSeq, effect);
    }

    /**
     * Appends an input and the effects the reducer produced for it.
     *
     * @return the input's seq
     */
    public long appendApplied(NodeEvent event, List<Effect> effects) {
        long seq = appendInput(event);
        for (Effect e : effects) {
            append(EntryKind.DERIVED, typeOf(e), event.atNs(), seq, e);
        }
        return seq;
    }

    /**
     * Appends a proxy record (a journal whose header is a {@link JournalHeader#proxy() proxy's}).
     *
     * @return its seq
     */
    public long appendProxy(io.kvledger.journal.proxy.ProxyEvent event) {
        if (!header.proxy()) {
            throw new IllegalArgumentException("proxy records go to a proxy's journal; " + dir + " is "
                    + header.nodeId() + "'s");
        }
        return append(EntryKind.PROXY, EntryType.of(event), event.atNs(), JournalFormat.NO_CAUSE, event);
    }

    private long append(EntryKind kind, EntryType type, long atNs, long cause, Object record) {
        if (closed) {
            throw new IllegalStateException("the journal writer for " + dir + " is closed");
        }
        long seq = nextSeq;
        EntryCodec.envelope(envelope, kind, type.id(), seq, atNs, cause);
        if (inGroup) {
            appendMember(type, atNs, record);
            return seq;
        }
        // outside a group, an entry is a group of one: written as a plain excerpt
        beginGroup();
        try {
            appendMember(type, atNs, record);
        } catch (RuntimeException e) {
            inGroup = false;
            throw e;
        }
        endGroup();
        return seq;
    }

    /**
     * Encodes one entry (its envelope already in {@link #envelope}) as the next member of the group
     * being built; on failure the group is as it was before.
     */
    private void appendMember(EntryType type, long atNs, Object record) {
        GroupBuffer g = groupBuffer;
        int memberAt = g.length;
        g.ensure(JournalFormat.MEMBER_HEADER + JournalFormat.ENVELOPE_V2);
        g.length += JournalFormat.MEMBER_HEADER;
        int entryAt = g.length;
        g.put(envelope, 0, JournalFormat.ENVELOPE_V2);
        try {
            if (!FastPayloads.write(fast, record)) {
                sink.heap = g;
                try {
                    type.write(packer, record);
                    packer.flush();
                } finally {
                    sink.heap = null;
                }
            }
        } catch (IOException | RuntimeException e) {
            packer.clear();
            g.length = memberAt;
            if (e instanceof IllegalArgumentException iae) {
                throw iae;
            }
            throw new JournalException("cannot append " + type.typeName() + " to " + dir + ": " + e, e);
        }
        crc.reset();
        crc.update(g.bytes, entryAt, JournalFormat.CRC_OFFSET);
        crc.update(g.bytes, entryAt + JournalFormat.ENVELOPE_V2, g.length - entryAt - JournalFormat.ENVELOPE_V2);
        g.putIntAt(entryAt + JournalFormat.CRC_OFFSET, (int) crc.getValue());
        g.putIntAt(memberAt, g.length - entryAt);
        g.pad();
        if (groupMembers++ == 0) {
            groupFirstSeq = nextSeq;
            groupFirstAtNs = atNs;
        }
        nextSeq++;
    }

    /**
     * Starts a group: the entries appended until {@link #endGroup} are written as one Chronicle
     * excerpt (a group excerpt, {@link JournalFormat#GROUP_LAYOUT}) when {@code endGroup} is called,
     * and not before: their seqs are handed out at once, but readers see none of them until then,
     * and a process that dies before leaves none of them. For a writer that appends many entries at
     * once (the node loop's journaller): Chronicle's cost per excerpt is paid once per group.
     * Closing the writer with a group open drops the group, as a process that dies would.
     */
    public void beginGroup() {
        if (inGroup) {
            throw new IllegalStateException("a group is already open on the journal writer for " + dir);
        }
        groupBuffer.reset();
        inGroup = true;
        groupMembers = 0;
        groupSavedInputSeq = lastInputSeq;
        groupSavedInputAtNs = lastInputAtNs;
    }

    /** Entries in the open group (0 without one). */
    int groupEntries() {
        return inGroup ? groupMembers : 0;
    }

    /** Bytes the open group holds so far (0 without one). */
    public int groupBytes() {
        return inGroup ? groupBuffer.length : 0;
    }

    /**
     * Writes the open group: nothing when it is empty, its one entry as a plain excerpt, else one
     * group excerpt.
     *
     * @throws JournalException when the excerpt cannot be written: then none of the group's
     *                          entries is in the journal, and the seqs they were given are handed
     *                          out again
     */
    public void endGroup() {
        GroupBuffer g = groupBuffer;
        if (!inGroup) {
            throw new IllegalStateException("no group is open on the journal writer for " + dir);
        }
        inGroup = false;
        if (groupMembers == 0) {
            return;
        }
        int from;
        int len;
        if (groupMembers == 1) {
            from = JournalFormat.ENVELOPE_V2 + JournalFormat.MEMBER_HEADER;
            len = g.intAt(JournalFormat.ENVELOPE_V2);
        } else {
            long lastSeq = nextSeq - 1;
            EntryCodec.groupEnvelope(g.bytes, groupFirstSeq, groupFirstAtNs, lastSeq);
            from = 0;
            len = g.length;
            g.putIntAt(JournalFormat.CRC_OFFSET, EntryCodec.crc(g.bytes, 0, len));
        }
        try (DocumentContext dc = appender.writingDocument()) {
            try {
                Bytes<?> b = dc.wire().bytes();
                b.write(g.bytes, from, len);
                if (pretoucher != null && b instanceof MappedBytes mb) {
                    long pos = b.writePosition();
                    if (mb.bytesStore() instanceof MappedBytesStore store && store.inside(pos)) {
                        pretoucher.advance(mb.mappedFile().file(), pos, store.addressForWrite(pos),
                                store.addressForWrite(pos) + (store.safeLimit() - pos));
                    } else {
                        pretoucher.advance(mb.mappedFile().file(), pos);
                    }
                }
            } catch (RuntimeException e) {
                dc.rollbackOnClose();
                throw e;
            }
        } catch (RuntimeException e) {
            nextSeq = groupFirstSeq;
            lastInputSeq = groupSavedInputSeq;
            lastInputAtNs = groupSavedInputAtNs;
            throw new JournalException("cannot append a group of " + groupMembers + " entries to " + dir + ": " + e, e);
        }
    }

    /**
     * Hands the appender to the calling thread. Chronicle's appender belongs to one thread at a
     * time: a thread that takes over appending from another (a journaller thread after a recovery
     * appended on the starting thread) calls this first, once the other thread has stopped
     * appending.
     */
    public void handOverToCurrentThread() {
        appender.singleThreadedCheckReset();
    }

    /**
     * Starts touching the queue file's pages ahead of this writer on a thread of its own (see
     * {@link Pretoucher}), so that appends do not stall on first writes to fresh pages. For a writer
     * that appends at a high rate (the node loop's journaller); idempotent; stops at {@link #close}.
     */
    public void pretouch() {
        if (pretoucher == null && !closed) {
            pretoucher = new Pretoucher(header.nodeId());
        }
    }

    /** Times the pretoucher populated this writer's own mapping (0 without one, or without madvise). */
    long pretouchPopulateCalls() {
        return pretoucher == null ? 0 : pretoucher.populateCalls();
    }

    /** Pages the pretoucher touched so far (0 without one). */
    long pretouchedPages() {
        return pretoucher == null ? 0 : pretoucher.touchedPages();
    }

    /** Forces the queue's mapped pages to disk (for durability against an OS crash, not needed otherwise). */
    public void flush() {
        if (!closed) {
            appender.sync();
        }
    }

    /** Closes the queue and releases the writer lock. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (pretoucher != null) {
            pretoucher.close();
        }
        List<RuntimeException> errors = new ArrayList<>();
        try {
            appender.close();
        } catch (RuntimeException e) {
            errors.add(e);
        }
        try {
            queue.close();
        } catch (RuntimeException e) {
            errors.add(e);
        }
        releaseQuietly(lock, lockChannel);
        if (!errors.isEmpty()) {
            throw new JournalException("closing the journal in " + dir + " failed: " + errors.getFirst(), errors.getFirst());
        }
    }

    private static void releaseQuietly(FileLock lock, FileChannel ch) {
        try {
            lock.release();
        } catch (IOException | RuntimeException ignored) {
            // the channel's close releases it too
        }
        closeQuietly(ch);
    }

    private static void closeQuietly(FileChannel ch) {
        try {
            ch.close();
        } catch (IOException ignored) {
            // nothing left to release
        }
    }
}
