/**
 * Text that several modules print the same way: {@link io.kvledger.ledger.text.Seconds} turns
 * nanoseconds into seconds for reports, messages and journaled reasons.
 *
 * <p>Pure functions of their arguments; depends on the JDK only, so every other package of the
 * ledger (the hang detectors included) and the CLI, proxy and tap may use it.
 */
package io.kvledger.ledger.text;
