package io.kvledger.journal;

/**
 * A journal that cannot be opened, read or appended to as asked: no journal in the directory, a
 * header that does not match, a second writer, an I/O failure. The message says which journal and
 * why, in words a user can act on.
 */
public class JournalException extends RuntimeException {

    public JournalException(String message) {
        super(message);
    }

    public JournalException(String message, Throwable cause) {
        super(message, cause);
    }
}
