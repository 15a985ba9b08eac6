/**
 * Journals a simulation: {@link io.kvledger.node.sim.SimJournalRecorder} is the simulator's
 * {@link io.kvledger.sim.Recorder} that writes one journal per simulated node, for
 * {@code kvledger simulate}, the demo, the benchmarks' big journals and tests. It lives here
 * because this module depends on both the simulator and the journal, which do not depend on
 * each other.
 *
 * <p>Depends on {@code io.kvledger.journal}, {@code io.kvledger.sim} and {@code io.kvledger.core}
 * only; no other package of this module.
 */
package io.kvledger.node.sim;
