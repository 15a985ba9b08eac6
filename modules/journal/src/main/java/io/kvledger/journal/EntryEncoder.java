package io.kvledger.journal;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.format.EntryKind;
import io.kvledger.journal.format.EntryType;
import java.io.IOException;
import java.util.Arrays;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

/**
 * Encodes single journal entries as bytes, exactly as {@link JournalWriter} writes them
 * (journal/FORMAT.md: the layout-2 envelope with its CRC32C, then the msgpack payload) and as
 * {@link RawEntryTailer} hands them out, without a journal: for a copier that turns JSON lines into
 * entries on the fly ({@code kvledger ship} following a recorder's files). The seqs and causes are
 * the caller's, so that they are those a {@link JournalWriter} importing the same lines assigns.
 *
 * <p>Threading: one thread per instance.
 */
final class EntryEncoder {

    private final byte[] envelope = new byte[JournalFormat.ENVELOPE_V2];
    private final MessageBufferPacker packer = MessagePack.newDefaultBufferPacker();

    /** The header entry (seq 0) a journal created with {@code header} starts with. */
    static byte[] header(JournalHeader header) {
        byte[] payload = EntryCodec.headerPayload(header.withFormatVersion(JournalFormat.FORMAT_VERSION));
        byte[] env = new byte[JournalFormat.ENVELOPE_V2];
        EntryCodec.envelope(env, EntryKind.HEADER, EntryType.HEADER.id(), 0, 0, JournalFormat.NO_CAUSE);
        return seal(env, payload, payload.length);
    }

    /**
     * An input entry.
     *
     * @throws IllegalArgumentException when a value of the event cannot be journaled
     */
    byte[] input(long seq, NodeEvent event) {
        EntryType t = EntryType.ofClass(event.getClass());
        return encode(EntryKind.INPUT, t != null ? t : EntryType.of(event), seq, event.atNs(), JournalFormat.NO_CAUSE, event);
    }

    /**
     * A derived entry caused by the entry {@code causeSeq} (0: the header), at {@code atNs}.
     *
     * @throws IllegalArgumentException when a value of the effect cannot be journaled
     */
    byte[] derived(long seq, long causeSeq, long atNs, Effect effect) {
        EntryType t = EntryType.ofClass(effect.getClass());
        return encode(EntryKind.DERIVED, t != null ? t : EntryType.of(effect), seq, atNs, causeSeq, effect);
    }

    private byte[] encode(EntryKind kind, EntryType type, long seq, long atNs, long cause, Object record) {
        EntryCodec.envelope(envelope, kind, type.id(), seq, atNs, cause);
        packer.clear();
        try {
            type.write(packer, record);
            packer.flush();
        } catch (IOException e) {
            throw new JournalException("cannot encode " + type.typeName() + ": " + e, e);
        }
        byte[] payload = packer.toByteArray();
        return seal(envelope, payload, payload.length);
    }

    private static byte[] seal(byte[] env, byte[] payload, int len) {
        EntryCodec.seal(env, EntryCodec.crc(env, payload, len));
        byte[] out = Arrays.copyOf(env, env.length + len);
        System.arraycopy(payload, 0, out, env.length, len);
        return out;
    }
}
