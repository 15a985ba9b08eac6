package io.kvledger.journal;

import io.kvledger.journal.format.EntryKind;
import io.kvledger.journal.format.EntryType;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Consumer;

/**
 * The order rules every pass over a journal applies as it reads, the same for {@code verify} and
 * for every command that analyses a journal (one place, so that no reader answers from entries
 * {@code verify} would flag): one header, first (a header later on starts another journal's file,
 * or a copy: the rest of its file is skipped); sequence numbers go up by one (an entry whose seq
 * does not go up is a duplicate or out of order: skipped; a jump that no damaged region explains is
 * doubted); event times never go back over the inputs, proxy records and the derived entries of
 * an input (doubted); a derived entry's cause is the header or an earlier input (doubted).
 *
 * <p>Each problem is handed to a listener with its seq ({@code verify} lists them) and counted by
 * kind; {@link #warnings} gives one line per kind with its count and first occurrence. Judging
 * reads only an entry's envelope, so a pass that skips derived payloads judges them too.
 *
 * <p>Memory is bounded: whether a cause is an input is remembered for the last
 * {@value #INPUT_WINDOW} seqs (a derived entry names an input just before it); an older cause is
 * only checked to be earlier.
 *
 * <p>Not thread-safe: one per pass.
 */
public final class EntryRules {

    private static final VarHandle I64 = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle I16 = MethodHandles.byteArrayViewVarHandle(short[].class, ByteOrder.LITTLE_ENDIAN);

    /** Seqs whose input-ness is remembered for the cause check (a power of two). */
    static final int INPUT_WINDOW = 1 << 22;

    /** The kinds of problem; a reader prints one line per kind. */
    public enum Kind {
        /** A header after the first entry: the rest of its file is skipped. */
        SECOND_HEADER(true),
        /** A seq that does not go up: a duplicate or an entry out of order, skipped. */
        SEQ_NOT_INCREASING(true),
        /** A seq that goes up by more than one, not explained by a damaged region. */
        SEQ_JUMP(false),
        /** An event time before the one of the entry before it. */
        TIME_BACK(false),
        /** A derived entry whose cause is not an earlier entry, or not an input. */
        CAUSE(false);

        private final boolean skips;

        Kind(boolean skips) {
            this.skips = skips;
        }

        /** Whether readers skip the entry (otherwise it is read and doubted). */
        boolean skips() {
            return skips;
        }
    }

    /**
     * One problem.
     *
     * @param index the entry's position in the pass (0: the first entry read)
     * @param seq   the entry's seq
     * @param kind  what kind of problem
     * @param what  in words, as {@code verify} lists it
     * @param run   what consecutive problems of one run share (the same kind and reference: the
     *              entry they do not go beyond, the variant of a cause problem); a lister prints one
     *              line per run
     */
    public record Problem(long index, long seq, Kind kind, String what, String run) {}

    private final Consumer<Problem> listener;
    private final Map<Kind, long[]> counts = new EnumMap<>(Kind.class);
    private final Map<Kind, String> firsts = new EnumMap<>(Kind.class);
    private long index = -1;
    private boolean headerRead;
    private long lastSeq = -1;
    private long lastAt = Long.MIN_VALUE;
    private long lastAtSeq = -1;
    private long lastInputSeq;
    private final long[] inputs = new long[INPUT_WINDOW / 64];
    private String skippedFile;
    private String firstFile;
    private String firstNode;
    private long missing;

    /** @param listener receives every problem as it is found (may be null) */
    EntryRules(Consumer<Problem> listener) {
        this.listener = listener;
    }

