package io.kvledger.journal;

import java.util.List;

/**
 * A JSON-lines file that cannot be imported; nothing was written. {@link #errors()} lists the
 * first {@value #MAX_LISTED} bad lines with their number (1-based) and the reason.
 */
public final class JsonLinesException extends JournalException {

    /** Bad lines listed at most (the count of all of them is {@link #total()}). */
    public static final int MAX_LISTED = 50;

    /** One bad line. */
    public record LineError(long line, String reason) {
        @Override
        public String toString() {
            return "line " + line + ": " + reason;
        }
    }

    private final List<LineError> errors;
    private final long total;

    public JsonLinesException(String file, List<LineError> errors, long total) {
        super(summary(file, errors, total));
        this.errors = List.copyOf(errors);
        this.total = total;
    }

    private static String summary(String file, List<LineError> errors, long total) {
        StringBuilder b = new StringBuilder();
        b.append(file).append(": ").append(total).append(total == 1 ? " bad line" : " bad lines")
                .append(", nothing imported");
        for (LineError e : errors) {
            b.append("\n  ").append(e);
        }
        if (total > errors.size()) {
            b.append("\n  ... and ").append(total - errors.size()).append(" more");
        }
        return b.toString();
    }

    public List<LineError> errors() {
        return errors;
    }

    public long total() {
        return total;
    }
}
