package io.kvledger.journal.format;

/** The decoded fields of one payload, in schema order, with typed accessors for record builders. */
public final class Values {

    private final Object[] v;

    Values(Object[] v) {
        this.v = v;
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