    /**
     * Judges the stored entry {@code b[off, off + len)} read from queue file {@code file}, with
     * the damaged regions the pass has met so far.
     *
     * @return whether readers hand it out (false: it is skipped, and counted)
     */
    boolean admit(byte[] b, int off, int len, String file, List<JournalDamage> damage) {
        index++;
        if (len < JournalFormat.FIXED_PREFIX) {
            return true; // the decoder says what it is
        }
        if (skippedFile != null) {
            if (skippedFile.equals(file)) {
                count(Kind.SECOND_HEADER, null);
                return false;
            }
            skippedFile = null;
        }
        int layout = b[off] & 0xff;
        int kind = b[off + 1] & 0xff;
        long seq = (long) I64.get(b, off + 4);
        if (kind == EntryKind.HEADER.code()) {
            if (!headerRead && index == 0) {
                headerRead = true;
                lastSeq = seq;
                firstFile = file;
                firstNode = nodeId(b, off, len);
                return true;
            }
            skippedFile = file;
            String node = nodeId(b, off, len);
            problem(seq, Kind.SECOND_HEADER, file + "@" + index, "a header in the middle of the journal (only the first entry is a header): "
                    + "file " + file + " starts " + (node == null ? "an unreadable header"
                            : node.equals(firstNode) ? "again with the header of node " + node + " (a copy of its first file?)"
                            : "a journal of node " + node + " (another journal's file?)")
                    + " after the journal of node " + firstNode + " that " + firstFile + " starts; which is this directory's "
                    + "cannot be told from the files, readers read the first and skip the rest of " + file);
            return false;
        }
        headerRead = true;
        if (seq <= lastSeq) {
            problem(seq, Kind.SEQ_NOT_INCREASING, "after " + lastSeq, "seq " + seq + " does not increase (the entry before it is seq " + lastSeq
                    + "): a duplicate or an entry out of order; readers skip it");
            return false;
        }
        if (seq != lastSeq + 1 && !explained(damage, lastSeq, seq)) {
            missing += seq - lastSeq - 1;
            problem(seq, Kind.SEQ_JUMP, "", "seq jumps from " + lastSeq + " to " + seq + " (" + (seq - lastSeq - 1) + " missing)");
        }
        long previous = lastSeq;
        lastSeq = seq;
        if (layout > JournalFormat.FORMAT_VERSION || len < envelope(layout)) {
            return true; // the decoder says what it cannot read
        }
        long atNs = (long) I64.get(b, off + 12);
        if (kind == EntryKind.INPUT.code()) {
            rememberInput(seq);
            lastInputSeq = seq;
            time(seq, atNs, "");
        } else if (kind == EntryKind.PROXY.code()) {
            time(seq, atNs, "");
        } else if (kind == EntryKind.DERIVED.code()) {
            long cause = layout == 0 ? lastInputSeq : (long) I64.get(b, off + 20);
            if (cause != 0) {
                if (cause < 0 || cause >= seq) {
                    problem(seq, Kind.CAUSE, "not earlier", "derived entry's cause_seq " + cause + " is not an earlier entry");
                } else if (!wasInput(cause, seq) && !lost(damage, cause)) {
                    problem(seq, Kind.CAUSE, "not an input", "derived entry's cause_seq " + cause + " is not an input");
                }
                time(seq, atNs, "derived ");
            }
        }
        assert previous < seq;
        return true;
    }

    /**
     * Whether the payload of a derived entry this pass is about to skip undecoded may be skipped
     * quietly: its type is a known derived type (an entry whose kind byte and type disagree is
     * decoded, so that it becomes an unreadable entry with a warning, never a silent drop).
     */
    static boolean quietlySkippable(byte[] b, int off, int len) {
        if (len < JournalFormat.FIXED_PREFIX || (b[off + 1] & 0xff) != EntryKind.DERIVED.code()) {
            return false;
        }
        EntryType t = EntryType.byId(((short) I16.get(b, off + 2)) & 0xffff);
        return t != null && t.kind() == EntryKind.DERIVED;
    }

    /** How many problems of each kind were found (kinds without any are absent). */
    Map<Kind, Long> counts() {
        Map<Kind, Long> out = new EnumMap<>(Kind.class);
        counts.forEach((k, c) -> out.put(k, c[0]));
        return out;
    }

    /** Whether the pass found no problem. */
    boolean clean() {
        return counts.isEmpty();
    }

