package io.kvledger.journal.format;

/** What an entry is: the journal header, an input event, or a decision derived from one. */
public enum EntryKind {
    /** The first entry: format version, node identity and configuration. */
    HEADER(0, "header"),
    /** An input event (a {@link io.kvledger.core.event.NodeEvent}): the source of truth. */
    INPUT(1, "input"),
    /** An effect the reducer produced for an input ({@link io.kvledger.core.effect.Effect}). */
    DERIVED(2, "derived"),
    /**
     * A record of what {@code kvledger proxy} did ({@link io.kvledger.journal.proxy.ProxyEvent}):
     * only in journals whose header's {@code kv_role} is {@code "proxy"}; never replayed.
     */
    PROXY(3, "proxy");

    private final int code;
    private final String label;

    EntryKind(int code, String label) {
        this.code = code;
        this.label = label;
    }

    /** The permanent code stored in the entry envelope. */
    public int code() {
        return code;
    }

    /** The name used in JSON lines ({@code "kind"}) and by the CLI. */
    public String label() {
        return label;
    }

    /** The kinds by code (the codes are 0 to 3); {@code values()} would copy its array per entry read. */
    private static final EntryKind[] BY_CODE = {HEADER, INPUT, DERIVED, PROXY};

    static {
        for (EntryKind k : values()) {
            if (BY_CODE[k.code] != k) {
                throw new AssertionError("EntryKind.BY_CODE is out of step with the codes: " + k);
            }
        }
    }

    /** The kind with this code, or {@code null}. */
    public static EntryKind byCode(int code) {
        return code >= 0 && code < BY_CODE.length ? BY_CODE[code] : null;
    }

    /** The kind with this label, or {@code null}. */
    static EntryKind byLabel(String label) {
        for (EntryKind k : values()) {
            if (k.label.equals(label)) {
                return k;
            }
        }
        return null;
    }
}
