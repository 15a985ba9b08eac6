package io.kvledger.ledger.kafka;

import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/**
 * How one journal entry travels in a Kafka record: the key is the node id (UTF-8), so that all of
 * a node's entries go to one partition, in order; the value is the entry exactly as
 * journal/FORMAT.md defines it (envelope with seq and CRC32C, then the msgpack payload); the
 * header {@value #SEQ_HEADER} repeats the entry's seq in decimal ASCII, for tools that look at
 * records without decoding entries. The record's timestamp is when it was shipped.
 */
public final class ShippedEntry {

    private ShippedEntry() {}

    /** The record header holding the entry's seq. */
    public static final String SEQ_HEADER = "kvledger-seq";

    /** The record key of a node's entries. */
    public static byte[] key(String nodeId) {
        return nodeId.getBytes(StandardCharsets.UTF_8);
    }

    /** The node id of a record key. */
    static String nodeId(byte[] key) {
        return key == null ? null : new String(key, StandardCharsets.UTF_8);
    }

    /** The seq header's value. */
    public static byte[] seqHeader(long seq) {
        return Long.toString(seq).getBytes(StandardCharsets.US_ASCII);
    }

    /**
     * The seq of a record: from the entry's envelope (bytes 4..12, little-endian), which the
     * entry's checksum covers; -1 when the value is too short to be an entry.
     */
    static long seq(byte[] value) {
        if (value == null || value.length < 12) {
            return -1;
        }
        long v = 0;
        for (int i = 11; i >= 4; i--) {
            v = (v << 8) | (value[i] & 0xFF);
        }
        return v;
    }

    /** The seq the record's header states, or -1 when it has none. */
    static long headerSeq(Headers headers) {
        Header h = headers.lastHeader(SEQ_HEADER);
        if (h == null) {
            return -1;
        }
        try {
            return Long.parseLong(new String(h.value(), StandardCharsets.US_ASCII));
        } catch (NumberFormatException e) {
            return -1;
        }
    }
}