    /** One line per kind of problem, with its count and first occurrence, each after {@code journal}. */
    List<String> warnings(String journal) {
        List<String> out = new ArrayList<>();
        for (Map.Entry<Kind, long[]> e : counts.entrySet()) {
            long n = e.getValue()[0];
            String first = firsts.get(e.getKey());
            String line = switch (e.getKey()) {
                case SECOND_HEADER -> entries(n) + " skipped after a header in the middle of the journal (first: " + first + ")";
                case SEQ_NOT_INCREASING -> entries(n) + " skipped: " + (n == 1 ? "its" : "their") + " seq does not increase, "
                        + "a duplicate or an entry out of order (first: " + first + ")";
                case SEQ_JUMP -> n + (n == 1 ? " seq jump" : " seq jumps") + " that no damaged region explains, " + fmt(missing)
                        + (missing == 1 ? " entry" : " entries") + " missing (first: " + first + ")";
                case TIME_BACK -> entries(n) + " read with an event time before the entry before " + (n == 1 ? "it" : "them")
                        + " (first: " + first + ")";
                case CAUSE -> entries(n) + " read whose cause is not an earlier input (first: " + first + ")";
            };
            out.add(journal + ": " + line + "; kvledger verify lists them");
        }
        return out;
    }

    private void time(long seq, long atNs, String what) {
        if (atNs < lastAt) {
            problem(seq, Kind.TIME_BACK, "before " + lastAtSeq, "time goes back: " + what + "at_ns " + atNs + " is before " + lastAt + " (seq "
                    + lastAtSeq + ")");
        } else {
            lastAt = atNs;
            lastAtSeq = seq;
        }
    }

    private void problem(long seq, Kind kind, String run, String what) {
        count(kind, "seq " + seq + ": " + what);
        if (listener != null) {
            listener.accept(new Problem(index, seq, kind, what, run));
        }
    }

    private void count(Kind kind, String first) {
        counts.computeIfAbsent(kind, k -> new long[1])[0]++;
        if (first != null) {
            firsts.putIfAbsent(kind, first);
        }
    }

    private void rememberInput(long seq) {
        int bit = (int) (seq & (INPUT_WINDOW - 1));
        inputs[bit >>> 6] |= 1L << bit;
        // clear the bits the window has just left behind (between the last input and this one)
        for (long s = Math.max(lastInputSeq + 1, seq - INPUT_WINDOW + 1); s < seq; s++) {
            int c = (int) (s & (INPUT_WINDOW - 1));
            inputs[c >>> 6] &= ~(1L << c);
        }
    }

    /** Whether {@code cause} was an input (always true when it is too old to be remembered). */
    private boolean wasInput(long cause, long seq) {
        if (seq - cause >= INPUT_WINDOW || cause > lastInputSeq) {
            return seq - cause >= INPUT_WINDOW;
        }
        int bit = (int) (cause & (INPUT_WINDOW - 1));
        return (inputs[bit >>> 6] & (1L << bit)) != 0;
    }

    private static int envelope(int layout) {
        return switch (layout) {
            case 0 -> JournalFormat.ENVELOPE_V0;
            case 1 -> JournalFormat.ENVELOPE_V1;
            default -> JournalFormat.ENVELOPE_V2;
        };
    }

    /** The node id of the header {@code b[off, off + len)}, or null when it cannot be read. */
    private static String nodeId(byte[] b, int off, int len) {
        JournalEntry e = new EntryCodec.Decoder(new Warnings("")).decode(b, off, len);
        return e instanceof JournalEntry.Header h ? h.header().nodeId() : null;
    }

    /** Whether {@code seq} is an entry a damaged region lost (reported there already). */
    private static boolean lost(List<JournalDamage> damage, long seq) {
        for (JournalDamage d : damage) {
            if (seq > d.lastGoodSeq() && (d.resumeSeq() < 0 || seq < d.resumeSeq())) {
                return true;
            }
        }
        return false;
    }

    /** Whether a seq jump from {@code last} to {@code seq} is a damaged region already reported. */
    private static boolean explained(List<JournalDamage> damage, long last, long seq) {
        for (int i = damage.size() - 1; i >= 0; i--) {
            JournalDamage d = damage.get(i);
            if (d.resumeSeq() == seq && d.lastGoodSeq() < seq) {
                return true;
            }
        }
        return false;
    }

    private static String entries(long n) {
        return fmt(n) + (n == 1 ? " entry" : " entries");
    }

    private static String fmt(long v) {
        return String.format(Locale.ROOT, "%,d", v);
    }
}
