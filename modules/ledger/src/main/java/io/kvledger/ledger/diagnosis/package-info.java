/**
 * The transfer lifecycle across nodes and the hang detectors: a {@link io.kvledger.ledger.diagnosis.Ledger}
 * joins what every node saw by transfer id; {@link io.kvledger.ledger.diagnosis.HangDetectors} turns
 * it into one-line {@link io.kvledger.ledger.diagnosis.Finding}s naming the missing or wrong event and
 * the bug class it matches, and accounts for every request still in flight at the end
 * ({@link io.kvledger.ledger.diagnosis.InFlight}: stuck, or why not). Pure like the node reducer (no
 * clock, threads or I/O); part of the ledger module, not the core, because it explains journals
 * rather than deciding anything. Depends on kvledger-core only.
 */
package io.kvledger.ledger.diagnosis;
