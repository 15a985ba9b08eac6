package io.kvledger.journal;

import net.openhft.chronicle.queue.RollCycle;
import net.openhft.chronicle.queue.rollcycles.LargeRollCycles;

/**
 * Constants of the on-disk format (see {@code journal/FORMAT.md}).
 *
 * <p>Every Chronicle excerpt holds one entry: a fixed little-endian envelope followed by the
 * msgpack payload.
 *
 * <pre>
 * offset size  field        (layout version 2)
 *      0    1  layout       entry layout version (2)
 *      1    1  kind         0 header, 1 input, 2 derived
 *      2    2  type_id      permanent type id (unsigned)
 *      4    8  seq          sequence number, monotonic per journal (header = 0)
 *     12    8  at_ns        the event's time; a derived entry carries its cause's time
 *     20    8  cause_seq    derived: seq of the input that caused it; header and inputs: -1
 *     28    4  crc32c       CRC32C of bytes 0..28 followed by bytes 32..end (layout 2 and later)
 *     32    n  payload      msgpack (header: a map; others: an array of fields)
 * </pre>
 *
 * <p>Layout 1 is layout 2 without the checksum (the payload starts at 28). The first 12 bytes
 * (layout, kind, type id, seq) keep their place in every layout version, so a reader can always
 * say which entry it could not decode; every layout from 2 on keeps the checksum at 28..32.
 *
 * <p>A group excerpt ({@link #GROUP_LAYOUT}) holds several entries in one excerpt, so a writer that
 * appends at a high rate pays Chronicle's per-excerpt cost once per group: an envelope of the same
 * shape (layout 3, kind {@link #GROUP_KIND}, type id 0, the first member's seq and time, the last
 * member's seq in place of cause_seq, the CRC32C over the whole excerpt as for layout 2), then the
 * members, each a 4-byte little-endian length, a complete layout-2 entry with its own checksum and
 * zeros to the next multiple of 4. A member is framed as Chronicle frames an excerpt, so a reader
 * that finds a group damaged resumes at the next intact member.
 */
public final class JournalFormat {

    /** The layout byte of a group excerpt (several entries in one Chronicle excerpt). */
    static final int GROUP_LAYOUT = 3;

    /** The kind byte of a group excerpt's envelope. */
    static final int GROUP_KIND = 4;

    /** The length word before each member of a group. */
    static final int MEMBER_HEADER = 4;

    /** The format version written to new headers and the layout version of new entries. */
    public static final int FORMAT_VERSION = 2;

    /** The first format (and layout) version whose entries carry a CRC32C. */
    static final int FIRST_CHECKSUMMED_VERSION = 2;

    /** The oldest layout version this reader decodes. */
    static final int OLDEST_READABLE_VERSION = 0;

    /** The header's {@code magic} value: marks a Chronicle Queue as a kvledger journal. */
    static final String MAGIC = "kvledger-journal";

    /** Envelope size of layout version 2: layout 1's and the CRC32C. */
    public static final int ENVELOPE_V2 = 32;

    /** Where layout 2 and later keep the entry's CRC32C (4 bytes, little-endian). */
    public static final int CRC_OFFSET = 28;

    /** Envelope size of layout version 1. */
    static final int ENVELOPE_V1 = 28;

    /** Envelope size of layout version 0 (no cause_seq). */
    static final int ENVELOPE_V0 = 20;

    /** Bytes every layout version starts with: layout, kind, type id, seq. */
    static final int FIXED_PREFIX = 12;

    /** {@code cause_seq} of entries that have no cause (header, inputs). */
    static final long NO_CAUSE = -1;

    /**
     * The roll cycle of new journals: one file per UTC day with up to 2^37 entries per day (about
     * 1.6 million entries per second sustained), so a node that runs for weeks writes a bounded
     * file per day, old days can be archived or deleted as whole files, and the index never
     * overflows at realistic control-plane rates. An existing journal keeps the cycle it was
     * created with.
     */
    public static final RollCycle ROLL_CYCLE = LargeRollCycles.LARGE_DAILY;

    /** The file a writer locks so that a journal has one writer process at a time. */
    public static final String LOCK_FILE = "kvledger-writer.lock";

    private JournalFormat() {}
}
