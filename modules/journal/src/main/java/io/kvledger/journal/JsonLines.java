package io.kvledger.journal;

import io.kvledger.core.effect.Effect;
import io.kvledger.core.event.NodeEvent;
import io.kvledger.core.event.NodeEvents;
import io.kvledger.journal.format.EntryKind;
import io.kvledger.journal.format.EntryType;
import io.kvledger.journal.format.PayloadException;
import io.kvledger.journal.json.Json;
import io.kvledger.journal.json.JsonException;
import java.io.IOException;
import java.io.InputStream;
import java.io.Writer;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

/**
 * Journals as JSON lines: one JSON object per entry, with the envelope keys {@code seq},
 * {@code kind} ("header", "input", "derived"), {@code type} (the snake_case type name),
 * {@code at_ns} and, for derived entries, {@code cause_seq}, followed by the payload fields under
 * their snake_case names (the MoRIIO hook arguments). {@code journal/FORMAT.md} lists the fields
 * of every type with an example.
 *
 * <p>Import is strict and all-or-nothing: the whole file is validated before the first entry is
 * written, and every bad line is reported with its number and the reason. Two things at the very
 * end of a file are not bad lines but what a write cut short leaves ({@link CutTail}): a last line
 * without its newline that does not parse (the recording process was killed while appending), and
 * zero bytes after the data (a crash before the file system wrote the file's last blocks). Those
 * are left out, and the import says so. A UTF-8 byte order mark at the start is skipped. Lines written by other
 * tools may leave out {@code seq} (the journal numbers entries itself), {@code kind} (implied by
 * the type), a derived entry's {@code cause_seq} (the nearest input line above it) and
 * {@code at_ns} (its cause's time), and fields that are nullable or optional. The vLLM bridge's
 * recordings may hold repeat lines, each standing for repeats of the engine step above it; a
 * {@link Parser} unfolds them into the entries they stand for.
 */
public final class JsonLines {

    /** Keys of a JSON line that are not payload fields. */
    static final Set<String> ENVELOPE_KEYS = Set.of("seq", "kind", "type", "at_ns", "cause_seq");

    /** {@code kind} of a line that stands for repeats of the step above it (FORMAT.md, "Repeated steps"). */
    static final String REPEAT_KIND = "repeat";
    /** The most lines a repeat line may repeat. */
    static final int MAX_REPEAT_LINES = 64;
    /** The most entries one repeat line may stand for. */
    static final long MAX_REPEATED_ENTRIES = 1L << 20;

    private JsonLines() {}

    // ------------------------------------------------------------------ export

    /** The JSON line of one entry (without the newline). */
    public static String toJson(JournalEntry entry) {
        LinkedHashMap<String, Object> m = new LinkedHashMap<>();
        m.put("seq", entry.seq());
        switch (entry) {
            case JournalEntry.Header h -> {
                m.put("kind", EntryKind.HEADER.label());
                m.put("type", EntryType.HEADER.typeName());
                Map<String, Object> hm = h.header().toMap();
                hm.remove("magic");
                m.putAll(hm);
            }
            case JournalEntry.Input in -> {
                EntryType t = in.type();
                m.put("kind", EntryKind.INPUT.label());
                m.put("type", t.typeName());
                m.put("at_ns", in.atNs());
                m.putAll(t.toJson(in.event()));
            }
            case JournalEntry.Derived d -> {
                EntryType t = d.type();
                m.put("kind", EntryKind.DERIVED.label());
                m.put("type", t.typeName());
                m.put("at_ns", d.atNs());
                m.put("cause_seq", d.causeSeq());
                m.putAll(t.toJson(d.effect()));
            }
            case JournalEntry.Proxy px -> {
                EntryType t = px.type();
                m.put("kind", EntryKind.PROXY.label());
                m.put("type", t.typeName());
                m.put("at_ns", px.atNs());
                m.putAll(t.toJson(px.event()));
            }
            case JournalEntry.Unknown u -> {
                m.put("kind", "unknown");
                m.put("type_id", (long) u.typeId());
                m.put("stored_kind", u.kind() == null ? null : u.kind().label());
                m.put("at_ns", u.atNs());
                m.put("reason", u.reason());
                m.put("bytes", Base64.getEncoder().encodeToString(u.bytes()));
            }
        }
        return Json.write(m);
    }

