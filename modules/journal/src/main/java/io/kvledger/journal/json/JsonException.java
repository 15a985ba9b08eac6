package io.kvledger.journal.json;

/** Text that is not valid JSON, or a value that cannot be written as JSON. */
public final class JsonException extends RuntimeException {

    private final int offset;

    JsonException(String message, int offset) {
        super(offset >= 0 ? message + " at column " + (offset + 1) : message);
        this.offset = offset;
    }

    /** The 0-based character offset of the problem in the parsed text, or -1 when not parsing. */
    int offset() {
        return offset;
    }
}
