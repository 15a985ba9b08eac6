package io.kvledger.journal;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.journal.format.EntryKind;
import io.kvledger.journal.format.EntryType;
import io.kvledger.journal.format.Render;

/**
 * One journal entry as read back. Every entry has a sequence number, monotonic per journal (the
 * header is 0), and a timestamp in the node's monotonic nanoseconds.
 */
public sealed interface JournalEntry {

    long seq();

    /** The event's time; for a derived entry, its cause's time; 0 for the header. */
    long atNs();

    /** The permanent type id ({@link EntryType#id()}). */
    int typeId();

    /** The one-line rendering of the entry's content: type name and fields (no seq, no time). */
    String dissect();

    /** The journal header (seq 0). */
    record Header(long seq, JournalHeader header) implements JournalEntry {
        @Override public long atNs() { return 0; }
        @Override public int typeId() { return EntryType.HEADER.id(); }
        @Override public String dissect() { return "header " + header.describe(); }
    }

    /** An input event. */
    record Input(long seq, long atNs, NodeEvent event) implements JournalEntry {
        public EntryType type() { return EntryType.of(event); }
        @Override public int typeId() { return type().id(); }
        @Override public String dissect() { return type().dissect(event); }
    }

    /**
     * An effect derived from an input.
     *
     * @param causeSeq the seq of the input that produced it (0, the header, for start-up checks)
     */
    record Derived(long seq, long causeSeq, long atNs, Effect effect) implements JournalEntry {
        public EntryType type() { return EntryType.of(effect); }
        @Override public int typeId() { return type().id(); }
        @Override public String dissect() { return type().dissect(effect); }
    }

    /** A record of {@code kvledger proxy} (only in a proxy's journal; never replayed). */
    record Proxy(long seq, long atNs, io.kvledger.journal.proxy.ProxyEvent event) implements JournalEntry {
        public EntryType type() { return EntryType.of(event); }
        @Override public int typeId() { return type().id(); }
        @Override public String dissect() { return type().dissect(event); }
    }

    /**
     * An entry this version cannot decode: a future type id, a future layout version, or a payload
     * that does not match its schema. Readers skip it (and warn); it is never an error.
     *
     * @param kind   the stored kind, or {@code null} when the kind code is unknown
     * @param bytes  the whole entry as stored (envelope and payload)
     * @param reason why it could not be decoded
     */
    record Unknown(long seq, int typeId, EntryKind kind, long atNs, byte[] bytes, String reason)
            implements JournalEntry {
        @Override public String dissect() {
            return "unknown type_id=" + typeId + " (" + reason + ") " + Render.hex(bytes, 32);
        }
    }
}