    /**
     * Writes every entry of {@code reader} as one JSON line.
     *
     * @return the number of lines written
     */
    public static long export(JournalReader reader, Writer out) throws IOException {
        long n = 0;
        try (Stream<JournalEntry> s = reader.stream()) {
            for (JournalEntry e : (Iterable<JournalEntry>) s::iterator) {
                out.write(toJson(e));
                out.write('\n');
                n++;
            }
        }
        out.flush();
        return n;
    }

    // ------------------------------------------------------------------ parsing one line

    /**
     * One parsed line.
     *
     * @param seq      the line's {@code seq}, or -1 when absent
     * @param atNs     the line's {@code at_ns}, or {@link Long#MIN_VALUE} when absent
     * @param causeSeq a derived line's {@code cause_seq}, or -1 when absent
     * @param record   the {@link NodeEvent}, {@link Effect} or {@link JournalHeader}
     */
    public record Line(EntryKind kind, long seq, long atNs, long causeSeq, Object record) {}

    /**
     * Parses one JSON line.
     *
     * @throws JsonException            when the line is not JSON
     * @throws PayloadException         when a payload field is missing, unknown or of the wrong type
     * @throws IllegalArgumentException when the envelope or the header is wrong
     */
    public static Line parseLine(String text) {
        Map<String, Object> m = object(text);
        if (REPEAT_KIND.equals(m.get("kind"))) {
            throw new IllegalArgumentException("a repeat line stands for the lines above it: read the file with "
                    + "JsonLines.Parser");
        }
        return parseMap(m);
    }

