package io.kvledger.journal;

import io.kvledger.journal.format.EntryKind;
import io.kvledger.journal.format.EntryType;
import io.kvledger.journal.format.FastPayloadReader;
import io.kvledger.journal.format.PayloadException;
import io.kvledger.journal.format.PyJson;
import io.kvledger.wire.PyValues;
import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.core.buffer.ArrayBufferInput;

/**
 * Entry envelopes (see {@link JournalFormat}) and the version dispatch of the decoder. A decoder
 * is stateful (layout 0 derives a derived entry's cause from the inputs before it) and belongs to
 * one pass over one journal, on one thread.
 */
final class EntryCodec {

    private static final VarHandle I16 = MethodHandles.byteArrayViewVarHandle(short[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle I64 = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    private EntryCodec() {}

    private static final VarHandle I32 = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);

    /**
     * Writes a layout-2 envelope into {@code out[0..32)} with its checksum field zeroed; fill it
     * with {@link #seal} once the payload follows it.
     */
    static void envelope(byte[] out, EntryKind kind, int typeId, long seq, long atNs, long causeSeq) {
        envelopeV1(out, kind, typeId, seq, atNs, causeSeq);
        out[0] = (byte) JournalFormat.FORMAT_VERSION;
        I32.set(out, JournalFormat.CRC_OFFSET, 0);
    }

    /**
     * Writes a group excerpt's envelope into {@code out[0..32)} with its checksum field zeroed: the
     * first member's seq and time, and the last member's seq where an entry has its cause.
     */
    static void groupEnvelope(byte[] out, long firstSeq, long firstAtNs, long lastSeq) {
        out[0] = (byte) JournalFormat.GROUP_LAYOUT;
        out[1] = (byte) JournalFormat.GROUP_KIND;
        I16.set(out, 2, (short) 0);
        I64.set(out, 4, firstSeq);
        I64.set(out, 12, firstAtNs);
        I64.set(out, 20, lastSeq);
        I32.set(out, JournalFormat.CRC_OFFSET, 0);
    }

    /** Writes a layout-1 envelope (no checksum) into {@code out[0..28)} (tests and documentation only). */
    static void envelopeV1(byte[] out, EntryKind kind, int typeId, long seq, long atNs, long causeSeq) {
        out[0] = 1;
        out[1] = (byte) kind.code();
        I16.set(out, 2, (short) typeId);
        I64.set(out, 4, seq);
        I64.set(out, 12, atNs);
        I64.set(out, 20, causeSeq);
    }

    /**
     * The CRC32C of an entry of layout 2 or later: bytes {@code [0, 28)} followed by bytes
     * {@code [32, len)} of {@code b}, starting at {@code off}.
     */
    static int crc(byte[] b, int off, int len) {
        CRC32C c = new CRC32C();
        c.update(b, off, JournalFormat.CRC_OFFSET);
        c.update(b, off + JournalFormat.ENVELOPE_V2, len - JournalFormat.ENVELOPE_V2);
        return (int) c.getValue();
    }

    /** The CRC32C over a layout-2 envelope and a payload held apart from it. */
    static int crc(byte[] envelope, byte[] payload, int payloadLen) {
        CRC32C c = new CRC32C();
        c.update(envelope, 0, JournalFormat.CRC_OFFSET);
        c.update(payload, 0, payloadLen);
        return (int) c.getValue();
    }

    /** The checksum stored in an entry of layout 2 or later. */
    static int storedCrc(byte[] b, int off) {
        return (int) I32.get(b, off + JournalFormat.CRC_OFFSET);
    }

    /** Stores {@code crc} in a layout-2 envelope. */
    static void seal(byte[] envelope, int crc) {
        I32.set(envelope, JournalFormat.CRC_OFFSET, crc);
    }

    /**
     * Whether the entry at {@code b[off..off+len)} is of layout 2 or later and its checksum
     * matches.
     */
    static boolean checksumOk(byte[] b, int off, int len) {
        return len >= JournalFormat.ENVELOPE_V2 && (b[off] & 0xff) >= JournalFormat.FIRST_CHECKSUMMED_VERSION
                && storedCrc(b, off) == crc(b, off, len);
    }

    /** Writes a layout-0 envelope into {@code out[0..20)} (tests and documentation only). */
    static void envelopeV0(byte[] out, EntryKind kind, int typeId, long seq, long atNs) {
        out[0] = 0;
        out[1] = (byte) kind.code();
        I16.set(out, 2, (short) typeId);
        I64.set(out, 4, seq);
        I64.set(out, 12, atNs);
    }

    static int layout(byte[] b) {
        return b[0] & 0xff;
    }

    static int kindCode(byte[] b) {
        return b[1] & 0xff;
    }

    static int typeId(byte[] b) {
        return ((short) I16.get(b, 2)) & 0xffff;
    }

    static long seq(byte[] b) {
        return (long) I64.get(b, 4);
    }

    /** The entry's at_ns (bytes 12..20 in every layout so far). */
    static long atNs(byte[] b) {
        return (long) I64.get(b, 12);
    }

    /** The kind code of the entry that starts at {@code b[off]}. */
    static int kindCode(byte[] b, int off) {
        return b[off + 1] & 0xff;
    }

    /** The seq of the entry that starts at {@code b[off]}. */
    static long seq(byte[] b, int off) {
        return (long) I64.get(b, off + 4);
    }

    /** The header payload: a msgpack map. */
    static byte[] headerPayload(JournalHeader h) {
        try (var p = MessagePack.newDefaultBufferPacker()) {
            PyValues.pack(p, h.toMap());
            p.flush();
            return p.toByteArray();
        } catch (IOException e) {
            throw new JournalException("cannot encode the header: " + e.getMessage(), e);
        }
    }

    /** Decodes the entries of one pass over a journal. */
    static final class Decoder {
        private final Warnings warnings;
        private final ArrayBufferInput input = new ArrayBufferInput(new byte[0]);
        private final MessageUnpacker unpacker = MessagePack.newDefaultUnpacker(input);
        private final FastPayloadReader fast = new FastPayloadReader();
        private long lastInputSeq;

        Decoder(Warnings warnings) {
            this.warnings = warnings;
        }

        /**
         * Decodes one stored entry; never throws for bad content (it becomes
         * {@link JournalEntry.Unknown} and a warning).
         *
         * @param b the entry's bytes, {@code len} of them (the array may be longer and reused:
         *          nothing returned refers to it)
         */
        JournalEntry decode(byte[] b, int len) {
            return decode(b, 0, len);
        }

        /**
         * Decodes the stored entry {@code b[off, off + len)}; as {@link #decode(byte[], int)}
         * (nothing returned refers to {@code b}).
         */
        JournalEntry decode(byte[] b, int off, int len) {
            if (len < JournalFormat.FIXED_PREFIX) {
                String why = "entry of " + len + " bytes is shorter than the " + JournalFormat.FIXED_PREFIX + "-byte prefix";
                warnings.add(why);
                return new JournalEntry.Unknown(-1, -1, null, 0, Arrays.copyOfRange(b, off, off + len), why);
            }
            int layout = b[off] & 0xff;
            int kindCode = b[off + 1] & 0xff;
            int typeId = ((short) I16.get(b, off + 2)) & 0xffff;
            long seq = (long) I64.get(b, off + 4);
            EntryKind kind = EntryKind.byCode(kindCode);
            long atNs;
            long cause;
            int payloadAt;
            switch (layout) {
                case 2 -> {
                    // the reader checked the checksum before handing the entry over
                    if (len < JournalFormat.ENVELOPE_V2) {
                        return unknown(b, off, len, seq, typeId, kind, 0, "truncated layout-2 envelope (" + len + " bytes)");
                    }
                    atNs = (long) I64.get(b, off + 12);
                    cause = (long) I64.get(b, off + 20);
                    payloadAt = JournalFormat.ENVELOPE_V2;
                }
                case 1 -> {
                    if (len < JournalFormat.ENVELOPE_V1) {
                        return unknown(b, off, len, seq, typeId, kind, 0, "truncated layout-1 envelope (" + len + " bytes)");
                    }
                    atNs = (long) I64.get(b, off + 12);
                    cause = (long) I64.get(b, off + 20);
                    payloadAt = JournalFormat.ENVELOPE_V1;
                }
                case 0 -> {
                    if (len < JournalFormat.ENVELOPE_V0) {
                        return unknown(b, off, len, seq, typeId, kind, 0, "truncated layout-0 envelope (" + len + " bytes)");
                    }
                    atNs = (long) I64.get(b, off + 12);
                    // Layout 0 had no cause_seq: a derived entry followed its cause's input.
                    cause = kind == EntryKind.DERIVED ? lastInputSeq : JournalFormat.NO_CAUSE;
                    payloadAt = JournalFormat.ENVELOPE_V0;
                }
                default -> {
                    return unknown(b, off, len, seq, typeId, kind, 0, "entry layout version " + layout
                            + " is newer than this reader (" + JournalFormat.FORMAT_VERSION + ")");
                }
            }
            if (kind == null) {
                return unknown(b, off, len, seq, typeId, null, atNs, "unknown entry kind " + kindCode);
            }
            EntryType type = EntryType.byId(typeId);
            if (type == null) {
                warnings.unknownType(typeId, seq);
                return new JournalEntry.Unknown(seq, typeId, kind, atNs, Arrays.copyOfRange(b, off, off + len),
                        "type id " + typeId + " is unknown to this version");
            }
            if (type.kind() != kind) {
                return unknown(b, off, len, seq, typeId, kind, atNs,
                        type.typeName() + " is " + article(type.kind()) + " type but the entry is " + article(kind));
            }
            if (kind != EntryKind.HEADER) {
                // well-formed payloads: read in place; anything else: the generic unpacker below
                Object r = fast.read(type, b, off + payloadAt, off + len, kind == EntryKind.DERIVED ? 0 : atNs);
                if (r != null) {
                    switch (kind) {
                        case INPUT -> {
                            lastInputSeq = seq;
                            return new JournalEntry.Input(seq, atNs, (io.kvledger.core.event.NodeEvent) r);
                        }
                        case DERIVED -> {
                            return new JournalEntry.Derived(seq, cause, atNs, (io.kvledger.core.effect.Effect) r);
                        }
                        case PROXY -> {
                            return new JournalEntry.Proxy(seq, atNs, (io.kvledger.journal.proxy.ProxyEvent) r);
                        }
                        case HEADER -> throw new AssertionError(kind);
                    }
                }
            }
            input.reset(b, off + payloadAt, len - payloadAt);
            try {
                unpacker.reset(input);
                switch (kind) {
                    case HEADER -> {
                        Object m = PyJson.unpack(unpacker);
                        if (!(m instanceof Map<?, ?> map)) {
                            throw new PayloadException("header payload is not a map");
                        }
                        List<String> w = new ArrayList<>();
                        JournalHeader h = JournalHeader.fromMap(map, false, w);
                        w.forEach(warnings::add);
                        return new JournalEntry.Header(seq, h);
                    }
                    case INPUT -> {
                        var event = (io.kvledger.core.event.NodeEvent) type.read(unpacker, atNs);
                        lastInputSeq = seq;
                        return new JournalEntry.Input(seq, atNs, event);
                    }
                    case DERIVED -> {
                        var effect = (io.kvledger.core.effect.Effect) type.read(unpacker, 0);
                        return new JournalEntry.Derived(seq, cause, atNs, effect);
                    }
                    case PROXY -> {
                        var event = (io.kvledger.journal.proxy.ProxyEvent) type.read(unpacker, atNs);
                        return new JournalEntry.Proxy(seq, atNs, event);
                    }
                }
                throw new AssertionError(kind);
            } catch (PayloadException | IllegalArgumentException e) {
                return unknown(b, off, len, seq, typeId, kind, atNs, type.typeName() + " payload: " + e.getMessage());
            } catch (IOException | RuntimeException e) {
                return unknown(b, off, len, seq, typeId, kind, atNs, type.typeName() + " payload is malformed msgpack: " + e);
            }
        }

        private static String article(EntryKind k) {
            return (k == EntryKind.INPUT ? "an " : "a ") + k.label();
        }

        private JournalEntry.Unknown unknown(byte[] b, int off, int len, long seq, int typeId, EntryKind kind, long atNs,
                                             String why) {
            warnings.undecodable(seq, why);
            return new JournalEntry.Unknown(seq, typeId, kind, atNs, Arrays.copyOfRange(b, off, off + len), why);
        }
    }
}
