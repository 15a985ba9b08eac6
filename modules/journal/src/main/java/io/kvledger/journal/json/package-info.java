/**
 * A small, strict JSON (RFC 8259) parser and printer for the journal's JSON-lines form. Values are
 * plain Java objects: {@code null}, {@link java.lang.Boolean}, {@link java.lang.Long} (integers),
 * {@link java.lang.Double} (numbers with a fraction or exponent), {@link java.lang.String},
 * {@link java.util.List} and {@link java.util.Map} with string keys.
 *
 * <p>Depends on the JDK only; the journal's other packages depend on it, never the reverse.
 */
package io.kvledger.journal.json;
