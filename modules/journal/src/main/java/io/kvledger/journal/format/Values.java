package io.kvledger.journal.format;

/** The decoded fields of one payload, in schema order, with typed accessors for record builders. */
final class Values {

    private final Object[] v;

    Values(Object[] v) {
        this.v = v;
    }

    /** The array behind these values (for a reader that fills it in place). */
    Object[] slots() {
        return v;
    }

    /** Forgets the first {@code n} values, so that a reused array keeps nothing alive. */
    void clear(int n) {
        java.util.Arrays.fill(v, 0, n, null);
    }

    public int i(int idx) {
        return (Integer) v[idx];
    }

    public long l(int idx) {
        return (Long) v[idx];
    }

    public boolean b(int idx) {
        return (Boolean) v[idx];
    }

    public String s(int idx) {
        return (String) v[idx];
    }

    @SuppressWarnings("unchecked")
    public <T> T o(int idx) {
        return (T) v[idx];
    }
}