    private static Map<String, Object> object(String text) {
        Object parsed = Json.parse(text);
        if (!(parsed instanceof Map<?, ?> raw)) {
            throw new IllegalArgumentException("expected a JSON object");
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> m = (Map<String, Object>) raw;
        return m;
    }

    /**
     * Whether {@code text} parses as a line on its own: an entry, or a repeat line whose own fields
     * are well formed (what it repeats is checked where the lines above it are known).
     */
    static boolean parsesAlone(String text) {
        Map<String, Object> m = object(text);
        if (REPEAT_KIND.equals(m.get("kind"))) {
            Repeat.of(m);
        } else {
            parseMap(m);
        }
        return true;
    }

    /** A repeat line's fields, checked on their own. */
    private record Repeat(int lines, long times, long[] deltas) {

        static final Set<String> KEYS = Set.of("kind", "lines", "times", "at_ns_deltas");

        static Repeat of(Map<String, Object> m) {
            for (String k : m.keySet()) {
                if (!KEYS.contains(k)) {
                    throw new IllegalArgumentException("a repeat line has no field \"" + k + "\" (it has lines, times "
                            + "and at_ns_deltas)");
                }
            }
            long lines = optLong(m, "lines", -1);
            long times = optLong(m, "times", -1);
            if (lines < 1 || lines > MAX_REPEAT_LINES) {
                throw new IllegalArgumentException("a repeat line's lines must be 1 to " + MAX_REPEAT_LINES + ", found "
                        + Json.write(m.get("lines")));
            }
            if (times < 1 || times * lines > MAX_REPEATED_ENTRIES) {
                throw new IllegalArgumentException("a repeat line's times must be 1 or more, with lines * times at most "
                        + MAX_REPEATED_ENTRIES + ", found " + Json.write(m.get("times")));
            }
            if (!(m.get("at_ns_deltas") instanceof List<?> list)) {
                throw new IllegalArgumentException("a repeat line needs at_ns_deltas, a list of integers");
            }
            long[] deltas = new long[list.size()];
            for (int i = 0; i < deltas.length; i++) {
                if (!(list.get(i) instanceof Long d) || d < 0) {
                    throw new IllegalArgumentException("at_ns_deltas[" + i + "] must be an integer of 0 or more, found "
                            + Json.write(list.get(i)));
                }
                deltas[i] = d;
            }
            return new Repeat((int) lines, times, deltas);
        }
    }

    /**
     * Reads the lines of one file (or stream) in order, and unfolds its repeat lines: a line
     * {@code {"kind":"repeat","lines":N,"times":K,"at_ns_deltas":[...]}} stands for K more copies of
     * the N entries above it (the copy before, after a repeat line), each with its {@code step}
     * one more than the copy before and each input's {@code at_ns} the time of the input before it
     * plus the next delta. The vLLM bridge's recorder writes them for an engine that steps while a
     * request waits; the entries they stand for are exactly those it would have written one by one.
     */
    public static final class Parser {

        private final ArrayDeque<Map<String, Object>> recent = new ArrayDeque<>();
        private long lastInputAt = Long.MIN_VALUE;

        /**
         * The entries {@code text} stands for: one for an entry line (or the header), the copies
         * for a repeat line. Throws what {@link #parseLine} throws, and IllegalArgumentException for
         * a repeat line that does not fit the lines above it.
         */
        public List<Line> parse(String text) {
            Map<String, Object> m = object(text);
            if (REPEAT_KIND.equals(m.get("kind"))) {
                return unfold(Repeat.of(m));
            }
            Line line = parseMap(m);
            if (line.kind() == EntryKind.HEADER) {
                recent.clear();
            } else {
                remember(m, line);
            }
            return List.of(line);
        }

        /** Forgets the lines read so far (a stream that lost lines: a repeat line after the gap is an error). */
        public void reset() {
            recent.clear();
            lastInputAt = Long.MIN_VALUE;
        }

        private void remember(Map<String, Object> m, Line line) {
            if (recent.size() == MAX_REPEAT_LINES) {
                recent.removeFirst();
            }
            recent.addLast(m);
            if (line.kind() == EntryKind.INPUT) {
                lastInputAt = line.atNs();
            }
        }

        private List<Line> unfold(Repeat r) {
            if (r.lines() > recent.size()) {
                throw new IllegalArgumentException("a repeat line repeats " + r.lines() + " lines, and only "
                        + recent.size() + " entry line(s) are above it" + (recent.isEmpty() ? "" : " since the header"));
            }
            List<Map<String, Object>> step = new ArrayList<>(recent).subList(recent.size() - r.lines(), recent.size());
            Line[] template = new Line[step.size()];
            int inputs = 0;
            for (int j = 0; j < template.length; j++) {
                Map<String, Object> m = step.get(j);
                if (m.containsKey("seq") || m.containsKey("cause_seq")) {
                    throw new IllegalArgumentException("a repeat line cannot repeat lines that carry seq or cause_seq");
                }
                template[j] = parseMap(m);
                if (template[j].kind() == EntryKind.INPUT) {
                    inputs++;
                }
            }
            if (r.deltas().length != r.times() * inputs) {
                throw new IllegalArgumentException("a repeat line of " + r.times() + " times " + inputs
                        + " input(s) needs " + r.times() * inputs + " at_ns_deltas, found " + r.deltas().length);
            }
            // Each copy is its template line's record at another time and, for the two types with a
            // step, one step further: what parsing the line with those two fields changed gives.
            List<Line> out = new ArrayList<>((int) (r.times() * r.lines()));
            long[] lastAt = new long[template.length];
            int d = 0;
            for (long k = 1; k <= r.times(); k++) {
                for (int j = 0; j < template.length; j++) {
                    Line t = template[j];
                    long at = t.atNs();
                    if (t.kind() == EntryKind.INPUT) {
                        at = Math.addExact(lastInputAt, r.deltas()[d++]);
                        lastInputAt = at;
                        lastAt[j] = at;
                    }
                    out.add(new Line(t.kind(), -1, at, -1, again(t.record(), at, k)));
                }
            }
            // the last copy, which a next repeat line repeats, takes the template's place
            for (int j = 0; j < template.length; j++) {
                recent.removeLast();
            }
            for (int j = 0; j < template.length; j++) {
                LinkedHashMap<String, Object> c = new LinkedHashMap<>(step.get(j));
                if (c.get("step") instanceof Long n) {
                    c.put("step", Math.addExact(n, r.times()));
                }
                if (template[j].kind() == EntryKind.INPUT) {
                    c.put("at_ns", lastAt[j]);
                }
                recent.addLast(c);
            }
            return out;
        }

        /** {@code record} at {@code at}, {@code k} steps on (the two types with a step field). */
        private static Object again(Object record, long at, long k) {
            if (record instanceof NodeEvent.StepScheduled s) {
                return new NodeEvent.StepScheduled(at, Math.addExact(s.step(), k), s.cachedRequests(),
                        s.scheduledNewReqs(), s.preemptedReqIds());
            }
            if (record instanceof NodeEvent e) {
                return e.atNs() == at ? e : NodeEvents.at(e, at);
            }
            if (record instanceof Effect.MetadataBuilt m) {
                return new Effect.MetadataBuilt(Math.addExact(m.step(), k), m.reqsToRecv(), m.reqsToSave(),
                        m.reqsToSend(), m.mappingSize());
            }
            return record; // the other effects are immutable and carry no time of their own
        }
    }

    private static Line parseMap(Map<String, Object> m) {
        Object kindV = m.get("kind");
        Object typeV = m.get("type");
        if (kindV != null && !(kindV instanceof String)) {
            throw new IllegalArgumentException("kind must be a string");
        }
        if ("unknown".equals(kindV)) {
            throw new IllegalArgumentException("an entry of unknown type (type_id " + m.get("type_id")
                    + ", written by a newer version) cannot be imported");
        }
        if (typeV == null && !"header".equals(kindV)) {
            throw new IllegalArgumentException("missing \"type\"");
        }
        if (typeV != null && !(typeV instanceof String)) {
            throw new IllegalArgumentException("type must be a string");
        }
        long seq = optLong(m, "seq", -1);
        if (m.containsKey("seq") && seq < 0) {
            throw new IllegalArgumentException("seq must not be negative");
        }
        if ("header".equals(typeV) || "header".equals(kindV)) {
            if (kindV != null && !"header".equals(kindV) || typeV != null && !"header".equals(typeV)) {
                throw new IllegalArgumentException("kind and type disagree: " + kindV + " / " + typeV);
            }
            LinkedHashMap<String, Object> hm = new LinkedHashMap<>(m);
            hm.keySet().removeAll(ENVELOPE_KEYS);
            return new Line(EntryKind.HEADER, seq, 0, -1, JournalHeader.fromMap(hm, true, null));
        }
        EntryType t = EntryType.byName((String) typeV);
        if (t == null || t == EntryType.HEADER) {
            throw new IllegalArgumentException("unknown type \"" + typeV + "\"");
        }
        if (kindV != null && !t.kind().label().equals(kindV)) {
            throw new IllegalArgumentException(t.typeName() + " is " + (t.kind() == EntryKind.INPUT ? "an " : "a ")
                    + t.kind().label() + " type, not " + kindV);
        }
        if (t.kind() == EntryKind.PROXY) {
            throw new IllegalArgumentException(t.typeName() + " is a proxy record: export writes them, import does not "
                    + "take them (a proxy journal is written by kvledger proxy only)");
        }
        long atNs = optLong(m, "at_ns", Long.MIN_VALUE);
        long cause = optLong(m, "cause_seq", -1);
        if (t.kind() == EntryKind.INPUT) {
            if (atNs == Long.MIN_VALUE) {
                throw new IllegalArgumentException("missing \"at_ns\" (inputs carry their time)");
            }
            if (m.containsKey("cause_seq")) {
                throw new IllegalArgumentException("cause_seq is only for derived entries");
            }
        } else if (m.containsKey("cause_seq") && cause < 0) {
            throw new IllegalArgumentException("cause_seq must not be negative");
        }
        Object record = t.fromJson(m, atNs == Long.MIN_VALUE ? 0 : atNs, ENVELOPE_KEYS);
        return new Line(t.kind(), seq, atNs, cause, record);
    }

    private static long optLong(Map<String, Object> m, String key, long absent) {
        if (!m.containsKey(key)) {
            return absent;
        }
        if (m.get(key) instanceof Long l) {
            return l;
        }
        throw new IllegalArgumentException(key + " must be an integer, found " + Json.write(m.get(key)));
    }

    // ------------------------------------------------------------------ import

    /**
     * What an import wrote.
     *
     * @param entries        entries written (the header not counted)
     * @param firstSeq       seq of the first entry written (or the next seq when none)
     * @param lastSeq        seq of the last entry written (firstSeq - 1 when none)
     * @param headerFromFile whether the header came from the file's first line
     * @param appended       whether the entries were appended to an existing journal
     * @param cut            what was left out at the file's end (a write cut short), or {@code null}
     */
    public record ImportResult(long entries, long firstSeq, long lastSeq, boolean headerFromFile, boolean appended,
                               CutTail cut) {}

    /**
     * What a write cut short left at the end of a JSON-lines file, left out of the import: the
     * file's last line when it has no newline and does not parse (or is not UTF-8: a cut can split
     * a character), and zero bytes after the data. A last line without a newline that parses is
     * read as usual.
     *
     * @param line      the number of the cut line (1-based), or 0 when no line was cut
     * @param lineBytes the bytes of the cut line
     * @param zeroBytes zero bytes after the data, at the end of the file
     */
    public record CutTail(long line, long lineBytes, long zeroBytes) {

        /** One sentence for a warning, naming the file. */
        public String describe(Path file) {
            StringBuilder b = new StringBuilder().append(file).append(": left out ");
            if (line > 0) {
                b.append("its last line (line ").append(line).append(", ").append(lineBytes)
                        .append(lineBytes == 1 ? " byte" : " bytes").append(" without a newline, which do not parse)");
            }
            if (zeroBytes > 0) {
                b.append(line > 0 ? " and " : "").append(zeroBytes).append(zeroBytes == 1 ? " zero byte" : " zero bytes")
                        .append(" at its end");
            }
            return b.append(": what a write cut short leaves (a recording process killed, or still writing, or a "
                    + "crash before the file's last blocks were written); the lines before ").append(line > 0 ? "it" : "them")
                    .append(" are read").toString();
        }
    }

    /**
     * Builds a journal in {@code dir} from a JSON-lines file (or appends to the journal already
     * there, which must describe the same node). Validates the whole file first; on any bad line
     * nothing is written.
     *
     * @param header the header to use, or {@code null} to take it from the file's first line; a
     *               given header replaces the file's
     * @throws JsonLinesException listing the bad lines
     * @throws JournalException   when the journal cannot be written (a journal for another node
     *                            in {@code dir}, another writer); nothing is written then either
     */
    public static ImportResult importFile(Path jsonl, Path dir, JournalHeader header) {
        Validation v = validate(jsonl);
        JournalHeader h = header != null ? header : v.fileHeader;
        if (h == null && !v.headerAttempted && !v.firstLineBad) {
            String reason;
            if (v.firstLine > 0) {
                reason = "no header: the first line is not a header and none was given";
            } else if (v.cut != null && v.cut.line() > 0) {
                reason = "no header: the file's only line (" + v.cut.lineBytes() + " bytes without a newline) was cut "
                        + "short before it was written whole";
            } else {
                reason = "no header: the file holds no line" + (v.cut != null ? " (only " + v.cut.zeroBytes() + " zero bytes)" : "");
            }
            v.errors.addFirst(new JsonLinesException.LineError(Math.max(1, v.firstLine), reason));
            v.total++;
        }
        if (v.total > 0) {
            throw new JsonLinesException(jsonl.toString(), v.errors, v.total);
        }
        boolean existed = Queues.hasQueueFiles(dir);
        // a new journal is built beside DIR and moved there whole: a killed import leaves DIR as it was
        StagedDir staged = existed ? null : StagedDir.start(dir);
        JournalWriter w = JournalWriter.open(existed ? dir : staged.work(), h);
        long first = w.nextSeq();
        long written = 0;
        boolean ok = false;
        boolean closed = false;
        try (LineReader in = new LineReader(jsonl, v.size)) {
            SeqIndex inputs = new SeqIndex();
            long lastInputNew = 0;
            long lastInputAt = 0;
            Parser parser = new Parser();
            String text;
            while ((text = in.next()) != null) {
                if (text.isBlank()) {
                    continue;
                }
                for (Line line : parser.parse(text)) {
                    switch (line.kind()) {
                        case HEADER -> { }
                        case INPUT -> {
                            NodeEvent e = (NodeEvent) line.record();
                            lastInputNew = w.appendInput(e);
                            lastInputAt = e.atNs();
                            if (line.seq() >= 0) {
                                inputs.add(line.seq(), lastInputNew, lastInputAt);
                            }
                            written++;
                        }
                        case DERIVED -> {
                            long cause = lastInputNew;
                            long at = lastInputAt;
                            if (line.causeSeq() == 0) {
                                cause = 0;
                                at = 0;
                            } else if (line.causeSeq() > 0) {
                                int i = inputs.find(line.causeSeq());
                                cause = inputs.news[i];
                                at = inputs.ats[i];
                            }
                            if (line.atNs() != Long.MIN_VALUE) {
                                at = line.atNs();
                            }
                            w.appendDerived(cause, at, (Effect) line.record());
                            written++;
                        }
                    }
                }
            }
            closed = true;
            w.close();
            if (staged != null) {
                staged.publish();
            }
            ok = true;
        } catch (IOException e) {
            throw new JournalException("reading " + jsonl + " failed after " + written + " entries: " + e.getMessage(), e);
        } finally {
            if (!ok) {
                try {
                    if (!closed) {
                        w.close();
                    }
                } catch (RuntimeException ignored) {
                    // the import failed already, with its own message
                }
                if (staged != null) {
                    staged.abandon();
                }
            }
        }
        return new ImportResult(written, first, first + written - 1, header == null, existed, v.cut);
    }

    private static final class Validation {
        JournalHeader fileHeader;
        final List<JsonLinesException.LineError> errors = new ArrayList<>();
        long total;
        long firstLine;
        boolean headerAttempted;
        /** Whether the first non-blank line is itself reported (then "no header" would say it twice). */
        boolean firstLineBad;
        CutTail cut;
        /** The bytes validated: the import reads no further (a recording may still grow). */
        long size;

        void error(long line, String reason) {
            total++;
            if (errors.size() < JsonLinesException.MAX_LISTED) {
                errors.add(new JsonLinesException.LineError(line, reason));
            }
        }
    }

    private static Validation validate(Path jsonl) {
        Validation v = new Validation();
        SeqIndex inputs = new SeqIndex();
        long lineNo = 0;
        long prevSeq = -1;
        boolean any = false;
        long lastInputAt = 0;
        Parser parser = new Parser();
        try (LineReader in = new LineReader(jsonl)) {
            String text;
            while (true) {
                try {
                    text = in.next();
                } catch (CharacterCodingException e) {
                    if (v.firstLine == 0) {
                        v.firstLine = in.lineNo();
                        v.firstLineBad = true;
                    }
                    v.error(in.lineNo(), "not valid UTF-8");
                    continue;
                }
                if (text == null) {
                    break;
                }
                lineNo = in.lineNo();
                if (text.isBlank()) {
                    continue;
                }
                boolean first = v.firstLine == 0;
                if (first) {
                    v.firstLine = lineNo;
                    v.headerAttempted = looksLikeHeader(text);
                }
                try {
                    for (Line line : parser.parse(text)) {
                        if (line.kind() == EntryKind.HEADER) {
                            if (any) {
                                throw new IllegalArgumentException("a header is only allowed on the first line");
                            }
                            any = true;
                            v.fileHeader = (JournalHeader) line.record();
                            if (line.seq() > 0) {
                                throw new IllegalArgumentException("the header's seq must be 0");
                            }
                            prevSeq = 0;
                            continue;
                        }
                        any = true;
                        if (line.seq() >= 0) {
                            if (line.seq() <= prevSeq) {
                                throw new IllegalArgumentException("seq " + line.seq()
                                        + " is not greater than the seq before it (" + prevSeq + ")");
                            }
                            prevSeq = line.seq();
                        }
                        if (text.length() > MAX_ENTRY_BYTES / 4) {
                            checkEntrySize(line);
                        }
                        if (line.kind() == EntryKind.INPUT) {
                            lastInputAt = line.atNs();
                            if (line.seq() >= 0) {
                                inputs.add(line.seq(), 0, lastInputAt);
                            }
                        } else if (line.causeSeq() > 0 && inputs.find(line.causeSeq()) < 0) {
                            throw new IllegalArgumentException("cause_seq " + line.causeSeq()
                                    + " is not the seq of an input line above it");
                        }
                    }
                } catch (JsonException | PayloadException | IllegalArgumentException | ArithmeticException e) {
                    v.firstLineBad |= first;
                    v.error(lineNo, e.getMessage());
                }
            }
            v.cut = in.cutTail();
            v.size = in.size();
        } catch (IOException e) {
            throw new JournalException("cannot read " + jsonl + ": " + e.getMessage(), e);
        }
        return v;
    }

    /**
     * The most bytes one journal entry may hold (its envelope and payload): what Chronicle writes
     * in one excerpt of the journal's roll cycle. A line whose entry would be larger is refused when
     * the file is validated, with its line number, before anything is written.
     */
    public static final int MAX_ENTRY_BYTES = 16 << 20;

    /**
     * Refuses a line whose entry would not fit in a journal (encoded as the writer encodes it;
     * only long lines are encoded: msgpack takes at most about three times a JSON value's text).
     */
    private static void checkEntrySize(Line line) {
        EntryType type = EntryType.ofClass(line.record().getClass());
        long bytes;
        try (org.msgpack.core.MessageBufferPacker p = org.msgpack.core.MessagePack.newDefaultBufferPacker()) {
            type.write(p, line.record());
            p.flush();
            bytes = JournalFormat.ENVELOPE_V2 + p.getTotalWrittenBytes();
        } catch (IOException e) {
            throw new IllegalArgumentException("the entry cannot be encoded: " + e.getMessage(), e);
        }
        if (bytes > MAX_ENTRY_BYTES) {
            throw new IllegalArgumentException(String.format(java.util.Locale.ROOT, "the %s entry would be %,d bytes, over "
                    + "the %,d bytes a journal entry may hold", type.typeName(), bytes, MAX_ENTRY_BYTES));
        }
    }

    /**
     * Whether {@code file}'s first line is meant to be a journal header (its {@code type} or
     * {@code kind} is "header"), as in every file {@code journal export} and the vLLM bridge's
     * recorder write: what tells a node's JSON lines from other JSON-lines files beside them.
     */
    public static boolean startsWithHeader(Path file) {
        try (LineReader in = new LineReader(file)) {
            String text;
            while ((text = in.next()) != null) {
                if (!text.isBlank()) {
                    return looksLikeHeader(text);
                }
            }
            return false;
        } catch (IOException e) {
            return false;
        }
    }

    /** Whether a first line meant to be a header (so a bad one is reported, not "no header"). */
    private static boolean looksLikeHeader(String text) {
        try {
            return Json.parse(text) instanceof Map<?, ?> m && ("header".equals(m.get("type")) || "header".equals(m.get("kind")));
        } catch (JsonException e) {
            return false;
        }
    }

    /**
     * The lines of a JSON-lines file, split on LF and decoded one by one with a strict UTF-8
     * decoder, so that a malformed line is an error with its own line number rather than a silent
     * U+FFFD. A byte order mark at the start is skipped, and what a write cut short left at the end
     * ({@link CutTail}) is not handed out: {@link #cutTail()} says what, once {@link #next()} has
     * returned null.
     */
    public static final class LineReader implements AutoCloseable {
        private static final byte[] BOM = {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF};

        private final InputStream in;
        private final CharsetDecoder decoder = strictUtf8();
        private final byte[] buf = new byte[1 << 16];
        private int pos;
        private int end;
        private byte[] line = new byte[256];
        private long lineNo;
        /** Bytes of the file handed out as lines (the rest is the cut tail). */
        private final long readable;
        private long consumed;
        private final long cutLineBytes;
        private final long zeroBytes;
        private final long size;

        public LineReader(Path p) throws IOException {
            this(p, Long.MAX_VALUE);
        }

        /**
         * Reads the file as if it ended after {@code size} bytes: a second pass over a file that
         * is still being appended to (a running engine's recording) then reads what the first
         * pass read, and not the lines written since.
         */
        LineReader(Path p, long size) throws IOException {
            size = Math.min(size, Files.size(p));
            this.size = size;
            long dataEnd;
            long lastLineStart;
            try (FileChannel ch = FileChannel.open(p)) {
                dataEnd = endBeforeZeros(ch, size);
                lastLineStart = lastLineStart(ch, dataEnd);
                long fragment = dataEnd - lastLineStart;
                boolean cut = fragment > 0 && !parses(ch, lastLineStart, fragment);
                readable = cut ? lastLineStart : dataEnd;
                cutLineBytes = cut ? fragment : 0;
            }
            zeroBytes = size - dataEnd;
            in = Files.newInputStream(p);
            byte[] head = in.readNBytes((int) Math.min(BOM.length, readable));
            if (Arrays.equals(head, BOM)) {
                consumed = BOM.length;
            } else {
                System.arraycopy(head, 0, buf, 0, head.length);
                end = head.length;
            }
        }

        /** The next line without its LF, or null at the end; a bad line still counts. */
        public String next() throws IOException {
            int n = 0;
            boolean any = false;
            while (true) {
                if (pos == end) {
                    consumed += end;
                    int want = (int) Math.min(buf.length, readable - consumed);
                    end = want <= 0 ? -1 : in.read(buf, 0, want);
                    pos = 0;
                    if (end <= 0) {
                        end = 0;
                        if (!any) {
                            return null;
                        }
                        break;
                    }
                }
                any = true;
                int start = pos;
                while (pos < end && buf[pos] != '\n') {
                    pos++;
                }
                int len = pos - start;
                if (n + len > line.length) {
                    line = Arrays.copyOf(line, Math.max(n + len, line.length * 2));
                }
                System.arraycopy(buf, start, line, n, len);
                n += len;
                if (pos < end) {
                    pos++; // the LF
                    break;
                }
            }
            lineNo++;
            return decoder.reset().decode(ByteBuffer.wrap(line, 0, n)).toString();
        }

        /** The bytes of the file this reader took for the whole file. */
        long size() {
            return size;
        }

        /**
         * The next line that is valid UTF-8, skipping those that are not (the import reports them
         * with their numbers), or null at the end: for passes that check something else.
         */
        public String nextDecodable() throws IOException {
            while (true) {
                try {
                    return next();
                } catch (CharacterCodingException e) {
                    // the next line, then
                }
            }
        }

        /** The number of the line {@link #next()} returned last (1-based). */
        public long lineNo() {
            return lineNo;
        }

        /** What was left out at the file's end, or {@code null}; meaningful once {@link #next()} returned null. */
        CutTail cutTail() {
            if (cutLineBytes == 0 && zeroBytes == 0) {
                return null;
            }
            return new CutTail(cutLineBytes > 0 ? lineNo + 1 : 0, cutLineBytes, zeroBytes);
        }

        @Override
        public void close() throws IOException {
            in.close();
        }

        /** Where the zero bytes at the end of the file begin ({@code size} when it does not end in one). */
        private static long endBeforeZeros(FileChannel ch, long size) throws IOException {
            return afterLast(ch, size, Long.MAX_VALUE, false, (byte) 0);
        }

        /** Where the last line before {@code end} begins: after the last LF before it, or 0. */
        private static long lastLineStart(FileChannel ch, long end) throws IOException {
            return afterLast(ch, end, Long.MAX_VALUE, true, (byte) '\n');
        }

        /**
         * Scanning back from {@code end}, at most about {@code limit} bytes: the position after the
         * last byte that is ({@code equal}) or is not ({@code !equal}) {@code b}; where the scan
         * stopped (0 at the file's start) when there is none.
         */
        private static long afterLast(FileChannel ch, long end, long limit, boolean equal, byte b) throws IOException {
            ByteBuffer buf = ByteBuffer.allocate(1 << 16);
            long at = end;
            while (at > 0 && end - at <= limit) {
                int n = (int) Math.min(buf.capacity(), at);
                buf.clear().limit(n);
                readFully(ch, buf, at - n);
                for (int i = n - 1; i >= 0; i--) {
                    if ((buf.get(i) == b) == equal) {
                        return at - n + i + 1;
                    }
                }
                at -= n;
            }
            return at;
        }

        /**
         * Whether the {@code len} bytes at {@code from} are UTF-8 and a JSON line that parses,
         * whatever their number: one rule for a short cut line and a long one. A line (an object)
         * ends with its closing brace, so one that does not is not read whole to find out.
         */
        private static boolean parses(FileChannel ch, long from, long len) throws IOException {
            long last = from + len;
            ByteBuffer tail = ByteBuffer.allocate(1);
            while (last > from) {
                tail.clear();
                readFully(ch, tail, last - 1);
                byte c = tail.get(0);
                if (c == ' ' || c == '\t' || c == '\r') {
                    last--;
                    continue;
                }
                if (c != '}') {
                    return false;
                }
                break;
            }
            if (last == from) {
                return true; // a blank last line is skipped like any other
            }
            if (len > Integer.MAX_VALUE - 64) {
                return false; // no line of that size can be read
            }
            ByteBuffer b = ByteBuffer.allocate((int) len);
            readFully(ch, b, from);
            b.flip();
            if (from == 0 && len >= BOM.length && b.get(0) == BOM[0] && b.get(1) == BOM[1] && b.get(2) == BOM[2]) {
                b.position(BOM.length);
            }
            try {
                String text = strictUtf8().decode(b).toString();
                if (!text.isBlank()) {
                    parsesAlone(text);
                }
                return true; // a blank last line is skipped like any other
            } catch (CharacterCodingException | JsonException | PayloadException | IllegalArgumentException e) {
                return false;
            }
        }

        private static CharsetDecoder strictUtf8() {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT);
        }

        private static void readFully(FileChannel ch, ByteBuffer b, long at) throws IOException {
            while (b.hasRemaining()) {
                int r = ch.read(b, at + b.position());
                if (r < 0) {
                    throw new IOException("the file shrank while it was read");
                }
            }
        }
    }

    /** Old seq to (new seq, at_ns) for input lines, in increasing old seq order. */
    private static final class SeqIndex {
        long[] olds = new long[256];
        long[] news = new long[256];
        long[] ats = new long[256];
        int size;

        void add(long old, long nu, long at) {
            if (size == olds.length) {
                olds = Arrays.copyOf(olds, size * 2);
                news = Arrays.copyOf(news, size * 2);
                ats = Arrays.copyOf(ats, size * 2);
            }
            olds[size] = old;
            news[size] = nu;
            ats[size] = at;
            size++;
        }

        int find(long old) {
            int i = Arrays.binarySearch(olds, 0, size, old);
            return i >= 0 ? i : -1;
        }
    }
}
