package io.kvledger.journal.format;

/**
 * One payload field: its snake_case name (the JSON key) and type, and what a JSON line may leave
 * out.
 *
 * @param nullable whether the value may be null (msgpack nil, JSON null); an absent JSON key then
 *                 means null
 * @param optional whether an absent JSON key takes the type's default (0, false, -1 for lengths)
 * @param omitNull whether a null value is left out of the payload (JSON: no key; msgpack: a
 *                 trailing null is not written), so that a field added to a type later does not
 *                 change the entries that do not use it
 */
record Field(String name, FieldType<?> type, boolean nullable, boolean optional, boolean omitNull) {

    public Field(String name, FieldType<?> type, boolean nullable, boolean optional) {
        this(name, type, nullable, optional, false);
    }

    /** A required, non-null field. */
    public static Field req(String name, FieldType<?> type) {
        return new Field(name, type, false, false);
    }

    /** A field that may be null or absent. */
    public static Field nul(String name, FieldType<?> type) {
        return new Field(name, type, true, true);
    }

    /**
     * A field appended to a type after its first release: null or absent, and left out of the
     * payload when null.
     */
    public static Field later(String name, FieldType<?> type) {
        return new Field(name, type, true, true, true);
    }

    /** A non-null field that JSON lines may leave out (it then takes the type's default). */
    public static Field opt(String name, FieldType<?> type) {
        return new Field(name, type, false, true);
    }
}
