/**
 * Journals a simulation: {@link io.kvledger.cli.sim.SimJournalRecorder} is the simulator's
 * {@link io.kvledger.sim.Recorder} that writes one journal per simulated node.
 *
 * <p>Depends on {@code io.kvledger.journal}, {@code io.kvledger.sim} and {@code io.kvledger.core}.
 */
package io.kvledger.cli.sim;
