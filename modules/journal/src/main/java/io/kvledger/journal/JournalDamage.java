package io.kvledger.journal;

import java.util.Locale;

/**
 * One damaged region of a journal found by a reader: bytes of a queue file that hold no readable
 * entry where one was due (a checksum mismatch, an excerpt header that makes no sense, a file cut
 * short, zeros in the middle of the data), with what it cost.
 *
 * @param file        the queue file's name (e.g. {@code 20261203L.cq4}) or {@code metadata.cq4t}
 * @param offset      the byte offset in the file where the damage starts
 * @param length      how many bytes from {@code offset} are unreadable; -1 when unknown (to the end
 *                    of the file)
 * @param lastGoodSeq the seq of the last entry read before the damage; -1 when none was
 * @param resumeSeq   the seq of the first entry read after it; -1 when reading ended there
 * @param lostEntries how many entries after {@code lastGoodSeq} could not be read; -1 when it
 *                    cannot be known (the journal ends in the damage and Chronicle's own header
 *                    does not say how many excerpts the file had)
 * @param what        what was found there, in words
 */
public record JournalDamage(String file, long offset, long length, long lastGoodSeq, long resumeSeq, long lostEntries,
                            String what) {

    /**
     * One line: {@code 20261203L.cq4 at byte 1,048,576: checksum mismatch; last good seq 41,207;
     * 1,032 entries after it could not be read (reading resumed at seq 42,240)}.
     */
    public String describe() {
        StringBuilder b = new StringBuilder();
        b.append(file).append(" at byte ").append(n(offset));
        if (length > 0) {
            b.append(" (").append(n(length)).append(length == 1 ? " byte)" : " bytes)");
        }
        b.append(": ").append(what);
        b.append("; last good seq ").append(lastGoodSeq < 0 ? "none" : n(lastGoodSeq));
        if (lostEntries < 0) {
            b.append("; an unknown number of entries after it could not be read");
        } else if (lostEntries == 0) {
            b.append("; no entry lost");
        } else {
            b.append("; ").append(n(lostEntries)).append(lostEntries == 1 ? " entry" : " entries")
                    .append(" after it could not be read");
        }
        if (resumeSeq >= 0) {
            b.append(" (reading resumed at seq ").append(n(resumeSeq)).append(')');
        } else if (lostEntries != 0) {
            b.append(" (reading ended there)");
        }
        return b.toString();
    }

    private static String n(long v) {
        return String.format(Locale.ROOT, "%,d", v);
    }
}
