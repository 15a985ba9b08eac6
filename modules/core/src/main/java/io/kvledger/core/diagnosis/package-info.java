/**
 * The transfer lifecycle across nodes and the hang detectors: a {@link io.kvledger.core.diagnosis.Ledger}
 * joins what every node saw by transfer id; {@link io.kvledger.core.diagnosis.HangDetectors} turns
 * it into one-line {@link io.kvledger.core.diagnosis.Finding}s naming the missing or wrong event and
 * the bug class it matches, and accounts for every request still in flight at the end
 * ({@link io.kvledger.core.diagnosis.InFlight}: stuck, or why not). Pure like the node reducer; depends on the other core packages only.
 */
package io.kvledger.core.diagnosis;
